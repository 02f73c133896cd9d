"""Issue 24, items 6 and 9 in Python: load(..., chat_template=...) in process and through
ebb.connect(); chat without a template names the fix; wrong argument types are TypeErrors
naming the argument (not pybind11's "Unable to cast ... std::__cxx11::basic_string"); the
Runtime docstring says what memory_limit covers; connect().load with an id the service does not
serve says the id must be the service's."""
import json
import os
import re
import shutil
import subprocess

import pytest

import ebb

TEMPLATE = ("{% for m in messages %}{{ m['role'] | upper }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}ASSISTANT:{% endif %}")
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def no_template(tiny_path, tmp_path):
    copy = tmp_path / "nt"
    shutil.copytree(tiny_path, copy)
    cfg = json.loads((copy / "tokenizer_config.json").read_text())
    del cfg["chat_template"]
    (copy / "tokenizer_config.json").write_text(json.dumps(cfg))
    return copy


def test_chat_without_a_template_names_the_fix_and_load_takes_one(rt, no_template, tmp_path):
    with rt.load(no_template, id="nt") as m:  # a pathlib.Path is a path too
        with pytest.raises(ebb.InvalidArgument, match="chat_template=FILE") as e:
            m.chat(MESSAGES, max_new_tokens=2)
        assert "--chat-template FILE" in str(e.value)
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    for value in (tmp_path / "t.jinja", str(tmp_path / "t.jinja"), TEMPLATE):
        with rt.load(no_template, id="nt", chat_template=value) as m:
            assert m.render_chat(MESSAGES) == "USER: hi\nASSISTANT:"
            r = m.chat(MESSAGES, max_new_tokens=2)
            assert r.prompt_ids == m.tokenizer.encode("USER: hi\nASSISTANT:",
                                                      add_special_tokens=False)
    (tmp_path / "bad.jinja").write_text("{{ oops")
    with pytest.raises(ebb.InvalidArgument, match=re.escape(str(tmp_path / "bad.jinja")) + ":1:"):
        rt.load(no_template, id="bad", chat_template=tmp_path / "bad.jinja")
    assert rt.models() == []
    with pytest.raises(ebb.NotFound, match="no such file"):
        rt.load(no_template, id="bad", chat_template=str(tmp_path / "missing.jinja"))
    with pytest.raises(TypeError, match="chat_template must be a str or os.PathLike"):
        rt.load(no_template, chat_template=5)


@pytest.mark.parametrize("call,needle", [
    (lambda rt, p: rt.load(None),
     r"path must be a str or os\.PathLike \(a model folder\), not None"),
    (lambda rt, p: rt.load(5), r"path must be a str or os\.PathLike"),
    (lambda rt, p: rt.load(p, id=5), r"id must be a str or None, not int"),
    (lambda rt, p: rt.load(p, session_options=[1]), r"session_options must be a dict, not list"),
    (lambda rt, p: rt.load(p, options={1: "x"}), r"the keys of options must be str, not int"),
    (lambda rt, p: rt.load(p, options={"kv_cache.mode": ["static"]}),
     r"options\['kv_cache\.mode'\] must be a str, int, float or bool, not list"),
    (lambda rt, p: rt.load(p, provider_options={"cuda": 1}),
     r"provider_options\['cuda'\] must be a dict, not int"),
    (lambda rt, p: ebb.Runtime(memory_limit=[1]),
     r"memory_limit must be a str, int, float or bool"),
    (lambda rt, p: ebb.Runtime(arena=["max_mem"]), r"arena must be a dict, not list"),
])
def test_wrong_argument_types_are_type_errors_naming_the_argument(rt, tiny_path, call, needle):
    with pytest.raises(TypeError, match=needle) as e:
        call(rt, tiny_path)
    assert "Unable to cast" not in str(e.value) and "basic_string" not in str(e.value)
    assert rt.models() == [], "nothing was loaded"


