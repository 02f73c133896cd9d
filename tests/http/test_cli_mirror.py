"""The CLI mirror of the SDK against a real `ebb serve` (issue 14, item 2): `ebb model ...`,
`ebb ps`, `ebb run`, `ebb chat`, with the SDK's flags and key names."""
import contextlib
import http.server
import json
import os
import re
import subprocess
import threading

import pytest

from json_schema_lite import load_schema, validate
from serve_util import EBB, MODELS, Server

SMALL = "llama-small-int4"


ADMIN = "mirror-admin-key"


def ebb(*args, url, input=None, check=True, admin=False):
    env = {**os.environ, "EBB_URL": url}
    if admin:  # the admin key also passes the API key check (issue 39: unknown run options)
        env["EBB_API_KEY"] = ADMIN
    r = subprocess.run([EBB, *args], capture_output=True, text=True, env=env, input=input,
                       timeout=120)
    if check:
        assert r.returncode == 0, f"ebb {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


@pytest.fixture(scope="module")
def srv():
    with Server("--models-dir", str(MODELS), "--admin-key", ADMIN) as s:
        yield s


def test_load_stats_runtime_options_shrink_ps_unload_round_trip(srv):
    url = srv.url
    # Warm the process first (ORT's environment and libraries load with the first model), so
    # that the RSS comparison is about the model alone.
    ebb("run", "llama-tiny-fp32", "warm up", "--max-tokens", "2", url=url)
    rss_before = srv.runtime()["stats"]["process"]["rss_bytes"]
    r = ebb("model", "load", SMALL, "--session-option", "enable_cpu_mem_arena=0", "--option",
            "kv_cache.max_bytes=64MiB", "--json", url=url)
    loaded = json.loads(r.stdout)
    assert loaded["loaded"] is True
    stats = json.loads(ebb("model", "stats", SMALL, "--json", url=url).stdout)
    assert stats["options"]["session_options.enable_cpu_mem_arena"] == "0"
    assert stats["stats"]["kv"]["max_bytes"] == 64 << 20
    assert stats["stats"]["cpu_arena"]["available"] is False
    # Without an arena, naming the CPU arena in a run option is refused (ORT would fail every
    # Run): a clear error and a non-zero exit.
    bad = ebb("model", "set-runtime-option", SMALL, "memory.enable_memory_arena_shrinkage=cpu:0",
              url=url, check=False)
    assert bad.returncode != 0 and "enable_cpu_mem_arena" in bad.stderr
    # A run option ebb does not know is the admin's (issue 39): refused without its key.
    refused = ebb("model", "set-runtime-option", SMALL, "my.run.key=7", url=url, check=False)
    assert refused.returncode != 0 and "admin" in refused.stderr, refused.stderr
    ok = json.loads(ebb("model", "set-runtime-option", SMALL, "my.run.key=7",
                        "memory.shrink_every=4", "--json", url=url, admin=True).stdout)
    assert ok["runtime_options"]["my.run.key"] == "7"
    cleared = json.loads(ebb("model", "clear-runtime-option", SMALL, "my.run.key", "--json",
                             url=url).stdout)
    assert "my.run.key" not in cleared["runtime_options"]
    shrinks = cleared["stats"]["num_shrinks"]
    # Clearing a policy puts its load-time value back (issue 39): none was set at load.
    assert cleared["run_options_in_force"]["memory.shrink_every"]["source"] == "runtime"
    policy = json.loads(ebb("model", "clear-runtime-option", SMALL, "memory.shrink_every",
                            "--json", url=url).stdout)
    assert policy["stats"]["policies"]["shrink_every"] == 0
    assert policy["run_options_in_force"]["memory.shrink_every"] == {
        "value": "0", "source": "default", "at_load": "0"}
    ebb("model", "set-runtime-option", SMALL, "memory.shrink_every=0", url=url)
    ebb("model", "shrink", SMALL, "--after-next-run", url=url)
    ebb("run", SMALL, "hello", "--max-tokens", "3", url=url)
    ebb("run", SMALL, "hello again", "--max-tokens", "3", url=url)
    after = json.loads(ebb("model", "stats", SMALL, "--json", url=url).stdout)
    assert after["stats"]["num_shrinks"] == shrinks + 1, "after-next-run fires once"
    ps = ebb("ps", url=url).stdout
    assert SMALL in ps and "KV IN USE" in ps
    ps_json = json.loads(ebb("ps", "--json", url=url).stdout)
    assert any(m["id"] == SMALL and m["loaded"] for m in ps_json["models"])
    listed = json.loads(ebb("model", "list", "--json", url=url).stdout)
    assert {m["id"] for m in listed} >= {SMALL, "llama-tiny-fp32"}
    ebb("model", "unload", SMALL, url=url)
    rss_after = srv.runtime()["stats"]["process"]["rss_bytes"]
    if os.environ.get("EBB_UNDER_SANITIZER"):
        print("RSS bound not checked: ASan's quarantine keeps freed memory resident")
    else:
        assert rss_after - rss_before < 16 << 20, (rss_before, rss_after)
    assert not srv.model(SMALL)["loaded"]


