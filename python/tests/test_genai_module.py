"""The Python module onnxruntime_genai (python/onnxruntime_genai/) over ebb's
libonnxruntime-genai.so, checked the way genai's own Python tests check genai: the documented
generation loop, batches, rewind, logits, tokenizer round trips, and errors.

Needs the external fixtures in ../shared/models (stories260k, tiny-random-gpt2-fp32; see its
README.md for the published results used here) and skips with a message when they are absent, as a
fresh clone has no ../shared. The library is found as the module finds it ($EBB_GENAI_LIBRARY,
else a build tree; onnxruntime_genai/_lib.py); when the package is not on sys.path, python/ of
this checkout is used.
"""
import gc
import json
import sys
from pathlib import Path

import numpy as np
import pytest

SHARED_MODELS = Path(__file__).resolve().parents[2].parent / "shared" / "models"
STORIES = SHARED_MODELS / "stories260k"
GPT2 = SHARED_MODELS / "tiny-random-gpt2-fp32"

if not STORIES.is_dir():
    pytest.skip(f"{STORIES} is absent (external fixtures in ../shared; a fresh clone has none)",
                allow_module_level=True)

try:
    import onnxruntime_genai as og
except ModuleNotFoundError as e:
    if e.name != "onnxruntime_genai":
        raise
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import onnxruntime_genai as og

# llama2.c's run.c -t 0 output for stories260k (../shared/models/README.md).
DOG_PROMPT = "Once upon a time, a dog"
DOG_PROMPT_IDS = [1, 403, 407, 261, 378, 432, 261, 400, 428]
DOG_TEXT = "Once upon a time, a dog named Max was very excited. He was very excited to"
DOG_IDS = [1, 403, 407, 261, 378, 432, 261, 400, 428, 395, 392, 412, 444, 286, 399, 344, 444, 429,
           275, 266, 426, 346, 286, 399, 344, 444, 429, 275, 266, 267]
EMPTY_TEXT = (
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do. "
    "She said, \"I want to play with your ball, but I can't find it.\"\n"
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what to "
    "do.\"\nLily didn't want to help her mom, so she said, \"I'm sorry, mom. I didn't know what "
    "to do.\" Her mom said, \"Don't worry, Lily. We can help you")

# onnxruntime-genai's published greedy results for tiny-random-gpt2-fp32 (its test/c_api_tests.cpp
# and test/python/test_onnxruntime_genai_api.py; ../shared/models/README.md).
GPT2_PROMPTS = np.array([[0, 0, 0, 52], [0, 0, 195, 731]], dtype=np.int32)
GPT2_EXPECTED = np.array([[0, 0, 0, 52, 204, 204, 204, 204, 204, 204],
                          [0, 0, 195, 731, 731, 114, 114, 114, 114, 114]], dtype=np.int32)
GPT2_PROMPT_LOGITS = np.array([[-0.12675379, -0.04443946, 0.14492269, 0.03021223, -0.03212897],
                               [0.2938929, -0.10538938, -0.00226692, 0.12050669, -0.10622668]])
GPT2_VOCAB = 1000


@pytest.fixture(scope="module")
def stories():
    return og.Model(str(STORIES))


@pytest.fixture(scope="module")
def gpt2():
    if not GPT2.is_dir():
        pytest.skip(f"{GPT2} is absent (external fixtures in ../shared)")
    return og.Model(str(GPT2))


def greedy_params(model, **options):
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, **options)
    return params


# ---- stories260k: genai's documented loop reproduces llama2.c


def test_stories_generation_loop_matches_llama2c(stories):
    tokenizer = og.Tokenizer(stories)
    # genai's tokenizer adds no special tokens by default; llama2.c's prompt starts with <s>.
    assert list(tokenizer.encode(DOG_PROMPT)) == DOG_PROMPT_IDS[1:]
    tokenizer.update_options(add_special_tokens=True)
    input_tokens = tokenizer.encode(DOG_PROMPT)
    assert input_tokens.dtype == np.int32
    assert list(input_tokens) == DOG_PROMPT_IDS

    stream = tokenizer.create_stream()
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=30)  # greedy: the config's do_sample is false
    generator = og.Generator(stories, params)
    # genai's examples print the prompt, then each piece the stream gives: the first generated
    # token, "▁named", must keep its space ("a dog named", not "a dognamed"), as genai's stream
    # does (a SentencePiece space is dropped only after a special token).
    text = DOG_PROMPT
    generator.append_tokens(input_tokens)
    while not generator.is_done():
        generator.generate_next_token()
        new_token = generator.get_next_tokens()[0]
        text += stream.decode(new_token)

    assert text == DOG_TEXT
    assert list(generator.get_sequence(0)) == DOG_IDS
    assert generator.token_count() == 30
    assert tokenizer.decode(generator.get_sequence(0)) == DOG_TEXT


