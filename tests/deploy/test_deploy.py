"""Several `ebb serve` instances behind HAProxy, as deploy/ shipped them (docs/deploy.md).

Three instances on loopback ports, each started with the command line of deploy/ebb@.service
(its Environment= defaults, deploy/ebb.env, and a per-instance ebb-PORT.env override, expanded as
systemd expands them) under `ebb service start` with its own EBB_HOME, so that `ebb service
restart` can restart each; HAProxy runs deploy/haproxy.cfg itself, with only its addresses, the
stats socket's path and the privilege/syslog lines of `global` rewritten (render_haproxy_cfg
fails if any of those lines is missing). Four client threads send chat requests (streamed and
not, 16 to 120 tokens) through HAProxy while the test:

  (a) restarts the three one at a time with `ebb service restart`, each back in HAProxy's
      rotation before the next: 0 failed requests;
  (b) SIGKILLs one in the middle of a stream, then `ebb service restart`: only requests in flight
      on it may fail, each with a clean error (an HTTP error status with a JSON body, or a stream
      cut short without [DONE], never a hang nor a silent success), none started after the kill,
      and it is back in rotation within its health-check rise time (+ margin);
  (c) SIGSTOPs one in the middle of a stream (wedged: the kernel still accepts connections,
      nothing answers): HAProxy's readiness check times out and takes it out of rotation within
      2 failed checks, then `ebb service restart --drain-timeout 1` (SIGTERM waits while it is
      stopped, so SIGKILL after that wait) brings it back; only the answers it had begun may
      fail, cut by the kill (a stream, or a plain answer whose headers it had written); requests
      it had not begun answering are retried elsewhere. In (b) and (c) the test waits until the
      signal has stopped every thread of the instance (/proc/PID/task) before it counts what is
      in flight: kill() returns before that;
  (d) `promtool check metrics` passes on each instance's /metrics under load and idle, and the
      queue, running and KV gauges rise under load and fall back to 0 after it;
  (e) with no instance up, HAProxy answers 503 in OpenAI's error shape with Retry-After.

It reports requests sent, succeeded and failed per scenario, HAProxy's retries and redispatches,
and the timings. Skips (with the reason) when haproxy is not installed; every process it starts is
killed at the end, whatever happened.

Run by ctest (deploy_haproxy_pytest, label deploy; `make deploy-test`) with EBB_CLI and
EBB_TEST_MODELS set."""
import atexit
import csv
import functools
import http.client
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests" / "http"))
from serve_util import (EBB, MODELS, Service, alive, chunked_body_ended, free_port,  # noqa: E402
                        wait_until)

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if os.access("/usr/sbin/haproxy",
                                                                       os.X_OK) else None)
if HAPROXY is None:
    pytest.skip("haproxy is not installed (Debian: apt-get install haproxy; scripts/bootstrap "
                "installs it): the multi-instance test needs it", allow_module_level=True)
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

TINY = "llama-tiny-fp32"
MODEL_ID = "tiny"
N_INSTANCES = 3
N_CLIENTS = 4
DRAIN_TIMEOUT_S = 20
# The check timings of deploy/haproxy.cfg's default-server and timeout check, read back from the
# rendered file (so the bounds below follow the shipped config).
CHECK = {}

# Every process this module starts, killed at exit whatever happened.
_PROCS = []
_SERVICES = []


def _kill_everything():
    for p in _PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()
    for s in _SERVICES:
        for pid in s.pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


atexit.register(_kill_everything)


# ---- The shipped files, rendered for loopback test ports --------------------------------------

def _sub_once(pattern, repl, text, what):
    new, n = re.subn(pattern, repl, text, flags=re.M)
    assert n == 1, f"deploy/haproxy.cfg: expected exactly one {what} line ({pattern!r}), found {n}"
    return new