def test_arena_run_option_takes_effect_on_a_model_with_an_arena(srv):
    ebb("model", "load", "llama-tiny-fp32", url=srv.url)
    j = json.loads(ebb("model", "set-runtime-option", "llama-tiny-fp32",
                       "memory.enable_memory_arena_shrinkage=cpu:0", "--json",
                       url=srv.url).stdout)
    assert j["runtime_options"]["memory.enable_memory_arena_shrinkage"] == "cpu:0"
    # Every Run() now carries it (ORT shrinks the arena at the end of each; a wrong device
    # would fail the run): the request succeeds and the option stays set.
    assert ebb("run", "llama-tiny-fp32", "hi", "--max-tokens", "3", url=srv.url).stdout.strip()
    after = json.loads(ebb("model", "stats", "llama-tiny-fp32", "--json", url=srv.url).stdout)
    assert after["runtime_options"]["memory.enable_memory_arena_shrinkage"] == "cpu:0"
    assert after["stats"]["num_requests"] >= 1


def ps_cell(url, model, column):
    """One cell of `ebb ps`'s table (columns are at least 3 spaces apart)."""
    lines = ebb("ps", url=url).stdout.splitlines()
    header = re.split(r" {3,}", lines[0].strip())
    for line in lines[1:]:
        cells = re.split(r" {3,}", line.strip())
        if cells[0] == model:
            return cells[header.index(column)]
    raise AssertionError(f"{model} is not in ebb ps: {lines}")


def test_prefix_cache_commands_and_the_cache_column_of_ps(srv, tmp_path):
    """Issue 25: ebb model pin-prefix / unpin-prefix / drop-prefix-cache against the service,
    and ps's CACHE column (bytes held over prefix_cache.max_bytes, '-' when off)."""
    url, m = srv.url, "llama-tiny-int4"
    system = ("You are a careful assistant. Answer every question about rivers, hills and the "
              "weather in two short sentences.")
    ebb("model", "load", m, url=url)
    try:
        assert ps_cell(url, m, "CACHE") == "-"
        off = ebb("model", "pin-prefix", m, "--system", system, url=url, check=False)
        assert off.returncode == 1 and "prefix_cache.max_bytes" in off.stderr, off.stderr
        ebb("model", "set-runtime-option", m, "prefix_cache.max_bytes=64MiB", url=url)
        assert ps_cell(url, m, "CACHE") == "0B/64.0M"
        r = ebb("model", "pin-prefix", m, "--system", system, url=url)
        got = re.search(r"pinned (\d+) of (\d+) tokens of " + m, r.stdout)
        assert got and int(got.group(1)) == int(got.group(2)) // 16 * 16 > 0, r.stdout
        assert "prefix cache" in r.stdout and "64.0 MiB" in r.stdout
        cell = ps_cell(url, m, "CACHE")
        assert re.fullmatch(r"\d+\.\d[KM]/64\.0M", cell), cell
        prompt_file = tmp_path / "prefix.txt"
        prompt_file.write_text("Once upon a time there was a river. " * 4)
        pin = json.loads(ebb("model", "pin-prefix", m, "--file", str(prompt_file), "--json",
                             url=url).stdout)
        assert pin["pinned"] and pin["pinned_tokens"] >= 32, pin
        stats = ebb("model", "stats", m, url=url).stdout
        assert "prefix cache" in stats and "pinned" in stats, stats
        entry = [e for e in json.loads(ebb("ps", "--json", url=url).stdout)["models"]
                 if e["id"] == m][0]
        assert entry["prefix_cache"]["pinned_bytes"] == pin["pinned_bytes"]
        # Unpin with the same flag and text; a second time is an error naming the fix.
        r = ebb("model", "unpin-prefix", m, "--file", str(prompt_file), url=url)
        assert r.stdout.startswith("unpinned"), r.stdout
        again = ebb("model", "unpin-prefix", m, "--file", str(prompt_file), url=url, check=False)
        assert again.returncode == 1 and "no pinned prefix" in again.stderr, again.stderr
        ebb("model", "unpin-prefix", m, "--system", system, url=url)
        r = ebb("model", "drop-prefix-cache", m, url=url)
        freed = re.match(r"dropped [\d.]+ MiB \((\d+) bytes\) of " + m, r.stdout)
        assert freed and int(freed.group(1)) > 0, r.stdout
        assert ps_cell(url, m, "CACHE") == "0B/64.0M"
        # Bad flags: none, two, a messages file that is not JSON, ids fewer than one block.
        for args, needle in [((), "exactly one of"), (("--prompt", "a", "--ids", "1"),
                                                      "exactly one of"),
                             (("--messages-file", str(prompt_file)), "not JSON"),
                             (("--ids", "1,2,3"), "16"),
                             (("--file", str(tmp_path / "missing.txt")), "missing.txt")]:
            r = ebb("model", "pin-prefix", m, *args, url=url, check=False)
            assert r.returncode == 1 and needle in r.stderr, (args, r.stderr)
            assert "internal" not in r.stderr
        messages = tmp_path / "messages.json"
        messages.write_text(json.dumps([{"role": "system", "content": system}]))
        pin = json.loads(ebb("model", "pin-prefix", m, "--messages-file", str(messages),
                             "--json", url=url).stdout)
        assert pin["pinned"], pin
        ids = ",".join(str(i) for i in range(100, 140))
        pin = json.loads(ebb("model", "pin-prefix", m, "--ids", ids, "--json", url=url).stdout)
        assert pin["pinned_tokens"] == 32, pin
    finally:
        ebb("model", "set-runtime-option", m, "prefix_cache.max_bytes=0", url=url, check=False)
        ebb("model", "unload", m, url=url, check=False)


