"""The service's logs (issue 27): one info line per request with its timings, the load line with
its time and memory, no duplicated lines, and --log-format json for log collectors."""
import json
import re

from serve_util import MODELS, Server, chat_body

TINY = "llama-tiny-fp32"
N = 20


def run_requests(srv):
    for i in range(N):
        if i % 2:
            s, _, j = srv.post("/v1/chat/completions", chat_body(TINY, f"hello {i}", max_tokens=6))
        else:
            s, _, j = srv.post("/v1/completions",
                               {"model": TINY, "prompt": f"once {i}", "max_tokens": 6})
        assert s == 200, j


def test_twenty_requests_log_twenty_request_lines_with_their_timings():
    with Server("--models-dir", str(MODELS), "--log-level", "info") as srv:
        run_requests(srv)
        _, _, err = srv.stop()
    lines = [l for l in err.splitlines() if "] [info] request " in l]
    gen = [l for l in lines if "route=/v1/" in l and "completions" in l]
    assert len(gen) == N, "\n".join(lines)
    for l in gen:
        for key in ("id=", "model=" + TINY, "status=200", "outcome=", "prompt_tokens=",
                    "generated_tokens=", "ttft_ms=", "duration_ms="):
            assert key in l, l
        assert re.search(r"outcome=(stop|length)", l), l
        assert int(re.search(r"generated_tokens=(\d+)", l).group(1)) >= 1, l
    ids = [re.search(r"id=(\S+)", l).group(1) for l in gen]
    assert len(set(ids)) == N, ids
    # One load line, with its time and memory; the manager adds no second one.
    loads = [l for l in err.splitlines() if "] [info] loaded " in l]
    assert len(loads) == 1, "\n".join(loads)
    assert re.search(r" in \d+ ms; weights .+; process RSS .+, anonymous ", loads[0]), loads[0]
    assert "loaded model '" not in err
    # No line twice (timestamps aside).
    bodies = [l.split("] ", 3)[-1] for l in err.splitlines() if l.startswith("[")]
    dup = {b for b in bodies if bodies.count(b) > 1}
    assert not dup, dup


def test_log_format_json_lines_parse_and_carry_the_request_fields():
    with Server("--models-dir", str(MODELS), "--log-level", "info", "--log-format", "json") as srv:
        run_requests(srv)
        s, _, _ = srv.get("/v1/models/nope")
        assert s == 404
        _, _, err = srv.stop()
    records = [json.loads(l) for l in err.splitlines() if l.strip()]  # every line is JSON
    assert records, err
    for r in records:
        assert {"time", "level", "logger"} <= r.keys(), r
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", r["time"]), r
    reqs = [r for r in records if r.get("event") == "request"]
    gen = [r for r in reqs if r["route"] in ("/v1/chat/completions", "/v1/completions")]
    assert len(gen) == N, reqs
    for r in gen:
        assert r["status"] == 200 and r["model"] == TINY, r
        assert isinstance(r["prompt_tokens"], int) and r["prompt_tokens"] > 0, r
        assert isinstance(r["generated_tokens"], int) and r["generated_tokens"] >= 1, r
        assert isinstance(r["ttft_ms"], (int, float)) and r["ttft_ms"] >= 0, r
        assert r["duration_ms"] >= r["ttft_ms"], r
        assert r["outcome"] in ("stop", "length"), r
    miss = [r for r in reqs if r["route"] == "/v1/models/nope"]
    assert len(miss) == 1 and miss[0]["status"] == 404 and miss[0]["outcome"] == "error", miss
    assert any("loaded " in r.get("msg", "") for r in records), records


def test_a_stream_that_fails_after_its_200_head_logs_the_errors_status():
    """Issue 24 finding 9: a streamed request sends its 200 head before the generation; when the
    generation then fails, the log line says so with the status its error event carries."""
    with Server("--models-dir", str(MODELS), "--log-level", "info", "--option",
                "kv_cache.mode=dynamic", "--option", "kv_cache.chunk_tokens=16", "--option",
                "kv_cache.max_bytes=16KiB") as srv:
        c = srv.conn()
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps(chat_body(TINY, max_tokens=200, stream=True)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200
        body = r.read().decode()
        assert '"memory_budget_exceeded"' in body, body[-400:]
        c.close()
        _, _, err = srv.stop()
    lines = [l for l in err.splitlines() if "] [info] request " in l and "completions" in l]
    assert len(lines) == 1, lines
    assert "status=200" in lines[0] and "outcome=error" in lines[0], lines[0]
    assert "error_status=507" in lines[0] and "error_code=memory_budget_exceeded" in lines[0], lines[0]
