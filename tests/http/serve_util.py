"""Helpers for the tests of `ebb serve` and `ebb service`: start a real server on a free
loopback port (or a background service with its own state directory), talk to it over HTTP with
Python's standard library only, and read its JSON and /metrics. Also used by tests/deploy."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

EBB = os.environ.get("EBB_CLI", "")
MODELS = Path(os.environ.get("EBB_TEST_MODELS", ""))


class Server:
    """A running `ebb serve --port 0 ...`; the port is read from its first output line."""

    def __init__(self, *args, env=None):
        assert EBB, "EBB_CLI must name the ebb binary"
        self.proc = subprocess.Popen(
            [EBB, "serve", "--port", "0", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        m = re.search(r"http://([0-9.]+):(\d+)", line)
        if not m:
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.proc.kill()
            raise AssertionError(f"ebb serve did not start: {line!r} {err}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}"

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=None, timeout=60):
        """Returns (status, headers dict with lower-case names, parsed JSON or text)."""
        c = self.conn(timeout)
        h = {"Content-Type": "application/json", **(headers or {})}
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        try:
            return r.status, hdrs, json.loads(text)
        except ValueError:
            return r.status, hdrs, text

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body, **kw)

    def runtime(self):
        s, _, j = self.get("/v1/runtime")
        assert s == 200, j
        return j

    def model(self, model_id):
        for m in self.runtime()["models"]:
            if m["id"] == model_id:
                return m
        return None

    def metrics(self):
        s, _, text = self.get("/metrics")
        assert s == 200, text
        return text

    def metric(self, name, **labels):
        """The value of one sample of /metrics (0 when absent)."""
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in self.metrics().splitlines():
            if line.startswith("#"):
                continue
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$", line)
            if not m or m.group(1) != name:
                continue
            got = m.group(2)[1:-1] if m.group(2) else ""
            parts = sorted(p for p in re.findall(r'[a-z_]+="[^"]*"', got))
            if ",".join(parts) == want:
                return float(m.group(3))
        return 0.0

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        out = self.proc.stdout.read()
        err = self.proc.stderr.read()
        return self.proc.returncode, out, err

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        died = self.proc.poll() is not None
        rc, _, err = self.stop()
        # A failing test whose server died shows why (a sanitizer report, a crash): the server's
        # stderr is otherwise lost with the pipe.
        if exc_type is not None and died and err:
            print(f"--- ebb serve exited {rc}; the end of its stderr:\n{err[-6000:]}")


def chat_body(model, content="hello", max_tokens=8, **extra):
    return {"model": model, "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens, "temperature": 0, **extra}


def charged_weights_bytes(folder, *args):
    """The weights bytes ebb charges to memory.limit for `folder` loaded with `args` (ebb serve
    arguments), read from a throwaway server: the weight files plus, on a CPU where ebb's int4
    matmul runs, its anonymous repack (docs/cpu_ops.md "Memory")."""
    with Server("--model", f"m={folder}", *args) as s:
        st, _, j = s.post("/v1/models/m/load", {})
        assert st == 200, j
        st, _, j = s.get("/v1/models/m/runtime")
        assert st == 200, j
        return j["info"]["weights_bytes"]


def weights_bytes(folder):
    """Bytes of a model folder's weight files: what ebb charges to memory.limit for its weights
    unless ebb's int4 matmul holds a repacked copy in anonymous memory (cpu_ops on an AVX2 CPU,
    no model-cache entry; then see charged_weights_bytes)."""
    cfg = json.loads((folder / "genai_config.json").read_text())
    name = cfg["model"]["decoder"]["filename"]
    total = 0
    for f in folder.iterdir():
        if f.name == name or (f.name.startswith(name) and f.is_file()):
            total += f.stat().st_size
    return total


def wait_until(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def alive(pid):
    """Whether pid is a live process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def http_get(port, path, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


class Service:
    """`ebb service` with its own state directory (EBB_HOME) and port (a free one unless given);
    env: more environment variables for the commands and so for the server they start."""

    def __init__(self, home, port=None, env=None):
        self.home = home
        self.port = port or free_port()
        self.env = {**os.environ, **(env or {}), "EBB_HOME": str(home)}
        self.pids = []  # every service pid seen, killed at teardown whatever happened

    def run(self, *args, timeout=120, cwd=None):
        r = subprocess.run([EBB, "service", *map(str, args)], capture_output=True, text=True,
                           env=self.env, timeout=timeout, cwd=cwd)
        st = self.state()
        if st:
            self.pids.append(st["pid"])
        return r

    def serve_flags(self, *extra, drain=1):
        return ["--models-dir", MODELS, "--port", self.port, "--drain-timeout", drain, *extra]

    def start(self, *extra, drain=1, flags=None):
        """Starts it with serve_flags(), or with exactly `flags` when given."""
        r = self.run("start", *(flags if flags is not None else self.serve_flags(*extra,
                                                                                 drain=drain)))
        assert r.returncode == 0, r.stdout + r.stderr
        st = self.state()
        assert st and alive(st["pid"])
        return st

    def state(self):
        p = self.home / "service.json"
        return json.loads(p.read_text()) if p.exists() else None

    def ready(self):
        return http_get(self.port, "/ready")[0] == 200

    def cleanup(self):
        for pid in self.pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def chunked_body_ended(data):
    """Whether `data`, an HTTP/1.1 response read so far (head included), holds the whole of a
    chunked body: its last chunk (`0` CRLF CRLF) after the head. Not a test of "ends with
    0\\r\\n\\r\\n" alone: a head whose last header is `X-Request-Id: req-60` ends so too."""
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return False
    body = data[head_end + 4:]
    return body.startswith(b"0\r\n\r\n") or body.endswith(b"\r\n0\r\n\r\n")


def rss_kib(pid, field="VmRSS"):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def raw(srv, data, timeout=5.0, read_all=True):
    """Sends bytes on a fresh connection; returns (what came back, seconds to the first byte)."""
    s = socket.create_connection((srv.host, srv.port), timeout=timeout)
    t0 = time.monotonic()
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    out = b""
    first = None
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            if first is None:
                first = time.monotonic() - t0
            out += b
            if not read_all:
                break
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return out, first


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.") else None
