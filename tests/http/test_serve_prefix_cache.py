"""The prefix cache over real HTTP (issue 25, docs/http_api.md#prefix-cache): llama.cpp's
`cache_prompt`, OpenAI's `usage.prompt_tokens_details.cached_tokens`, the pin routes
(`POST`/`DELETE /v1/models/{id}/prefix`, `POST .../prefix/drop`), the `ebb_prefix_cache_*`
families of /metrics, and the documents' schema.

Run by ctest (serve_prefix_cache_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import json

import pytest

from json_schema_lite import load_schema, validate
from serve_util import MODELS, Server, wait_until

TINY = "llama-tiny-fp32"
BERT = "bert-tiny-fp32"
BUDGET = 64 << 20

SYSTEM = {"role": "system", "content": "You are a careful assistant. Answer every question about "
          "rivers, hills and the weather in two short sentences, and say so when you do not "
          "know."}
# A chat history of well over 40 tokens: a later turn of the same conversation starts with it.
HISTORY = [SYSTEM,
           {"role": "user", "content": "What is a river delta, and how does one form?"},
           {"role": "assistant", "content": "A delta is land built where a river meets still "
            "water. The river drops its silt there as it slows."},
           {"role": "user", "content": "And why do some rivers have none?"}]


def chat(srv, messages, max_tokens=8, **extra):
    st, _, j = srv.post("/v1/chat/completions", {"model": TINY, "messages": messages,
                                                "max_tokens": max_tokens, "temperature": 0,
                                                **extra})
    assert st == 200, j
    return j["choices"][0]["message"]["content"], j["usage"]


def streamed_chat(srv, messages, max_tokens=8):
    """The text and the include_usage chunk's usage of a streamed chat."""
    c = srv.conn()
    c.request("POST", "/v1/chat/completions", headers={"Content-Type": "application/json"},
              body=json.dumps({"model": TINY, "messages": messages, "max_tokens": max_tokens,
                               "temperature": 0, "stream": True,
                               "stream_options": {"include_usage": True}}))
    r = c.getresponse()
    assert r.status == 200
    text, usage = "", None
    for line in r.read().decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        assert "error" not in ev, ev
        if ev.get("usage"):
            usage = ev["usage"]
        for ch in ev["choices"]:
            text += (ch.get("delta") or {}).get("content") or ""
    c.close()
    return text, usage


def error_of(st, j, status, code=None, param=None):
    assert st == status, (st, j)
    e = j["error"]
    assert e["message"], j
    if code is not None:
        assert e["code"] == code, j
    if param is not None:
        assert e["param"] == param, j
    return e


def prefix_figures(srv, model=TINY):
    return {k: srv.metric(f"ebb_prefix_cache_{k}", model=model)
            for k in ("bytes", "max_bytes", "pinned_bytes", "blocks", "hits_total",
                      "misses_total", "tokens_reused_total", "evicted_blocks_total",
                      "reclaimed_blocks_total")}


@pytest.fixture
def srv():
    with Server("--models-dir", str(MODELS), "--option",
                f"prefix_cache.max_bytes={BUDGET}") as s:
        yield s


