"""ebb serve's batched decode by default (issue 40, done-when 3; docs/memory.md "Batched decode"):
every model whose KV is in host memory decodes up to --parallel requests together unless its own
options set decode_batch.max_rows (a device model refuses only rows it was asked for), concurrent
requests on one model really share decode steps (counted in /v1/runtime's decode_batch and in
/metrics' ebb_decode_batch_*), and decode_batch.max_rows=1 turns it off. Real server, real
HTTP, tiny GQA test model with a shared KV buffer (the graphs the batcher takes)."""
import json
import threading

from serve_util import MODELS, Server, chat_body

TINY = "llama-tiny-fp32"


def two_chats_at_once(s, mid, tokens=24):
    """Two streamed greedy chats started together; returns their statuses and bodies."""
    out = [None, None]

    def one(i):
        st, _, body = s.post("/v1/chat/completions",
                             chat_body(mid, f"ebbs back {i}", max_tokens=tokens, stream=True))
        out[i] = (st, body)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def batch_stats(s, mid):
    m = s.model(mid)
    assert m is not None and m["loaded"], m
    return m["decode_batch"]


def test_concurrent_requests_share_decode_steps_by_default():
    with Server("--model", f"m={MODELS / TINY}") as s:  # --parallel defaults to 2
        st, _, j = s.post("/v1/chat/completions", chat_body("m", "warm up", max_tokens=2))
        assert st == 200, j
        m = s.model("m")
        # The default is not an option of the model's: its options stay as given.
        assert "decode_batch.max_rows" not in m["options"], m["options"]
        assert set(m["decode_batch"]) == {"max_rows", "steps", "rows"}, m["decode_batch"]
        assert m["decode_batch"]["max_rows"] == 2
        # Two requests decode in one step when both wait for their next token together; under
        # load (sanitizers, 2 cores) a round may run them one after the other, so a few rounds.
        shared = False
        for _ in range(10):
            for st, body in two_chats_at_once(s, "m"):
                assert st == 200 and body.rstrip().endswith("data: [DONE]"), body[-300:]
            d = batch_stats(s, "m")
            if d["rows"] > d["steps"]:
                shared = True
                break
        assert shared, f"no decode step held both requests in 10 rounds: {d}"
        assert d["steps"] > 0
        # The same counters in /metrics, and the runtime's stats sum them.
        assert s.metric("ebb_decode_batch_max_rows", model="m") == 2
        steps = s.metric("ebb_decode_batch_steps_total", model="m")
        rows = s.metric("ebb_decode_batch_rows_total", model="m")
        assert rows > steps >= d["steps"], (rows, steps, d)
        rt = s.runtime()["stats"]["decode_batch"]
        assert rt["max_rows"] == 2 and rt["steps"] >= d["steps"] and rt["rows"] > rt["steps"], rt
        # Every request charged and returned its own KV: nothing is left in use.
        assert s.runtime()["stats"]["kv"]["in_use_bytes"] == 0


def test_max_rows_1_turns_it_off_and_parallel_sets_the_rows():
    with Server("--model", f"m={MODELS / TINY}", "--parallel", "3",
                "--option", "decode_batch.max_rows=1") as s:
        for st, body in two_chats_at_once(s, "m"):
            assert st == 200, body[-300:]
        d = batch_stats(s, "m")
        assert d == {"max_rows": 1, "steps": 0, "rows": 0}, d
        opts = s.model("m")["options"]
        assert opts.get("decode_batch.max_rows") == "1", opts
        assert s.metric("ebb_decode_batch_steps_total", model="m") == 0
    with Server("--model", f"m={MODELS / TINY}", "--parallel", "3") as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("m", "hello", max_tokens=2))
        assert st == 200, j
        assert batch_stats(s, "m")["max_rows"] == 3
    with Server("--model", f"m={MODELS / TINY}", "--parallel", "1") as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("m", "hello", max_tokens=2))
        assert st == 200, j
        assert batch_stats(s, "m")["max_rows"] == 1


def test_a_models_own_option_wins_over_the_serve_default(tmp_path):
    models = {"models": {
        "own": {"path": str(MODELS / TINY), "options": {"decode_batch.max_rows": "1"}},
        "dflt": {"path": str(MODELS / TINY)},
    }}
    f = tmp_path / "models.json"
    f.write_text(json.dumps(models))
    with Server("--models-file", str(f), "--parallel", "4") as s:
        for mid in ("own", "dflt"):
            st, _, j = s.post("/v1/chat/completions", chat_body(mid, "hello", max_tokens=2))
            assert st == 200, j
        assert batch_stats(s, "own")["max_rows"] == 1
        assert batch_stats(s, "dflt")["max_rows"] == 4
