"""ebb.connect(): one script against ebb.Runtime() and against a real `ebb serve` (started here
on a free loopback port over the test models) gives the same greedy text, the same statistics
fields and the same exception classes (label integration; needs EBB_CLI)."""
import json
import os
import re
import socket
import subprocess
import time

import pytest

import ebb

EBB_CLI = os.environ.get("EBB_CLI", "")
TINY = "llama-tiny-fp32"


class Service:
    """`ebb serve --port 0 --models-dir DIR [args]`; the address is read from its first line."""

    def __init__(self, models_dir, log_path, *args):
        if not EBB_CLI:
            pytest.fail("EBB_CLI must name the ebb binary (run through ctest python_pytest)")
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([EBB_CLI, "serve", "--port", "0", "--models-dir",
                                      str(models_dir), *args], stdout=subprocess.PIPE,
                                     stderr=self.log, stdin=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"(http://[0-9.]+:\d+)", line)
        if not m:
            self.stop()
            pytest.fail(f"ebb serve did not start: {line!r} {open(log_path).read()}")
        self.url = m.group(1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()


@pytest.fixture(scope="module")
def service(models_dir, tmp_path_factory):
    s = Service(models_dir, tmp_path_factory.mktemp("serve") / "serve.log")
    yield s
    s.stop()


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("EBB_URL", "EBB_HOME", "XDG_STATE_HOME", "EBB_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def error_type(fn):
    """The class of what fn() raises (None when it returns)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e)
    return None


def key_paths(d, prefix=""):
    """Every key path of a nested dict: {"kv": {"in_use_bytes": 0}} -> {"kv", "kv.in_use_bytes"}."""
    out = set()
    for k, v in d.items():
        out.add(prefix + k)
        if isinstance(v, dict):
            out |= key_paths(v, prefix + k + ".")
    return out


def wait_until(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def script(rt, tiny_path):
    """The user's script: written once against the in-process API, run on both runtimes."""
    out = {}
    with rt.load(tiny_path, session_options={"enable_cpu_mem_arena": True},
                 options={"kv_cache.max_bytes": "64MiB"}) as m:
        out["id"] = m.id
        out["loaded"] = m.loaded
        r = m.generate("hello world", max_new_tokens=12, temperature=0)
        out["text"], out["finish"], out["usage"] = r.text, r.finish_reason, r.usage
        it = m.stream("hello world", max_new_tokens=12, temperature=0)
        out["stream"] = "".join(it)
        out["stream_result"] = (it.result.text, it.result.finish_reason, it.result.usage)
        # request keys as keyword arguments and in options={}, max_length with max_new_tokens
        out["top_k"] = m.generate("once upon", max_new_tokens=6, top_k=1, seed=3,
                                  options={"repetition_penalty": 1.1}).text
        out["sampled"] = m.generate("once upon", max_new_tokens=8, do_sample=True,
                                    temperature=0.8, top_k=20, seed=7).text
        p = m.generate("once upon", max_new_tokens=1).usage["prompt_tokens"]
        out["max_length"] = m.generate("once upon", max_new_tokens=20, max_length=p + 3).usage
        if len(r.text) > 4:
            out["stop"] = m.generate("hello world", max_new_tokens=12, stop=[r.text[2:4]]).text
        # Issue 24: OpenAI's sampling fields, the same in process and through the service.
        out["banned"] = m.generate("hello world", max_new_tokens=12, temperature=0,
                                   logit_bias={t: -100 for t in range(0, 400)}).text
        out["forced"] = m.generate("hello world", max_new_tokens=4, temperature=0,
                                   logit_bias={"500": 100}).text
        out["penalized"] = m.generate("hello world", max_new_tokens=24, temperature=0,
                                      frequency_penalty=2, presence_penalty=0.5).text
        lp = m.generate("hello world", max_new_tokens=6, temperature=0, logprobs=True,
                        top_logprobs=2, logit_bias={"500": 100}).logprobs
        out["logprobs"] = [(e["token"], round(e["logprob"], 4),
                            [(t["token"], round(t["logprob"], 4)) for t in e["top_logprobs"]])
                           for e in lp]
        msgs = [{"role": "user", "content": "hi there"}]
        out["chat"] = m.chat(msgs, max_new_tokens=8).text
        out["chat_stream"] = "".join(m.chat(msgs, stream=True, max_new_tokens=8))
        out["info"] = {k: m.info[k] for k in ("type", "vocab_size", "context_length",
                                              "kv_bytes_per_token", "weights_bytes")}
        out["info_keys"] = sorted(m.info)

        h = m.runtime
        h.set_option("memory.enable_memory_arena_shrinkage", "cpu:0")
        out["run_options"] = h.options()
        h.clear_option("memory.enable_memory_arena_shrinkage")
        out["run_options_cleared"] = h.options()
        h.shrink_every(5)
        h.shrink_above("6GiB")
        h.shrink_after_next_run()
        m.generate("hello", max_new_tokens=2)
        h.shrink_arena()
        s = h.stats()
        out["model_stats_keys"] = key_paths(s)
        out["kv_in_use_after"] = s["kv"]["in_use_bytes"]
        out["kv_budget"] = s["kv"]["max_bytes"]
        out["runtime_stats_keys"] = key_paths(rt.stats())
        listed = [d for d in rt.models() if d["id"] == m.id]
        out["listed"] = len(listed)
        out["models_keys"] = key_paths(listed[0])
        out["get"] = (rt.get(m.id).id, rt.get(m.id).loaded)

        # Issue 25: the prefix cache (off at load; on as a Tier 2 run option), cache_prompt=,
        # pin_prefix / unpin_prefix / drop_prefix_cache: the same results on both runtimes.
        system = [{"role": "system", "content": "You are a careful assistant. Answer questions "
                   "about rivers, hills and the weather in two short sentences."}]
        talk = system + [{"role": "user", "content": "What is a river delta?"}]
        out["pin_off"] = error_type(lambda: h.pin_prefix(system))
        h.set_option("prefix_cache.max_bytes", "8MiB")
        first = m.chat(talk, max_new_tokens=6, temperature=0)
        second = m.chat(talk, max_new_tokens=6, temperature=0)
        uncached = m.chat(talk, max_new_tokens=6, temperature=0, cache_prompt=False)
        out["prefix_chat"] = [(r.text, r.usage) for r in (first, second, uncached)]
        story = "Once upon a time there was a river. " * 4
        out["pin_messages"] = h.pin_prefix(system)
        out["pin_text"] = h.pin_prefix(story)
        out["pinned_bytes"] = h.stats()["prefix_cache"]["pinned_bytes"]
        out["unpin_text"] = h.unpin_prefix(story)
        out["unpin_text_again"] = h.unpin_prefix(story)
        out["unpin_messages"] = h.unpin_prefix(system)
        out["dropped"] = h.drop_prefix_cache() > 0
        out["prefix_errors"] = {
            "short": error_type(lambda: h.pin_prefix("hi")),
            "not_a_prefix": error_type(lambda: h.pin_prefix(5)),
            "float_ids": error_type(lambda: h.pin_prefix([1.5] * 20)),
            "cache_prompt": error_type(lambda: m.generate("hi", cache_prompt="x")),
        }
        h.set_option("prefix_cache.max_bytes", 0)

        errs = {}
        errs["unknown_model_get"] = error_type(lambda: rt.get("no-such-model"))
        errs["unknown_model_load"] = error_type(lambda: rt.load("/nonexistent/no-such-model"))
        errs["unknown_model_unload"] = error_type(lambda: rt.unload("no-such-model"))
        errs["bad_request_key"] = error_type(lambda: m.generate("hi", temprature=0.5))
        errs["bad_options_key"] = error_type(lambda: m.generate("hi", options={"top_kk": 3}))
        errs["bad_value"] = error_type(lambda: m.generate("hi", top_k="many"))
        errs["negative_max_new_tokens"] = error_type(lambda: m.generate("hi", max_new_tokens=-1))
        errs["bad_logit_bias"] = error_type(lambda: m.generate("hi", logit_bias={"x": 1}))
        errs["out_of_vocab_bias"] = error_type(lambda: m.generate("hi", logit_bias={10**7: 1}))
        errs["bad_penalty"] = error_type(lambda: m.generate("hi", frequency_penalty=2.5))
        ctx = m.info["context_length"]
        errs["over_long_prompt"] = error_type(
            lambda: m.generate("hello world " * ctx, max_new_tokens=4))
        errs["embed_on_generator"] = error_type(lambda: m.embed("hello"))
        errs["bad_message"] = error_type(lambda: m.chat([{"content": "no role"}]))
        errs["load_again_other_options"] = error_type(
            lambda: rt.load(tiny_path, id=m.id, options={"kv_cache.max_bytes": "32MiB"}))
        errs["shrink_every_negative"] = error_type(lambda: h.shrink_every(-1))
        out["errors"] = errs
    out["loaded_after_with"] = m.loaded
    out["unload_again"] = error_type(lambda: rt.unload(out["id"]))
    # A KV budget smaller than one request: ResourceExhausted at generation.
    with rt.load(tiny_path, options={"kv_cache.max_bytes": "1KiB"}) as m2:
        out["kv_budget_error"] = error_type(lambda: m2.generate("hello", max_new_tokens=4))
    return out


def test_same_script_in_process_and_against_the_service(service, tiny_path):
    local = script(ebb.Runtime(), tiny_path)
    remote = script(ebb.connect(service.url), tiny_path)
    assert local["text"] and local["finish"] in ("stop", "length")
    assert local["errors"]["unknown_model_get"] is ebb.NotFound
    assert local["errors"]["over_long_prompt"] is ebb.InvalidArgument
    assert local["kv_budget_error"] is ebb.ResourceExhausted
    assert local["errors"]["load_again_other_options"] is ebb.FailedPrecondition
    assert local["banned"] != local["text"] and local["penalized"] != local["text"]
    assert len(local["logprobs"]) == 6
    for k in ("bad_logit_bias", "out_of_vocab_bias", "bad_penalty"):
        assert local["errors"][k] is ebb.InvalidArgument, k
    # The prefix cache: the second chat reuses the first one's prompt, with the same text as a
    # request that does not use the cache; pins keep whole blocks until unpinned.
    (t1, u1), (t2, u2), (t3, u3) = local["prefix_chat"]
    assert u1["cached_tokens"] == 0 and u3["cached_tokens"] == 0
    assert 0 < u2["cached_tokens"] < u2["prompt_tokens"] and u2["cached_tokens"] % 16 == 0
    assert t1 == t2 == t3
    assert local["pin_off"] is ebb.FailedPrecondition
    assert local["pin_messages"]["pinned"] and local["pin_text"]["pinned"]
    assert local["pin_text"]["pinned_tokens"] == local["pin_text"]["tokens"] // 16 * 16
    assert local["pinned_bytes"] == local["pin_text"]["pinned_bytes"] > 0
    assert local["unpin_text"]["pinned"] and not local["unpin_text_again"]["pinned"]
    assert local["unpin_messages"]["pinned"] and local["unpin_messages"]["pinned_bytes"] == 0
    assert local["dropped"]
    assert local["prefix_errors"] == {"short": ebb.InvalidArgument, "not_a_prefix": TypeError,
                                      "float_ids": TypeError, "cache_prompt": ebb.InvalidArgument}
    for key in local:
        if key == "models_keys":  # the service adds its own fields (loaded, pinned, ...)
            assert local[key] <= remote[key], local[key] - remote[key]
            assert {"loaded", "pinned", "running"} <= remote[key]
        else:
            assert remote[key] == local[key], f"{key}: remote {remote[key]!r} != local {local[key]!r}"


def test_embed_same_vectors(service, models_dir):
    path = str(models_dir / "bert-tiny-fp32")
    rows = [[2, 50, 60, 70, 3], [2, 100, 3]]
    results = []
    for rt in (ebb.Runtime(), ebb.connect(service.url)):
        with rt.load(path) as m:
            a = m.embed(rows)
            b = m.embed(rows[0], dimensions=8, pooling="cls")
            err = error_type(lambda: m.embed(rows, options={"embed.poolin": "mean"}))
            gen_err = error_type(lambda: m.generate("hello", max_new_tokens=2))
            results.append((a, b, err, gen_err))
    (la, lb, lerr, lgen), (ra, rb, rerr, rgen) = results
    assert lgen is rgen is ebb.FailedPrecondition
    assert len(la.embeddings) == 2 and la.usage == ra.usage == {"prompt_tokens": 8,
                                                                "total_tokens": 8}
    for x, y in zip(la.embeddings + lb.embeddings, ra.embeddings + rb.embeddings):
        assert len(x) == len(y)
        assert max(abs(p - q) for p, q in zip(x, y)) < 1e-5
    assert len(lb.embeddings) == 1 and len(lb.embeddings[0]) == 8
    assert lerr is rerr is ebb.InvalidArgument


def test_remote_refuses_what_the_http_api_cannot_do(service, tiny_path, models_dir):
    rt = ebb.connect(service.url)
    with rt.load(tiny_path) as m:
        with pytest.raises(ebb.InvalidArgument, match="token-id prompt"):
            m.generate([5, 17, 42], max_new_tokens=4)
        for fn in (lambda: m.tokenizer, lambda: m.generator(), lambda: m.render_chat([])):
            with pytest.raises(ebb.Unavailable, match="ebb.Runtime"):
                fn()
        with pytest.raises(ebb.FailedPrecondition, match="--memory-limit"):
            rt.memory_limit = "1GiB"
        assert rt.memory_limit == 0
    # A folder that is not where the service serves that id.
    other = str(models_dir / "gpt2-tiny-fp32")
    with pytest.raises(ebb.InvalidArgument, match=f"serves model '{TINY}' from"):
        rt.load(other, id=TINY)
    # By id, as the service knows it.
    with rt.load(TINY, keep_alive="1m") as m:
        assert m.loaded and m.id == TINY
    assert all(d["id"] != TINY for d in rt.models())


def test_closing_a_stream_cancels_the_request(service, tiny_path):
    rt = ebb.connect(service.url)
    with rt.load(tiny_path, options={"kv_cache.mode": "static"}) as m:
        it = m.stream("hello world", max_new_tokens=200)
        first = next(it)
        assert isinstance(first, str)
        it.close()
        assert wait_until(lambda: m.runtime.stats()["kv"]["in_use_bytes"] == 0, 10)
        assert m.generate("hello", max_new_tokens=2).finish_reason in ("stop", "length")


def wait_for_file(path, within=20):
    deadline = time.monotonic() + within
    while not path.is_file():
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)


def test_connect_finds_the_running_service_by_its_state_file(models_dir, clean_env, tmp_path):
    """The service's own service.json (`ebb serve --state-dir`), found with the library's rule
    (ebb/service.h): $EBB_HOME, then $XDG_STATE_HOME/ebb; $EBB_URL wins over both."""
    home = tmp_path / "home"
    s = Service(models_dir, tmp_path / "serve.log", "--state-dir", str(home))
    try:
        wait_for_file(home / "service.json")
        clean_env.setenv("EBB_HOME", str(home))
        found = ebb._ebb.find_running_service()
        assert found["pid"] == s.proc.pid and found["url"] == s.url
        assert found["state_file"] == str(home / "service.json")
        rt = ebb.connect()
        assert rt.url == s.url
        assert any(d["id"] == TINY for d in rt.known_models())
        clean_env.delenv("EBB_HOME")
        (tmp_path / "ebb").mkdir()
        (tmp_path / "ebb" / "service.json").write_text((home / "service.json").read_text())
        clean_env.setenv("XDG_STATE_HOME", str(tmp_path))
        assert ebb.connect().url == s.url
        clean_env.setenv("EBB_URL", "http://127.0.0.1:1")
        with pytest.raises(ebb.Unavailable, match=r"\$EBB_URL"):
            ebb.connect()
    finally:
        s.stop()


def test_a_stale_state_file_is_refused_even_when_its_address_answers(service, clean_env,
                                                                        tmp_path):
    """Issue 38: remote.py read the "url" of service.json without the pid and start-time check,
    so a stale file (its service gone) sent ebb.connect() to whatever now listens there. Here the
    address answers (another service), but the file's process is gone or is not the one recorded,
    and connect() refuses it, as `ebb ps` does."""
    clean_env.setenv("EBB_HOME", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    state = {"pid": gone.pid, "start_time": 1, "url": service.url, "host": "127.0.0.1",
             "port": int(service.url.rsplit(":", 1)[1]), "log": "", "args": [],
             "started_unix_ms": 0}
    (tmp_path / "service.json").write_text(json.dumps(state))
    with pytest.raises(ebb.Unavailable, match="stale.*ebb service start"):
        ebb.connect()
    # A live pid with another start time: the pid was reused by another process.
    state["pid"] = os.getpid()
    (tmp_path / "service.json").write_text(json.dumps(state))
    with pytest.raises(ebb.Unavailable, match="stale"):
        ebb.connect()
    assert ebb._ebb.find_running_service() is None


def test_missing_service_is_a_clear_error(clean_env, tmp_path):
    clean_env.setenv("EBB_HOME", str(tmp_path))
    with pytest.raises(ebb.Unavailable, match="ebb service start") as e:
        ebb.connect()
    assert str(tmp_path / "service.json") in str(e.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "service.json").write_text("{not json")
    with pytest.raises(ebb.InvalidArgument, match="service.json"):
        ebb.connect()
    (tmp_path / "service.json").write_text(json.dumps({"url": f"http://127.0.0.1:{port}"}))
    with pytest.raises(ebb.InvalidArgument, match="service.json.*a field is missing"):
        ebb.connect()
    with pytest.raises(ebb.Unavailable, match="no ebb service answers"):
        ebb.connect(f"http://127.0.0.1:{port}")
    with pytest.raises(ebb.InvalidArgument, match="not an http"):
        ebb.connect("ftp://example")


def test_api_key(models_dir, tmp_path, clean_env):
    s = Service(models_dir, tmp_path / "serve.log", "--api-key", "sekret")
    try:
        with pytest.raises(ebb.FailedPrecondition, match="EBB_API_KEY"):
            ebb.connect(s.url).models()  # /health needs no key; the rest does
        assert ebb.connect(s.url, api_key="sekret").models() == []
        clean_env.setenv("EBB_API_KEY", "sekret")
        assert ebb.connect(s.url).stats()["kv"]["in_use_bytes"] == 0
    finally:
        s.stop()


def test_errors_map_by_their_ebb_code_one_table():
    """Issue 22 item 5: the service's error body names the ebb::ErrorCode ("ebb_code"); the
    client raises that code's class whatever the status or the OpenAI code say, and falls back to
    the OpenAI code, then the status, for a body without one."""
    from ebb import remote

    classes = {"invalid_argument": ebb.InvalidArgument, "not_found": ebb.NotFound,
               "resource_exhausted": ebb.ResourceExhausted,
               "failed_precondition": ebb.FailedPrecondition, "cancelled": ebb.Cancelled,
               "deadline_exceeded": ebb.DeadlineExceeded, "unavailable": ebb.Unavailable,
               "internal": ebb.Internal}
    for name, cls in classes.items():
        e = remote._error_from(400, {"error": {"message": "m", "code": "invalid_value",
                                               "ebb_code": name}})
        assert type(e) is cls, (name, type(e))
    # A wrong-kind model is a FailedPrecondition in process and over HTTP (its status is 400).
    e = remote._error_from(400, {"error": {"message": "m", "code": "wrong_model_kind",
                                           "ebb_code": "failed_precondition"}})
    assert isinstance(e, ebb.FailedPrecondition)
    # No ebb_code: the OpenAI code, then the status.
    assert isinstance(remote._error_from(429, {"error": {"message": "m"}}), ebb.ResourceExhausted)
    assert isinstance(remote._error_from(499, {"error": {"message": "m"}}), ebb.Cancelled)
    assert isinstance(remote._error_from(500, {"error": {"message": "m", "ebb_code": 7}}),
                      ebb.Internal)