def render_haproxy_cfg(lb_port, stats_port, sock, server_ports):
    """deploy/haproxy.cfg with its addresses, stats socket and global privilege/syslog lines
    rewritten; everything else (balance, checks, retries, timeouts, errors) as shipped."""
    text = (ROOT / "deploy" / "haproxy.cfg").read_text()
    # Not root, no chroot, no syslog daemon: HAProxy runs as the test's user, logs to stderr.
    text = _sub_once(r"^\s*chroot .*\n", "", text, "chroot")
    text = _sub_once(r"^\s*user .*\n", "", text, "user")
    text = _sub_once(r"^\s*group .*\n", "", text, "group")
    text = _sub_once(r"^(\s*)log /dev/log .*$", r"\1log stderr format raw local0 info", text,
                     "log /dev/log")
    text = _sub_once(r"^(\s*stats socket )\S+", rf"\g<1>{sock}", text, "stats socket")
    text = _sub_once(r"^(\s*bind )127\.0\.0\.1:8080\b", rf"\g<1>127.0.0.1:{lb_port}", text,
                     "frontend bind 127.0.0.1:8080")
    text = _sub_once(r"^(\s*bind )127\.0\.0\.1:8404\b", rf"\g<1>127.0.0.1:{stats_port}", text,
                     "stats bind 127.0.0.1:8404")
    servers = re.findall(r"^\s*server (\S+) 127\.0\.0\.1:(\d+)", text, flags=re.M)
    assert len(servers) == len(server_ports), f"deploy/haproxy.cfg has servers {servers}"
    for (name, port), new_port in zip(servers, server_ports):
        text = _sub_once(rf"^(\s*server {name} 127\.0\.0\.1:){port}\b", rf"\g<1>{new_port}",
                         text, f"server {name}")
    m = re.search(r"^\s*default-server (.*)$", text, flags=re.M)
    words = m.group(1).split()
    for k in ("inter", "fastinter", "downinter", "fall", "rise"):
        v = words[words.index(k) + 1]
        CHECK[k] = float(v[:-2]) / 1000 if v.endswith("ms") else (
            float(v[:-1]) if v.endswith("s") else float(v))
    CHECK["timeout_check"] = float(re.search(r"^\s*timeout check (\d+)s", text, re.M).group(1))
    return text, [name for name, _ in servers]


def systemd_exec_start(unit_text, env_files, instance, runtime_dir, cache_dir):
    """The environment and the argv systemd would run for ebb@INSTANCE.service: Environment=
    defaults, then the EnvironmentFile= files (later ones win), specifiers %i %t %C, then
    ExecStart's ${X} (one argument) and $X (split at whitespace) as systemd.service(5) says."""
    text = unit_text.replace("\\\n", " ")
    env = {}
    for line in text.splitlines():
        if line.startswith("Environment="):
            for assign in shlex.split(line[len("Environment="):]):
                k, _, v = assign.partition("=")
                env[k] = v
    for f in env_files:
        for line in Path(f).read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                env[k.strip()] = v.strip()
    exec_start = next(l for l in text.splitlines() if l.startswith("ExecStart="))
    exec_start = exec_start[len("ExecStart="):]
    spec = {"%i": str(instance), "%t": str(runtime_dir), "%C": str(cache_dir), "%%": "%"}
    for k, v in spec.items():
        exec_start = exec_start.replace(k, v)
        env = {ek: ev.replace(k, v) for ek, ev in env.items()}
    argv = []
    for word in exec_start.split():
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
        else:
            argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                               lambda mm: env.get(mm.group(1), ""), word))
    return env, argv


# ---- HAProxy ----------------------------------------------------------------------------------