def test_errors_come_back_with_the_service_message_and_a_non_zero_exit(srv):
    r = ebb("model", "stats", "not-loaded-model", url=srv.url, check=False)
    assert r.returncode != 0 and "not loaded" in r.stderr
    r = ebb("model", "load", "llama-tiny-fp32", "--option", "kv_cache.max_byts=1MiB",
            url=srv.url, check=False)
    assert r.returncode != 0 and "did you mean" in r.stderr
    r = ebb("model", "set-runtime-option", "llama-tiny-fp32", "memory.shrink_every=often",
            url=srv.url, check=False)
    assert r.returncode == 1 and "memory.shrink_every" in r.stderr and "internal" not in r.stderr
    r = ebb("run", "llama-tiny-fp32", "hi", "--temperature", "hot", url=srv.url, check=False)
    assert r.returncode == 1 and "--temperature" in r.stderr and "internal" not in r.stderr
    r = ebb("ps", url="http://127.0.0.1:9", check=False)
    assert r.returncode != 0 and "cannot reach" in r.stderr
    r = subprocess.run([EBB, "ps"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "EBB_URL"} |
                       {"EBB_HOME": "/nonexistent-ebb-home"})
    assert r.returncode != 0 and "ebb service start" in r.stderr


def test_chat_streams_through_the_service_and_in_process(srv):
    r = ebb("chat", "llama-tiny-fp32", "--max-tokens", "4", url=srv.url,
            input="hello\nagain\n/bye\n")
    assert r.stdout.count(">>> ") == 3
    # The same reply, greedy, in process with the model folder and --local.
    one = ebb("run", "llama-tiny-fp32", "hello", "--max-tokens", "6", "--temperature", "0",
              url=srv.url).stdout
    local = ebb("run", str(MODELS / "llama-tiny-fp32"), "hello", "--max-tokens", "6",
                "--temperature", "0", "--local", url=srv.url).stdout
    assert one == local and one.strip()


def test_commands_find_the_running_service_and_its_key_through_the_state_dir(tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "key").write_text("k-mirror\n")
    env = {k: v for k, v in os.environ.items() if k not in ("EBB_URL", "EBB_API_KEY")}
    env["EBB_HOME"] = str(tmp_path / "home")

    def run(*args, check=True):
        r = subprocess.run([EBB, *args], capture_output=True, text=True, env=env, timeout=120)
        if check:
            assert r.returncode == 0, f"ebb {' '.join(args)}: {r.stdout}{r.stderr}"
        return r

    run("service", "start", "--models-dir", str(MODELS), "--port", str(port),
        "--api-key-file", str(tmp_path / "key"))
    try:
        r = run("run", "llama-tiny-fp32", "hello", "--max-tokens", "3")
        assert r.stdout.strip()
        ps = run("ps").stdout
        assert "llama-tiny-fp32" in ps
    finally:
        run("service", "stop")
    r = run("ps", check=False)
    assert r.returncode != 0 and "ebb service start" in r.stderr


