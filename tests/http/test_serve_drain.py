"""Graceful drain, readiness that means "can serve", and the signals gateways read
(docs/http_api.md#draining-and-readiness, docs/metrics.md#signals-for-gateways), against real
`ebb serve` processes on free loopback ports.

The slow clients here are real TCP clients that stop reading: with a small receive buffer and a
small MSS (which keeps the server's send buffer small too), a stream fills the socket buffers
within a few hundred tokens and the server's slot then blocks in its write, as it does with any
client that stops reading. Nothing in the server is faked or hooked.

Run by ctest (serve_drain_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import json
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

from serve_util import EBB, MODELS, Server, chat_body, chunked_body_ended, wait_until

TINY = "llama-tiny-fp32"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def serve(*extra):
    return Server("--model", f"{TINY}={MODELS / TINY}", "--log-level", "warn", *extra)


class SlowStream:
    """A streamed chat request over a socket whose reader is paused until resume()."""

    def __init__(self, srv, max_tokens=1800, path="/v1/chat/completions"):
        self.sock = socket.socket()
        # Set before connect: the advertised window and MSS stay small, so the server's send
        # buffer (sized from the MSS) is small as well and fills quickly.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        self.sock.settimeout(60)
        self.sock.connect((srv.host, srv.port))
        body = json.dumps(chat_body(TINY, "tell me a long story", max_tokens=max_tokens,
                                    stream=True)).encode()
        self.sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {srv.host}:{srv.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body)
        self.data = b""
        head = self._read_until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])

    def _read_until(self, marker):
        while marker not in self.data:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            self.data += chunk
        return self.data

    def read_all(self):
        """Reads to the end of the stream; returns the data events."""
        while not chunked_body_ended(self.data):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.data += chunk
        return [line[6:].strip().decode() for line in self.data.split(b"\n")
                if line.startswith(b"data: ")]

    def close(self):
        self.sock.close()


def ready(srv):
    status, _, body = srv.get("/ready", timeout=5)
    return status, body


def test_probe_aliases_answer_like_their_originals_and_are_labels():
    with serve("--api-key", "k1") as srv:
        for path in ["/health", "/health/liveliness", "/v2/health/live"]:
            s, _, body = srv.get(path)  # no key: the probes are exempt
            assert (s, body) == (200, {"status": "ok"}), path
        for path in ["/ready", "/health/readiness", "/v2/health/ready"]:
            s, _, body = srv.get(path)
            assert (s, body) == (200, {"status": "ready"}), path
        auth = {"Authorization": "Bearer k1"}
        # KServe's prefix: the OpenAI routes again, with the key.
        assert srv.get("/openai/v1/models")[0] == 401
        s, _, j = srv.get("/openai/v1/models", headers=auth)
        assert s == 200 and TINY in [m["id"] for m in j["data"]]
        s, _, j = srv.post("/openai/v1/chat/completions", chat_body(TINY), headers=auth)
        assert s == 200 and j["object"] == "chat.completion", j
        # The Host/Origin guard covers the aliases as every other route.
        assert srv.get("/v2/health/ready", headers={"Host": "evil.test"})[0] == 403
        assert srv.get("/health/readiness", headers={"Origin": "http://evil.test"})[0] == 403
        routes = ["/health/liveliness", "/v2/health/live", "/health/readiness",
                  "/v2/health/ready", "/openai/v1/models", "/openai/v1/chat/completions"]
        # A response is counted after its last byte is written (httplib's logger), so on a busy
        # machine the count may trail the client by a moment.
        assert wait_until(lambda: all(f'route="{r}"' in srv.get("/metrics", headers=auth)[2]
                                      for r in routes), 5)
        srv.get("/openai/v1/nonsense", headers=auth)
        # Counted after its last byte, as above: wait for it (under ASan it trailed the 404).
        assert wait_until(lambda: 'route="other"' in srv.get("/metrics", headers=auth)[2], 5)
        s, _, text = srv.get("/metrics", headers=auth)
        assert "nonsense" not in text and 'route="other"' in text


def test_sigterm_drains_a_stream_refuses_new_work_and_exits_0():
    with serve("--drain-timeout", "20", "--parallel", "2") as srv:
        kept = srv.conn()  # a kept-alive connection opened before the drain
        kept.request("GET", "/v1/models")
        r = kept.getresponse()
        assert r.status == 200 and r.getheader("Connection") != "close"
        r.read()
        stream = SlowStream(srv)
        assert stream.status == 200
        assert wait_until(lambda: srv.metric("ebb_requests_running") == 1, 10)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        # /ready turns 503 at once (the signal watcher polls every 0.1 s), /health stays 200.
        assert wait_until(lambda: ready(srv)[0] == 503, 2.0, step=0.01), ready(srv)
        print(f"SIGTERM to /ready 503: {(time.monotonic() - t0) * 1e3:.0f} ms")
        s, body = ready(srv)
        assert body["status"] == "draining" and "SIGTERM" in body["reason"], body
        assert srv.get("/v2/health/ready")[0] == 503
        assert srv.get("/health")[0] == 200
        assert srv.metric("ebb_draining") == 1 and srv.metric("ebb_ready") == 0
        # A new request on the kept-alive connection: 503 draining, Retry-After, then closed.
        kept.request("POST", "/v1/chat/completions", body=json.dumps(chat_body(TINY)),
                     headers={"Content-Type": "application/json"})
        r = kept.getresponse()
        err = json.loads(r.read())
        assert r.status == 503 and err["error"]["code"] == "draining", err
        assert r.getheader("Retry-After") == "1"
        assert r.getheader("Connection") == "close"
        kept.close()
        # ... and on a new connection, even a request that would be a 400.
        s, h, err = srv.post("/v1/completions", raw="{not json")
        assert s == 503 and err["error"]["code"] == "draining" and h["retry-after"] == "1"
        assert srv.proc.poll() is None, "exited while a request was still running"
        # The stream was paused all along; it now completes in full.
        events = stream.read_all()
        stream.close()
        assert events[-1] == "[DONE]", events[-3:]
        finish = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1]
                  if json.loads(e).get("choices")]
        assert finish[-1] == "length", "the stream was cut instead of finishing"
        assert srv.proc.wait(20) == 0
        took = time.monotonic() - t0
        print(f"SIGTERM to exit 0, a {len(events)}-event stream finished meanwhile: {took:.2f} s")
        assert took < 20


def test_drain_timeout_cuts_a_stuck_stream_and_still_exits_0():
    with serve("--drain-timeout", "2") as srv:
        stream = SlowStream(srv)  # never read: the slot blocks in its write
        assert wait_until(lambda: srv.metric("ebb_requests_running") == 1, 10)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(15) == 0
        took = time.monotonic() - t0
        assert 1.8 < took < 2 + 3, took
        print(f"SIGTERM to exit 0 with a stuck stream (--drain-timeout 2): {took:.2f} s")
        _, _, err = srv.stop()
        assert "drain timeout: 1 request(s) still running are cut" in err
        stream.close()


def test_sigterm_waits_for_a_response_still_being_written():
    """A response whose handler has returned but whose bytes are still going out holds no
    admission slot (a non-streamed completion leaves its slot before its body is written); the
    drain used to stop the server as soon as no slot was held, cutting it. Here: pipelined GETs
    of the memory page on a socket that stops reading, so one response blocks in its write with
    nothing running."""
    with serve("--drain-timeout", "20") as srv:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        s.settimeout(30)
        s.connect((srv.host, srv.port))
        n = 100  # ~18 KiB each: far more than the socket buffers hold
        s.sendall(f"GET / HTTP/1.1\r\nHost: {srv.host}:{srv.port}\r\n\r\n".encode() * n)
        time.sleep(1.0)  # the buffers fill; the server's worker blocks writing a response
        assert srv.metric("ebb_requests_running") == 0 and srv.metric("ebb_queue_depth") == 0
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert srv.proc.poll() is None, "the drain stopped the server during a response's write"
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        s.close()
        # Whole responses only: the memory pages served before the drain, then 503 draining
        # with Connection: close for the next pipelined request, then the end.
        statuses = []
        rest = data
        while rest:
            head, sep, rest = rest.partition(b"\r\n\r\n")
            assert sep, f"a response was cut in its head after {len(statuses)} whole ones"
            lines = head.decode().split("\r\n")
            hdrs = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
            length = int(hdrs["content-length"])
            assert len(rest) >= length, (f"response {len(statuses) + 1} was cut: "
                                         f"{len(rest)} of {length} bytes")
            rest = rest[length:]
            statuses.append(int(lines[0].split()[1]))
        assert statuses[0] == 200 and statuses[-1] == 503, statuses
        assert set(statuses[:-1]) == {200}, statuses
        assert srv.proc.wait(20) == 0
        print(f"pipelined {n}: {len(statuses) - 1} pages whole, then 503 draining, exit 0")


def test_readiness_fails_when_no_slot_makes_progress_and_recovers():
    with serve("--parallel", "1", "--ready-stall-timeout", "2") as srv:
        assert ready(srv)[0] == 200
        stream = SlowStream(srv)  # its slot blocks once the socket buffers are full
        queued = []

        def waiter():
            queued.append(srv.post("/v1/chat/completions", chat_body(TINY, max_tokens=4))[0])

        t = threading.Thread(target=waiter)
        t.start()
        assert wait_until(lambda: srv.metric("ebb_queue_depth") == 1, 10)
        # Wedged: a request runs, one waits, no token for 2 s.
        t0 = time.monotonic()
        assert wait_until(lambda: ready(srv)[0] == 503, 15)
        print(f"queued to /ready 503 stalled (--ready-stall-timeout 2): "
              f"{time.monotonic() - t0:.2f} s")
        s, body = ready(srv)
        assert body["status"] == "stalled" and "1 run and 1 wait" in body["reason"], body
        assert srv.get("/health/readiness")[0] == 503 and srv.get("/health")[0] == 200
        assert srv.metric("ebb_ready") == 0 and srv.metric("ebb_draining") == 0
        # The client goes away: the stream is cancelled, the queue moves, readiness comes back.
        stream.close()
        t.join(30)
        assert queued == [200]
        assert wait_until(lambda: ready(srv)[0] == 200, 5), ready(srv)
        assert srv.metric("ebb_ready") == 1


def test_readiness_ignores_idle_time_and_a_long_request_that_keeps_producing():
    small = "llama-small-int4"
    stall = 1  # --ready-stall-timeout, whole seconds
    with Server("--model", f"{small}={MODELS / small}", "--parallel", "1",
                "--ready-stall-timeout", str(stall)) as srv:
        time.sleep(stall + 0.5)  # idle longer than the stall timeout: still ready
        assert ready(srv)[0] == 200
        # Load it, and measure this build's decode rate on this machine: the long request is
        # sized from it to run ~4x the stall timeout (a fixed max_tokens ran 600 tokens in 1.4 s
        # on one CI machine and would take a minute under ASan on another).
        s, _, body = srv.post("/v1/chat/completions", chat_body(small, max_tokens=2))
        assert s == 200, body
        t0 = time.monotonic()
        s, _, body = srv.post("/v1/chat/completions", chat_body(small, max_tokens=64))
        assert s == 200, body
        rate = body["usage"]["completion_tokens"] / (time.monotonic() - t0)
        # The 64-token rate includes the prefill and a cold start, so it can read low (198 tokens/s
        # against ~375 in the long run here): 4x leaves the long request well past the timeout.
        want = min(1200, max(64, int(rate * 4 * stall)))  # 1,200: ~4 s here, context 2,048
        results = []
        t = threading.Thread(target=lambda: results.append(
            srv.post("/v1/chat/completions", chat_body(small, max_tokens=want), timeout=120)))
        t0 = time.monotonic()
        t.start()
        states = []
        while t.is_alive():
            states.append(ready(srv)[0])
            time.sleep(0.05)
        t.join()
        took = time.monotonic() - t0
        s, _, body = results[0]
        assert s == 200, body
        made = body["usage"]["completion_tokens"]
        print(f"{made} tokens (asked {want} at {rate:.0f} tokens/s) in {took:.2f} s, "
              f"{len(states)} /ready polls")
        # Not streamed: only its tokens (through Generate's text callback) count as progress.
        assert took > stall + 0.5, (f"{made} tokens took {took:.2f} s: not long enough past the "
                                    f"{stall} s stall timeout to show anything")
        assert set(states) == {200}, states


def test_queue_running_and_kv_gauges_move_under_load_and_pass_promtool(tmp_path):
    kv_max = 64 << 20
    with serve("--parallel", "1", "--max-queue", "8", "--memory-limit", "512MiB",
               "--option", "kv_cache.mode=static", "--option", f"kv_cache.max_bytes={kv_max}",
               "--ready-stall-timeout", "0") as srv:
        srv.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))  # load the model
        assert srv.metric("ebb_requests_running") == 0 and srv.metric("ebb_queue_depth") == 0
        assert srv.metric("ebb_kv_cache_usage_ratio") == 0
        limit = srv.metric("ebb_memory_limit_bytes")
        idle_headroom = srv.metric("ebb_memory_headroom_bytes")
        assert limit == 512 << 20 and 0 < idle_headroom < limit
        stream = SlowStream(srv)  # holds the one slot
        n = 3
        done = []
        threads = [threading.Thread(target=lambda: done.append(
            srv.post("/v1/chat/completions", chat_body(TINY, max_tokens=4))[0]))
            for _ in range(n)]
        for t in threads:
            t.start()
        assert wait_until(lambda: srv.metric("ebb_queue_depth") == n, 10)
        assert srv.metric("ebb_requests_running") == 1
        busy = srv.metrics()
        m = srv.model(TINY)
        in_use = m["kv"]["in_use_bytes"]
        assert in_use > 0
        ratio = srv.metric("ebb_model_kv_usage_ratio", model=TINY)
        budget = srv.metric("ebb_model_kv_budget_bytes", model=TINY)
        assert budget == kv_max, "kv_cache.max_bytes is smaller than the limit's headroom"
        assert ratio == pytest.approx(in_use / kv_max)
        headroom = srv.metric("ebb_memory_headroom_bytes")
        assert headroom == pytest.approx(idle_headroom - in_use)
        overall = srv.metric("ebb_kv_cache_usage_ratio")
        assert overall == pytest.approx(in_use / (in_use + headroom))
        print(f"under load: queue {n}, running 1, KV in use {in_use} B, model ratio {ratio:.4f} "
              f"of {budget:.0f} B, overall {overall:.4f}, headroom {headroom:.0f} B")
        (tmp_path / "busy.prom").write_text(busy)
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=busy, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        stream.close()
        for t in threads:
            t.join(60)
        assert done == [200] * n
        assert wait_until(lambda: srv.metric("ebb_queue_depth") == 0
                          and srv.metric("ebb_requests_running") == 0, 10)
        assert srv.metric("ebb_model_kv_usage_ratio", model=TINY) == 0
        assert srv.metric("ebb_memory_headroom_bytes") == idle_headroom
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=srv.metrics(),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def test_flags_are_checked():
    for flag, value in [("--drain-timeout", "-1"), ("--ready-stall-timeout", "-5")]:
        r = subprocess.run([EBB, "serve", "--port", "0", "--model", f"{TINY}={MODELS / TINY}",
                            flag, value], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "out of range" in r.stderr, r.stderr