class HAProxy:
    def __init__(self, cfg_path, sock, log_path):
        self.sock = sock
        self.log_path = log_path
        r = subprocess.run([HAPROXY, "-c", "-f", str(cfg_path)], capture_output=True, text=True)
        assert r.returncode == 0, f"haproxy -c: {r.stdout}{r.stderr}"
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(cfg_path)], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        _PROCS.append(self.proc)
        assert wait_until(lambda: os.path.exists(sock) or self.proc.poll() is not None, 10)
        assert self.proc.poll() is None, self.log_tail()

    def command(self, cmd):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(self.sock)
        s.sendall(cmd.encode() + b"\n")
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        s.close()
        return out.decode()

    def stats(self):
        """{svname: row} of `show stat` for the backend's servers, plus "BACKEND"."""
        text = self.command("show stat").lstrip("# ")
        rows = {}
        for row in csv.DictReader(io.StringIO(text)):
            if row["pxname"] == "ebb_instances":
                rows[row["svname"]] = row
        return rows

    def status(self, server):
        return self.stats()[server]["status"]

    def wait_status(self, server, pred, timeout, step=0.05):
        """Polls the server's state; returns (seconds until pred(status) held, last status)."""
        t0 = time.monotonic()
        last = None
        while time.monotonic() - t0 < timeout:
            last = self.status(server)
            if pred(last):
                return time.monotonic() - t0, last
            time.sleep(step)
        return None, last

    def log_tail(self, n=40):
        self.log.flush()
        return "".join(Path(self.log_path).read_text().splitlines(True)[-n:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def is_up(status):
    return status == "UP"


def is_down(status):
    return status.startswith("DOWN")


def thread_states(pid):
    """The state letter of each thread of `pid` (/proc/PID/task/*/stat); empty once it is gone."""
    states = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return states
    for tid in tasks:
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread exited between the listing and the read
        states.append(stat.rsplit(")", 1)[1].split()[0])  # after "(comm)", which may hold spaces
    return states


def signal_and_wait(pid, sig, timeout=5.0):
    """Sends `sig` (SIGSTOP or SIGKILL) and returns once it has taken effect on every thread of
    `pid`: all stopped ("T"), or all exited (zombie, dead or gone). kill() returns as soon as the
    signal is queued; each thread stops or exits only when it next runs, and on a loaded 2-core
    machine that was seen to take long enough for the victim to answer a request sent after
    kill() returned (CI, stop 51: a SIGSTOPped instance wrote the headers of a request whose
    client began 0.6 ms after the time taken before the kill)."""
    os.kill(pid, sig)
    stop = sig == signal.SIGSTOP
    done = {"T", "t"} if stop else {"Z", "X"}
    end = time.monotonic() + timeout
    while True:
        states = thread_states(pid)
        assert states or not stop, f"process {pid} exited instead of stopping"
        if all(st in done for st in states):
            return
        assert time.monotonic() < end, f"{sig.name} not in effect after {timeout} s: {states}"
        time.sleep(0.0005)


# ---- Load ---------------------------------------------------------------------------------------

class Result:
    __slots__ = ("client", "stream", "t_start", "t_end", "server", "status", "ok", "error",
                 "events")

    def __init__(self, client, stream):
        self.client, self.stream = client, stream
        self.t_start = time.monotonic()
        self.t_end = None
        self.server = None  # X-Served-By: the instance that answered (deploy/haproxy.cfg)
        self.status = None
        self.ok = False
        self.error = None
        self.events = 0


_LOADS = []  # every Load started, stopped by @scenario whatever happened


class Load:
    """N_CLIENTS threads sending chat requests through HAProxy, each on a kept-alive connection
    (reopened after a failure or a `Connection: close`), until stop() or max_per_client."""

    def __init__(self, port, seed, max_per_client=5000):
        _LOADS.append(self)
        self.port = port
        self.max_per_client = max_per_client
        self.stop_event = threading.Event()
        self.results = []
        self.inflight = {}  # client -> Result being received
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client, args=(i, seed + i), daemon=True)
                        for i in range(N_CLIENTS)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(120)
            assert not t.is_alive(), "a client hung"
        return self.results

    def _client(self, index, seed):
        rng = random.Random(seed)
        conn = None
        for n in range(self.max_per_client):
            if self.stop_event.is_set():
                break
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            stream = n % 2 == 1
            res = Result(index, stream)
            with self.lock:
                self.inflight[index] = res
            body = {"model": MODEL_ID, "max_tokens": rng.randint(16, 120), "temperature": 0,
                    "messages": [{"role": "user", "content": f"client {index} request {n}"}]}
            if stream:
                body["stream"] = True
            keep = False
            try:
                conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                             headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                res.status = r.status
                res.server = r.getheader("X-Served-By")
                keep = (r.getheader("Connection") or "").lower() != "close"
                if r.status != 200:
                    err = json.loads(r.read())  # a clean error: JSON in OpenAI's shape
                    res.error = f"HTTP {r.status} {err['error'].get('code')}"
                elif stream:
                    done = finished = False
                    while True:
                        line = r.readline()
                        if not line:
                            break
                        if line.startswith(b"data: "):
                            data = line[6:].strip()
                            res.events += 1
                            if data == b"[DONE]":
                                done = True
                                continue
                            j = json.loads(data)
                            if "error" in j:
                                res.error = f"stream error event {j['error'].get('code')}"
                            elif j.get("choices") and j["choices"][0].get("finish_reason"):
                                finished = True
                    r.read()
                    if not res.error:
                        if done and finished:
                            res.ok = True
                        else:
                            res.error = f"stream cut after {res.events} events without [DONE]"
                else:
                    j = json.loads(r.read())
                    assert j["object"] == "chat.completion" and j["choices"][0]["finish_reason"]
                    res.ok = True
            except (http.client.HTTPException, OSError, ValueError) as e:
                res.error = f"{type(e).__name__}: {e}"
                keep = False
            res.t_end = time.monotonic()
            with self.lock:
                self.inflight.pop(index, None)
                self.results.append(res)
            if not keep or not res.ok:
                conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def streaming_on(self, server):
        """Whether some stream served by `server` has delivered events and is still running."""
        with self.lock:
            return any(r.stream and r.server == server and r.events > 0 and r.t_end is None
                       for r in self.inflight.values())

    def serving_on(self, server):
        """Whether a request answered by `server` is still being received."""
        with self.lock:
            return any(r.server == server for r in self.inflight.values())

    def count(self):
        with self.lock:
            return len(self.results)


class StateWatcher:
    """Records the states HAProxy gives one server (UP, "UP 1/2", "DOWN", ...) as they change."""

    def __init__(self, ha, server):
        self.ha, self.server = ha, server
        self.t0 = time.monotonic()
        self.changes = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop_event.is_set():
            try:
                st = self.ha.status(self.server)
            except OSError:  # HAProxy stopped (the test failed and is tearing down)
                return
            if not self.changes or self.changes[-1][1] != st:
                self.changes.append((time.monotonic() - self.t0, st))
            time.sleep(0.02)

    def stop(self):
        self.stop_event.set()
        self.thread.join(10)
        return " -> ".join(f"{st} ({t:.2f} s)" for t, st in self.changes)


def _diff(after, before, key):
    total = 0
    for sv, row in after.items():
        if sv != "BACKEND":
            total += int(row[key] or 0) - int(before.get(sv, {}).get(key) or 0)
    return total


class PacedStream(threading.Thread):
    """A long stream straight to one instance, read at a fixed pace (4 KiB every 50 ms) through a
    small receive window: however fast the machine, it runs for seconds, so a drain that waits
    for it lasts long enough for HAProxy's checks to see /ready fail."""

    def __init__(self, port, max_tokens=1800):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
        self.sock.settimeout(60)
        self.sock.connect(("127.0.0.1", port))
        body = json.dumps({"model": MODEL_ID, "max_tokens": max_tokens, "temperature": 0,
                           "stream": True,
                           "messages": [{"role": "user", "content": "a long story"}]}).encode()
        self.sock.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body)
        self.data = b""
        self.started = threading.Event()
        self.error = None

    def run(self):
        try:
            while not chunked_body_ended(self.data):
                chunk = self.sock.recv(4096)
                if not chunk:
                    break
                self.data += chunk
                if b"data: " in self.data:
                    self.started.set()
                time.sleep(0.05)
        except OSError as e:
            self.error = e
        finally:
            self.started.set()
            self.sock.close()

    def finished_whole(self):
        events = [l[6:].strip() for l in self.data.split(b"\n") if l.startswith(b"data: ")]
        return (self.error is None and events and events[-1] == b"[DONE]"
                and b'"finish_reason":"length"' in self.data)