def test_stories_empty_prompt_streams_the_long_story(stories):
    tokenizer = og.Tokenizer(stories)
    stream = tokenizer.create_stream()
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=256)
    generator = og.Generator(stories, params)
    generator.append_tokens([tokenizer.bos_token_id])  # llama2.c's empty prompt: <s> alone
    # The stream is given <s> too. genai's stream (onnxruntime-extensions' SpmId2Token) drops the
    # SentencePiece space of a piece that follows a special token, so "▁Once" after <s> gives
    # "Once", as llama2.c prints it.
    pieces = [stream.decode(tokenizer.bos_token_id)]
    while not generator.is_done():
        generator.generate_next_token()
        pieces.append(stream.decode(generator.get_next_tokens()[0]))
    assert "".join(pieces) == EMPTY_TEXT
    assert generator.token_count() == 256


def test_stories_tokenizer_ids_and_round_trip(stories):
    tokenizer = og.Tokenizer(stories)
    assert tokenizer.bos_token_id == 1
    eos = tokenizer.eos_token_ids
    assert isinstance(eos, np.ndarray) and sorted(eos.tolist()) == [1, 2]
    assert tokenizer.to_token_id("<s>") == 1
    for text in ["Once upon a time, a dog", "Lily's mom said, \"Hi!\"\nThe end."]:
        assert tokenizer.decode(tokenizer.encode(text)) == text
    batch = tokenizer.encode_batch(["Once upon a time", "a dog"])
    assert isinstance(batch, og.Tensor)
    assert np.asarray(batch).shape[0] == 2 and batch.type() == 6  # OgaElementType_int32
    # Rows are padded with pad_token_id 0 (<unk>, a special token the decode skips).
    assert np.asarray(batch).tolist() == [[403, 407, 261, 378], [261, 400, 428, 0]]
    assert tokenizer.decode_batch(batch) == ["Once upon a time", "a dog"]
    assert tokenizer.decode_batch(np.asarray(batch)) == ["Once upon a time", "a dog"]
    with pytest.raises(RuntimeError, match="not a token"):
        tokenizer.to_token_id("not one token")


def test_stories_chat_template(stories):
    tokenizer = og.Tokenizer(stories)
    messages = [{"role": "user", "content": "Tell me a story"}]
    # Any folder: a template passed as template_str (genai's keyword-only argument).
    template = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    rendered = tokenizer.apply_chat_template(json.dumps(messages), template_str=template,
                                             add_generation_prompt=True)
    assert rendered == "<|user|>Tell me a story\n<|assistant|>"
    assert tokenizer.apply_chat_template(messages, template_str=template,
                                         add_generation_prompt=False) == "<|user|>Tell me a story\n"
    has_template = (STORIES / "chat_template.jinja").exists() or \
        "chat_template" in json.loads((STORIES / "tokenizer_config.json").read_text())
    if not has_template:
        with pytest.raises(RuntimeError, match="chat template"):
            tokenizer.apply_chat_template(json.dumps(messages))
        pytest.skip(f"{STORIES} has no chat template of its own: checked template_str only")
    assert "Tell me a story" in tokenizer.apply_chat_template(json.dumps(messages))


# ---- tiny-random-gpt2-fp32: genai's published results


def test_gpt2_greedy_batch_with_logits_round_trip(gpt2):
    params = greedy_params(gpt2, max_length=10, batch_size=2)
    generator = og.Generator(gpt2, params)
    generator.append_tokens(GPT2_PROMPTS)  # 2-D: one row per sequence
    assert generator.token_count() == 4
    while not generator.is_done():
        logits = generator.get_logits()
        generator.set_logits(logits)  # genai's test: twice, to be sure the buffer stays valid
        generator.set_logits(logits)
        generator.generate_next_token()
    for i in range(2):
        got = generator.get_sequence(i)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, GPT2_EXPECTED[i])
    assert generator.token_count() == 10


