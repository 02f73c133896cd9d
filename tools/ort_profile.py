#!/usr/bin/python3
"""Summarise an ONNX Runtime profile (the JSON written with --session-option
profile_file_prefix=PREFIX) by operator type: time per Run, share, kernels per Run.

Usage: tools/ort_profile.py PROFILE.json [--skip N] [--runs-only]
  --skip N   ignore the first N model Runs (e.g. 1 for a prompt's prefill, to see decode steps)

Standard library only. The figures are ORT's own per-kernel timings (microseconds, wall time of
each kernel on the calling thread), so they include the thread pool's dispatch but not ebb's
work between Runs; compare them with the model_run durations printed first.
"""
import argparse
import collections
import json
import statistics
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--skip", type=int, default=0, help="ignore the first N model Runs")
    a = ap.parse_args(argv)
    try:
        with open(a.profile, encoding="utf-8") as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{a.profile}: cannot read an ORT profile ({e})")
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    if len(runs) <= a.skip:
        sys.exit(f"{a.profile}: {len(runs)} model Runs recorded, nothing left after --skip {a.skip}")
    kept = runs[a.skip:]
    start = kept[0]["ts"]
    durs = [r["dur"] / 1000 for r in kept]
    print(f"{len(kept)} Runs (skipped {a.skip}): median {statistics.median(durs):.3f} ms, "
          f"mean {statistics.mean(durs):.3f} ms")
    total = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("cat") != "Node" or e.get("ts", 0) < start or not e.get("name", "").endswith("_kernel_time"):
            continue
        op = e.get("args", {}).get("op_name", "?")
        total[op] += e["dur"]
        count[op] += 1
    all_us = sum(total.values())
    n = len(kept)
    print(f"kernels: {all_us / n / 1000:.3f} ms per Run")
    print(f"{'operator':<36}{'ms/Run':>10}{'share':>8}{'per Run':>9}")
    for op, us in total.most_common():
        print(f"{op:<36}{us / n / 1000:>10.3f}{100 * us / all_us:>7.1f}%{count[op] / n:>9.1f}")


if __name__ == "__main__":
    main()