def summary(name, results, ha_before, ha_after, extra=""):
    sent = len(results)
    ok = sum(r.ok for r in results)
    failed = [r for r in results if not r.ok]
    retries = int(ha_after["BACKEND"]["wretr"] or 0) - int(ha_before["BACKEND"]["wretr"] or 0)
    redisp = int(ha_after["BACKEND"]["wredis"] or 0) - int(ha_before["BACKEND"]["wredis"] or 0)
    streams = sum(r.stream for r in results)
    slowest = max((r.t_end - r.t_start for r in results), default=0)
    print(f"\n[{name}] sent {sent} ({streams} streamed), succeeded {ok}, failed {len(failed)}; "
          f"slowest {slowest:.2f} s. HAProxy: retries {retries}, redispatches {redisp}; from the "
          f"instances: 5xx answers {_diff(ha_after, ha_before, 'hrsp_5xx')}, connection errors "
          f"{_diff(ha_after, ha_before, 'econ')}, response errors "
          f"{_diff(ha_after, ha_before, 'eresp')}. {extra}")
    for r in failed:
        print(f"    failed: client {r.client} {'stream' if r.stream else 'plain'} on "
              f"{r.server} after {r.t_end - r.t_start:.2f} s: {r.error}")
    return failed


# ---- The cluster --------------------------------------------------------------------------------

