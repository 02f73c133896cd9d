"""Integration tests of `ebb serve` over real HTTP on a loopback port (docs/http_api.md).

Run by ctest (serve_http_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from json_schema_lite import load_schema, validate
from serve_util import (EBB, MODELS, Server, charged_weights_bytes, chat_body, wait_until,
                        weights_bytes)

TINY = "llama-tiny-fp32"
BERT = "bert-tiny-fp32"


ADMIN = "test-admin-key"
AS_ADMIN = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def srv():
    with Server("--models-dir", str(MODELS), "--parallel", "2", "--admin-key", ADMIN) as s:
        yield s


def sse_events(resp):
    """Yields the data of each server-sent event of an http.client response."""
    buf = b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            return
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    yield line[6:].decode()


def stream(srv, path, body):
    c = srv.conn()
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    assert r.getheader("Content-Type").startswith("text/event-stream")
    events = list(sse_events(r))
    c.close()
    return events


def test_chat_completion_and_models(srv):
    s, h, j = srv.post("/v1/chat/completions", chat_body(TINY))
    assert s == 200, j
    assert h["x-request-id"]
    assert j["object"] == "chat.completion"
    assert j["model"] == TINY
    choice = j["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"]
    assert choice["finish_reason"] == "length"
    u = j["usage"]
    assert u["completion_tokens"] == 8 and u["prompt_tokens"] > 0
    assert u["total_tokens"] == u["prompt_tokens"] + 8

    s, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": "once upon a time",
                                           "max_tokens": 5, "temperature": 0})
    assert s == 200, j
    assert j["object"] == "text_completion" and j["choices"][0]["text"]
    assert j["usage"]["completion_tokens"] == 5

    s, _, j = srv.get("/v1/models")
    assert s == 200 and j["object"] == "list"
    ids = {m["id"] for m in j["data"]}
    assert TINY in ids and BERT in ids
    loaded = {m["id"]: m["loaded"] for m in j["data"]}
    assert loaded[TINY] is True
    s, _, j = srv.get(f"/v1/models/{TINY}")
    assert s == 200 and j["id"] == TINY and j["object"] == "model"


def test_client_request_id_is_echoed(srv):
    s, h, _ = srv.get("/health", headers={"X-Request-Id": "my-trace-42"})
    assert s == 200 and h["x-request-id"] == "my-trace-42"


def test_stream_matches_non_stream_and_reports_usage(srv):
    body = chat_body(TINY, "tell me a story", max_tokens=12)
    _, _, whole = srv.post("/v1/chat/completions", body)
    events = stream(srv, "/v1/chat/completions",
                    {**body, "stream": True, "stream_options": {"include_usage": True}})
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == whole["choices"][0]["message"]["content"]
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0]["choices"][0]["finish_reason"] == "length"
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"] == whole["usage"]
    assert all(c["usage"] is None for c in chunks[:-1])

    # Without include_usage there is no usage chunk and no usage field.
    events = stream(srv, "/v1/completions", {"model": TINY, "prompt": "hi", "max_tokens": 3,
                                             "temperature": 0, "stream": True})
    chunks = [json.loads(e) for e in events[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_stop_strings_and_greedy_equals_ebb_generate(srv, tmp_path):
    messages = [{"role": "user", "content": "what is the capital of france"}]
    (tmp_path / "m.json").write_text(json.dumps(messages))
    out = subprocess.run([EBB, "generate", str(MODELS / TINY), "--messages",
                          str(tmp_path / "m.json"), "--max-new-tokens", "10", "--json"],
                         capture_output=True, text=True, check=True)
    expected = json.loads(out.stdout)["completion"][0]
    assert expected
    s, _, j = srv.post("/v1/chat/completions", {"model": TINY, "messages": messages,
                                                "max_completion_tokens": 10, "temperature": 0})
    assert s == 200, j
    assert j["choices"][0]["message"]["content"] == expected
    # A stop string taken from the middle of that text ends the completion before it.
    words = expected.split()
    if len(words) >= 3:
        stop = words[2]
        s, _, j = srv.post("/v1/chat/completions", {"model": TINY, "messages": messages,
                                                    "max_tokens": 10, "temperature": 0,
                                                    "stop": [stop, "zzzz"]})
        assert s == 200, j
        assert j["choices"][0]["finish_reason"] == "stop"
        assert j["choices"][0]["message"]["content"] == expected[:expected.index(stop)]


def test_embeddings_float_and_base64(srv):
    s, _, f = srv.post("/v1/embeddings", {"model": BERT, "input": ["hello world", "a"]})
    assert s == 200, f
    assert f["object"] == "list" and len(f["data"]) == 2
    assert [d["index"] for d in f["data"]] == [0, 1]
    v0 = f["data"][0]["embedding"]
    assert isinstance(v0, list) and len(v0) > 0
    assert abs(sum(x * x for x in v0) - 1.0) < 1e-4  # L2-normalised
    assert f["usage"]["prompt_tokens"] > 0
    s, _, b = srv.post("/v1/embeddings", {"model": BERT, "input": ["hello world", "a"],
                                          "encoding_format": "base64"})
    assert s == 200
    raw = base64.b64decode(b["data"][0]["embedding"])
    decoded = struct.unpack(f"<{len(raw) // 4}f", raw)
    assert len(decoded) == len(v0)
    assert max(abs(a - c) for a, c in zip(decoded, v0)) < 1e-6
    s, _, d = srv.post("/v1/embeddings", {"model": BERT, "input": "hello world",
                                          "dimensions": 8})
    assert s == 200 and len(d["data"][0]["embedding"]) == 8


def error_of(status, j, code=None, param=None):
    assert isinstance(j, dict) and "error" in j, j
    e = j["error"]
    assert set(e) == {"message", "type", "param", "code", "ebb_code"}, e
    assert e["message"]
    # The ebb::ErrorCode the failure has in process (one table; docs/http_api.md#errors).
    by_status = {400: "invalid_argument", 401: "failed_precondition", 403: "failed_precondition",
                 404: "not_found", 408: "deadline_exceeded", 409: "failed_precondition",
                 413: "invalid_argument", 415: "invalid_argument", 429: "resource_exhausted",
                 499: "cancelled", 503: "unavailable", 504: "deadline_exceeded",
                 507: "resource_exhausted", 500: "internal"}
    want = "failed_precondition" if e["code"] == "wrong_model_kind" else by_status.get(status)
    assert want is None or e["ebb_code"] == want, (status, e)
    if code is not None:
        assert e["code"] == code, e
    if param is not None:
        assert e["param"] == param, e
    return e


@pytest.mark.parametrize("body,status,code,param", [
    ("{bad json", 400, "invalid_json", None),
    ("[1,2]", 400, "invalid_json", None),
    ('{"messages": [{"role": "user", "content": "x"}]}', 400, "missing", "model"),
    ('{"model": "llama-tiny-fp32"}', 400, "missing", "messages"),
    ('{"model": "llama-tiny-fp32", "messages": []}', 400, "invalid_value", "messages"),
    ('{"model": "llama-tiny-fp32", "messages": [{"role": "user", "content": "x"}], "n": 2}',
     400, "unsupported_value", "n"),
    ('{"model": "llama-tiny-fp32", "messages": [{"role": "user", "content": "x"}], '
     '"temperature": 5}', 400, "invalid_value", "temperature"),
    ('{"model": "llama-tiny-fp32", "messages": [{"role": "user", "content": "x"}], '
     '"max_tokens": "ten"}', 400, "invalid_value", "max_tokens"),
    ('{"model": "llama-tiny-fp32", "messages": [{"role": "user", "content": "x"}], '
     '"options": {"temprature": 1}}', 400, "invalid_value", "options.temprature"),
    ('{"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]}',
     404, "model_not_found", "model"),
    ('{"model": "../../etc", "messages": [{"role": "user", "content": "x"}]}',
     400, None, "model"),
    ('{"model": "..", "messages": [{"role": "user", "content": "x"}]}', 400, None, "model"),
    ('{"model": "bert-tiny-fp32", "messages": [{"role": "user", "content": "x"}]}',
     400, "wrong_model_kind", "model"),
])
def test_chat_errors(srv, body, status, code, param):
    s, h, j = srv.post("/v1/chat/completions", raw=body)
    assert s == status, j
    error_of(s, j, code, param)


def test_more_errors(srv):
    s, _, j = srv.post("/v1/embeddings", {"model": TINY, "input": "x"})
    assert s == 400
    error_of(s, j, "wrong_model_kind", "model")
    s, _, j = srv.post("/v1/embeddings", {"model": BERT, "input": [""]})
    assert s == 400
    error_of(s, j)
    s, _, j = srv.get("/v1/nothing-here")
    assert s == 404
    error_of(s, j, "unknown_route")
    s, _, j = srv.get("/v1/models/no-such-model")
    assert s == 404
    error_of(s, j, "model_not_found")
    # A prompt over the context: 400 context_length_exceeded, and the model stays usable.
    s, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": "hello " * 3000,
                                           "max_tokens": 4})
    assert s == 400
    e = error_of(s, j, "context_length_exceeded", "prompt")
    assert "2048" in e["message"]
    s, _, j = srv.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
    assert s == 200


def test_path_traversal_and_symlinks_out_of_the_models_dir_are_refused(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    shutil.copytree(MODELS / TINY, models / "inside")
    (models / "outside").symlink_to(MODELS / "llama-tiny-int4")
    with Server("--models-dir", str(models)) as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("inside", max_tokens=2))
        assert st == 200, j
        st, _, j = s.post("/v1/chat/completions", chat_body("outside", max_tokens=2))
        assert st == 400
        assert "outside the models directory" in error_of(st, j)["message"]
        for bad in ["../models/inside", "/etc", "inside/../inside"]:
            st, _, j = s.post("/v1/chat/completions", chat_body(bad, max_tokens=2))
            assert st == 400, (bad, j)
        st, _, j = s.post("/v1/models/..%2F..%2Fetc/load", {})
        assert st in (400, 404), j
        error_of(st, j)


def test_body_limit_and_api_key(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("s3cret\n")
    with Server("--models-dir", str(MODELS), "--max-body", "1MiB",
                "--api-key-file", str(key_file)) as s:
        auth = {"Authorization": "Bearer s3cret"}
        st, h, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
        assert st == 401
        error_of(st, j, "invalid_api_key")
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2),
                          headers={"Authorization": "Bearer wrong"})
        assert st == 401
        error_of(st, j, "invalid_api_key")
        st, _, j = s.get("/health")
        assert st == 200  # liveness needs no key
        st, h, page = s.get("/")
        assert st == 200 and h["content-type"].startswith("text/html")  # the memory page too
        assert "/v1/runtime" in page and "Authorization" in page
        st, _, j = s.post("/")
        assert st == 401  # only GET / is exempt
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2), headers=auth)
        assert st == 200, j
        # A 2 MiB body over the 1 MiB limit.
        big = json.dumps(chat_body(TINY, "x" * (2 << 20)))
        try:
            st, _, j = s.post("/v1/chat/completions", raw=big, headers=auth)
            assert st == 413
            error_of(st, j, "request_too_large")
        except (BrokenPipeError, ConnectionResetError):
            # The server answered 413 and closed before the client finished sending; read the
            # answer over a raw socket instead.
            sock = socket.create_connection((s.host, s.port))
            head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    f"s3cret\r\nContent-Type: application/json\r\nContent-Length: {len(big)}"
                    "\r\n\r\n").encode()
            sock.sendall(head)
            resp = sock.recv(65536).decode()
            sock.close()
            assert resp.startswith("HTTP/1.1 413"), resp
            assert "request_too_large" in resp
        st, _, _ = s.get("/v1/runtime", headers=auth)
        assert st == 200


def test_queue_full_gives_429_with_retry_after_and_memory_budget_gives_507(tmp_path):
    with Server("--models-dir", str(MODELS), "--parallel", "1", "--max-queue", "0") as s:
        c = s.conn()
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps(chat_body(TINY, max_tokens=1500, stream=True)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        it = sse_events(r)
        next(it)
        next(it)  # the generation is running
        st, h, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
        assert st == 429
        assert int(h["retry-after"]) >= 1
        error_of(st, j, "queue_full")
        c.close()
        assert wait_until(lambda: s.runtime()["queue"]["running"] == 0, 5)
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
        assert st == 200, j
    w = weights_bytes(MODELS / TINY)
    with Server("--models-dir", str(MODELS), "--memory-limit", str(w // 2)) as s:
        st, h, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))
        assert st == 507, j
        e = error_of(st, j, "memory_budget_exceeded")
        assert "memory.limit" in e["message"] or "memory limit" in e["message"]
        assert "retry-after" in h
        # The budget fits the weights but not a request's KV: still a clean 507.
    with Server("--models-dir", str(MODELS), "--memory-limit", str(w + 1024)) as s:
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=64))
        assert st == 507, j
        assert "KV cache" in error_of(st, j, "memory_budget_exceeded")["message"]
        st, _, j = s.get("/health")
        assert st == 200


def test_client_disconnect_cancels_and_frees_kv(srv):
    before = srv.metric("ebb_requests_total", model=TINY, outcome="cancelled")
    c = srv.conn()
    c.request("POST", "/v1/chat/completions",
              body=json.dumps(chat_body(TINY, max_tokens=2000, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    it = sse_events(r)
    for _ in range(4):
        next(it)
    assert srv.model(TINY)["kv"]["in_use_bytes"] > 0
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.monotonic()
    assert wait_until(lambda: srv.model(TINY)["kv"]["in_use_bytes"] == 0, 1.0), \
        "KV still in use 1 s after the client went away"
    assert wait_until(
        lambda: srv.metric("ebb_requests_total", model=TINY, outcome="cancelled") > before, 1.0)
    print(f"KV freed {time.monotonic() - t0:.3f} s after the disconnect")


def test_memory_endpoints_mirror_the_sdk(srv):
    m = "llama-tiny-int4"
    st, _, j = srv.post(f"/v1/models/{m}/load", {
        "session_options": {"enable_cpu_mem_arena": False},
        "options": {"kv_cache.max_bytes": "64MiB"}, "keep_alive": "10m"})
    assert st == 200, j
    assert j["loaded"] is True
    assert j["options"]["session_options.enable_cpu_mem_arena"] == "false"
    assert j["options"]["kv_cache.max_bytes"] == "64MiB"
    st, _, j = srv.get(f"/v1/models/{m}/runtime")
    assert st == 200, j
    assert j["stats"]["kv"]["max_bytes"] == 64 << 20
    assert j["stats"]["cpu_arena"]["available"] is False
    dups = {"kv", "device", "cpu_arena", "weights", "weights_bytes"}
    assert not dups & set(j), "once, under stats"
    assert j["stats"]["device"]["available"] is False, "a model on the CPU"
    # Loading again with other options is refused; with none it is a no-op.
    st, _, j = srv.post(f"/v1/models/{m}/load", {"options": {"kv_cache.max_bytes": "1MiB"}})
    assert st == 409, j
    st, _, j = srv.post(f"/v1/models/{m}/load", {"options": {"kv_cache.max_byts": "1MiB"}})
    assert st == 400 and "did you mean" in error_of(st, j)["message"]
    st, _, j = srv.post(f"/v1/models/{m}/load", {})
    assert st == 200
    # A run option ebb does not know is an ORT run config entry: the admin's (issue 39).
    st, _, j = srv.request("PATCH", f"/v1/models/{m}/runtime", {
        "run_options": {"my.key": "1"}, "shrink_every": 3})
    assert st == 403 and j["error"]["code"] == "admin_only_option", j
    st, _, j = srv.request("PATCH", f"/v1/models/{m}/runtime", {
        "run_options": {"my.key": "1"}, "shrink_every": 3}, headers=AS_ADMIN)
    assert st == 200, j
    assert j["runtime_options"]["my.key"] == "1"
    assert j["run_options_in_force"]["my.key"] == {"value": "1", "source": "runtime",
                                                   "at_load": ""}
    st, _, j = srv.request("PATCH", f"/v1/models/{m}/runtime", {"run_options": {"my.key": None}})
    assert "my.key" not in j["runtime_options"]
    shrinks = j["stats"]["num_shrinks"]
    st, _, j = srv.request("PATCH", f"/v1/models/{m}/runtime", {"shrink_every": "x"})
    assert st == 400 and error_of(st, j)["param"] == "shrink_every"
    st, _, j = srv.post(f"/v1/models/{m}/runtime/shrink", {"when": "now"})
    assert st == 200 and j["stats"]["num_shrinks"] == shrinks + 1
    st, _, j = srv.post(f"/v1/models/{m}/runtime/shrink", {"when": "after_next_run"})
    assert st == 200 and j["stats"]["num_shrinks"] == shrinks + 1
    srv.post("/v1/chat/completions", chat_body(m, max_tokens=2))
    srv.post("/v1/chat/completions", chat_body(m, max_tokens=2))
    st, _, j = srv.get(f"/v1/models/{m}/runtime")
    assert j["stats"]["num_shrinks"] == shrinks + 2, "after_next_run fires once"
    st, _, j = srv.post(f"/v1/models/{m}/runtime/shrink", {"when": "later"})
    assert st == 400 and error_of(st, j)["param"] == "when"
    st, _, j = srv.post(f"/v1/models/{m}/unload", {})
    assert st == 200, j
    st, _, j = srv.get(f"/v1/models/{m}/runtime")
    assert st == 404 and error_of(st, j)["code"] == "model_not_loaded"
    st, _, j = srv.post(f"/v1/models/{m}/unload", {})
    assert st == 404
    rt = srv.runtime()
    assert {"stats", "queue", "models", "requests"} <= set(rt)
    assert not {"process", "memory"} & set(rt), "every memory figure is once, under stats"
    assert rt["stats"]["process"]["rss_bytes"] > 0


def test_metrics_pass_promtool_and_count_what_was_sent(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: scripts/bootstrap installs Debian's prometheus package"
    with Server("--models-dir", str(MODELS)) as s:
        sent_prompt = sent_completion = 0
        for i in range(5):
            st, _, j = s.post("/v1/chat/completions", chat_body(TINY, f"request {i}",
                                                                max_tokens=3 + i))
            assert st == 200
            sent_prompt += j["usage"]["prompt_tokens"]
            sent_completion += j["usage"]["completion_tokens"]
        s.post("/v1/embeddings", {"model": BERT, "input": ["a b c"]})
        s.post("/v1/chat/completions", raw="{bad")
        text = s.metrics()
        check = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                               capture_output=True)
        assert check.returncode == 0, check.stdout + check.stderr
        assert s.metric("ebb_requests_total", model=TINY, outcome="completed") == 5
        assert s.metric("ebb_requests_total", model=BERT, outcome="completed") == 1
        assert s.metric("ebb_prompt_tokens_total", model=TINY) == sent_prompt
        assert s.metric("ebb_generation_tokens_total", model=TINY) == sent_completion
        # /v1/runtime has the same counters (the memory page derives its rates from them).
        rt = s.runtime()
        tiny = s.model(TINY)
        assert tiny["usage"] == {"requests": 5, "prompt_tokens": sent_prompt,
                                 "generated_tokens": sent_completion, "cached_tokens": 0}
        assert tiny["num_shrinks"] == 0
        assert s.model(BERT)["usage"]["requests"] == 1
        assert rt["usage"]["requests"] == 6
        assert rt["usage"]["generated_tokens"] == sent_completion
        assert s.metric("ebb_request_duration_seconds_count", model=TINY) == 5
        assert s.metric("ebb_http_responses_total", route="/v1/chat/completions",
                        code="400") == 1
        assert s.metric("ebb_model_loaded", model=TINY) == 1
        assert s.metric("ebb_model_weights_bytes", model=TINY) == weights_bytes(MODELS / TINY)
        assert s.metric("ebb_process_resident_memory_bytes") > 0
        assert "ebb_build_info{" in text
        assert s.metric("ebb_model_loads_total") == 2


def test_budget_evicts_idle_models_lru_and_never_exceeds_the_limit(tmp_path):
    folder = MODELS / TINY
    w = weights_bytes(folder)
    limit = 2 * w + w // 2  # two models and room for their requests' KV, not three
    args = ["--memory-limit", str(limit)]
    for mid in ("a", "b", "c"):
        args += ["--model", f"{mid}={folder}"]
    with Server(*args) as s:
        seen_over = []

        def loaded():
            rt = s.runtime()
            if rt["stats"]["used_bytes"] > limit:
                seen_over.append(rt["stats"])
            return sorted(m["id"] for m in rt["models"] if m["loaded"])

        order = ["a", "b", "c", "a", "b", "c", "b", "a"]
        evictions = 0
        expected_loaded = []
        for mid in order:
            st, _, j = s.post("/v1/chat/completions", chat_body(mid, max_tokens=4))
            assert st == 200, j
            if mid not in expected_loaded:
                if len(expected_loaded) == 2:
                    expected_loaded.pop(0)  # the least recently used goes
                    evictions += 1
                expected_loaded.append(mid)
            else:
                expected_loaded.remove(mid)
                expected_loaded.append(mid)
            assert loaded() == sorted(expected_loaded), (mid, expected_loaded)
        assert not seen_over, seen_over
        assert s.runtime()["evictions"] == evictions
        assert s.metric("ebb_model_evictions_total") == evictions
        assert evictions == 5


def test_keep_alive_unloads_and_client_keep_alive_needs_permission():
    with Server("--models-dir", str(MODELS), "--keep-alive", "1s") as s:
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2,
                                                            keep_alive="1h"))
        assert st == 200, j
        assert s.model(TINY)["loaded"]
        assert s.model(TINY)["expires_at_unix_ms"] is not None
        assert wait_until(lambda: not s.model(TINY)["loaded"], 4), \
            "a client's longer keep-alive must be ignored unless allowed"
        # The expiry thread counts the event after the unload is visible: await it.
        assert wait_until(lambda: s.metric("ebb_model_expirations_total") == 1, 4), \
            s.metric("ebb_model_expirations_total")
        st, _, j = s.post("/v1/chat/completions", {**chat_body(TINY, max_tokens=2),
                                                   "keep_alive": "soon"})
        assert st == 400 and error_of(st, j)["param"] == "keep_alive"
    with Server("--models-dir", str(MODELS), "--keep-alive", "1s",
                "--allow-client-keep-alive") as s:
        st, _, _ = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2,
                                                            keep_alive="1h"))
        assert st == 200
        time.sleep(2.0)
        assert s.model(TINY)["loaded"], "an allowed longer keep-alive keeps the model"
        st, _, _ = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2, keep_alive=0))
        assert wait_until(lambda: not s.model(TINY)["loaded"], 1.5), "keep_alive 0 unloads"


def test_sigterm_stops_cleanly_and_reports_bad_flags():
    s = Server("--models-dir", str(MODELS))
    assert s.get("/ready")[0] == 200
    rc, out, _ = s.stop()
    assert rc == 0 and "stopped" in out
    bad = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--keep-alive", "soon"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "keep-alive" in bad.stderr
    bad = subprocess.run([EBB, "serve"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "--models-dir" in bad.stderr
    bad = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--option",
                          "kv_cache.mod=static"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "did you mean" in bad.stderr
    # A port in use: the second server fails naming it.
    with Server("--models-dir", str(MODELS)) as first:
        bad = subprocess.run([EBB, "serve", "--models-dir", str(MODELS), "--port",
                              str(first.port)], capture_output=True, text=True, timeout=30)
        assert bad.returncode != 0 and str(first.port) in bad.stderr


def test_models_file_gives_ids_options_and_pins(tmp_path):
    (tmp_path / "models.json").write_text(json.dumps({"models": {
        "pinned-chat": {"path": str(MODELS / TINY), "pin": True,
                        "options": {"kv_cache.max_bytes": "32MiB"},
                        "session_options": {"intra_op_num_threads": 1}},
        "emb": {"path": str(MODELS / BERT), "keep_alive": "2s"}}}))
    with Server("--models-file", str(tmp_path / "models.json"), "--keep-alive", "500ms") as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("pinned-chat", max_tokens=2))
        assert st == 200, j
        st, _, j = s.get("/v1/models/pinned-chat/runtime")
        assert j["pinned"] is True and j["stats"]["kv"]["max_bytes"] == 32 << 20
        assert j["options"]["session_options.intra_op_num_threads"] == "1"
        time.sleep(1.0)
        assert s.model("pinned-chat")["loaded"], "a pinned model outlives its keep-alive"
    (tmp_path / "bad.json").write_text(json.dumps({"models": {"x": {
        "path": str(MODELS / TINY), "options": {"kv_cache.mod": "static"}}}}))
    bad = subprocess.run([EBB, "serve", "--models-file", str(tmp_path / "bad.json")],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0
    assert "models.x" in bad.stderr and "did you mean" in bad.stderr
    # Issue 24 item 18: typos in an entry's keys and folders that are not models fail the start.
    for entry, needle in (({"path": str(MODELS / TINY), "pinn": True}, "did you mean 'pin'"),
                          ({"path": str(MODELS / TINY), "keep-alive": "1m"},
                           "did you mean 'keep_alive'"),
                          ({"path": str(MODELS / TINY), "option": {}}, "did you mean 'options'"),
                          ({"path": str(tmp_path / "nowhere")}, "does not exist"),
                          ({"path": str(tmp_path)}, "has no genai_config.json")):
        (tmp_path / "bad.json").write_text(json.dumps({"models": {"x": entry}}))
        bad = subprocess.run([EBB, "serve", "--models-file", str(tmp_path / "bad.json")],
                             capture_output=True, text=True, timeout=30)
        assert bad.returncode != 0, entry
        assert "models.x" in bad.stderr and needle in bad.stderr, (entry, bad.stderr)


def test_a_slow_client_does_not_block_others(srv):
    # A stream whose client reads nothing; the other slot still serves requests at once.
    c = srv.conn()
    c.request("POST", "/v1/chat/completions",
              body=json.dumps(chat_body(TINY, max_tokens=1500, stream=True)),
              headers={"Content-Type": "application/json"})
    try:
        t0 = time.monotonic()
        for _ in range(3):
            st, _, j = srv.post("/v1/chat/completions", chat_body(TINY, max_tokens=4))
            assert st == 200, j
        assert time.monotonic() - t0 < 30
    finally:
        c.close()


@pytest.mark.parametrize("kv_mode", ["static", "dynamic"])
def test_streamed_request_over_the_kv_budget_gets_507_before_streaming(kv_mode):
    """Issue 22 Done-when 3: the generation starts (KV reserved, prompt run) before the
    response's first byte, in both KV modes; the server has no KV arithmetic of its own."""
    w = weights_bytes(MODELS / TINY)
    with Server("--models-dir", str(MODELS), "--memory-limit", str(w + 1024),
                "--option", f"kv_cache.mode={kv_mode}") as s:
        st, h, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=64, stream=True))
        assert st == 507, j
        assert h.get("content-type", "").startswith("application/json"), h
        assert "KV cache" in error_of(st, j, "memory_budget_exceeded")["message"]
        st, h, j = s.post("/v1/completions", {"model": TINY, "prompt": "hello", "max_tokens": 8,
                                              "stream": True})
        assert st == 507, j


