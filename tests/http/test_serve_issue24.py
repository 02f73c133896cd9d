"""Issue 24, items 6, 7 and 9 over real HTTP (docs/http_api.md): chat without a chat template is
a 400 `no_chat_template` naming the fixes; the models file's and the load body's
"chat_template" give a model one (the CLI mirror's --chat-template too); a provider option the
CPU-only ONNX Runtime cannot serve refuses the start; `response_format {"type": 5}` names its
field. Run by ctest (serve_issue24_pytest) with EBB_CLI and EBB_TEST_MODELS set."""
import json
import os
import shutil
import socket
import subprocess

import pytest

from serve_util import EBB, MODELS, Server, chat_body

TINY = "llama-tiny-fp32"
# Plain text (no special tokens): "USER: hi\nASSISTANT:".
TEMPLATE = ("{% for m in messages %}{{ m['role'] | upper }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}ASSISTANT:{% endif %}")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A models folder with the tiny llama ("tiny") and a copy without a chat template ("nt")."""
    d = tmp_path_factory.mktemp("models")
    shutil.copytree(MODELS / TINY, d / "tiny")
    shutil.copytree(MODELS / TINY, d / "nt")
    cfg = json.loads((d / "nt" / "tokenizer_config.json").read_text())
    del cfg["chat_template"]
    (d / "nt" / "tokenizer_config.json").write_text(json.dumps(cfg))
    return d


def error(j, code=None, param=None):
    assert isinstance(j, dict) and "error" in j, j
    e = j["error"]
    if code is not None:
        assert e["code"] == code, e
    if param is not None:
        assert e["param"] == param, e
    return e


def serve_fails(*args, timeout=60):
    """`ebb serve ARGS` that must exit at start (a timeout means it started and listened)."""
    r = subprocess.run([EBB, "serve", "--port", "0", *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "listening on" not in r.stdout, r.stdout
    return r.stderr


def test_chat_without_a_template_is_400_no_chat_template_naming_the_fixes(models):
    with Server("--models-dir", str(models)) as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("nt", max_tokens=2))
        assert st == 400, j
        e = error(j, "no_chat_template", "messages")
        for fix in ('models file\'s "chat_template"', "/v1/models/nt/load", "--chat-template FILE",
                    "/v1/completions"):
            assert fix in e["message"], (fix, e["message"])
        # Streamed: the same 400 before the stream starts.
        st, _, j = s.post("/v1/chat/completions", chat_body("nt", max_tokens=2, stream=True))
        assert st == 400 and j["error"]["code"] == "no_chat_template", j
        # A raw prompt works on the same model.
        st, _, j = s.post("/v1/completions", {"model": "nt", "prompt": "hi", "max_tokens": 2})
        assert st == 200, j


def test_the_load_body_takes_the_template_text_and_a_path_only_from_the_admin(models, tmp_path):
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    with Server("--models-dir", str(models), "--admin-key", "adm1n-key-x") as s:
        st, _, j = s.post("/v1/models/nt/load", {"chat_template": TEMPLATE})
        assert st == 200, j
        assert j["options"]["chat_template"] == TEMPLATE
        st, _, j = s.post("/v1/chat/completions", chat_body("nt", max_tokens=2))
        assert st == 200, j
        st, _, j = s.post("/v1/models/nt/unload", {})
        assert st == 200, j
        # A path names a file on the service's machine: the admin's only.
        st, _, j = s.post("/v1/models/nt/load", {"chat_template": str(tmp_path / "t.jinja")})
        assert st == 403, j
        e = error(j, "admin_only_option", "chat_template")
        assert "template's text" in e["message"]
        st, _, j = s.post("/v1/models/nt/load", {"chat_template": str(tmp_path / "t.jinja")},
                          headers={"Authorization": "Bearer adm1n-key-x"})
        assert st == 200, j
        st, _, j = s.post("/v1/models/nt/unload", {},
                          headers={"Authorization": "Bearer adm1n-key-x"})
        # A template that does not parse: 400 with the renderer's position, nothing loaded.
        st, _, j = s.post("/v1/models/nt/load", {"chat_template": "{% for m in %}"})
        assert st == 400, j
        assert "chat_template:1:" in error(j)["message"]
        assert not s.model("nt")["loaded"]
        st, _, j = s.post("/v1/models/nt/load", {"chat_template": 5})
        assert st == 400
        error(j, param="chat_template")


def test_the_models_file_takes_a_template_file_and_a_bad_one_fails_the_start(models, tmp_path):
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    (tmp_path / "models.json").write_text(json.dumps({"models": {
        "chat": {"path": str(models / "nt"), "chat_template": "t.jinja"}}}))
    with Server("--models-file", str(tmp_path / "models.json")) as s:
        st, _, j = s.post("/v1/chat/completions", chat_body("chat", max_tokens=2))
        assert st == 200, j
        assert s.model("chat")["options"]["chat_template"] == str(tmp_path / "t.jinja")
    (tmp_path / "bad.jinja").write_text("ok\n{{ messages ")
    (tmp_path / "models.json").write_text(json.dumps({"models": {
        "chat": {"path": str(models / "nt"), "chat_template": "bad.jinja"}}}))
    err = serve_fails("--models-file", tmp_path / "models.json")
    assert "model 'chat' can never load" in err and str(tmp_path / "bad.jinja") + ":2:" in err, err


def test_a_provider_option_this_build_cannot_serve_refuses_the_start(models, tmp_path):
    # The pinned ONNX Runtime is CPU-only: a CUDA option would make every request 503.
    err = serve_fails("--models-dir", models, "--provider-option", "cuda.gpu_mem_limit=1073741824")
    assert "with the default options can never load" in err, err
    assert "provider_options.cuda asks for the execution provider CUDA" in err, err
    err = serve_fails("--models-dir", models, "--ep", "cuda")
    assert "execution_provider=cuda" in err, err
    (tmp_path / "models.json").write_text(json.dumps({"models": {
        "gpu": {"path": str(models / "tiny"), "provider_options": {"cuda": {"device_id": "0"}}}}}))
    err = serve_fails("--models-file", tmp_path / "models.json")
    assert "model 'gpu' can never load" in err and "--ep cpu" in err, err
    # With execution_provider=cpu the CUDA options are not used: the service starts.
    with Server("--models-dir", str(models), "--provider-option", "cuda.gpu_mem_limit=1",
                "--ep", "cpu") as s:
        st, _, j = s.post("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 2})
        assert st == 200, j


def test_response_format_of_the_wrong_type_names_the_field(models):
    with Server("--models-dir", str(models)) as s:
        st, _, j = s.post("/v1/chat/completions",
                          chat_body("tiny", response_format={"type": 5}))
        assert st == 400, j
        e = error(j, param="response_format.type")
        assert '"text"' in e["message"] and "json.exception" not in e["message"], e


def test_the_cli_mirror_takes_chat_template(models, tmp_path):
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    env = {**os.environ, "EBB_HOME": str(tmp_path / "home")}
    with Server("--models-dir", str(models)) as s:
        def cli(*args):
            return subprocess.run([EBB, *map(str, args), "--url", s.url], capture_output=True,
                                  text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
        r = cli("run", "nt", "hi", "--max-tokens", "2")
        assert r.returncode == 1 and "has no chat template" in r.stderr, r.stderr
        # That request loaded it without a template: a load with one is refused, naming the fix.
        r = cli("run", "nt", "hi", "--max-tokens", "2", "--chat-template", tmp_path / "t.jinja")
        assert r.returncode == 1 and "`ebb model unload nt`, then run again" in r.stderr, r.stderr
        assert cli("model", "unload", "nt").returncode == 0
        r = cli("run", "nt", "hi", "--max-tokens", "2", "--chat-template", tmp_path / "t.jinja")
        assert r.returncode == 0, r.stderr
        assert s.model("nt")["options"]["chat_template"] == TEMPLATE
        r = cli("model", "unload", "nt")
        assert r.returncode == 0, r.stderr
        r = cli("model", "load", "nt", "--chat-template", tmp_path / "t.jinja")
        assert r.returncode == 0, r.stderr
        assert "chat_template=" in r.stdout, r.stdout
        (tmp_path / "bad.jinja").write_text("{% if %}")
        r = cli("run", "tiny", "hi", "--chat-template", tmp_path / "bad.jinja")
        assert r.returncode == 1 and str(tmp_path / "bad.jinja") + ":1:" in r.stderr, r.stderr


def test_service_start_on_a_full_disk_reports_the_errno(tmp_path):
    """Finding 20: `ebb service start` on a full file system said "(the log is empty)". A real
    full disk: a 64 KiB tmpfs, filled, mounted in a user and mount namespace of its own (nothing
    outside this test sees it)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed: cannot mount a small tmpfs here")
    home = tmp_path / "full"
    home.mkdir()
    probe = subprocess.run([unshare, "-rm", "sh", "-c",
                            f"mount -t tmpfs -o size=64k tmpfs '{home}'"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("this environment cannot mount a tmpfs in a user+mount namespace "
                    f"(unshare -rm: {probe.stderr.strip()}): a full disk cannot be made here")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = (f"mount -t tmpfs -o size=64k tmpfs '{home}' && "
              f"{{ head -c 1048576 /dev/zero > '{home}/filler' 2>/dev/null; true; }} && "
              f"EBB_HOME='{home}' exec '{EBB}' service start --models-dir '{MODELS}' "
              f"--port {port} --ready-timeout 30")
    r = subprocess.run([unshare, "-rm", "sh", "-c", script], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0, r.stdout + r.stderr
    assert "before it was ready" in r.stderr, r.stderr
    assert "No space left on device" in r.stderr, r.stderr
    assert "(the log is empty)" not in r.stderr, r.stderr