def test_gpt2_logits_shape_and_published_values(gpt2):
    generator = og.Generator(gpt2, greedy_params(gpt2, max_length=10, batch_size=2))
    generator.append_tokens(GPT2_PROMPTS)
    logits = generator.get_logits()
    assert logits.dtype == np.float32
    assert logits.shape[0] == 2 and logits.shape[-1] == GPT2_VOCAB and logits.size == 2 * GPT2_VOCAB
    np.testing.assert_allclose(logits.reshape(2, GPT2_VOCAB)[:, ::200], GPT2_PROMPT_LOGITS,
                               atol=1e-3)
    out = generator.get_output("logits")
    np.testing.assert_allclose(out.reshape(2, -1, GPT2_VOCAB)[:, -1, ::200], GPT2_PROMPT_LOGITS,
                               atol=1e-3)
    logits[0, ...] = 1.0  # a copy: changing it changes nothing in the generator
    np.testing.assert_allclose(generator.get_logits().reshape(2, GPT2_VOCAB)[:, ::200],
                               GPT2_PROMPT_LOGITS, atol=1e-3)


def test_gpt2_set_logits_picks_the_forced_token(gpt2):
    generator = og.Generator(gpt2, greedy_params(gpt2, max_length=10, batch_size=2))
    generator.append_tokens(GPT2_PROMPTS)
    logits = generator.get_logits()
    forced = 7  # neither row's greedy choice (204, 731)
    logits[...] = -np.inf
    logits.reshape(2, GPT2_VOCAB)[:, forced] = 0.0
    generator.set_logits(logits)
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [forced, forced]
    assert generator.get_sequence(0)[-1] == forced and generator.get_sequence(1)[-1] == forced
    with pytest.raises(RuntimeError):
        generator.set_logits(np.zeros(3, dtype=np.float32))  # wrong size: the library refuses