@pytest.mark.parametrize("call,needle", [
    (lambda m: m.generate([1.5]), r"prompt\[0\] must be an int token id, not float \(1\.5\)"),
    (lambda m: m.generate([5, True]), r"prompt\[1\] must be an int token id, not bool"),
    (lambda m: m.generate(None), r"prompt must be a str or a list of int token ids, not NoneType"),
    (lambda m: m.generate("hi", max_new_tokens="5"), r"max_new_tokens must be an int, not str"),
    (lambda m: m.generate("hi", stop=5), r"stop must be a str or a list of str, not int"),
    (lambda m: m.generate("hi", temperature=[1]), r"temperature must be a str, int, float or bool"),
    (lambda m: m.generate("hi", options=[1]), r"options must be a dict, not list"),
    (lambda m: m.chat("hi"), r"messages must be a list of"),
    (lambda m: m.chat(["hi"]), r"messages\[0\] must be a dict with 'role' and 'content', not str"),
    (lambda m: m.chat([{"role": "user", "content": 5}]),
     r"messages\[0\]\['content'\] must be a str, not int"),
    (lambda m: m.chat(MESSAGES, add_generation_prompt="yes"),
     r"add_generation_prompt must be a bool, not str"),
    (lambda m: m.runtime.shrink_above([1]), r"rss_bytes must be an int of bytes"),
    (lambda m: m.runtime.set_option("k", [1]), r"value must be a str, int, float or bool"),
    (lambda m: m.generator(options=5), r"options must be a dict, not int"),
])
def test_wrong_request_types_are_type_errors_naming_the_argument(model, call, needle):
    with pytest.raises(TypeError, match=needle) as e:
        call(model)
    assert "Unable to cast" not in str(e.value)
    assert model.runtime.stats()["kv"]["in_use_bytes"] == 0


def test_numpy_ints_are_token_ids(model):
    np = pytest.importorskip("numpy")
    a = model.generate(np.array([5, 17, 42], dtype=np.int64), max_new_tokens=2)
    b = model.generate([5, 17, 42], max_new_tokens=2)
    assert a.ids == b.ids


def test_a_nul_in_an_id_is_escaped_not_cut(rt, tiny_path):
    with pytest.raises(ebb.InvalidArgument) as e:
        rt.load(tiny_path, id="a\x00b")
    assert "'a\\x00b' is not valid: use 1 to 128 letters" in str(e.value)
    with pytest.raises(ebb.NotFound, match=r"no model 'a\\x00b' is loaded"):
        rt.get("a\x00b")


def test_the_runtime_docstring_says_memory_limit_covers_weights_and_kv():
    doc = ebb.Runtime.__doc__
    assert "weights" in doc and "KV" in doc
    assert "KV bytes of all models together" not in doc


# ---- ebb.connect() ----------------------------------------------------------------------------

EBB_CLI = os.environ.get("EBB_CLI", "")


@pytest.fixture
def service(no_template, tmp_path):
    if not EBB_CLI:
        pytest.fail("EBB_CLI must name the ebb binary (run through ctest python_pytest)")
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([EBB_CLI, "serve", "--port", "0", "--model", f"nt={no_template}"],
                            stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                            text=True)
    m = re.search(r"(http://[0-9.]+:\d+)", proc.stdout.readline())
    assert m, (tmp_path / "serve.log").read_text()
    yield m.group(1)
    proc.terminate()
    proc.wait(30)
    proc.stdout.close()
    log.close()


def test_connect_load_takes_chat_template_and_names_the_services_ids(service, no_template,
                                                                     tmp_path):
    rt = ebb.connect(service)
    m = rt.load("nt")
    with pytest.raises(ebb.InvalidArgument, match="has no chat template") as e:
        m.chat(MESSAGES, max_new_tokens=2)
    assert e.value.api_code == "no_chat_template"
    m.unload()
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    m = rt.load(no_template, id="nt", chat_template=tmp_path / "t.jinja")  # read here, sent as text
    assert m.chat(MESSAGES, max_new_tokens=2).finish_reason in ("stop", "length")
    m.unload()
    with pytest.raises(ebb.NotFound) as e:
        rt.load(no_template, id="x")
    msg = str(e.value)
    assert "model 'x' does not exist" in msg
    assert "id='x' must be one of the service's model ids" in msg
    assert f"--model x={no_template}" in msg
    with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
        rt.load(None)
    with pytest.raises(TypeError, match="id must be a str or None"):
        rt.load("nt", id=3)
