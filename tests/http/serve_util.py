"""Helpers for the tests of `ebb serve`: start a real server on a free loopback port, talk to it
over HTTP with Python's standard library only, and read its JSON and /metrics."""
import http.client
import json
import os
import re
import signal
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

    def __exit__(self, *exc):
        self.stop()


def chat_body(model, content="hello", max_tokens=8, **extra):
    return {"model": model, "messages": [{"role": "user", "content": content}],
            "max_tokens": max_tokens, "temperature": 0, **extra}


def weights_bytes(folder):
    """Bytes of a model folder's weight files, as ebb charges them to memory.limit."""
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