def test_gpt2_rewind_reproduces_the_sequence(gpt2):
    generator = og.Generator(gpt2, greedy_params(gpt2, max_length=10, batch_size=1))
    generator.append_tokens(np.array([[0, 0, 195, 731]], dtype=np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    np.testing.assert_array_equal(generator.get_sequence(0), GPT2_EXPECTED[1])

    generator.rewind_to(3)
    assert generator.token_count() == 3
    generator.append_tokens([731, 731])  # a list works as well as an array
    while not generator.is_done():
        generator.generate_next_token()
    np.testing.assert_array_equal(generator.get_sequence(0), GPT2_EXPECTED[1])


def test_gpt2_search_options(gpt2):
    params = og.GeneratorParams(gpt2)
    params.set_search_options(max_length=20, top_k=5, temperature=0.5, do_sample=True)
    opts = params.get_search_options()
    assert opts["max_length"] == 20 and opts["top_k"] == 5 and opts["temperature"] == 0.5
    assert opts["do_sample"] is True
    with pytest.raises(RuntimeError, match="Unknown search option type"):
        params.set_search_options(max_length="20")
    with pytest.raises(RuntimeError, match="num_beams"):
        params.set_search_options(num_beams=4)
    with pytest.raises(RuntimeError, match="vocab_size"):
        params.set_search_options(top_k=GPT2_VOCAB + 1)
        generator = og.Generator(gpt2, params)
        generator.append_tokens(GPT2_PROMPTS[:1])
        generator.generate_next_token()


def test_gpt2_tokenizer_round_trip(gpt2):
    tokenizer = og.Tokenizer(gpt2)
    ids = tokenizer.encode("Hello  world")
    assert ids.tolist() == [15496, 50286, 6894]  # the CodeGen two-space token (README)
    assert tokenizer.decode(ids) == "Hello  world"
    assert tokenizer.decode(ids.tolist()) == "Hello  world"
    assert tokenizer.to_token_id("<|endoftext|>") == 50256
    prompts = ["This is a test.", "Rats are awesome pets!"]
    batch = tokenizer.encode_batch(prompts)
    decoded = tokenizer.decode_batch(batch)
    # The shorter row is padded with pad_token_id 98, a real token of this vocabulary ("�"
    # pieces), so compare the longest row exactly and the other by prefix.
    lengths = [len(tokenizer.encode(p)) for p in prompts]
    longest = int(np.argmax(lengths))
    assert decoded[longest] == prompts[longest]
    assert all(d.startswith(p) for d, p in zip(decoded, prompts))


def test_gpt2_runtime_option_terminates_the_session(gpt2):
    generator = og.Generator(gpt2, greedy_params(gpt2, max_length=10))
    generator.append_tokens([0, 0, 195, 731])
    assert not generator.is_session_terminated()
    generator.set_runtime_option("terminate_session", "1")
    assert generator.is_session_terminated()
    with pytest.raises(RuntimeError, match="terminate"):
        generator.generate_next_token()
    generator.set_runtime_option("terminate_session", "0")
    generator.generate_next_token()
    assert generator.get_next_tokens().tolist() == [731]


def test_objects_keep_their_parents_alive():
    model = og.Model(str(STORIES))
    tokenizer = og.Tokenizer(model)
    stream = tokenizer.create_stream()
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=12)
    generator = og.Generator(model, params)
    del model, params, tokenizer
    gc.collect()
    generator.append_tokens(DOG_PROMPT_IDS)
    while not generator.is_done():
        generator.generate_next_token()
        stream.decode(generator.get_next_tokens()[0])
    assert generator.get_sequence(0).tolist() == DOG_IDS[:12]


def test_token_inputs_in_any_integer_form(stories):
    """genai's binding takes a contiguous int32 array; this module also takes lists, other
    integer dtypes (range-checked), non-contiguous views and Tensors, all meaning the same ids."""
    params = greedy_params(stories, max_length=12)
    forms = [DOG_PROMPT_IDS, np.array(DOG_PROMPT_IDS, dtype=np.int64),
             np.repeat(np.array(DOG_PROMPT_IDS, dtype=np.int32), 2)[::2],
             og.Tensor(np.array(DOG_PROMPT_IDS, dtype=np.int32))]
    for tokens in forms:
        generator = og.Generator(stories, params)
        generator.append_tokens(tokens)
        while not generator.is_done():
            generator.generate_next_token()
        assert generator.get_sequence(np.int64(0)).tolist() == DOG_IDS[:12]
    with pytest.raises(ValueError, match="int32"):
        og.Generator(stories, params).append_tokens(np.array([2**40], dtype=np.int64))
    assert sorted(params.get_search_options()) == sorted([
        "batch_size", "chunk_size", "diversity_penalty", "do_sample", "early_stopping",
        "length_penalty", "max_length", "min_length", "no_repeat_ngram_size", "num_beams",
        "num_return_sequences", "past_present_share_buffer", "random_seed", "repetition_penalty",
        "temperature", "top_k", "top_p"])  # genai's get_search_options() keys


def test_config_providers_and_overlay():
    config = og.Config(str(STORIES))
    config.clear_providers()
    config.append_provider("cpu")
    config.overlay(json.dumps({"search": {"max_length": 20}}))
    model = og.Model(config)
    assert model.type == "llama" and model.device_type == "cpu"
    assert og.GeneratorParams(model).get_search_options()["max_length"] == 20
    with pytest.raises(RuntimeError, match="OgaConfigOverlay"):
        config.overlay("not json")
    with pytest.raises(RuntimeError, match="OgaConfigRemoveModelData"):
        config.remove_model_data("model.onnx")  # nothing was added


def test_config_model_data_from_memory():
    config = og.Config(str(STORIES))
    config.add_model_data("model.onnx", (STORIES / "model.onnx").read_bytes())
    model = og.Model(config)
    generator = og.Generator(model, greedy_params(model, max_length=12))
    generator.append_tokens(DOG_PROMPT_IDS)
    while not generator.is_done():
        generator.generate_next_token()
    assert generator.get_sequence(0).tolist() == DOG_IDS[:12]


# ---- Tensors, errors, unsupported features, process-wide functions


def test_tensor_and_named_tensors():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = og.Tensor(a)
    a[0, 0] = 42  # the tensor holds a copy
    assert t.shape() == [2, 3] and t.type() == 1 and t.data() != 0
    np.testing.assert_array_equal(t.as_numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))

    named = og.NamedTensors()
    named["input_ids"] = GPT2_PROMPTS
    named["attention_mask"] = np.ones((2, 4), dtype=np.int32)
    named["test1"] = og.Tensor(np.random.rand(2, 2).astype(np.float32))
    assert len(named) == 3 and sorted(named.keys()) == ["attention_mask", "input_ids", "test1"]
    assert "input_ids" in named and "absent" not in named
    np.testing.assert_array_equal(named["input_ids"].as_numpy(), GPT2_PROMPTS)
    with pytest.raises(RuntimeError, match="not found"):
        named["absent"]
    for name in named.keys():
        del named[name]
    assert len(named) == 0


