#!/usr/bin/python3
"""The same model in several folders (e.g. a kernel rewrite of it), one stream and N streams,
alternated in one run (issue 40: a kernel measured where the service lives).

  make bench-llamacpp      # builds bench/llamacpp/ebb_probe (and src/cpu_ops/libebb_cpu_ops.so)
  /usr/bin/python3 tools/cpu_ops_model.py --model-dir M --out M-cpu --kv-fp16
  /usr/bin/python3 bench/stream_variants.py M M-cpu --streams 4 --rounds 3 --option model_cache.dir=off

Per round and folder (the order rotates every round), two `ebb_probe` processes: one stream
(prefill and decode tok/s, as bench/vs_llamacpp.py measures them) and --streams N through the
batched decode (`--stream-mode batched`: decode_batch.max_rows = N), whose figures are computed as
vs_llamacpp.py --streams does (stream_figures): aggregate decode tok/s while every stream decodes,
TPOT p50 / p99. --option K=V goes to every run (e.g. model_cache.dir=off, so that no folder is
measured from a compiled-model cache entry and another not). Prints each run, then the medians
and, per folder, N streams' aggregate over one stream's decode.
"""

import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import vs_llamacpp  # noqa: E402  (run_probe, stream_figures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="ebb model folders")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--option", action="append", default=[], help="ebb model option K=V for every run")
    a = ap.parse_args()
    if a.streams < 2 or a.rounds < 1:
        ap.error("--streams must be at least 2 and --rounds at least 1")
    probe = os.path.join(a.build_dir, "bench", "llamacpp", "ebb_probe")
    if not os.path.exists(probe):
        sys.exit(f"{probe} is missing: run make bench-llamacpp")
    opts = [x for o in a.option for x in ("--option", o)]
    runs = {m: [] for m in a.models}
    for r in range(a.rounds):
        for m in a.models[r % len(a.models):] + a.models[:r % len(a.models)]:
            one = vs_llamacpp.run_probe(probe, m, a.threads, a.prompt_tokens, a.gen_tokens,
                                        ["--warmup", *opts], first_token=False)
            many = vs_llamacpp.run_probe(
                probe, m, a.threads, a.prompt_tokens, a.gen_tokens,
                ["--streams", str(a.streams), "--warm-steps", "0", "--stream-mode", "batched", *opts],
                first_token=False)
            vs_llamacpp.stream_figures(many)
            fig = {"prefill": one["prefill_tok_s"], "decode": one["decode_tok_s"],
                   "agg": many["agg_decode_tok_s"], "p50": many["tpot_p50_ms"], "p99": many["tpot_p99_ms"],
                   "kernels": one.get("model_kernels", "")}
            runs[m].append(fig)
            print(f"round {r + 1} {m}: 1 stream prefill {fig['prefill']:.1f} decode {fig['decode']:.1f} tok/s; "
                  f"{a.streams} streams {fig['agg']:.1f} tok/s ({fig['agg'] / fig['decode']:.2f}x), TPOT p50 "
                  f"{fig['p50']:.1f} p99 {fig['p99']:.1f} ms", flush=True)
    print(f"\nmedians of {a.rounds} rounds; prompt {a.prompt_tokens}, {a.gen_tokens} tokens per stream, "
          f"{a.threads} threads\n")
    print(f"| folder | kernels | 1 stream prefill tok/s | 1 stream decode tok/s | {a.streams} streams aggregate "
          f"decode tok/s | x one stream | TPOT p50 / p99 (ms) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for m in a.models:
        def med(k, m=m):
            return statistics.median(x[k] for x in runs[m])
        print(f"| {os.path.basename(os.path.normpath(m))} | {runs[m][0]['kernels']} | {med('prefill'):.1f} | "
              f"{med('decode'):.1f} | {med('agg'):.1f} | {med('agg') / med('decode'):.2f} | {med('p50'):.1f} / "
              f"{med('p99'):.1f} |")


if __name__ == "__main__":
    main()
