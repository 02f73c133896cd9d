"""The Python package end to end on the synthesized tiny model (label integration)."""
import _thread
import gc
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ebb

PROMPT_IDS = [5, 17, 42, 99, 7, 300]


def kv_in_use(model) -> int:
    return model.runtime.stats()["kv"]["in_use_bytes"]


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_version_and_exceptions_hierarchy():
    assert ebb.__version__
    for cls in (ebb.InvalidArgument, ebb.NotFound, ebb.ResourceExhausted, ebb.FailedPrecondition,
                ebb.Cancelled, ebb.DeadlineExceeded, ebb.Unavailable, ebb.Internal):
        assert issubclass(cls, ebb.Error)
    assert ebb.ResourceExhausted.code == "resource_exhausted"


def test_greedy_generate_matches_cli(model, tiny_path):
    cli = os.environ.get("EBB_CLI")
    if not cli:
        pytest.skip("EBB_CLI not set")
    out = subprocess.run([cli, "generate", tiny_path, "--input-ids", ",".join(map(str, PROMPT_IDS)),
                          "--max-length", "24", "--json"], check=True, capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=120)
    cpp = json.loads(out.stdout)["sequences"][0]
    r = model.generate(PROMPT_IDS, max_length=24)
    assert PROMPT_IDS + r.ids == cpp
    assert r.prompt_ids == PROMPT_IDS
    assert r.finish_reason in ("length", "stop")
    assert r.usage == {"prompt_tokens": 6, "completion_tokens": len(r.ids), "cached_tokens": 0}
    # The token-level generator gives the same greedy tokens.
    g = model.generator(max_length=24)
    g.append_tokens(PROMPT_IDS)
    while not g.is_done():
        g.generate_next_token()
    assert g.sequence == cpp
    logits = g.get_logits()
    assert isinstance(logits, np.ndarray) and logits.dtype == np.float32
    assert logits.shape == (model.info["vocab_size"],)
    g.rewind(len(PROMPT_IDS))
    assert g.sequence == PROMPT_IDS
    g.close()


def test_stream_pieces_join_to_generate_text(model):
    r = model.generate("hello world", max_new_tokens=16)
    it = model.stream("hello world", max_new_tokens=16)
    pieces = list(it)
    assert len(pieces) > 1
    assert "".join(pieces) == r.text
    assert it.result is not None and it.result.ids == r.ids
    assert kv_in_use(model) == 0


def test_chat_renders_the_template(model, tmp_path):
    messages = [{"role": "user", "content": "hi there"}]
    prompt = model.render_chat(messages)
    assert "<|user|>" in prompt and "hi there" in prompt
    r = model.chat(messages, max_new_tokens=8)
    ids = model.tokenizer.encode(prompt, add_special_tokens=False)
    assert r.prompt_ids == ids
    assert "".join(model.chat(messages, stream=True, max_new_tokens=8)) == r.text


