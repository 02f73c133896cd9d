#!/usr/bin/python3
"""An idle model's weights after release_weights, and the next request (issue 21, Done-when 3).

    PYTHONPATH=build/debug/python bench/release_weights_bench.py MODEL_DIR [--cache-dir DIR]

In one process: load MODEL_DIR from its compiled-model cache entry (when the entry is missing, the
first load builds it and is unloaded, which waits for the background build), run one greedy request, then runtime.release_weights(); report RssAnon /
RssFile of the process and the model's weights figures at each step, and the time to the first
token (one prefill of a 16-token prompt) of a request before and after the release, with the
tokens of both (they must be equal). Prints one JSON object.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import ebb

PROMPT = [5, 17, 42, 99, 7, 300, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]


def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0]) / 1024.0
    return out


def request(model, new_tokens):
    g = model.generator(max_length=len(PROMPT) + new_tokens)
    t0 = time.perf_counter()
    g.append_tokens(PROMPT)
    g.generate_next_token()
    ttft = time.perf_counter() - t0
    while not g.is_done():
        g.generate_next_token()
    return ttft * 1000.0, list(g.get_sequence())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--cache-dir", default="/tmp/ebb-release-bench-cache")
    ap.add_argument("--new-tokens", type=int, default=8)
    a = ap.parse_args()
    opts = {"model_cache.dir": a.cache_dir}
    # Make sure the entry exists: a first load builds it (in the background; unload waits).
    rt = ebb.Runtime()
    m = rt.load(a.model, id="warm", options=opts)
    state = m.runtime.stats()["weights"]["state"]
    if state != "file-backed":
        rt.unload("warm", force=True)  # waits for the background build
        m = rt.load(a.model, id="m", options=opts)
    r = {"after_load": status(), "weights_after_load": m.runtime.stats()["weights"]}
    ttft_before, tokens_before = request(m, a.new_tokens)
    r["ttft_ms_before_release"] = ttft_before
    r["serving"] = status()
    rel = m.runtime.release_weights()
    r["release"] = rel
    r["after_release"] = status()
    r["weights_after_release"] = m.runtime.stats()["weights"]
    ttft_after, tokens_after = request(m, a.new_tokens)
    r["ttft_ms_after_release"] = ttft_after
    r["after_next_request"] = status()
    r["tokens_identical"] = tokens_before == tokens_after
    print(json.dumps(r, indent=1))
    return 0 if r["tokens_identical"] and rel["released"] else 1


if __name__ == "__main__":
    sys.exit(main())
