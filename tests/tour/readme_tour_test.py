#!/usr/bin/env python3
"""Runs the README's quick tour as written (issue 27): the first ```sh block under "## A quick
tour", as one bash script with `set -e`, so the first command that fails fails the test.

It runs in a scratch copy of what a fresh clone has after `make run`: WORK/repo holds a copy of
examples/, a link to tools/, build/release/src/cli/ebb (a link to the CLI under test),
build/release/src/cpu_ops/libebb_cpu_ops.so (a link to the library built with it), and
models/demo; the tour's own `make demo-models` line runs the Makefile's target (through a `make`
function that points it at the scratch folder). ../shared links to the fixtures when they exist;
without them the lines that read ../shared are left out, with a message. Changes to the text,
all mechanical: the service listens on a free port instead of 11435 (so the test never meets
another service), and curl gets --fail, so that an HTTP error fails the command.

usage: readme_tour_test.py SOURCE_DIR CLI SHARED_DIR CACHE_DIR CPU_OPS_LIB
  CACHE_DIR keeps the synthesized models between runs (make's rules skip them when present).
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile


def tour_block(readme):
    text = open(readme, encoding="utf-8").read()
    start = text.index("## A quick tour")
    begin = text.index("```sh\n", start) + len("```sh\n")
    end = text.index("```", begin)
    return text[begin:end]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    src, cli, shared, cache, cpu_ops = sys.argv[1:6]
    block = tour_block(os.path.join(src, "README.md"))
    commands = [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert len(commands) >= 20, f"the tour block looks truncated: {len(commands)} lines"

    work = tempfile.mkdtemp(prefix="ebb-tour-")
    try:
        repo = os.path.join(work, "repo")
        os.makedirs(os.path.join(repo, "build", "release", "src", "cli"))
        os.symlink(os.path.abspath(cli), os.path.join(repo, "build", "release", "src", "cli", "ebb"))
        os.makedirs(os.path.join(repo, "build", "release", "src", "cpu_ops"))
        os.symlink(os.path.abspath(cpu_ops),
                   os.path.join(repo, "build", "release", "src", "cpu_ops", "libebb_cpu_ops.so"))
        shutil.copytree(os.path.join(src, "examples"), os.path.join(repo, "examples"))
        os.symlink(os.path.join(src, "tools"), os.path.join(repo, "tools"))
        # The models `make run` and `make demo-models` make, kept in CACHE_DIR between runs.
        os.makedirs(cache, exist_ok=True)
        os.symlink(os.path.abspath(cache), os.path.join(repo, "models"))
        subprocess.check_call(["make", "-s", "-C", src, "demo-model", f"DEMO_DIR={cache}/demo"])
        for written in ("small", "small-cpu"):  # the tour writes them
            shutil.rmtree(os.path.join(cache, written), ignore_errors=True)
        if os.path.isdir(shared):
            os.symlink(os.path.abspath(shared), os.path.join(work, "shared"))
        else:
            block = "\n".join(l for l in block.splitlines() if "../shared" not in l) + "\n"
            print(f"readme_tour: {shared} is absent: the ../shared lines are left out")

        port = free_port()
        script = block.replace("11435", str(port))
        script = re.sub(r"(\$B serve )", rf"\1--port {port} ", script)
        assert f"--port {port}" in script, "the tour no longer starts `$B serve`"
        prelude = f"""set -euo pipefail
set -x
curl() {{ local rc=0; command curl --fail --max-time 60 "$@" || rc=$?; echo; return $rc; }}
make() {{ command make -s -C {src} "$@" DEMO_DIR={cache}/demo MINILM_DIR={cache}/minilm; }}
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
"""
        env = dict(os.environ)
        env.pop("EBB_URL", None)
        r = subprocess.run(["bash", "-c", prelude + script], cwd=repo, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=1200)
        out = r.stdout
        print(out[-60000:])
        if r.returncode != 0:
            print(f"readme_tour: FAIL: the tour stopped (exit {r.returncode}) at the last '+' "
                  "line above", file=sys.stderr)
            return 1
        # What the tour promises, checked where it is cheap to check.
        for needle in ["KEY", "DEFAULT", "naive-ort", "\"finish_reason\"", "embedding",
                       "ebb_", "Tier 2"]:
            if needle not in out:
                print(f"readme_tour: FAIL: expected {needle!r} in the tour's output",
                      file=sys.stderr)
                return 1
        for f in ["memory.svg", "bench.svg", "rag.svg", "models/small/genai_config.json"]:
            if not os.path.exists(os.path.join(repo, f)):
                print(f"readme_tour: FAIL: the tour did not write {f}", file=sys.stderr)
                return 1
        if os.path.isdir(shared) and "named Max was very excited" not in out:
            print("readme_tour: FAIL: stories260k did not print its known text", file=sys.stderr)
            return 1
        print(f"readme_tour: OK, {len(commands)} lines")
        return 0
    finally:
        shutil.rmtree(os.path.join(cache, "small"), ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
