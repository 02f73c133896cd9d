#!/usr/bin/python3
"""The first load's memory (issue 40, done-when 5; docs/benchmarks.md "The first load's memory").

Runs `ebb generate MODEL --json` in three ways, alternated, --pairs times:
  off     model_cache.dir=off (the uncached load)
  first   a fresh, empty cache folder: the load that builds the compiled-model cache entry (the
          process exits only once the background build has finished)
  cached  the entry the previous "first" run built
(with --baseline-ebb, also "base-first" and "base-cached": the same with another ebb binary, e.g.
the previous release, in the same run) and samples each process's RssAnon (+ VmSwap) every 20 ms
from outside, for its whole life (load,
generation and, for "first", the background build). It prints, per run, that peak, the process's
wall time, ebb's own load figures (memory.weights: load_ms, load_peak_anon_bytes, cache) and the
greedy tokens, then the medians and the ratio first / off of the peaks, which done-when 5 bounds
at 1.1.

  /usr/bin/python3 bench/first_load_bench.py MODEL_DIR --ebb build/release/src/cli/ebb \\
      --pairs 3 --cache-root /tmp/bm/first-load
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

MIB = 1 << 20


def anon_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            anon = swap = 0
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
                elif line.startswith("VmSwap:"):
                    swap = int(line.split()[1]) * 1024
            return anon + swap
    except (OSError, ValueError):
        return None


def run(ebb, model, cache_dir, prompt, new_tokens):
    cmd = [ebb, "generate", model, "--input-ids", prompt, "--max-new-tokens", str(new_tokens),
           "--json", "--option", f"model_cache.dir={cache_dir}"]
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while p.poll() is None:
        a = anon_bytes(p.pid)
        if a is not None:
            peak = max(peak, a)
        time.sleep(0.02)
    out, err = p.communicate()
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{err[-2000:]}")
    doc = json.loads(out)
    weights = doc.get("memory", {}).get("weights", {})
    return {
        "peak_anon_bytes": peak,
        "wall_s": wall,
        "load_ms": weights.get("load_ms"),
        "load_peak_anon_bytes": weights.get("load_peak_anon_bytes"),
        "cache": weights.get("cache"),
        "tokens": doc.get("sequences", [[]])[0],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--ebb", default="build/release/src/cli/ebb")
    ap.add_argument("--baseline-ebb", help="another ebb binary to run first/cached loads with")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--cache-root", default="/tmp/ebb-first-load-bench")
    ap.add_argument("--prompt", default="5,17,42,99,7,300,8,9,10,11,12,13,14,15,16,17")
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--json", help="write every run's figures here")
    a = ap.parse_args()
    if a.pairs < 1:
        ap.error("--pairs must be at least 1")
    runs = {"off": [], "first": [], "cached": []}
    if a.baseline_ebb:
        runs.update({"base-first": [], "base-cached": []})
    for i in range(a.pairs):
        cache = os.path.join(a.cache_root, f"pair-{i}")
        base_cache = os.path.join(a.cache_root, f"pair-{i}-baseline")
        for c in (cache, base_cache):
            shutil.rmtree(c, ignore_errors=True)
            os.makedirs(c)
        plan = [("off", a.ebb, "off"), ("first", a.ebb, cache), ("cached", a.ebb, cache)]
        if a.baseline_ebb:
            plan += [("base-first", a.baseline_ebb, base_cache),
                     ("base-cached", a.baseline_ebb, base_cache)]
        for kind, binary, folder in plan:
            r = run(binary, a.model, folder, a.prompt, a.new_tokens)
            runs[kind].append(r)
            print(f"pair {i + 1} {kind:11s} peak anon {r['peak_anon_bytes'] / MIB:7.0f} MiB  "
                  f"wall {r['wall_s']:6.2f} s  load {r['load_ms']} ms  ebb's load peak "
                  f"{(r['load_peak_anon_bytes'] or 0) / MIB:7.0f} MiB  cache {r['cache']}",
                  flush=True)
        for c in (cache, base_cache):
            shutil.rmtree(c, ignore_errors=True)
    want = runs["off"][0]["tokens"]
    same = all(r["tokens"] == want for rs in runs.values() for r in rs)
    print(f"\ngreedy tokens identical in every run: {same}")
    med = {k: statistics.median(r["peak_anon_bytes"] for r in v) for k, v in runs.items()}
    for k, v in runs.items():
        print(f"{k:11s} median peak anon {med[k] / MIB:7.0f} MiB, median wall "
              f"{statistics.median(r['wall_s'] for r in v):6.2f} s, median load_ms "
              f"{statistics.median(r['load_ms'] or 0 for r in v):7.0f}")
    ratios = [f["peak_anon_bytes"] / o["peak_anon_bytes"] for f, o in zip(runs["first"], runs["off"])]
    print("first / off, per pair: " + ", ".join(f"{x:.3f}" for x in ratios) +
          f"; median {statistics.median(ratios):.3f}")
    if a.baseline_ebb:
        base = [f["peak_anon_bytes"] / o["peak_anon_bytes"]
                for f, o in zip(runs["base-first"], runs["off"])]
        print("base-first / off, per pair: " + ", ".join(f"{x:.3f}" for x in base) +
              f"; median {statistics.median(base):.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