def test_a_request_that_fails_after_some_tokens_keeps_them():
    """Issue 24 item 7: a dynamic KV budget of 32 tokens refuses the growth mid-generation. Not
    streamed: the error's status with the text so far under "partial"; streamed: the text, then
    the error event. Both carry the same text."""
    with Server("--models-dir", str(MODELS), "--option", "kv_cache.mode=dynamic",
                "--option", "kv_cache.chunk_tokens=16", "--option", "kv_cache.max_bytes=16KiB") as s:
        st, _, j = s.post("/v1/chat/completions", chat_body(TINY, max_tokens=200))
        assert st == 507, j
        error_of(st, j)
        part = j["partial"]
        assert part["finish_reason"] == "error"
        assert part["usage"]["completion_tokens"] > 0, part
        assert part["text"], part
        events = stream(s, "/v1/chat/completions", chat_body(TINY, max_tokens=200, stream=True))
        text = "".join(json.loads(e)["choices"][0]["delta"].get("content", "")
                       for e in events if e != "[DONE]" and "choices" in json.loads(e))
        assert any("error" in json.loads(e) for e in events if e != "[DONE]"), events[-3:]
        assert text == part["text"]
        # The stream's head said 200; the error it ended with is counted with its own status
        # (by the access logger, which runs once the response is written: the client may read
        # [DONE] a moment before).
        line = 'ebb_stream_errors_total{route="/v1/chat/completions",code="507"} 1'
        assert wait_until(lambda: line in s.get("/metrics")[2], 10), s.get("/metrics")[2]
        # Before the first token there is nothing to keep: no "partial".
        errors_before = s.metric("ebb_requests_total", model=TINY, outcome="error")
        st_refused, _, j = s.post("/v1/chat/completions",
                                  chat_body(TINY, content="hello " * 40, max_tokens=4))
        assert st_refused in (400, 507), j
        assert "partial" not in j
        # Counted once, with its real status (issue 24 item 9): as refused when the budget said no
        # before the generation started (the previous stream's KV not yet returned), else as a
        # generation that ended in error at its first step; which one depends on that timing.
        def counted():
            refused = s.metric("ebb_requests_refused_total", route="/v1/chat/completions",
                               code=str(st_refused))
            errors = s.metric("ebb_requests_total", model=TINY, outcome="error") - errors_before
            return refused + errors

        assert wait_until(lambda: counted() >= 1, 10), s.metrics()  # the logger runs last
        assert counted() == 1, s.metrics()


