"""Integration tests of `ebb service start|stop|restart|status` against real processes
(docs/service.md): the fault cases of a restart (hung, crashed, pid reused), a port held by
another program, draining a running stream on stop, and the state file's contract.

Run by ctest (service_pytest) with EBB_CLI and EBB_TEST_MODELS set. Each test has its own
EBB_HOME and a free port."""
import http.client
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from serve_util import EBB, MODELS, Service, alive, chat_body, http_get, wait_until

TINY = "llama-tiny-fp32"


@pytest.fixture
def svc(tmp_path):
    s = Service(tmp_path / "home")
    yield s
    s.cleanup()


def test_start_status_stop_and_start_twice(svc):
    st = svc.start()
    # The state file: the contract other commands and ebb.connect() read.
    assert st["url"] == f"http://127.0.0.1:{svc.port}"
    assert st["host"] == "127.0.0.1" and st["port"] == svc.port
    assert st["log"] == str(svc.home / "service.log") and os.path.isfile(st["log"])
    assert st["args"] == [str(a) for a in svc.serve_flags()]
    with open(f"/proc/{st['pid']}/stat") as f:
        assert st["start_time"] == int(f.read().rsplit(")", 1)[1].split()[19])
    assert abs(st["started_unix_ms"] - time.time() * 1000) < 120_000
    assert svc.ready()

    # status --json: the state plus /v1/runtime.
    http_get(svc.port, "/health")
    r = svc.run("status", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["running"] is True and j["answering"] is True
    assert j["pid"] == st["pid"] and j["url"] == st["url"] and j["port"] == svc.port
    assert j["log"] == st["log"] and j["args"] == st["args"]
    assert 0 <= j["uptime_s"] < 120
    assert j["runtime"]["stats"]["process"]["rss_bytes"] > 0
    assert TINY in {m["id"] for m in j["runtime"]["models"]}
    r = svc.run("status")
    assert r.returncode == 0 and st["url"] in r.stdout and str(st["pid"]) in r.stdout
    assert "RSS" in r.stdout and "models" in r.stdout

    # A second start reports the running one and changes nothing.
    r = svc.run("start", *svc.serve_flags())
    assert r.returncode == 1
    assert "already running" in r.stderr and st["url"] in r.stderr and str(st["pid"]) in r.stderr
    assert svc.state() == st and svc.ready()

    r = svc.run("stop")
    assert r.returncode == 0, r.stderr
    assert "stopped" in r.stdout
    assert not alive(st["pid"]) and svc.state() is None
    # Nothing running: stop exits 0, status exits 3.
    r = svc.run("stop")
    assert r.returncode == 0 and "not running" in r.stdout
    r = svc.run("status")
    assert r.returncode == 3 and "not running" in r.stdout
    r = svc.run("status", "--json")
    assert r.returncode == 3 and json.loads(r.stdout)["running"] is False


def test_restart_normally_reuses_the_flags_or_takes_new_ones(svc):
    old = svc.start()
    r = svc.run("restart")
    assert r.returncode == 0, r.stdout + r.stderr
    new = svc.state()
    assert new["pid"] != old["pid"] and not alive(old["pid"]) and alive(new["pid"])
    assert new["args"] == old["args"] and svc.ready()
    # New flags replace the old ones.
    r = svc.run("restart", *svc.serve_flags("--keep-alive", "1m"))
    assert r.returncode == 0, r.stdout + r.stderr
    st = svc.state()
    assert st["args"][-2:] == ["--keep-alive", "1m"] and svc.ready()
    s, body = http_get(svc.port, "/v1/runtime")
    assert s == 200 and json.loads(body)["keep_alive"] == "1m"
    assert svc.run("stop").returncode == 0


def test_restart_elsewhere_resolves_relative_flags_where_start_ran(svc, tmp_path):
    models = os.path.abspath(MODELS)
    r = svc.run("start", "--models-dir", os.path.basename(models), "--port", svc.port,
                cwd=os.path.dirname(models))
    assert r.returncode == 0, r.stdout + r.stderr
    assert svc.state()["cwd"] == os.path.dirname(models)
    r = svc.run("restart", "--drain-timeout", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    s, body = http_get(svc.port, "/v1/models")
    assert s == 200 and TINY in {m["id"] for m in json.loads(body)["data"]}
    assert svc.run("stop").returncode == 0


def test_restart_when_the_old_server_hangs(svc):
    old = svc.start()
    os.kill(old["pid"], signal.SIGSTOP)  # SIGTERM does nothing to a stopped process
    t0 = time.monotonic()
    r = svc.run("restart", "--drain-timeout", "1")
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SIGKILL" in r.stdout
    assert not alive(old["pid"])
    new = svc.state()
    assert new["pid"] != old["pid"] and alive(new["pid"]) and svc.ready()
    assert took < 30, f"restart took {took:.1f} s"
    assert svc.run("stop").returncode == 0


def test_restart_after_kill_9_left_a_stale_pidfile(svc):
    old = svc.start()
    os.kill(old["pid"], signal.SIGKILL)
    assert wait_until(lambda: not alive(old["pid"]), 10)
    assert svc.state() == old  # the crash left it behind
    r = svc.run("status")
    assert r.returncode == 3 and "stale" in r.stdout
    r = svc.run("restart")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "is gone" in r.stdout
    new = svc.state()
    assert new["pid"] != old["pid"] and svc.ready()
    assert svc.run("stop").returncode == 0


def test_restart_with_the_pid_reused_by_an_unrelated_process(svc):
    old = svc.start()
    os.kill(old["pid"], signal.SIGKILL)
    assert wait_until(lambda: not alive(old["pid"]), 10)
    # The pid now names an unrelated live process: same pid field, another start time.
    other = subprocess.Popen(["sleep", "60"])
    try:
        st = dict(old, pid=other.pid)
        (svc.home / "service.json").write_text(json.dumps(st))
        assert svc.run("status").returncode == 3  # not ours: not running
        r = svc.run("restart")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "another process" in r.stdout and "left that process alone" in r.stdout
        assert other.poll() is None and alive(other.pid), "the unrelated process was killed"
        new = svc.state()
        assert new["pid"] not in (old["pid"], other.pid) and svc.ready()
        # stop on a reused pid leaves the process alone too.
        (svc.home / "service.json").write_text(json.dumps(st))
        r = svc.run("stop")
        assert r.returncode == 0 and "left that process alone" in r.stdout
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_start_on_a_port_held_by_another_program_names_it(svc):
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", svc.port))
    holder.listen(1)
    try:
        r = svc.run("start", *svc.serve_flags())
        assert r.returncode != 0
        assert f"port {svc.port}" in r.stderr, r.stderr
        assert f"pid {os.getpid()}" in r.stderr, r.stderr  # /proc shows who holds it
        assert svc.state() is None
    finally:
        holder.close()
    # A known port is needed: 0 is refused with the fix.
    r = svc.run("start", "--models-dir", MODELS, "--port", "0")
    assert r.returncode != 0 and "--port N" in r.stderr


def test_start_reports_a_server_that_fails_with_its_log(svc):
    r = svc.run("start", "--port", svc.port)  # no models: ebb serve exits at once
    assert r.returncode != 0
    assert "before it was ready" in r.stderr and "--models-dir" in r.stderr, r.stderr
    assert svc.state() is None


def test_stop_lets_a_running_stream_finish_then_the_process_is_gone(svc):
    st = svc.start(drain=30)  # the service's own drain timeout, which stop follows
    events, first = [], threading.Event()

    def client():
        c = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=60)
        c.request("POST", "/v1/chat/completions",
                  body=json.dumps(chat_body(TINY, "tell me a long story", max_tokens=1500,
                                            stream=True)),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200
        for line in r:
            if line.startswith(b"data: "):
                events.append(line[6:].strip().decode())
                first.set()
        c.close()

    t = threading.Thread(target=client)
    t.start()
    assert first.wait(60), "the stream did not begin"
    t0 = time.monotonic()
    assert "[DONE]" not in events, "the stream ended before stop: make it longer"
    r = svc.run("stop")
    took = time.monotonic() - t0
    t.join(60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert events and events[-1] == "[DONE]", events[-3:]
    finish = [json.loads(e)["choices"][0]["finish_reason"] for e in events[:-1]
              if json.loads(e)["choices"]]
    assert finish[-1] == "length", "the stream was cut instead of finishing"
    assert "SIGKILL" not in r.stdout
    # The drain: requests made after SIGTERM were refused, the stream ran on meanwhile.
    assert "stopping" in r.stdout
    assert not alive(st["pid"]) and svc.state() is None
    assert took < 30 + 5
    with pytest.raises(OSError):
        http_get(svc.port, "/health", timeout=2)


def test_foreground_runs_in_place_and_cleans_up_on_sigterm(svc):
    p = subprocess.Popen([EBB, "service", "start", "--foreground",
                          *map(str, svc.serve_flags())], env=svc.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: (svc.state() or {}).get("pid") == p.pid, 60), \
            "service.json of the foreground process did not appear"
        st = svc.state()
        assert st["log"] == ""  # stdout is a pipe (the journal under systemd), not a file
        assert wait_until(svc.ready, 10)
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
        assert svc.state() is None
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