def test_chat_without_a_template_is_invalid_argument(rt, tiny_path, tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(tiny_path, copy)
    cfg = json.loads((copy / "tokenizer_config.json").read_text())
    del cfg["chat_template"]
    (copy / "tokenizer_config.json").write_text(json.dumps(cfg))
    m = rt.load(str(copy))
    # Issue 24 item 6: InvalidArgument naming the fix (it was NotFound), as over HTTP (400).
    with pytest.raises(ebb.InvalidArgument, match="chat_template"):
        m.chat([{"role": "user", "content": "hi"}], max_new_tokens=2)
    m.unload()


def test_load_with_session_and_provider_options(rt, tiny_path):
    m = rt.load(tiny_path, id="opts",
                session_options={"intra_op_num_threads": 1,
                                 "session.use_device_allocator_for_initializers": "1"},
                provider_options={"cuda": {"gpu_mem_limit": 1 << 30}},
                options={"execution_provider": "cpu", "kv_cache.max_bytes": "64MiB"},
                run_options={"memory.enable_memory_arena_shrinkage": "cpu:0"})
    assert m.runtime.options()["memory.enable_memory_arena_shrinkage"] == "cpu:0"
    assert m.generate(PROMPT_IDS, max_new_tokens=2).usage["completion_tokens"] == 2
    assert [x["id"] for x in rt.models()] == ["opts"]
    m.unload()
    assert rt.models() == []


def test_cuda_option_without_cuda_ep_is_typed(rt, tiny_path):
    if "CUDAExecutionProvider" in ebb.available_providers():
        pytest.skip("this ONNX Runtime has CUDA")
    with pytest.raises((ebb.Unavailable, ebb.InvalidArgument)) as e:
        rt.load(tiny_path, provider_options={"cuda": {"gpu_mem_limit": "2147483648"}})
    assert "CUDA" in str(e.value)
    assert rt.models() == []


def test_bad_arguments_raise_typed_exceptions(rt, model, tiny_path):
    with pytest.raises(ebb.InvalidArgument, match="did you mean 'kv_cache.max_bytes'"):
        rt.load(tiny_path, id="x", options={"kv_cache.max_byte": "1"})
    with pytest.raises(ebb.InvalidArgument, match="did you mean 'temperature'"):
        model.generate("hi", temprature=0.5)
    with pytest.raises(ebb.InvalidArgument, match="top_k"):
        model.generator(top_k="many")
    with pytest.raises(ebb.InvalidArgument, match="memory.limit"):
        ebb.Runtime(memory_limit="lots")
    with pytest.raises(ebb.NotFound, match="genai_config.json"):
        rt.load("/nonexistent/model")
    with pytest.raises(ebb.FailedPrecondition, match="already loaded as 'tiny'"):
        rt.load(tiny_path, id="tiny")
    with pytest.raises(ebb.NotFound):
        rt.unload("nope")
    with pytest.raises(ebb.InvalidArgument):
        model.generate("")
    small = rt.load(tiny_path, id="small", options={"kv_cache.max_bytes": "1KiB"})
    with pytest.raises(ebb.ResourceExhausted, match="kv_cache.max_bytes"):
        small.generate("hello", max_new_tokens=4)
    with pytest.raises(ebb.ResourceExhausted):
        small.generator(max_length=64)
    small.unload()
    assert kv_in_use(model) == 0


def test_context_manager_unloads(rt, tiny_path):
    with rt.load(tiny_path, id="ctx") as m:
        assert m.loaded
    assert not m.loaded
    assert rt.models() == []
    with pytest.raises(ebb.FailedPrecondition):
        m.generate(PROMPT_IDS, max_new_tokens=1)


def test_unload_refused_while_a_generator_lives(rt, tiny_path):
    m = rt.load(tiny_path, id="busy")
    g = m.generator(max_length=16)
    with pytest.raises(ebb.FailedPrecondition):
        m.unload()
    g.close()
    m.unload()


def test_the_seed_users_tier1_call_loads(rt, tiny_path):
    """Issue 24 item 16a: the load from the request that started ebb, as written there."""
    with rt.load(tiny_path, id="seed",
                 session_options={"enable_cpu_mem_arena": "0",
                                  "arena_extend_strategy": "kSameAsRequested"}) as m:
        assert m.generate(PROMPT_IDS, max_new_tokens=4).usage["completion_tokens"] == 4
        assert not m.runtime.stats()["cpu_arena"]["available"]


# Issue 24 item 1: the interpreter exits, and `del` returns, in every order while a generator is
# still referenced (the Runtime's destructor used to wait for it forever). Each script runs in
# its own interpreter under a timeout; a hang fails with TimeoutExpired.
EXIT_SCRIPTS = {
    "returned at shutdown": """
def main():
    rt = ebb.Runtime()
    m = rt.load(PATH)
    return m.generator(max_length=16)
g = main()  # the Runtime went with main(): g is detached, and still referenced at exit
try:
    g.append_tokens([5, 17, 42])
    print("ran")
except ebb.FailedPrecondition:
    print("ok")
""",
    "del rt then del m": """
rt = ebb.Runtime()
m = rt.load(PATH)
g = m.generator(max_length=16)
g.append_tokens([5, 17, 42])
del rt
del m
try:
    g.generate_next_token()
    print("ran")
except ebb.FailedPrecondition as e:
    print("ok" if "idle" in str(e) else "wrong message: " + str(e))
""",
    "forced unload with the generator alive": """
rt = ebb.Runtime()
m = rt.load(PATH, id="m")
g = m.generator(max_length=16)
g.append_tokens([5, 17, 42])
rt.unload("m", force=True)
try:
    g.generate_next_token()
    print("ran")
except ebb.FailedPrecondition:
    print("ok")
""",
}


@pytest.mark.parametrize("name", sorted(EXIT_SCRIPTS))
def test_no_hang_with_a_generator_alive(name, tiny_path):
    script = "import ebb\nPATH = " + repr(tiny_path) + "\n" + EXIT_SCRIPTS[name]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok"), (out.stdout, out.stderr)


def test_generator_create_destroy_keeps_rss_flat(model):
    def once():
        g = model.generator(max_length=64)
        g.append_tokens(PROMPT_IDS)
        g.generate_next_token()
        del g

    for _ in range(30):
        once()
    gc.collect()
    before = rss_bytes()
    for _ in range(200):
        once()
    gc.collect()
    grown = rss_bytes() - before
    assert grown < 4 * 1024 * 1024, f"RSS grew {grown} bytes over 200 generators"
    assert kv_in_use(model) == 0


def test_shrink_after_next_run_fires_once(model):
    h = model.runtime
    base = h.stats()["num_shrinks"]
    h.shrink_after_next_run()
    model.generate(PROMPT_IDS, max_new_tokens=2)
    assert h.stats()["num_shrinks"] == base + 1
    model.generate(PROMPT_IDS, max_new_tokens=2)
    assert h.stats()["num_shrinks"] == base + 1
    h.shrink_every(2)
    for _ in range(4):
        model.generate(PROMPT_IDS, max_new_tokens=2)
    assert h.stats()["num_shrinks"] == base + 3
    h.shrink_every(0)
    h.shrink_arena()
    assert h.stats()["num_shrinks"] == base + 4
    h.shrink_above("64GiB")
    h.shrink_above(0)


def test_run_options_and_stats(rt, model):
    h = model.runtime
    h.set_option("some.key", 1)
    assert h.options()["some.key"] == "1"
    h.clear_option("some.key")
    assert "some.key" not in h.options()
    s = h.stats()
    assert set(s) >= {"process", "kv", "cpu_arena", "num_shrinks", "num_requests"}
    assert s["process"]["rss_bytes"] > 0
    # RSS split: anonymous, file-backed (mapped model/cache files, code) and shared memory.
    assert s["process"]["anon_bytes"] > 0 and s["process"]["file_bytes"] > 0
    assert s["process"]["shmem_bytes"] >= 0
    assert set(rt.stats()) >= {"process", "kv"}
    (entry,) = rt.models()
    assert entry["id"] == "tiny" and entry["weights_bytes"] > 0


def test_stats_are_the_documented_values(rt, model):
    """Issue 22 item 6: Runtime.stats() and model.runtime.stats() are the MemoryStats value of
    docs/runtime.schema.json (converted from the library's value, not parsed from a string),
    with memory.limit and what it counts; models() entries carry the full KV struct."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "http"))
    from json_schema_lite import load_schema, validate

    schema = load_schema("runtime.schema.json")
    g = model.generator(max_length=32)
    g.append_tokens(PROMPT_IDS)
    s = rt.stats()
    assert validate(schema, s, "#/$defs/memory_stats") == []
    assert s["used_bytes"] == s["weights_bytes"] + s["kv"]["in_use_bytes"]
    assert s["kv"]["in_use_bytes"] > 0 and s["limit_bytes"] == rt.memory_limit
    ms = model.runtime.stats()
    assert validate(schema, ms, "#/$defs/memory_stats") == []
    assert ms["used_bytes"] == model.info["weights_bytes"] + ms["kv"]["in_use_bytes"]
    assert list(ms) == ["process", "kv", "device", "cpu_arena", "num_shrinks", "num_requests",
                        "policies", "weights_bytes", "weights", "prefix_cache", "constraints",
                        "decode_batch", "limit_bytes", "used_bytes"], "struct order"
    # On the CPU: no device, its figures at their defaults (-1: not available).
    assert ms["device"]["available"] is False and ms["device"]["ort_cache_bytes"] == -1
    (entry,) = rt.models()
    assert validate(schema, entry["kv"], "#/$defs/kv") == []
    assert validate(schema, entry["device"], "#/$defs/device_memory") == []
    assert entry["device"]["available"] is False
    assert entry["kv"]["num_allocations"] >= 1
    assert set(g.stats()) == {"ttft_ms", "decode_tokens_per_s", "prompt_tokens",
                              "generated_tokens", "model_runs", "cached_tokens", "kv_bytes"}
    assert validate(schema, entry["prefix_cache"], "#/$defs/prefix_cache") == []
    g.close()


def test_tokenizer_and_info(model):
    tok = model.tokenizer
    ids = tok.encode("hello world", add_special_tokens=False)
    assert tok.decode(ids) == "hello world"
    info = model.info
    assert info["type"] == "llama" and info["vocab_size"] > 0 and info["id"] == "tiny"
    # Issue 28: what the graph runs on, the line of ebb info and /v1/runtime (the tiny model is
    # fp32: MatMul on MLAS's GEMM, GroupQueryAttention on ORT's CPU kernel, no int4 kernel).
    assert "MLAS GEMM" in info["kernels"] and "GroupQueryAttention x" in info["kernels"]
    assert "MatMulNBits" not in info["kernels"]


def test_two_threads_generate_concurrently(model):
    spans = {}
    barrier = threading.Barrier(2)

    def work(name):
        barrier.wait()
        t0 = time.perf_counter()
        model.generate(PROMPT_IDS, max_new_tokens=1500, max_length=2048)
        spans[name] = (t0, time.perf_counter())

    threads = [threading.Thread(target=work, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans["a"], spans["b"]
    # With the GIL held during generation, one thread could not even start its clock until the
    # other's generate returned: the spans would not overlap.
    assert max(a0, b0) < min(a1, b1), spans
    assert kv_in_use(model) == 0


def test_keyboard_interrupt_during_stream_frees_kv(model):
    n = 0
    with pytest.raises(KeyboardInterrupt):
        for _ in model.stream(PROMPT_IDS, max_new_tokens=1500, max_length=2048):
            n += 1
            if n == 2:
                _thread.interrupt_main()
    assert n < 1000
    assert kv_in_use(model) == 0


def test_keyboard_interrupt_from_a_timer_thread_during_stream(model):
    started = threading.Event()

    def interrupt():
        started.wait()
        time.sleep(0.02)
        _thread.interrupt_main()

    timer = threading.Thread(target=interrupt)
    timer.start()
    pieces = 0
    with pytest.raises(KeyboardInterrupt):
        for _ in model.stream(PROMPT_IDS, max_new_tokens=2040, max_length=2048):
            started.set()
            pieces += 1
        # Finished before the timer fired: wait for the interrupt here.
        time.sleep(5)
    timer.join()
    assert kv_in_use(model) == 0


def test_keyboard_interrupt_during_generate_cancels(model):
    calls = []

    def on_text(piece):
        calls.append(piece)
        if len(calls) == 1:
            _thread.interrupt_main()

    with pytest.raises(KeyboardInterrupt):
        model._impl._generate(PROMPT_IDS, on_text, max_new_tokens=1500, max_length=2048)
    assert len(calls) < 100
    assert kv_in_use(model) == 0
    # The model still works.
    assert model.generate(PROMPT_IDS, max_new_tokens=2).usage["completion_tokens"] == 2


def test_closing_a_stream_early_cancels(model):
    it = model.stream(PROMPT_IDS, max_new_tokens=1500, max_length=2048)
    next(it)
    it.close()
    assert kv_in_use(model) == 0


def test_runtime_is_the_one_name_of_the_tier2_controls(model):
    """Issue 38: the 0.1 aliases (model.controls, ebb.RuntimeHandle, ebb.RemoteRuntimeHandle) are
    gone; model.runtime is the one handle, an ebb.ModelControls, locally and remotely."""
    assert isinstance(model.runtime, ebb.ModelControls)
    model.runtime.shrink_every(4)
    assert model.runtime.stats()["policies"]["shrink_every"] == 4
    model.runtime.shrink_every(0)
    for gone in ("RuntimeHandle", "RemoteRuntimeHandle"):
        assert not hasattr(ebb, gone), gone
    assert not hasattr(model, "controls")
    assert "runtime" in dir(ebb.RemoteModel) and "controls" not in dir(ebb.RemoteModel)


def _native_threads():
    return len(os.listdir("/proc/self/task"))


def test_stream_runs_on_the_callers_thread_and_refuses_at_the_call(model):
    """Issue 22 Done-when 3: stream() pulls an ebb::Generation; no helper thread runs it."""
    list(model.stream(PROMPT_IDS, max_new_tokens=2))  # ORT's pools exist from here on
    before = _native_threads()
    it = model.stream(PROMPT_IDS, max_new_tokens=50, max_length=2048)
    pieces = [next(it), next(it)]
    assert _native_threads() == before, "a thread was started for the stream"
    pieces += list(it)
    assert "".join(pieces) == it.result.text
    assert it.result.finish_reason == "length"
    assert kv_in_use(model) == 0
    # A request that cannot start raises from stream() itself, before any iteration.
    with pytest.raises(ebb.InvalidArgument, match="max_new_tokens"):
        model.stream(PROMPT_IDS, max_new_tokens=-1)
    with pytest.raises(ebb.InvalidArgument, match="no room to generate"):
        model.stream(PROMPT_IDS, max_length=len(PROMPT_IDS))
    assert kv_in_use(model) == 0


def test_a_stream_closed_from_another_thread_ends_cancelled(model):
    it = model.stream(PROMPT_IDS, max_new_tokens=1500, max_length=2048)
    first = next(it)
    t = threading.Thread(target=it.close)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "close() hung"
    assert kv_in_use(model) == 0
    with pytest.raises(StopIteration):
        next(it)
    assert it.result.finish_reason == "cancelled"
    assert it.result.text.startswith(first)


def test_logit_bias_penalties_and_logprobs(model):
    # Issue 24 item 16: these were accepted and changed nothing.
    plain = model.generate(PROMPT_IDS, max_new_tokens=30)
    assert plain.logprobs is None
    first = plain.ids[0]
    banned = model.generate(PROMPT_IDS, max_new_tokens=30, logit_bias={first: -100})
    assert banned.ids[0] != first and first not in banned.ids
    forced = next(t for t in range(3, 1000) if t not in plain.ids)
    assert model.generate(PROMPT_IDS, max_new_tokens=5, logit_bias={forced: 100}).ids == \
        [forced] * 5
    # The same through options={} and as the option table's string.
    assert model.generate(PROMPT_IDS, max_new_tokens=5,
                          options={"logit_bias": f"{forced}=100"}).ids == [forced] * 5
    pen = model.generate(PROMPT_IDS, max_new_tokens=30, frequency_penalty=2.0,
                         presence_penalty=0.5)
    assert len(set(pen.ids)) > len(set(plain.ids))
    for bad in ({"x": 1}, {first: 101}, {first: "high"}, {True: 1}):
        with pytest.raises(ebb.InvalidArgument, match="logit_bias"):
            model.generate(PROMPT_IDS, max_new_tokens=2, logit_bias=bad)
    with pytest.raises(ebb.InvalidArgument, match="logit_bias.*vocab"):
        model.generate(PROMPT_IDS, max_new_tokens=2, logit_bias={10 ** 7: 1})
    with pytest.raises(ebb.InvalidArgument, match="presence_penalty"):
        model.generate(PROMPT_IDS, max_new_tokens=2, presence_penalty=3)
    # logprobs: one entry per generated id, greedy = the most likely.
    r = model.generate(PROMPT_IDS, max_new_tokens=6, logprobs=True, top_logprobs=2)
    assert [e["id"] for e in r.logprobs] == r.ids
    for e in r.logprobs:
        assert set(e) == {"id", "token", "logprob", "top_logprobs"}
        assert e["logprob"] <= 0 and len(e["top_logprobs"]) == 2
        assert e["top_logprobs"][0]["id"] == e["id"]
    it = model.stream(PROMPT_IDS, max_new_tokens=6, top_logprobs=2)
    "".join(it)
    assert it.result.logprobs == r.logprobs
    # The token-level generator.
    g = model.generator(max_length=len(PROMPT_IDS) + 3, logit_bias={forced: 100}, logprobs=True)
    g.append_tokens(PROMPT_IDS)
    g.generate_next_token()
    assert g.get_next_tokens() == [forced]
    (lp,) = g.get_next_logprobs()
    assert lp["id"] == forced and lp["logprob"] > -0.01 and lp["top_logprobs"] == []


def test_structured_output_keywords(model):
    """json_schema= (a dict or its text), response_format= (OpenAI's), regex= and grammar= all
    constrain the output (docs/structured_output.md)."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"},
                                               "n": {"type": "integer", "minimum": 3, "maximum": 5}},
              "required": ["ok", "n"], "additionalProperties": False}
    for kwargs in ({"json_schema": schema}, {"json_schema": json.dumps(schema)},
                   {"response_format": {"type": "json_schema",
                                        "json_schema": {"name": "x", "schema": schema}}}):
        r = model.generate("hello", max_new_tokens=40, **kwargs)
        value = json.loads(r.text)
        assert list(value) == ["ok", "n"] and 3 <= value["n"] <= 5, r.text
    obj = model.generate("hello", max_new_tokens=200, response_format={"type": "json_object"})
    assert obj.text.startswith("{")
    assert model.generate("hello", max_new_tokens=20, regex="[0-9]{4}").text.isdigit()
    g = model.generate("hello", max_new_tokens=20, grammar='root ::= "ab" | "cd"').text
    assert g in ("ab", "cd")
    assert "".join(model.stream("hello", max_new_tokens=20, regex="x{3}")) == "xxx"
    with pytest.raises(ebb.InvalidArgument, match="not"):
        model.generate("hello", json_schema={"not": {"type": "string"}})
    with pytest.raises(ebb.InvalidArgument, match="response_format"):
        model.generate("hello", response_format={"type": "yaml"})