def test_refusals_are_counted_under_every_inference_prefix():
    """Issue 38: ebb_requests_refused_total counted refusals of the /v1 routes only (the labels
    were listed again in server.cpp); KServe's /openai/v1 and the Ollama routes went uncounted.
    The route table (routes.h IsInferenceRoute) now says which routes count."""
    with Server("--models-dir", str(MODELS)) as s:
        for path in ["/v1/chat/completions", "/openai/v1/chat/completions", "/openai/v1/embeddings",
                     "/api/chat", "/api/generate"]:
            st, _, j = s.request("POST", path, raw=b"{not json",
                                 headers={"Content-Type": "application/json"})
            assert st == 400, (path, j)
            assert wait_until(lambda: s.metric("ebb_requests_refused_total", route=path,
                                               code="400") == 1, 10), (path, s.metrics())


def test_tier2_settings_made_over_http_survive_unload_and_reload():
    """Issue 24 item 15 / Done-when 4: a PATCH of /runtime is remembered for the id; after an
    unload the next request loads the model again with the settings in force."""
    with Server("--models-dir", str(MODELS)) as s:
        assert s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))[0] == 200
        st, _, j = s.request("PATCH", f"/v1/models/{TINY}/runtime", {
            "shrink_every": 3, "run_options": {"memory.enable_memory_arena_shrinkage": "cpu:0"}})
        assert st == 200, j
        assert j["remembered"]["shrink_every"] == 3
        st, _, j = s.post(f"/v1/models/{TINY}/unload", {"force": True})
        assert st == 200, j
        assert s.post("/v1/chat/completions", chat_body(TINY, max_tokens=2))[0] == 200
        st, _, j = s.get(f"/v1/models/{TINY}/runtime")
        assert st == 200, j
        assert j["stats"]["policies"]["shrink_every"] == 3, j["stats"]
        assert j["stats"]["policies"]["ort_shrink_every_run"] is True
        assert j["runtime_options"]["memory.enable_memory_arena_shrinkage"] == "cpu:0"
        assert j["remembered"]["run_options"] == {"memory.enable_memory_arena_shrinkage": "cpu:0"}
        # A policy key sent as a run option is applied as the policy (item 11).
        st, _, j = s.request("PATCH", f"/v1/models/{TINY}/runtime",
                             {"run_options": {"memory.shrink_every": "2"}})
        assert st == 200, j
        assert j["stats"]["policies"]["shrink_every"] == 2
        assert "memory.shrink_every" not in j["runtime_options"]
        # An empty key is refused with 400 at once (item 13).
        st, _, j = s.request("PATCH", f"/v1/models/{TINY}/runtime", {"run_options": {"": "1"}})
        assert st == 400, j