@contextlib.contextmanager
def canned_server(answer_for):
    """A loopback HTTP server whose GET of a path answers answer_for(path) -> (status, JSON
    text); yields its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status, text = answer_for(self.path)
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("answer", ["{}", '{"models": {}}', '{"models": [{"id": 5}]}', "[]"])
def test_ps_and_model_list_against_a_server_that_is_not_ebb_fail_cleanly(answer):
    """Issue 24 item 3: `ebb ps` and `ebb model list` crashed (SIGSEGV) on `{}`; now they name
    the URL and the field, exit 1, and print nothing else."""
    with canned_server(lambda path: (200, answer)) as url:
        for args in (["ps", "--url", url], ["model", "list", "--url", url]):
            r = ebb(*args, url=url, check=False)
            # An error exit, not a signal (the crash) nor "internal" (70: a missing-key read).
            assert 0 < r.returncode != 70, (args, r.returncode, r.stderr)
            assert "not ebb's" in r.stderr and url in r.stderr, r.stderr


def test_ps_and_model_stats_show_a_model_on_a_device(srv):
    """A model on a device (ModelSummary::device): no GPU here, so a canned service answers the
    real /v1/runtime and model runtime documents with a `device` given to one model (and to the
    runtime's stats, as Runtime::Stats() sums it). `ebb ps` adds the device columns and a device
    line, `ebb model stats` prints the model's device line, `--json` passes the object on; a
    CPU model's cells are '-'. The documents stay valid against docs/runtime.schema.json."""

    gpu, cpu = "llama-tiny-fp32", "llama-tiny-int4"
    for m in (gpu, cpu):
        ebb("model", "load", m, url=srv.url)
    rt = srv.runtime()
    st, _, model_doc = srv.get(f"/v1/models/{gpu}/runtime")
    assert st == 200, model_doc
    mib = 1 << 20
    device = {
        "available": True, "device": "webgpu:0", "adapter": "NVIDIA H200 (NVIDIA, discrete)",
        "kv": {"in_use_bytes": 3 * mib, "retained_bytes": mib, "reserved_bytes": 4 * mib,
               "peak_in_use_bytes": 6 * mib, "max_bytes": 0, "retain_limit_bytes": 8 * mib,
               "num_allocations": 2, "num_os_maps": 0, "num_refusals": 0},
        "weights_bytes": 100 * mib, "ort_cache_bytes": -1,
        "used_bytes": 104 * mib, "limit_bytes": 2048 * mib, "cache_mode": "lazyRelease",
        "driver_process_bytes": 600 * mib, "driver_used_bytes": 1536 * mib,
        "driver_total_bytes": 143771 * mib}
    [e for e in rt["models"] if e["id"] == gpu][0]["device"] = device
    rt["stats"]["device"] = device
    model_doc["stats"]["device"] = device
    schema = load_schema("runtime.schema.json")
    assert validate(schema, rt) == []
    assert validate(schema, model_doc, "#/$defs/model_runtime") == []
    answers = {"/v1/runtime": json.dumps(rt), f"/v1/models/{gpu}/runtime": json.dumps(model_doc)}

    def answer_for(path):
        body = answers.get(path)
        return (200, body) if body else (404, '{"error": {"message": "not canned"}}')

    with canned_server(answer_for) as url:
        assert ps_cell(url, gpu, "DEVICE") == "webgpu:0"
        assert ps_cell(url, gpu, "DEVICE KV/PEAK") == "3.0M/6.0M"
        assert ps_cell(url, gpu, "DEVICE USED/LIMIT") == "104.0M/2.0G"
        for column in ("DEVICE", "DEVICE KV/PEAK", "DEVICE USED/LIMIT"):
            assert ps_cell(url, cpu, column) == "-"
        ps = ebb("ps", url=url).stdout
        line = [x for x in ps.splitlines() if x.startswith("device ")]
        assert line == ["device webgpu:0 (NVIDIA H200 (NVIDIA, discrete)): KV in use 3.0 MiB, "
                        "peak 6.0 MiB; weights 100.0 MiB, retained 1.0 MiB, used 104.0 MiB of "
                        "2048.0 MiB; ORT cache not countable, lazyRelease; driver: process "
                        "600.0 MiB, device 1536.0 MiB of 143771.0 MiB"], ps
        ps_json = json.loads(ebb("ps", "--json", url=url).stdout)
        assert [e for e in ps_json["models"] if e["id"] == gpu][0]["device"] == device
        stats = ebb("model", "stats", gpu, url=url).stdout
        assert "  device    webgpu:0 (NVIDIA H200 (NVIDIA, discrete)): KV in use 3.0 MiB" in stats
        assert json.loads(ebb("model", "stats", gpu, "--json", url=url).stdout)["stats"][
            "device"] == device
        # Without a device model: no device columns, no device line (the real service).
        ps = ebb("ps", url=srv.url).stdout
        assert "DEVICE" not in ps and "\ndevice " not in ps, ps
        assert "  device " not in ebb("model", "stats", cpu, url=srv.url).stdout
        for m in (gpu, cpu):
            ebb("model", "unload", m, url=srv.url)