class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        (tmp / "etc").mkdir()
        (tmp / "models.json").write_text(json.dumps(
            {"models": {MODEL_ID: {"path": str(MODELS / TINY), "pin": True}}}))
        ports = set()
        while len(ports) < N_INSTANCES + 2:
            ports.add(free_port())
        ports = sorted(ports)
        self.ports, self.lb_port, self.stats_port = ports[:N_INSTANCES], ports[-2], ports[-1]
        unit = (ROOT / "deploy" / "ebb@.service").read_text()
        self.services = []
        self.argv = {}
        for port in self.ports:
            # The unit's per-instance override file (EnvironmentFile=-/etc/ebb/ebb-%i.env).
            override = tmp / "etc" / f"ebb-{port}.env"
            override.write_text(
                f"EBB_MODELS_FILE={tmp / 'models.json'}\nEBB_MEMORY_LIMIT=256MiB\n"
                f"EBB_PARALLEL=1\nEBB_MAX_QUEUE=8\nEBB_DRAIN_TIMEOUT={DRAIN_TIMEOUT_S}\n"
                "EBB_EXTRA_ARGS=--log-level info\n")
            env, argv = systemd_exec_start(unit, [ROOT / "deploy" / "ebb.env", override], port,
                                           tmp / "run", tmp / "cache")
            assert argv[:2] == ["/usr/local/bin/ebb", "serve"], argv
            flags = argv[2:]
            # `ebb service start` gives --state-dir itself (its EBB_HOME): drop the unit's.
            i = flags.index("--state-dir")
            del flags[i:i + 2]
            self.argv[port] = flags
            svc = Service(tmp / f"home-{port}", port=port,
                          env={k: v for k, v in env.items() if k.startswith("EBB_")})
            _SERVICES.append(svc)
            self.services.append(svc)
        self.sock = str(tmp / "haproxy.sock")
        cfg, self.names = render_haproxy_cfg(self.lb_port, self.stats_port, self.sock, self.ports)
        (tmp / "haproxy.cfg").write_text(cfg)
        self.by_name = dict(zip(self.names, self.services))
        self.ha = None

    def start(self):
        t0 = time.monotonic()
        for svc in self.services:
            svc.start(flags=self.argv[svc.port])
        started = time.monotonic() - t0
        self.ha = HAProxy(self.tmp / "haproxy.cfg", self.sock, self.tmp / "haproxy.log")
        for name in self.names:
            took, st = self.ha.wait_status(name, is_up, 15)
            assert took is not None, f"{name} never came UP: {st}\n{self.ha.log_tail()}"
        print(f"\n3 instances started with `ebb service start` in {started:.1f} s "
              f"(flags from deploy/ebb@.service: {' '.join(self.argv[self.ports[0]])}); "
              f"HAProxy up, all servers UP; checks {CHECK}")

    def pid(self, name):
        return self.by_name[name].state()["pid"]

    def restart(self, name, *args):
        svc = self.by_name[name]
        t0 = time.monotonic()
        r = svc.run("restart", *args, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return time.monotonic() - t0

    def metrics_text(self, port):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            c.request("GET", "/metrics")
            r = c.getresponse()
            return r.read().decode() if r.status == 200 else None
        finally:
            c.close()

    def diagnose(self):
        if self.ha:
            print("\n--- HAProxy log (last lines)\n" + self.ha.log_tail(60))
        for svc in self.services:
            log = svc.home / "service.log"
            if log.exists():
                lines = [l for l in log.read_text().splitlines()
                         if "status=200" not in l and "model cache" not in l]
                print(f"--- {log} (not 200)\n" + "\n".join(lines[-25:]))

    def stop(self):
        if self.ha:
            self.ha.stop()
        for svc in self.services:
            svc.run("stop", "--drain-timeout", "1", timeout=60)
            svc.cleanup()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("deploy"))
    try:
        c.start()
        yield c
    except BaseException:
        c.diagnose()
        raise
    finally:
        c.stop()
        _kill_everything()


def scenario(fn):
    """A scenario on the cluster: when it fails, HAProxy's log and each instance's unusual log
    lines are printed with the failure."""
    @functools.wraps(fn)
    def run(cluster, *args, **kwargs):
        try:
            return fn(cluster, *args, **kwargs)
        except BaseException:
            cluster.diagnose()
            raise
        finally:  # a failed scenario leaves no clients running into the next one
            while _LOADS:
                load = _LOADS.pop()
                load.stop_event.set()
                for t in load.threads:
                    t.join(120)
    return run


def gauge(text, name):
    m = re.search(rf"^{name} (\S+)$", text or "", flags=re.M)
    return float(m.group(1)) if m else None


