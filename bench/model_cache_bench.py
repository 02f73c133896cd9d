#!/usr/bin/python3
"""Process start -> first token, with and without the compiled-model cache (model_cache.dir).

    bench/model_cache_bench.py MODEL_DIR [--ebb build/release/src/cli/ebb] [--pairs 3]

One `ebb generate --max-new-tokens 1 --json` process per run; wall time from spawn to exit
(start -> first token, plus exit), and the CLI's own load_ms / ttft_ms and memory figures.
Runs, alternating in one session so the machine's noise hits both sides alike:
  1. `build` vs `off`: the first, cache-building load (cache removed before each) against a load
     with model_cache.dir=off (today's path).
  2. `cached` vs `off`: a load from the cache (second load onward) against model_cache.dir=off.
  3. PSS: two processes loading the same model at once, /proc/PID/smaps_rollup sampled while both
     run; the sample where both are loaded (the larger minimum RSS), for `off` and for `cached`.
Warm page cache: one untimed run of each kind first. Prints a Markdown table of medians.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

PROMPT = "5,17,42,99,7,300,8,9,10,11,12,13,14,15,16,17"


def run(ebb, model, cache, cache_dir, new_tokens=1):
    args = [ebb, "generate", model, "--input-ids", PROMPT, "--max-new-tokens", str(new_tokens),
            "--json", "--option", "model_cache.dir=" + ("off" if cache == "off" else cache_dir)]
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"ebb failed ({cache}): {p.stderr[-2000:]}")
    d = json.loads(p.stdout.splitlines()[0])
    proc = d["memory"]["process"]
    return {"wall_s": wall, "load_ms": d["stats"]["load_ms"], "ttft_ms": d["stats"]["ttft_ms"],
            "anon_mib": proc["anon_bytes"] / 2**20, "file_mib": proc["file_bytes"] / 2**20,
            "rss_mib": proc["rss_bytes"] / 2**20, "peak_mib": proc["peak_rss_bytes"] / 2**20,
            "tokens": d["sequences"][0]}


def smaps_rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    out[parts[0][:-1]] = int(parts[1]) / 1024  # MiB
    except OSError:
        pass
    return out


def pss_pair(ebb, model, cache, cache_dir, new_tokens):
    """Two processes at once; the smaps_rollup sample (while both were alive) in which the
    smaller of the two RSS figures is largest: both loaded and decoding."""
    args = [ebb, "generate", model, "--input-ids", PROMPT, "--max-new-tokens", str(new_tokens),
            "--option", "model_cache.dir=" + ("off" if cache == "off" else cache_dir)]
    procs = [subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(2)]
    last = None
    while all(p.poll() is None for p in procs):
        sample = [smaps_rollup(p.pid) for p in procs]
        if all(sample) and (last is None or min(r.get("Rss", 0) for r in sample) >=
                            min(r.get("Rss", 0) for r in last)):
            last = sample
        time.sleep(0.05)
    for p in procs:
        p.wait()
    return last


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--ebb", default="build/release/src/cli/ebb")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--cache-dir", default=None, help="default: MODEL/.ebb-cache-bench")
    ap.add_argument("--pss-tokens", type=int, default=32)
    ap.add_argument("--skip-build", action="store_true", help="skip the build-vs-off pairs")
    ap.add_argument("--skip-pss", action="store_true", help="skip the two-process PSS runs")
    a = ap.parse_args()
    cache_dir = a.cache_dir or os.path.join(a.model, ".ebb-cache-bench")

    if not a.skip_build:
        shutil.rmtree(cache_dir, ignore_errors=True)
    run(a.ebb, a.model, "off", cache_dir)  # warm the page cache with the model files
    builds, offs1 = [], []
    if not a.skip_build:
        for i in range(a.pairs):
            shutil.rmtree(cache_dir, ignore_errors=True)
            builds.append(run(a.ebb, a.model, "cache", cache_dir))
            offs1.append(run(a.ebb, a.model, "off", cache_dir))
            print(f"pair {i}: build {builds[-1]['wall_s']:.2f} s, off {offs1[-1]['wall_s']:.2f} s",
                  file=sys.stderr)
    if not os.path.isdir(cache_dir) or not os.listdir(cache_dir):
        run(a.ebb, a.model, "cache", cache_dir)
    run(a.ebb, a.model, "cache", cache_dir)  # warm the page cache with the cache files
    cached, offs2 = [], []
    for i in range(a.pairs):
        cached.append(run(a.ebb, a.model, "cache", cache_dir))
        offs2.append(run(a.ebb, a.model, "off", cache_dir))
        print(f"pair {i}: cached {cached[-1]['wall_s']:.2f} s, off {offs2[-1]['wall_s']:.2f} s",
              file=sys.stderr)
    same = all(r["tokens"] == offs2[0]["tokens"] for r in cached + offs2 + builds + offs1)

    print(f"model: {a.model}; {a.pairs} alternated pairs per comparison; medians; "
          f"identical tokens: {same}\n")
    print("| run | start -> exit (wall) | load_ms | ttft_ms | anon RSS | file RSS | RSS | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in (("cache off (today)", offs1 + offs2), ("first load, building the cache", builds),
                       ("cached (second load on)", cached)):
        if not rows:
            continue
        print(f"| {name} | {med(rows, 'wall_s'):.2f} s | {med(rows, 'load_ms'):.0f} | "
              f"{med(rows, 'ttft_ms'):.0f} | {med(rows, 'anon_mib'):.0f} MiB | "
              f"{med(rows, 'file_mib'):.0f} MiB | {med(rows, 'rss_mib'):.0f} MiB | "
              f"{med(rows, 'peak_mib'):.0f} MiB |")
    if builds:
        print(f"\nbuild / off (pairs): " + ", ".join(
            f"{b['wall_s'] / o['wall_s']:.2f}" for b, o in zip(builds, offs1)))
    print("cached / off (pairs): " + ", ".join(
        f"{c['wall_s'] / o['wall_s']:.2f}" for c, o in zip(cached, offs2)))

    if a.skip_pss:
        return
    print("\nTwo processes at once (both loaded and decoding), per process:\n")
    print("| run | Rss | Pss | Pss_Anon | Pss_File | Anonymous |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in ("off", "cache"):
        s = pss_pair(a.ebb, a.model, name, cache_dir, a.pss_tokens)
        if not s:
            print(f"| {name} | (no sample) |")
            continue
        for k, r in enumerate(s):
            print(f"| {'cache off' if name == 'off' else 'cached'} #{k + 1} | {r.get('Rss', 0):.0f} MiB | "
                  f"{r.get('Pss', 0):.0f} MiB | {r.get('Pss_Anon', 0):.0f} MiB | "
                  f"{r.get('Pss_File', 0):.0f} MiB | {r.get('Anonymous', 0):.0f} MiB |")


if __name__ == "__main__":
    main()