def test_a_later_turn_reuses_the_history_with_the_same_text_and_metrics_count_it(srv):
    text1, u1 = chat(srv, HISTORY)
    assert u1["prompt_tokens"] >= 40, u1
    assert u1["prompt_tokens_details"] == {"cached_tokens": 0}, "nothing stored yet"
    text2, u2 = chat(srv, HISTORY)
    cached2 = u2["prompt_tokens_details"]["cached_tokens"]
    # Whole 16-token blocks, and the last prompt token is always prefilled (its logits).
    assert cached2 == (u2["prompt_tokens"] - 1) // 16 * 16 > 0, u2
    assert text2 == text1
    # cache_prompt: false neither reads nor stores, and gives the same text.
    text3, u3 = chat(srv, HISTORY, cache_prompt=False)
    assert u3["prompt_tokens_details"]["cached_tokens"] == 0 and text3 == text1
    # Streamed: the include_usage chunk has it too.
    text4, u4 = streamed_chat(srv, HISTORY)
    assert text4 == text1
    cached4 = u4["prompt_tokens_details"]["cached_tokens"]
    assert cached4 == cached2, u4
    # A next turn (the reply and a new question appended) reuses at least the history's blocks.
    turn = HISTORY + [{"role": "assistant", "content": text1},
                      {"role": "user", "content": "Thank you."}]
    _, u5 = chat(srv, turn)
    cached5 = u5["prompt_tokens_details"]["cached_tokens"]
    assert cached5 >= cached2 - 16 and cached5 > 0, (u2, u5)
    # /metrics counts exactly what was sent: 4 lookups (the cache_prompt: false one does not
    # look), 1 miss, every reused token; the figures of /v1/runtime are the same.
    want = {"hits_total": 3, "misses_total": 1, "tokens_reused_total": cached2 + cached4 + cached5}
    assert wait_until(lambda: {k: prefix_figures(srv)[k] for k in want} == want, 10), \
        prefix_figures(srv)
    f = prefix_figures(srv)
    assert f["max_bytes"] == BUDGET and 0 < f["bytes"] <= BUDGET and f["blocks"] > 0
    assert f["pinned_bytes"] == 0 and f["evicted_blocks_total"] == 0
    m = srv.model(TINY)
    pc = m["prefix_cache"]
    assert pc["hits"] == 3 and pc["misses"] == 1 and pc["bytes"] == f["bytes"]
    assert pc["tokens_reused"] == want["tokens_reused_total"]
    assert m["kv"]["in_use_bytes"] == pc["bytes"], "idle: the cache's blocks are the KV in use"
    # The service's cumulative usage sums the answers' cached_tokens.
    assert m["usage"]["cached_tokens"] == cached2 + cached4 + cached5
    assert srv.runtime()["usage"]["cached_tokens"] == cached2 + cached4 + cached5
    # /v1/completions: the same prompt twice.
    prompt = " ".join(f"word{i}" for i in range(40))
    outs = []
    for _ in range(2):
        st, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": prompt, "max_tokens": 4,
                                                "temperature": 0})
        assert st == 200, j
        outs.append(j)
    assert outs[0]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert outs[1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    assert outs[1]["choices"][0]["text"] == outs[0]["choices"][0]["text"]


def test_the_same_text_as_a_server_with_the_cache_off(srv):
    text_on = [chat(srv, HISTORY)[0] for _ in range(2)]
    with Server("--models-dir", str(MODELS)) as off:
        text_off, u = chat(off, HISTORY)
        assert u["prompt_tokens_details"]["cached_tokens"] == 0
        assert text_on == [text_off, text_off]
        assert off.metric("ebb_prefix_cache_max_bytes", model=TINY) == 0
        assert off.metric("ebb_prefix_cache_hits_total", model=TINY) == 0
        # The cache off: pinning is a clear 409 naming the option and how to set it.
        st, _, j = off.post(f"/v1/models/{TINY}/prefix", {"messages": [SYSTEM]})
        e = error_of(st, j, 409, "prefix_cache_off")
        assert "prefix_cache.max_bytes" in e["message"] and "PATCH" in e["message"]
        assert e["ebb_code"] == "failed_precondition"
        # ... and a Tier 2 run option turns it on without a reload.
        st, _, j = off.request("PATCH", f"/v1/models/{TINY}/runtime",
                               {"run_options": {"prefix_cache.max_bytes": "8MiB"}})
        assert st == 200 and j["stats"]["prefix_cache"]["max_bytes"] == 8 << 20, j
        st, _, j = off.post(f"/v1/models/{TINY}/prefix", {"messages": [SYSTEM]})
        assert st == 200 and j["pinned"], j


def test_cache_prompt_must_be_a_bool(srv):
    for path, body in [("/v1/chat/completions", {"messages": HISTORY}),
                       ("/v1/completions", {"prompt": "hello"})]:
        for bad in ["x", 1, {}]:
            st, _, j = srv.post(path, {"model": TINY, "cache_prompt": bad, **body})
            e = error_of(st, j, 400, "invalid_value", "cache_prompt")
            assert "true or false" in e["message"]


def test_pin_unpin_drop_and_their_documents(srv):
    schema = load_schema("runtime.schema.json")
    path = f"/v1/models/{TINY}/prefix"
    # Not loaded yet: 404 naming how to load it.
    st, _, j = srv.post(path, {"messages": [SYSTEM]})
    error_of(st, j, 404, "model_not_loaded")
    st, _, j = srv.post(f"/v1/models/{TINY}/load", {})
    assert st == 200, j
    st, _, pin = srv.post(path, {"messages": [SYSTEM]})
    assert st == 200, pin
    assert validate(schema, pin, "#/$defs/prefix_pin") == []
    assert pin["pinned"] and pin["tokens"] >= 32
    assert pin["pinned_tokens"] == pin["tokens"] // 16 * 16
    assert pin["pinned_bytes"] > 0 and pin["prefix_cache"]["pinned_bytes"] == pin["pinned_bytes"]
    assert srv.metric("ebb_prefix_cache_pinned_bytes", model=TINY) == pin["pinned_bytes"]
    # Pinning again pins once; a request with that system message starts from the pinned blocks.
    st, _, again = srv.post(path, {"messages": [SYSTEM]})
    assert st == 200 and again["pinned_bytes"] == pin["pinned_bytes"], again
    _, u = chat(srv, HISTORY)
    assert u["prompt_tokens_details"]["cached_tokens"] >= pin["pinned_tokens"] - 16 > 0, u
    # Drop frees the unpinned blocks (the request's) and keeps the pinned ones.
    st, _, drop = srv.post(f"{path}/drop", {})
    assert st == 200, drop
    assert validate(schema, drop, "#/$defs/prefix_drop") == []
    assert drop["freed_bytes"] > 0
    assert drop["prefix_cache"]["bytes"] == drop["prefix_cache"]["pinned_bytes"] == \
        pin["pinned_bytes"]
    st, _, drop2 = srv.post(f"{path}/drop", {})
    assert st == 200 and drop2["freed_bytes"] == 0, drop2
    # A shrink and release_weights keep pinned blocks too.
    st, _, j = srv.post(f"/v1/models/{TINY}/runtime/shrink", {"when": "now"})
    assert st == 200 and j["stats"]["prefix_cache"]["pinned_bytes"] == pin["pinned_bytes"]
    st, _, j = srv.post(f"/v1/models/{TINY}/runtime/release_weights", {})
    assert st == 200 and validate(schema, j, "#/$defs/model_runtime") == [], j
    assert "prefix_cache" not in j, "once, under stats"
    assert j["release"]["prefix_cache_freed_bytes"] == 0
    assert validate(schema, srv.runtime()) == []
    # input_ids: pinned and unpinned by the same ids.
    ids = list(range(100, 140))
    st, _, j = srv.post(path, {"input_ids": ids})
    assert st == 200 and j["pinned"] and j["pinned_tokens"] == 32, j
    st, _, j = srv.request("DELETE", path, {"input_ids": ids})
    assert st == 200 and j["pinned"] and j["pinned_bytes"] == pin["pinned_bytes"], j
    assert validate(schema, j, "#/$defs/prefix_pin") == []
    # Unpinning the messages: "pinned" true (it was), then false (nothing to unpin).
    st, _, j = srv.request("DELETE", path, {"messages": [SYSTEM]})
    assert st == 200 and j["pinned"] and j["pinned_bytes"] == 0, j
    st, _, j = srv.request("DELETE", path, {"messages": [SYSTEM]})
    assert st == 200 and not j["pinned"], j
    st, _, j = srv.post(f"{path}/drop", {})
    assert st == 200 and j["freed_bytes"] > 0 and j["prefix_cache"]["bytes"] == 0, j
    # A prompt is encoded as /v1/completions encodes it.
    st, _, j = srv.post(path, {"prompt": " ".join(f"word{i}" for i in range(40))})
    assert st == 200 and j["pinned"], j
    # The routes are labelled in /metrics; every pin, unpin and drop above was counted.
    # (serve_util's metric() cannot parse a label value holding "}"; a response is counted just
    # after it was sent.)
    want = ['ebb_http_responses_total{route="/v1/models/{id}/prefix",code="200"} 7\n',
            'ebb_http_responses_total{route="/v1/models/{id}/prefix",code="404"} 1\n',
            'ebb_http_responses_total{route="/v1/models/{id}/prefix/drop",code="200"} 3\n']
    assert wait_until(lambda: all(w in srv.metrics() for w in want), 10), \
        [line for line in srv.metrics().splitlines() if "/prefix" in line]
    assert srv.metric("ebb_prefix_cache_reclaimed_blocks_total", model=TINY) > 0


def test_bad_bodies_and_models_are_clear_errors(srv):
    path = f"/v1/models/{TINY}/prefix"
    st, _, j = srv.post(f"/v1/models/{TINY}/load", {})
    assert st == 200, j
    for body, param in [({}, "prompt"), ({"prompt": 5}, "prompt"), ({"prompt": ""}, "prompt"),
                        ({"prompt": "a", "messages": [SYSTEM]}, "messages"),
                        ({"messages": "hi"}, "messages"),
                        ({"messages": [{"content": "x"}]}, "messages[0].role"),
                        ({"input_ids": [1, -1]}, "input_ids"),
                        ({"input_ids": [10 ** 9]}, "input_ids"),
                        ({"input_ids": [1.5]}, "input_ids")]:
        for method in ("POST", "DELETE"):
            st, _, j = srv.request(method, path, body)
            error_of(st, j, 400, param=param)
    st, _, j = srv.post(path, {"input_ids": [10 ** 9]})
    assert "vocabulary" in j["error"]["message"]
    # Fewer tokens than one block.
    st, _, j = srv.post(path, {"input_ids": [1, 2, 3]})
    e = error_of(st, j, 400)
    assert "16" in e["message"]
    # A DELETE without a body says how to drop the cache instead.
    st, _, j = srv.request("DELETE", path)
    e = error_of(st, j, 400, "missing", "prompt")
    assert "prefix/drop" in e["message"]
    st, _, j = srv.request("POST", path, raw="{bad")
    error_of(st, j, 400, "invalid_json")
    # A body that is not JSON-typed is refused before the route (the browser defence).
    st, _, j = srv.request("POST", path, raw=json.dumps({"messages": [SYSTEM]}),
                           headers={"Content-Type": "text/plain"})
    error_of(st, j, 415)
    # An encoder has no prefix cache; an unknown model is not loaded.
    st, _, j = srv.post(f"/v1/models/{BERT}/load", {})
    assert st == 200, j
    st, _, j = srv.post(f"/v1/models/{BERT}/prefix", {"input_ids": list(range(2, 40))})
    e = error_of(st, j, 409)
    assert "encoder" in e["message"]
    assert srv.metric("ebb_prefix_cache_max_bytes", model=BERT) == 0
    assert "ebb_prefix_cache_bytes{model=\"" + BERT not in srv.metrics(), "generation models only"
    st, _, j = srv.post("/v1/models/no-such/prefix/drop", {})
    error_of(st, j, 404, "model_not_loaded")
    # Nothing was pinned by any of them.
    assert srv.model(TINY)["prefix_cache"]["pinned_bytes"] == 0


def test_pin_routes_need_the_key_and_refuse_other_origins():
    with Server("--models-dir", str(MODELS), "--api-key", "k1", "--option",
                f"prefix_cache.max_bytes={BUDGET}") as s:
        auth = {"Authorization": "Bearer k1"}
        st, _, j = s.post(f"/v1/models/{TINY}/load", {}, headers=auth)
        assert st == 200, j
        for method, suffix in [("POST", "/prefix"), ("DELETE", "/prefix"),
                               ("POST", "/prefix/drop")]:
            body = {} if suffix.endswith("drop") else {"messages": [SYSTEM]}
            st, _, j = s.request(method, f"/v1/models/{TINY}{suffix}", body)
            error_of(st, j, 401, "invalid_api_key")
            st, _, j = s.request(method, f"/v1/models/{TINY}{suffix}", body,
                                 headers={**auth, "Origin": "http://evil.example"})
            error_of(st, j, 403, "origin_not_allowed")
        st, _, j = s.post(f"/v1/models/{TINY}/prefix", {"messages": [SYSTEM]}, headers=auth)
        assert st == 200 and j["pinned"], j