def test_the_unit_is_valid_for_systemd(tmp_path):
    """systemd-analyze verify finds nothing in deploy/ebb@.service (an instance of it, with the
    binary's path made real); skipped without systemd-analyze."""
    tool = shutil.which("systemd-analyze")
    if not tool:
        pytest.skip("systemd-analyze is not installed")
    unit = (ROOT / "deploy" / "ebb@.service").read_text().replace("/usr/local/bin/ebb", EBB)
    (tmp_path / "ebb@.service").write_text(unit)
    r = subprocess.run([tool, "verify", "ebb@11435.service"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    problems = [l for l in (r.stdout + r.stderr).splitlines() if "ebb@" in l]
    assert r.returncode == 0 and not problems, r.stdout + r.stderr
    r = subprocess.run([tool, "security", "--offline=true", "ebb@11435.service"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    line = [l for l in r.stdout.splitlines() if "Overall exposure" in l]
    print(f"\nsystemd-analyze security --offline: {line[-1].strip() if line else r.stdout[-200:]}")


@scenario
def test_a_rolling_restart_of_all_three_loses_no_request(cluster):
    ha = cluster.ha
    before = ha.stats()
    load = Load(cluster.lb_port, seed=100).start()
    assert wait_until(lambda: load.count() >= 8, 30), "no load"
    timings = []
    downs = []
    for svc, name in zip(cluster.services, cluster.names):
        # A long stream keeps this instance's drain open for seconds (and, with --parallel 1,
        # the requests HAProxy sends it meanwhile wait in its queue: the drain runs those too).
        # HAProxy sees its /ready fail and takes it out while they finish.
        long = PacedStream(svc.port)
        long.start()
        assert long.started.wait(20) and long.error is None, long.error
        old = cluster.pid(name)
        watch = StateWatcher(ha, name)
        took = cluster.restart(name)  # SIGTERM: drain, exit 0; then start and wait for /ready
        t_new = time.monotonic()
        long.join(30)
        assert not long.is_alive() and long.finished_whole(), \
            f"the stream running on {name} during its drain was cut: {long.error} " \
            f"{long.data[:300]!r} ... {long.data[-300:]!r}"
        new = cluster.pid(name)
        assert new != old and not alive(old)
        # Back in rotation: UP, and the new process has answered a request through HAProxy.
        back, st = ha.wait_status(name, is_up, 15)
        assert back is not None, f"{name} not back in rotation: {st}"
        assert wait_until(lambda: any(r.ok and r.server == name and r.t_start > t_new
                                      for r in list(load.results)), 15, step=0.01), \
            f"{name} is UP but took no request"
        seen = watch.stop()
        timings.append(f"{name}: `ebb service restart` {took:.2f} s (drain of a "
                       f"{len(long.data) >> 10} KiB stream included), serving again after "
                       f"{time.monotonic() - t_new:.2f} s; HAProxy saw {seen}")
        downs.append("DOWN" in seen)
    time.sleep(1)
    results = load.stop()
    failed = summary("a) rolling restart", results, before, ha.stats(),
                     "\n    " + "\n    ".join(timings))
    served = {r.server for r in results if r.ok}
    assert set(cluster.names) <= served, served
    assert not failed, "requests failed during the rolling restart"
    # The drains lasted seconds: HAProxy took each instance out on its failing /ready.
    assert all(downs), timings


@scenario
def test_b_sigkill_mid_stream_fails_only_what_was_in_flight_there(cluster):
    ha = cluster.ha
    victim = cluster.names[1]
    before = ha.stats()
    load = Load(cluster.lb_port, seed=200).start()
    assert wait_until(lambda: load.count() >= 8, 30), "no load"
    pid = cluster.pid(victim)
    # The check and the kill under one hold of the load's lock: a stream seen in flight is not
    # taken out of `inflight` before the SIGKILL (it was, once, between a separate check and the
    # kill; a client may still mark it ended, hence the 0.05 s below), and no client registers a
    # new request until every thread of the victim has exited. So
    # `in_flight` (every request registered then, whichever instance it went to: one whose
    # headers were on their way has no server yet) holds every request the victim could answer.
    killed_at = time.monotonic() + 20
    mid_stream = []
    while not mid_stream and time.monotonic() < killed_at:
        with load.lock:
            mid_stream = [r for r in load.inflight.values() if r.server == victim and
                          r.stream and r.events > 0 and r.t_end is None]
            if mid_stream:
                signal_and_wait(pid, signal.SIGKILL)
                t_kill = time.monotonic()
                in_flight = list(load.inflight.values())
        if not mid_stream:
            time.sleep(0.005)
    assert mid_stream, "no stream on the victim in 20 s"
    down, st = ha.wait_status(victim, is_down, 10, step=0.02)
    assert down is not None, f"{victim} not taken out after SIGKILL: {st}"
    time.sleep(1.0)  # requests keep coming while it is away
    took = cluster.restart(victim)  # the state file is stale: removed, restarted with its flags
    t_ready = time.monotonic()
    back, st = ha.wait_status(victim, is_up, 15, step=0.02)
    assert back is not None, f"{victim} did not rejoin: {st}"
    time.sleep(2.0)
    results = load.stop()
    inflight_there = [r for r in in_flight if r.server == victim]
    failed = summary("b) SIGKILL mid-stream", results, before, ha.stats(),
                     f"{len(inflight_there)} in flight on {victim} at the kill; DOWN after "
                     f"{down:.2f} s; restart {took:.2f} s; UP {back:.2f} s after it was ready")
    # The stream it was in the middle of is cut (unless its last bytes were already on their
    # way: then it ended within moments of the kill).
    assert mid_stream and all(not r.ok or r.t_end - t_kill < 0.05 for r in mid_stream), \
        [(r.ok, r.t_end - t_kill, r.error) for r in mid_stream]
    for r in failed:
        assert r.t_start < t_kill, f"a request started after the kill failed: {r.error}"
        assert any(r is x for x in in_flight), f"not in flight at the kill: {r.error}"
        assert r.server in (victim, None), f"a request on {r.server} failed: {r.error}"
        assert r.t_end - t_kill < 15, "a failed request hung instead of failing"
        assert r.error.startswith(("HTTP 5", "stream cut", "IncompleteRead", "RemoteDisconnected",
                                   "ConnectionResetError")), r.error
    assert len(failed) <= len(inflight_there), (len(failed), len(inflight_there))
    assert all(r.ok for r in results if r.t_start > t_kill)
    assert any(r.ok and r.server == victim and r.t_start > t_ready for r in results), \
        "the restarted instance took no request"
    # Back in rotation within its rise time: downinter, then fastinter for the remaining
    # rise - 1 checks, plus a margin for the check itself and this loop's polling.
    bound = CHECK["downinter"] + (CHECK["rise"] - 1) * CHECK["fastinter"] + 1.0
    assert back <= bound, f"rejoined after {back:.2f} s, bound {bound:.2f} s"


@scenario
def test_c_a_wedged_instance_leaves_rotation_and_a_restart_recovers_it(cluster):
    ha = cluster.ha
    victim = cluster.names[2]
    before = ha.stats()
    load = Load(cluster.lb_port, seed=300).start()
    assert wait_until(lambda: load.count() >= 8, 30), "no load"
    assert wait_until(lambda: load.streaming_on(victim), 20, step=0.005), "no stream on victim"
    pid = cluster.pid(victim)
    # As in (b): no client registers a request until every thread of the victim has stopped, so
    # `in_flight` holds every request the victim could have begun answering.
    try:
        with load.lock:
            signal_and_wait(pid, signal.SIGSTOP)
            t_stop = time.monotonic()
            in_flight = list(load.inflight.values())
        down, st = ha.wait_status(victim, is_down, 20, step=0.02)
        check = ha.stats()[victim]["check_status"]
    except BaseException:
        os.kill(pid, signal.SIGCONT)
        raise
    t_down = time.monotonic()
    took = cluster.restart(victim, "--drain-timeout", "1")
    back, st2 = ha.wait_status(victim, is_up, 15, step=0.02)
    time.sleep(1.0)
    results = load.stop()
    inflight_there = [r for r in in_flight if r.server == victim]
    failed = summary("c) SIGSTOP (wedged)", results, before, ha.stats(),
                     f"{len(inflight_there)} answering on {victim} at the stop "
                     f"({sum(r.stream for r in inflight_there)} streams); "
                     f"DOWN {down:.2f} s after SIGSTOP (check {check}); `ebb service restart "
                     f"--drain-timeout 1` {took:.2f} s (SIGKILL after the wait); UP again "
                     f"{back:.2f} s after it")
    assert down is not None, f"{victim} still {st} after SIGSTOP"
    assert check.startswith(("L7TOUT", "L4TOUT", "L6TOUT")), check
    # Two failed checks: the first comes within `inter` of the stop and fails after `timeout
    # check`, the second `fastinter` later and fails after `timeout check` again; the last
    # 0.5 s is for the polling here.
    bound = CHECK["inter"] + CHECK["fastinter"] + CHECK["fall"] * CHECK["timeout_check"] + 0.5
    assert down <= bound, f"taken out after {down:.2f} s, bound {bound:.2f} s"
    assert back is not None, f"{victim} not back after the restart: {st2}"
    # Only the answers the stopped instance had begun may fail, cut when the restart kills it: a
    # stream, or a plain answer whose headers it had written and whose body it had not (the
    # server writes them apart). Requests it had not begun answering were retried elsewhere.
    assert len(failed) <= len(inflight_there), (len(failed), len(inflight_there))
    for r in failed:
        assert r.t_start < t_stop and r.server == victim, (r.server, r.error)
        assert any(r is x for x in in_flight), f"not in flight at the stop: {r.error}"
        assert r.error.startswith("stream cut" if r.stream else "IncompleteRead"), r.error
    assert all(r.ok for r in results if r.t_start > t_down)


@scenario
def test_d_gauges_move_with_load_and_promtool_accepts_every_instance(cluster):
    samples = {p: [] for p in cluster.ports}
    busy_text = {}
    load = Load(cluster.lb_port, seed=400).start()
    assert wait_until(lambda: load.count() >= 8, 30), "no load"
    end = time.monotonic() + 4
    while time.monotonic() < end:
        for port in cluster.ports:
            text = cluster.metrics_text(port)
            s = (gauge(text, "ebb_requests_running"), gauge(text, "ebb_queue_depth"),
                 gauge(text, "ebb_kv_cache_usage_ratio"))
            assert None not in s, f"instance {port}: gauges missing from /metrics"
            samples[port].append(s)
            if s[0] and s[1]:
                busy_text[port] = text
            busy_text.setdefault(port, text)
        time.sleep(0.1)
    load.stop()
    idle = {}
    for port in cluster.ports:
        assert wait_until(lambda: (lambda t: gauge(t, "ebb_requests_running") == 0 and
                                   gauge(t, "ebb_queue_depth") == 0 and
                                   gauge(t, "ebb_kv_cache_usage_ratio") == 0)(
            cluster.metrics_text(port)), 10), f"instance {port} did not go idle"
        idle[port] = cluster.metrics_text(port)
    for port in cluster.ports:
        run = max(s[0] for s in samples[port])
        queue = max(s[1] for s in samples[port])
        kv = max(s[2] for s in samples[port])
        print(f"\n[d) gauges] 127.0.0.1:{port}: under load max running {run:.0f}, queue "
              f"{queue:.0f}, KV usage ratio {kv:.5f} ({len(samples[port])} samples); idle: "
              f"running {gauge(idle[port], 'ebb_requests_running'):.0f}, queue "
              f"{gauge(idle[port], 'ebb_queue_depth'):.0f}, KV "
              f"{gauge(idle[port], 'ebb_kv_cache_usage_ratio'):.0f}, ready "
              f"{gauge(idle[port], 'ebb_ready'):.0f}")
        assert run >= 1 and kv > 0, (port, run, kv)
        for text in (busy_text[port], idle[port]):
            r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                               text=True)
            assert r.returncode == 0, r.stdout + r.stderr
    # Four clients on three instances with --parallel 1: some request waits somewhere.
    assert max(max(s[1] for s in samples[p]) for p in cluster.ports) >= 1


def test_e_no_instance_left_gives_a_json_503_with_retry_after(tmp_path):
    """HAProxy's own 503 (deploy/haproxy.cfg's http-error), when no instance is up: OpenAI's
    error shape and Retry-After, after the retries found nothing."""
    ports = [free_port() for _ in range(N_INSTANCES + 2)]  # nothing listens on them
    sock = str(tmp_path / "haproxy.sock")
    cfg, names = render_haproxy_cfg(ports[-2], ports[-1], sock, ports[:N_INSTANCES])
    (tmp_path / "haproxy.cfg").write_text(cfg)
    ha = HAProxy(tmp_path / "haproxy.cfg", sock, tmp_path / "haproxy.log")
    try:
        for name in names:
            assert ha.wait_status(name, is_down, 10)[0] is not None
        c = http.client.HTTPConnection("127.0.0.1", ports[-2], timeout=30)
        c.request("POST", "/v1/chat/completions", body=json.dumps({"model": MODEL_ID}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        err = json.loads(r.read())
        c.close()
        assert r.status == 503 and r.getheader("Retry-After") == "1", r.status
        assert err["error"]["code"] == "no_instance_available", err
        assert r.getheader("Content-Type") == "application/json"
    finally:
        ha.stop()