def test_a_load_that_charges_more_than_its_files_makes_the_room_it_needs():
    # On a CPU where ebb's int4 matmul runs (AVX2 + FMA or AVX-512 VNNI), a load without a model-cache entry
    # charges its weight files plus the anonymous repack, which the room made before the load
    # (from the files) does not include. The limit here fits `a` alone but not `a` beside the idle
    # tiny `b`, while a's files fit beside b: the load is refused once, b is evicted, and a loads.
    small, tiny = MODELS / "llama-small-int4", MODELS / TINY
    files = weights_bytes(small)
    charged = charged_weights_bytes(small, "--option", "model_cache.dir=off")
    if charged == files:
        pytest.skip("no anonymous repack on this CPU (ebb's int4 matmul needs AVX2 + FMA)")
    wt = weights_bytes(tiny)
    limit = charged + wt - 1
    assert files + wt <= limit < charged + wt
    with Server("--memory-limit", str(limit), "--option", "model_cache.dir=off",
                "--model", f"a={small}", "--model", f"b={tiny}") as s:
        assert s.post("/v1/models/b/load", {})[0] == 200
        st, _, j = s.post("/v1/models/a/load", {})
        assert st == 200, j
        loaded = {m["id"] for m in s.runtime()["models"] if m["loaded"]}
        assert loaded == {"a"}, loaded
        assert s.runtime()["evictions"] == 1
        st, _, j = s.get("/v1/models/a/runtime")
        assert j["info"]["weights_bytes"] == charged
        assert s.post("/v1/chat/completions", chat_body("a", max_tokens=2))[0] == 200


