"""The security model of `ebb serve` (docs/http_api.md#security-model), each case against a real
server on a free loopback port: browser-origin and DNS-rebinding defence, admin-only options,
bounded bodies, metric labels and connections, pipelining, where the CLI sends its key, model
folder confinement and the start-up flags.

Run by ctest (serve_security_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import gzip
import http.server
import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest

from serve_util import EBB, MODELS, Server, chat_body, raw, rss_kib, status_of

TINY = "llama-tiny-fp32"
KEY = "s3cret-key"
UNDER_SANITIZER = os.environ.get("EBB_UNDER_SANITIZER") == "1"


def loaded(srv, model_id, headers=None):
    st, _, j = srv.get("/v1/runtime", headers=headers)
    assert st == 200, j
    return any(m["id"] == model_id and m["loaded"] for m in j["models"])


# ---- 1. A browser cannot drive the service -------------------------------------------------

def browser_attempts(srv, headers):
    """A cross-origin text/plain POST, a form POST and a rebinding Host: all 403, none acts."""
    body = json.dumps({"options": {"kv_cache.max_bytes": "1MiB"}})
    evil = {"Origin": "http://attacker.example", **headers}
    st, h, j = srv.post(f"/v1/models/{TINY}/load", raw=body,
                        headers={**evil, "Content-Type": "text/plain"})
    assert st == 403 and j["error"]["code"] == "origin_not_allowed", j
    assert "access-control-allow-origin" not in h
    st, _, j = srv.post(f"/v1/models/{TINY}/load", raw="options=1",
                        headers={**evil, "Content-Type": "application/x-www-form-urlencoded"})
    assert st == 403 and j["error"]["code"] == "origin_not_allowed", j
    # DNS rebinding: the page's own name in Host (same origin to the browser).
    for method in ("GET", "POST"):
        st, _, j = srv.request(method, f"/v1/models/{TINY}/load" if method == "POST"
                               else "/v1/runtime", body={} if method == "POST" else None,
                               headers={"Host": "attacker.example:11435",
                                        "Origin": "http://attacker.example:11435", **headers})
        assert st == 403 and j["error"]["code"] == "host_not_allowed", j
        assert "--allowed-host" in j["error"]["message"]
    # Without an Origin (not a browser) a non-JSON POST is still refused.
    st, _, j = srv.post(f"/v1/models/{TINY}/load", raw=body,
                        headers={**headers, "Content-Type": "text/plain"})
    assert st == 415 and j["error"]["code"] == "unsupported_media_type", j
    assert not loaded(srv, TINY, headers), "a refused request did something"
    # The service's own origin (the memory page) works, with no CORS headers.
    st, h, j = srv.post(f"/v1/models/{TINY}/load", {},
                        headers={"Origin": f"http://{srv.host}:{srv.port}", **headers})
    assert st == 200, j
    assert "access-control-allow-origin" not in h
    st, _, _ = srv.get("/health", headers={"Host": f"localhost:{srv.port}"})
    assert st == 200


def test_browser_cross_origin_and_rebinding_are_refused_without_key():
    with Server("--models-dir", str(MODELS)) as s:
        browser_attempts(s, {})
        # No CORS unless allowed: a preflight from any origin is refused.
        st, h, _ = s.request("OPTIONS", "/v1/runtime",
                             headers={"Origin": "http://attacker.example",
                                      "Access-Control-Request-Method": "POST"})
        assert st == 403 and "access-control-allow-origin" not in h


def test_browser_cross_origin_and_rebinding_are_refused_with_key():
    with Server("--models-dir", str(MODELS), "--api-key", KEY) as s:
        browser_attempts(s, {"Authorization": f"Bearer {KEY}"})


def test_allowed_host_and_origin_get_cors():
    app = "http://app.example:3000"
    with Server("--models-dir", str(MODELS), "--allowed-host", "ebb.internal",
                "--allowed-origin", app) as s:
        st, _, j = s.get("/v1/models", headers={"Host": "ebb.internal:8080"})
        assert st == 200, j
        st, h, _ = s.request("OPTIONS", "/v1/chat/completions",
                             headers={"Origin": app, "Access-Control-Request-Method": "POST"})
        assert st == 204 and h["access-control-allow-origin"] == app
        assert "Content-Type" in h["access-control-allow-headers"]
        st, h, j = s.get("/v1/models", headers={"Origin": app})
        assert st == 200 and h["access-control-allow-origin"] == app
        st, _, _ = s.get("/v1/models", headers={"Origin": "http://other.example"})
        assert st == 403


# ---- 2. Admin-only options -----------------------------------------------------------------

def test_admin_only_options_get_403_and_the_budget_stays(tmp_path):
    limit = 512 << 20
    with Server("--models-dir", str(MODELS), "--memory-limit", str(limit)) as s:
        assert s.runtime()["stats"]["limit_bytes"] == limit
        prefix = tmp_path / "prof"
        for body, key in [
            ({"options": {"memory.limit": "1TB"}}, "memory.limit"),
            ({"options": {"model_cache.dir": str(tmp_path / "cache")}}, "model_cache.dir"),
            ({"session_options": {"profile_file_prefix": str(prefix)}},
             "session_options.profile_file_prefix"),
            ({"session_options": {"intra_op_num_threads": 64}},
             "session_options.intra_op_num_threads"),
            ({"session_options": {"arena.max_mem": "1TB"}}, "session_options.arena.max_mem"),
            ({"provider_options": {"cuda": {"device_id": "0"}}}, "provider_options.cuda.device_id"),
        ]:
            st, _, j = s.post(f"/v1/models/{TINY}/load", body)
            assert st == 403, (body, j)
            assert j["error"]["code"] == "admin_only_option" and j["error"]["param"] == key
            assert key in j["error"]["message"]
        st, _, j = s.post("/v1/chat/completions",
                          chat_body(TINY, max_tokens=2, options={"memory.limit": "1TB"}))
        assert st == 403 and j["error"]["param"] == "memory.limit", j
        assert s.runtime()["stats"]["limit_bytes"] == limit, "the budget is unchanged"
        assert not loaded(s, TINY)
        assert not list(tmp_path.iterdir()), "nothing is written where a client asked"
        # Client keys are still fine.
        st, _, j = s.post(f"/v1/models/{TINY}/load", {"options": {"kv_cache.max_bytes": "8MiB"},
                                                     "session_options":
                                                     {"enable_cpu_mem_arena": "1"}})
        assert st == 200, j
    # The option table says which keys are admin-only.
    out = subprocess.run([EBB, "options", "--json"], capture_output=True, text=True, check=True)
    admin = {o["key"] for o in json.loads(out.stdout) if o["admin_only"]}
    assert {"memory.limit", "model_cache.dir", "profile_file_prefix", "intra_op_num_threads",
            "arena.max_mem"} <= admin
    assert "top_k" not in admin


def test_admin_key_unlocks_admin_options():
    limit = 512 << 20
    with Server("--models-dir", str(MODELS), "--memory-limit", str(limit), "--api-key", KEY,
                "--admin-key", "adm1n") as s:
        user = {"Authorization": f"Bearer {KEY}"}
        admin = {"Authorization": "Bearer adm1n"}
        body = {"options": {"memory.limit": str(limit * 2)}}
        st, _, j = s.post(f"/v1/models/{TINY}/load", body, headers=user)
        assert st == 403 and "--admin-key" in j["error"]["message"], j
        st, _, j = s.post(f"/v1/models/{TINY}/load", body, headers=admin)
        assert st == 200, j
        st, _, j = s.get("/v1/runtime", headers=admin)  # the admin key passes the key check
        assert st == 200 and j["stats"]["limit_bytes"] == limit * 2, j["stats"]
    r = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port", "0", "--api-key",
                        "same", "--admin-key", "same"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--admin-key must differ" in r.stderr


def test_both_keys_from_the_environment():
    # What deploy/ebb@.service does: $EBB_API_KEY and $EBB_ADMIN_KEY from its EnvironmentFile,
    # neither on the command line.
    limit = 512 << 20
    with Server("--models-dir", str(MODELS), "--memory-limit", str(limit),
                env={"EBB_API_KEY": KEY, "EBB_ADMIN_KEY": "adm1n-env"}) as s:
        assert KEY not in " ".join(s.proc.args) and "adm1n-env" not in " ".join(s.proc.args)
        assert s.get("/v1/runtime")[0] == 401
        body = {"options": {"memory.limit": str(limit * 2)}}
        st, _, j = s.post(f"/v1/models/{TINY}/load", body,
                          headers={"Authorization": f"Bearer {KEY}"})
        assert st == 403 and j["error"]["code"] == "admin_only_option", j
        st, _, j = s.post(f"/v1/models/{TINY}/load", body,
                          headers={"Authorization": "Bearer adm1n-env"})
        assert st == 200, j
    r = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port", "0"],
                       env={**os.environ, "EBB_API_KEY": "same", "EBB_ADMIN_KEY": "same"},
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--admin-key must differ" in r.stderr


# ---- 3. Metric labels and memory under unauthenticated floods ------------------------------

def pipelined_flood(srv, n, batch=500):
    """n GETs to random paths, pipelined in batches on a few connections; returns statuses."""
    statuses = {}
    sent = 0
    while sent < n:
        k = min(batch, n - sent)
        reqs = b"".join(
            f"GET /v1/models/m{random.getrandbits(48):x}/x{random.getrandbits(32):x} HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\n\r\n".encode() for _ in range(k))
        s = socket.create_connection((srv.host, srv.port), timeout=30)
        s.sendall(reqs)
        buf = b""
        got = 0
        while got < k:
            b = s.recv(1 << 20)
            assert b, f"connection closed after {got} of {k} pipelined answers"
            buf += b
            got = buf.count(b"HTTP/1.1 ")
        s.close()
        for code in re.findall(rb"HTTP/1\.1 (\d{3}) ", buf):
            statuses[int(code)] = statuses.get(int(code), 0) + 1
        sent += k
    return statuses


def test_unauthenticated_floods_leave_rss_and_metrics_small(tmp_path):
    with Server("--models-dir", str(MODELS), "--api-key", KEY) as s:
        auth = {"Authorization": f"Bearer {KEY}"}
        pipelined_flood(s, 2000)  # warm up: the first requests allocate what later ones reuse
        start = rss_kib(s.proc.pid)
        t0 = time.monotonic()
        statuses = pipelined_flood(s, 100_000)
        took = time.monotonic() - t0
        assert statuses == {401: 100_000}, statuses
        grown = (rss_kib(s.proc.pid) - start) / 1024
        st, _, text = s.get("/metrics", headers=auth)
        assert st == 200
        print(f"100,000 requests in {took:.1f} s; RSS grew {grown:.1f} MiB; "
              f"/metrics {len(text)} bytes")
        if not UNDER_SANITIZER:
            assert grown < 16, f"RSS grew {grown:.1f} MiB"
        assert len(text.encode()) < 1_000_000
        assert 'route="other",code="401"' in text
        # Invalid UTF-8 in a path never reaches a label: promtool accepts the scrape.
        st, _, _ = s.get("/v1/models/x/%FF", headers=auth)
        st, _, _ = s.get("/v1/models/%FF%FE/runtime", headers=auth)
        raw(s, b"GET /\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        st, _, text = s.get("/metrics", headers=auth)
        text.encode("utf-8")
        check = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


# ---- 4. Body limits --------------------------------------------------------------------------

def test_body_limits_are_answered_at_once():
    with Server("--models-dir", str(MODELS), "--max-body", "1MiB") as s:
        pid = s.proc.pid
        idle_peak = rss_kib(pid, "VmHWM")
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n" \
               "Content-Type: application/json\r\n"
        # A gzip bomb: 1 GiB of zeros in ~1 MiB.
        bomb = gzip.compress(b"\0" * (256 << 20), 9)
        resp, first = raw(s, (head + f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}"
                              "\r\n\r\n").encode() + bomb)
        assert status_of(resp) == 415 and b"unsupported_content_encoding" in resp, resp[:300]
        assert first < 1.0
        # A chunked body past the limit: refused as it arrives.
        sock = socket.create_connection((s.host, s.port), timeout=5)
        sock.sendall((head + "Transfer-Encoding: chunked\r\n\r\n").encode())
        chunk = b"%x\r\n" % (64 << 10) + b"x" * (64 << 10) + b"\r\n"
        t0 = time.monotonic()
        resp = b""
        try:
            for _ in range(64 * 16):  # up to 64 MiB
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(2)
        try:
            while not resp.endswith(b"}}"):
                b = sock.recv(65536)
                if not b:
                    break
                resp += b
        except (ConnectionResetError, socket.timeout):
            pass
        sock.close()
        assert status_of(resp) == 413 and b"request_too_large" in resp, resp[:300]
        assert time.monotonic() - t0 < 1.5
        # An oversized Content-Length: 413 before any body is sent.
        resp, first = raw(s, (head + "Content-Length: 10000000000\r\n\r\n").encode(),
                          read_all=False)
        assert status_of(resp) == 413 and first < 1.0, resp
        # Negative and malformed Content-Length: 400.
        for bad in ("-1", "1e3", "0x10", " 12abc"):
            resp, first = raw(s, (head + f"Content-Length: {bad}\r\n\r\n").encode(),
                              read_all=False)
            assert status_of(resp) == 400 and b"invalid_content_length" in resp, (bad, resp)
            assert first < 1.0
        # Both Content-Length and chunked (a smuggling shape): 400.
        resp, _ = raw(s, (head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "0\r\n\r\n").encode(), read_all=False)
        assert status_of(resp) == 400, resp
        grown = (rss_kib(pid, "VmHWM") - idle_peak) / 1024
        print(f"peak RSS grew {grown:.1f} MiB")
        if not UNDER_SANITIZER:
            assert grown < 32, f"peak RSS grew {grown:.1f} MiB"
        # A chunked body within the limit still works.
        body = json.dumps(chat_body(TINY, max_tokens=2)).encode()
        chunks = b"".join(b"%x\r\n" % len(body[i:i + 7]) + body[i:i + 7] + b"\r\n"
                          for i in range(0, len(body), 7)) + b"0\r\n\r\n"
        resp, _ = raw(s, (head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
                      .encode() + chunks, timeout=60)
        assert status_of(resp) == 200, resp[:300]


def test_bodies_buffered_at_once_are_bounded_together():
    """100 clients each send 1,000,000 of a 1 MiB body and stop: the service buffers at most
    64 MiB of them (its budget with --max-body 1MiB), answers the rest 503, and still serves."""
    with Server("--models-dir", str(MODELS), "--max-body", "1MiB") as s:
        idle = rss_kib(s.proc.pid)
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Content-Type: application/json\r\nContent-Length: {1 << 20}\r\n\r\n").encode()
        socks = []
        for _ in range(100):
            c = socket.create_connection((s.host, s.port), timeout=5)
            c.sendall(head)
            try:
                c.sendall(b" " * 1_000_000)
            except OSError:
                pass
            socks.append(c)
        # The service reads the bodies as they arrive and refuses the ones over its budget; under
        # a sanitizer that takes seconds (18 refusals had arrived after a fixed 1 s sleep in one
        # ASan run), so poll each socket until enough refusals have come or a deadline passes.
        for c in socks:
            c.setblocking(False)
        got = {id(c): b"" for c in socks}
        deadline = time.monotonic() + (30.0 if UNDER_SANITIZER else 5.0)
        while True:
            time.sleep(0.2)
            for c in socks:
                try:
                    got[id(c)] += c.recv(65536)
                except (BlockingIOError, ConnectionResetError):
                    pass
            busy = sum(1 for v in got.values() if b"server_busy" in v)
            if busy >= 20 or time.monotonic() > deadline:
                break
        grown = (rss_kib(s.proc.pid) - idle) / 1024
        print(f"{busy} of 100 partial bodies refused 503; RSS grew {grown:.0f} MiB")
        assert busy >= 20, busy
        if not UNDER_SANITIZER:
            assert grown < 64 + 32, grown
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
        assert st == 200, j
        for c in socks:
            c.close()


# ---- 5. Slow clients and thread bounds -----------------------------------------------------

def test_slowloris_does_not_block_health_or_requests():
    """200 connections that each send one header line per second (and reconnect when cut) for
    12 s (the issue's 30 s, scaled: the connections are held by one event loop, not threads, so
    the duration does not change the outcome; --request-timeout 4 makes the server cut them
    three times over). Every /health probe answers within 1 s and generations keep
    completing."""
    duration = float(os.environ.get("EBB_SLOWLORIS_S", "12"))  # the full run: 30
    with Server("--models-dir", str(MODELS), "--parallel", "1", "--max-queue", "2",
                "--request-timeout", "4") as s:
        stop = time.monotonic() + duration
        socks = []

        def open_slow():
            c = socket.create_connection((s.host, s.port), timeout=5)
            c.setblocking(False)
            c.send(b"GET /v1/runtime HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            return c

        for _ in range(200):
            socks.append(open_slow())
        stop = time.monotonic() + duration
        cut = [0]

        def drip():
            while time.monotonic() < stop:
                for i, c in enumerate(socks):
                    try:
                        c.send(b"X-Slow: 1\r\n")
                        try:
                            c.recv(4096)  # the 408, or the close after it: reconnect
                            raise ConnectionResetError
                        except BlockingIOError:
                            pass
                    except OSError:
                        cut[0] += 1
                        c.close()
                        socks[i] = open_slow()
                time.sleep(1.0)

        t = threading.Thread(target=drip)
        t.start()
        worst = 0.0
        probes = done = 0
        try:
            while time.monotonic() < stop:
                t0 = time.monotonic()
                st, _, _ = s.get("/health", timeout=5)
                worst = max(worst, time.monotonic() - t0)
                assert st == 200
                probes += 1
                st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=4),
                                  timeout=30)
                assert st == 200, j
                done += 1
                time.sleep(0.2)
        finally:
            t.join()
            for c in socks:
                c.close()
        print(f"{probes} probes, worst {worst * 1000:.0f} ms; {done} generations; "
              f"{cut[0]} slow connections cut")
        assert worst < 1.0
        assert done >= 5
        assert cut[0] >= 200, "the request deadline is for the whole request, not per line"


def test_health_and_ready_answer_while_every_slot_is_busy():
    with Server("--models-dir", str(MODELS), "--parallel", "1", "--max-queue", "0") as s:
        conns = []
        for _ in range(3):
            c = s.conn()
            c.request("POST", "/v1/chat/completions",
                      body=json.dumps(chat_body(TINY, max_tokens=1500, stream=True)),
                      headers={"Content-Type": "application/json"})
            conns.append(c)
        time.sleep(0.5)
        for path in ("/health", "/ready"):
            t0 = time.monotonic()
            st, _, _ = s.get(path, timeout=5)
            assert st == 200 and time.monotonic() - t0 < 1.0
        for c in conns:
            c.close()


def test_thread_bounds_are_refused_at_start():
    for flags, bound in ((["--parallel", "2147483647"], "64"), (["--parallel", "1000"], "64"),
                         (["--max-queue", "100000"], "256")):
        r = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port", "0", *flags],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and flags[0] in r.stderr and bound in r.stderr, r.stderr
    # At the bounds the threads stay a few hundred (workers: 64 + 256 + 8, probes 2, the loop).
    with Server("--models-dir", str(MODELS), "--parallel", "64", "--max-queue", "256") as s:
        assert s.get("/health")[0] == 200  # listening: every thread is started
        threads = int(rss_kib(s.proc.pid, "Threads"))
        print(f"threads at --parallel 64 --max-queue 256: {threads}")
        assert 64 + 256 + 8 + 2 < threads < 400, threads


# ---- 6. Pipelining -------------------------------------------------------------------------

def test_three_pipelined_requests_are_answered_in_order():
    with Server("--models-dir", str(MODELS)) as s:
        body = json.dumps(chat_body(TINY, max_tokens=2))
        reqs = (f"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: one\r\n\r\n"
                f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: two\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
                f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: three\r\n"
                f"Connection: close\r\n\r\n").encode()
        resp, _ = raw(s, reqs, timeout=60)
        heads = [p for p in resp.split(b"HTTP/1.1 ")[1:]]
        assert len(heads) == 3, resp
        ids = [h.split(b"X-Request-Id: ")[1].split(b"\r\n")[0] for h in heads]
        assert ids == [b"one", b"two", b"three"]
        assert all(h.startswith(b"200") for h in heads)


# ---- 7. The CLI sends a key only to its own service ----------------------------------------

class Recorder(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_GET(self):
        Recorder.seen.append(dict(self.headers))
        body = b'{"object": "list", "data": [], "models": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_cli_never_sends_the_service_key_elsewhere(tmp_path):
    (tmp_path / "key").write_text(KEY)
    home = tmp_path / "home"
    env = {**os.environ, "EBB_HOME": str(home)}
    env.pop("EBB_API_KEY", None)
    env.pop("EBB_URL", None)
    rec = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=rec.serve_forever, daemon=True).start()
    other = f"http://127.0.0.1:{rec.server_address[1]}"
    try:
        with Server("--models-dir", str(MODELS), "--api-key-file", str(tmp_path / "key"),
                    "--state-dir", str(home)) as s:
            # Its own service (found through the state file): the key goes with it.
            r = subprocess.run([EBB, "model", "list"], env=env, capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 0 and TINY in r.stdout, r.stderr
            r = subprocess.run([EBB, "model", "list", "--url", s.url], env=env,
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stderr
            # Another URL: no key, unless given explicitly.
            r = subprocess.run([EBB, "model", "list", "--url", other], env=env,
                               capture_output=True, text=True, timeout=30)
            assert r.returncode == 0, r.stderr
            assert Recorder.seen and all("Authorization" not in h for h in Recorder.seen)
            r = subprocess.run([EBB, "model", "list", "--url", other, "--api-key", "explicit"],
                               env=env, capture_output=True, text=True, timeout=30)
            assert Recorder.seen[-1].get("Authorization") == "Bearer explicit"
            assert all(KEY not in json.dumps(h) for h in Recorder.seen)
    finally:
        rec.shutdown()


# ---- 8. Model folders are confined ---------------------------------------------------------

def test_model_folder_files_must_stay_inside(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    outside = tmp_path / "outside.onnx"
    cfg = json.loads((MODELS / TINY / "genai_config.json").read_text())
    shutil.copy(MODELS / TINY / cfg["model"]["decoder"]["filename"], outside)
    cases = {}
    for name, filename in (("dotdot", "../outside.onnx"), ("absolute", str(outside))):
        d = models / name
        shutil.copytree(MODELS / TINY, d)
        c = json.loads((d / "genai_config.json").read_text())
        c["model"]["decoder"]["filename"] = filename
        (d / "genai_config.json").write_text(json.dumps(c))
        cases[name] = filename
    d = models / "symlink"
    shutil.copytree(MODELS / TINY, d)
    (d / "tokenizer.json").unlink()
    shutil.copy(MODELS / TINY / "tokenizer.json", tmp_path / "tokenizer.json")
    (d / "tokenizer.json").symlink_to(tmp_path / "tokenizer.json")
    cases["symlink"] = "tokenizer.json"
    d = models / "inside"
    shutil.copytree(MODELS / TINY, d)
    (d / "link.json").symlink_to(d / "tokenizer.json")  # a symlink within is fine
    with Server("--models-dir", str(models)) as s:
        for name, filename in cases.items():
            st, _, j = s.post(f"/v1/models/{name}/load", {})
            assert st == 400, (name, j)
            assert filename in j["error"]["message"] and "outside" in j["error"]["message"], j
        st, _, j = s.post("/v1/models/inside/load", {})
        assert st == 200, j


# ---- 9. Start-up flags ---------------------------------------------------------------------

def test_host_and_port_flags():
    r = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port", "0", "--host",
                        "0.0.0.0"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "--insecure-no-key" in r.stderr and "API key" in r.stderr
    with Server("--models-dir", str(MODELS), "--host", "0.0.0.0", "--insecure-no-key") as s:
        assert s.port > 0
    for bad in ("1234abc", "080", "0x50", "-1", "65536", "", " 80"):
        r = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port", bad],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "is not a port" in r.stderr, (bad, r.stderr)


def test_the_ollama_routes_refuse_foreign_origins_and_hosts_as_v1_does():
    """Issue 41: every /api/* route answers a cross-origin request and a rebinding Host exactly
    as /v1/* does (403 origin_not_allowed, 403 host_not_allowed), in Ollama's error shape."""
    with Server("--models-dir", str(MODELS)) as s:
        routes = [("GET", "/api/tags"), ("GET", "/api/ps"), ("GET", "/api/version"),
                  ("POST", "/api/generate"), ("POST", "/api/chat"), ("POST", "/api/embed"),
                  ("POST", "/api/embeddings"), ("POST", "/api/show"), ("POST", "/api/pull"),
                  ("DELETE", "/api/delete"), ("GET", "/v1/models"),
                  ("POST", "/v1/chat/completions")]
        for method, path in routes:
            body = {"model": TINY, "prompt": "hi"} if method != "GET" else None
            st, _, j = s.request(method, path, body,
                                 headers={"Origin": "http://attacker.example"})
            code = j["code"] if path.startswith("/api/") else j["error"]["code"]
            assert (st, code) == (403, "origin_not_allowed"), (path, st, j)
            st, _, j = s.request(method, path, body,
                                 headers={"Host": "attacker.example:11435",
                                          "Origin": "http://attacker.example:11435"})
            code = j["code"] if path.startswith("/api/") else j["error"]["code"]
            assert (st, code) == (403, "host_not_allowed"), (path, st, j)
        assert not loaded(s, TINY), "a refused request loaded the model"
