"""Issue 24 item 16: OpenAI's logit_bias, presence_penalty and frequency_penalty were accepted
and changed nothing, best_of and top_logprobs too. Over real HTTP they now change the greedy
text exactly as `ebb generate` does with the same settings, logprobs come back in OpenAI's shapes
(streamed too), and bad values are 400s naming the field (docs/http_api.md).

Run by ctest (serve_sampling_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import json
import math
import subprocess

import pytest

from serve_util import EBB, MODELS, Server

TINY = "llama-tiny-fp32"
PROMPT = "once upon a time the river"


@pytest.fixture(scope="module")
def srv():
    with Server("--models-dir", str(MODELS), "--parallel", "2") as s:
        yield s


def cli(*args):
    """`ebb generate` on the same model and prompt, greedy: its --json object."""
    out = subprocess.run([EBB, "generate", str(MODELS / TINY), "--prompt", PROMPT, "--json",
                          *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def completion(srv, **fields):
    body = {"model": TINY, "prompt": PROMPT, "max_tokens": 24, "temperature": 0, **fields}
    s, _, j = srv.post("/v1/completions", body)
    assert s == 200, j
    return j["choices"][0]


def generated_ids(j):
    """The generated ids of `ebb generate --json` (its sequence minus the prompt)."""
    n = j["usage"]["prompt_tokens"]
    return j["sequences"][0][n:]


def error_of(s, j, param):
    assert s == 400, j
    e = j["error"]
    assert e["param"] == param, e
    assert param.split(".")[-1] in e["message"], e
    return e


def test_logit_bias_bans_and_forces_greedy_tokens_as_the_cli_does(srv):
    plain = cli("--max-new-tokens", "24")
    ids = generated_ids(plain)
    assert completion(srv)["text"] == plain["completion"][0]
    # -100 on the greedy first token: the first token changes, so the text does.
    first = ids[0]
    banned_cli = cli("--max-new-tokens", "24", "--logit-bias", f"{first}=-100")
    assert generated_ids(banned_cli)[0] != first
    banned = completion(srv, logit_bias={str(first): -100})
    assert banned["text"] != plain["completion"][0]
    assert banned["text"] == banned_cli["completion"][0]
    # +100 on a token the plain run never picks: every step picks it.
    forced = next(t for t in range(3, 1000) if t not in ids)
    forced_cli = cli("--max-new-tokens", "24", "--logit-bias", f"{forced}=100")
    assert generated_ids(forced_cli) == [forced] * 24
    chat = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
            "temperature": 0, "logit_bias": {str(forced): 100}, "logprobs": True}
    s, _, j = srv.post("/v1/chat/completions", chat)
    assert s == 200, j
    assert j["usage"]["completion_tokens"] == 6
    content = j["choices"][0]["logprobs"]["content"]
    assert len(content) == 6 and len({c["token"] for c in content}) == 1
    assert completion(srv, logit_bias={str(forced): 100})["text"] == forced_cli["completion"][0]
    # The same through "options" (the option table's spelling).
    assert completion(srv, options={"logit_bias": f"{forced}=100"})["text"] == \
        forced_cli["completion"][0]


def test_penalties_change_the_greedy_text_as_the_cli_does(srv):
    plain = cli("--max-new-tokens", "40")
    pen = cli("--max-new-tokens", "40", "--frequency-penalty", "2", "--presence-penalty", "0.5")
    assert len(set(generated_ids(pen))) > len(set(generated_ids(plain)))
    got = completion(srv, max_tokens=40, frequency_penalty=2, presence_penalty=0.5)
    assert got["text"] == pen["completion"][0]
    assert got["text"] != plain["completion"][0]
    # presence_penalty alone changes it too, and 0 is the plain text.
    assert completion(srv, max_tokens=40, presence_penalty=2)["text"] != plain["completion"][0]
    assert completion(srv, max_tokens=40, frequency_penalty=0)["text"] == plain["completion"][0]


def test_bad_values_are_400s_naming_the_field(srv):
    vocab = json.loads((MODELS / TINY / "genai_config.json").read_text())["model"]["vocab_size"]
    chat = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for extra, param in [
        ({"logit_bias": {"abc": 5}}, "logit_bias"),
        ({"logit_bias": {"5": 101}}, "logit_bias"),
        ({"logit_bias": {"5": -100.5}}, "logit_bias"),
        ({"logit_bias": [5]}, "logit_bias"),
        ({"presence_penalty": 3}, "presence_penalty"),
        ({"frequency_penalty": -2.01}, "frequency_penalty"),
        ({"best_of": 2}, "best_of"),
        ({"n": 2}, "n"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"options": {"logit_bias": "7=x"}}, "options.logit_bias"),
        ({"options": {"presence_penalty": 9}}, "options.presence_penalty"),
    ]:
        s, _, j = srv.post("/v1/chat/completions", {**chat, **extra})
        error_of(s, j, param)
    # A token id at or above the vocabulary: 400 naming the id and the vocab size.
    big = 10_000_000
    s, _, j = srv.post("/v1/chat/completions", {**chat, "logit_bias": {str(big): -100}})
    e = error_of(s, j, "logit_bias")
    assert str(big) in e["message"] and f"vocab_size is {vocab}" in e["message"], e
    s, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": "hi", "max_tokens": 2,
                                           "options": {"logit_bias": f"{big}=1"}})
    e = error_of(s, j, "options.logit_bias")
    assert str(big) in e["message"] and str(vocab) in e["message"], e
    # best_of 1 is what ebb does: accepted.
    s, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": "hi", "max_tokens": 2,
                                           "best_of": 1})
    assert s == 200, j
    # /v1/completions: logprobs is an integer, top_logprobs is chat's.
    for extra, param in [({"logprobs": True}, "logprobs"), ({"logprobs": 21}, "logprobs"),
                         ({"top_logprobs": 2}, "top_logprobs")]:
        s, _, j = srv.post("/v1/completions", {"model": TINY, "prompt": "hi", "max_tokens": 2,
                                               **extra})
        error_of(s, j, param)


def test_chat_logprobs_shape_greedy_consistency_and_stream(srv):
    body = {"model": TINY, "messages": [{"role": "user", "content": "tell me a story"}],
            "max_tokens": 12, "temperature": 0, "logprobs": True, "top_logprobs": 3}
    s, _, j = srv.post("/v1/chat/completions", body)
    assert s == 200, j
    choice = j["choices"][0]
    lp = choice["logprobs"]
    assert set(lp) == {"content", "refusal"}
    content = lp["content"]
    assert 0 < len(content) <= j["usage"]["completion_tokens"]
    for c in content:
        assert set(c) == {"token", "logprob", "bytes", "top_logprobs"}
        assert c["bytes"] == list(c["token"].encode("utf-8"))
        assert c["logprob"] <= 0
        assert len(c["top_logprobs"]) == 3
        # Greedy: the chosen token is the most likely one.
        assert c["top_logprobs"][0]["token"] == c["token"]
        assert math.isclose(c["top_logprobs"][0]["logprob"], c["logprob"], abs_tol=1e-6)
        probs = [t["logprob"] for t in c["top_logprobs"]]
        assert probs == sorted(probs, reverse=True)
        assert sum(math.exp(p) for p in probs) <= 1.0 + 1e-5
    assert "".join(c["token"] for c in content) == choice["message"]["content"]
    # Without logprobs: null, as before.
    s, _, j0 = srv.post("/v1/chat/completions", {**body, "logprobs": False, "top_logprobs": 0})
    assert s == 200 and j0["choices"][0]["logprobs"] is None
    # Streamed: the chunks' logprobs, in order, are the non-streamed ones.
    c = srv.conn()
    c.request("POST", "/v1/chat/completions", body=json.dumps({**body, "stream": True}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    streamed = []
    text = ""
    for line in r.read().decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        for ch in ev.get("choices") or []:
            text += ch["delta"].get("content") or ""
            if ch["logprobs"] is not None:
                streamed += ch["logprobs"]["content"]
    c.close()
    assert text == choice["message"]["content"]
    assert streamed == content


def test_completions_logprobs_shape_and_stream(srv):
    base = {"model": TINY, "prompt": PROMPT, "max_tokens": 10, "temperature": 0, "logprobs": 2}
    s, _, j = srv.post("/v1/completions", base)
    assert s == 200, j
    choice = j["choices"][0]
    lp = choice["logprobs"]
    assert set(lp) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
    n = len(lp["tokens"])
    assert n > 0 and len(lp["token_logprobs"]) == n and len(lp["top_logprobs"]) == n
    assert "".join(lp["tokens"]) == choice["text"]
    assert lp["text_offset"][0] == 0
    offset = 0
    for tok, tlp, top, off in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"],
                                  lp["text_offset"]):
        assert off == offset
        offset += len(tok)
        assert tok in top and math.isclose(top[tok], tlp, abs_tol=1e-6)
        assert 1 <= len(top) <= 3  # the 2 most likely, plus the sampled one when not among them
        assert max(top.values()) == pytest.approx(tlp)  # greedy
    # logprobs 0: the sampled token's only.
    s, _, j0 = srv.post("/v1/completions", {**base, "logprobs": 0})
    assert s == 200
    assert all(len(t) == 1 for t in j0["choices"][0]["logprobs"]["top_logprobs"])
    # Streamed chunks carry them too.
    c = srv.conn()
    c.request("POST", "/v1/completions", body=json.dumps({**base, "stream": True}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    tokens, offsets = [], []
    for line in r.read().decode().split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for ch in json.loads(line[6:]).get("choices") or []:
            if ch["logprobs"] is not None:
                tokens += ch["logprobs"]["tokens"]
                offsets += ch["logprobs"]["text_offset"]
    c.close()
    assert tokens == lp["tokens"]
    assert offsets == lp["text_offset"]