def test_a_model_with_a_running_request_is_never_evicted():
    # a: a slower model with a long streamed request; b and c: one tiny folder under two ids.
    small, tiny = MODELS / "llama-small-int4", MODELS / TINY
    ws, wt = charged_weights_bytes(small, "--option", "model_cache.dir=off"), weights_bytes(tiny)
    assert ws >= weights_bytes(small)
    kv_a = 24576 * 140  # llama-small-int4: 24,576 KV bytes per token, prompt + 120 tokens
    # a (weights and KV) and one tiny model with room for its small requests; not two tiny ones.
    args = ["--memory-limit", str(ws + kv_a + wt + (wt // 2)),
            "--model", f"a={small}", "--model", f"b={tiny}", "--model", f"c={tiny}",
            "--option", "model_cache.dir=off"]
    with Server(*args, "--parallel", "3") as s:
        c = s.conn()
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps(chat_body("a", max_tokens=120, stream=True)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        it = sse_events(r)
        next(it)
        next(it)  # a is generating
        assert s.post("/v1/chat/completions", chat_body("b", max_tokens=2))[0] == 200
        # a (busy, and the least recently used) and b (idle) are loaded; c needs room: b goes.
        assert s.post("/v1/chat/completions", chat_body("c", max_tokens=2))[0] == 200
        loaded = {m["id"] for m in s.runtime()["models"] if m["loaded"]}
        assert loaded == {"a", "c"}, loaded
        events = list(it)
        assert events[-1] == "[DONE]"
        last = json.loads(events[-2])
        assert last["choices"][0]["finish_reason"] in ("length", "stop"), last
        c.close()


def test_runtime_routes_give_info_and_sdk_stats_and_options_max_length_wins(srv):
    # What ebb.connect() needs for parity with the in-process SDK (python/ebb/remote.py).
    m = "llama-tiny-fp32"
    st, _, j = srv.post(f"/v1/models/{m}/load", {})
    assert st == 200, j
    st, _, j = srv.get(f"/v1/models/{m}/runtime")
    assert st == 200, j
    info = j["info"]
    assert info["id"] == m and info["type"] == "llama" and info["is_encoder"] is False
    assert info["context_length"] > 0 and info["vocab_size"] > 0
    assert info["kv_bytes_per_token"] > 0 and info["weights_bytes"] == weights_bytes(MODELS / m)
    assert {"num_layers", "num_kv_heads", "head_size", "uses_gqa", "eos_token_ids",
            "pad_token_id", "bos_token_id", "past_present_share_buffer", "path"} <= set(info)
    # Issue 28: the kernels line is the same in info, in /v1/runtime's model list and in the
    # model runtime document (merged from the runtime's ModelSummary).
    assert "MLAS GEMM" in info["kernels"] and "MatMulNBits" not in info["kernels"]
    assert j["kernels"] == info["kernels"]
    listed = [e for e in srv.runtime()["models"] if e["id"] == m]
    assert listed and listed[0]["kernels"] == info["kernels"]
    stats = srv.runtime()["stats"]
    assert {"process", "kv"} <= set(stats) and stats["process"]["rss_bytes"] > 0
    # max_tokens sets max_length to prompt + max_tokens, unless options.max_length is given.
    body = {"model": m, "prompt": "once upon", "max_tokens": 20, "temperature": 0}
    st, _, j = srv.post("/v1/completions", body)
    assert st == 200, j
    prompt = j["usage"]["prompt_tokens"]
    st, _, j = srv.post("/v1/completions", {**body, "options": {"max_length": prompt + 3}})
    assert st == 200, j
    assert j["usage"]["completion_tokens"] <= 3
    if j["choices"][0]["finish_reason"] == "length":
        assert j["usage"]["completion_tokens"] == 3
    st, _, j = srv.post(f"/v1/models/{m}/unload", {})
    assert st == 200, j


def test_runtime_documents_validate_against_their_schema(srv):
    """Issue 22 item 6: GET /v1/runtime and the model runtime document (GET, PATCH, shrink and
    release_weights answer it) validate against docs/runtime.schema.json, live, with a model
    loaded, one that served a request and the rest not loaded; every memory figure is once."""
    schema = load_schema("runtime.schema.json")
    m = TINY
    st, _, loaded = srv.post(f"/v1/models/{m}/load", {})
    assert st == 200, loaded
    assert validate(schema, loaded, "#/$defs/model_entry") == []
    st, _, j = srv.post("/v1/chat/completions", chat_body(m, max_tokens=3))
    assert st == 200, j
    rt = srv.runtime()
    assert validate(schema, rt) == []
    assert any(e["loaded"] for e in rt["models"]) and any(not e["loaded"] for e in rt["models"])
    s = rt["stats"]
    assert s["used_bytes"] == s["weights_bytes"] + s["kv"]["in_use_bytes"]
    assert s["limit_bytes"] == 0, "this server has no --memory-limit"
    for method, path, body in [("GET", f"/v1/models/{m}/runtime", None),
                               ("PATCH", f"/v1/models/{m}/runtime", {"shrink_every": 0}),
                               ("POST", f"/v1/models/{m}/runtime/shrink", {"when": "now"}),
                               ("POST", f"/v1/models/{m}/runtime/release_weights", {})]:
        st, _, doc = srv.request(method, path, body)
        assert st == 200, (path, doc)
        assert validate(schema, doc, "#/$defs/model_runtime") == [], path
        assert doc["stats"]["used_bytes"] == (doc["stats"]["weights_bytes"]
                                              + doc["stats"]["kv"]["in_use_bytes"])
    assert "release" in doc
    # The schema is strict: the duplicated blocks of old are refused, as is a missing figure.
    old = dict(rt, memory={"limit_bytes": 0}, process=rt["stats"]["process"])
    errors = validate(schema, old)
    assert ": unexpected property memory" in errors and ": unexpected property process" in errors
    del old["memory"], old["process"], old["stats"]["used_bytes"]
    assert validate(schema, old) == ["/stats: missing required used_bytes"]
    st, _, j = srv.post(f"/v1/models/{m}/unload", {})
    assert st == 200, j


def test_batched_decode_over_http_gives_each_request_its_solo_text():
    # --parallel 4 with decode_batch.max_rows=4: concurrent requests decode in shared steps
    # (docs/memory.md "Batched decode"); each must get the text it gets alone, and the KV of
    # all of them must be back to 0 afterwards.
    with Server("--models-dir", str(MODELS), "--parallel", "4",
                "--option", "decode_batch.max_rows=4") as s:
        prompts = ["hello", "the river ran low", "memory that ebbs back", "a b c d e f g"]
        solo = []
        for p in prompts:
            st, _, j = s.post("/v1/chat/completions", chat_body(TINY, content=p, max_tokens=40))
            assert st == 200, j
            solo.append(j["choices"][0]["message"]["content"])
        results = [None] * len(prompts)

        def one(i):
            st, _, j = s.post("/v1/chat/completions",
                              chat_body(TINY, content=prompts[i], max_tokens=40))
            results[i] = (st, j)

        for _ in range(2):
            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            for i, (st, j) in enumerate(results):
                assert st == 200, j
                assert j["choices"][0]["message"]["content"] == solo[i], prompts[i]
        assert wait_until(lambda: s.model(TINY)["kv"]["in_use_bytes"] == 0, 2.0)