def test_errors_carry_the_library_message(tmp_path):
    with pytest.raises(RuntimeError, match="genai_config.json"):
        og.Model(str(tmp_path))
    model = og.Model(str(STORIES))
    generator = og.Generator(model, og.GeneratorParams(model))
    with pytest.raises(RuntimeError, match="OgaGenerator_AppendTokens"):
        generator.append_tokens(np.array([], dtype=np.int32))
    with pytest.raises(TypeError):
        generator.append_tokens(np.array([1.5, 2.0]))  # not token ids
    with pytest.raises(RuntimeError, match="append one first"):
        generator.get_output("present.0.key")  # no prompt yet
    generator.append_tokens([1, 403, 407])
    key = generator.get_output("present.0.key")  # stories260k: 4 KV heads of 8
    assert key.shape == (1, 4, 3, 8) and key.dtype == np.float32 and np.abs(key).sum() > 0
    with pytest.raises(RuntimeError, match="no output \"present.9.key\""):
        generator.get_output("present.9.key")  # 5 layers: 0 to 4


def test_guidance_constrains_the_output(stories):
    """genai's set_guidance: the json_schema and regex types run ebb's constraint engine."""
    tok = og.Tokenizer(stories)
    params = og.GeneratorParams(stories)
    params.set_search_options(max_length=120)
    params.set_guidance("json_schema", json.dumps({
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9},
                                         "w": {"enum": ["cat", "dog"]}},
        "required": ["n", "w"], "additionalProperties": False}))
    gen = og.Generator(stories, params)
    gen.append_tokens(tok.encode("Once upon a time"))
    out = []
    while not gen.is_done():
        gen.generate_next_token()
        out.append(gen.get_next_tokens()[0])
    value = json.loads(tok.decode(out))
    assert 1 <= value["n"] <= 9 and value["w"] in ("cat", "dog")


def test_unsupported_features_name_themselves(stories):
    params = og.GeneratorParams(stories)
    with pytest.raises(RuntimeError, match="OgaGeneratorParamsSetGuidance.*lark_grammar"):
        params.set_guidance("lark_grammar", "start: \"a\"")
    with pytest.raises(RuntimeError, match="OgaLoadImages"):
        og.Images.open("picture.png")
    with pytest.raises(RuntimeError, match="OgaLoadAudios"):
        og.Audios.open("speech.wav")
    with pytest.raises(RuntimeError, match="OgaCreateMultiModalProcessor"):
        stories.create_multimodal_processor()
    with pytest.raises(RuntimeError, match="OgaCreateAdapters"):
        og.Adapters(stories)
    with pytest.raises(RuntimeError, match="OgaCreateEngine"):
        og.Engine(stories)
    with pytest.raises(RuntimeError, match="OgaCreateRequest"):
        og.Request(params)


def test_process_wide_functions():
    og.set_current_gpu_device_id(0)
    assert og.get_current_gpu_device_id() == 0
    lines = []
    og.set_log_callback(lines.append)
    og.set_log_options(enabled=True, generate_next_token=True)
    try:
        # ebb's library logs that it loads no plug-in providers: a line to see the callback get.
        og.register_execution_provider_library("test_ep", "/nonexistent/libtest_ep.so")
    finally:
        og.set_log_options(enabled=False)
        og.set_log_callback(None)
    assert any("OgaRegisterExecutionProviderLibrary" in line and "test_ep" in line
               for line in lines), lines
    with pytest.raises(RuntimeError, match="Unknown log option type"):
        og.set_log_options(enabled=1)
    with pytest.raises(RuntimeError, match="OgaSetLogBool"):
        og.set_log_options(no_such_setting=True)
    assert og.is_cuda_available() is False
