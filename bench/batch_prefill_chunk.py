#!/usr/bin/python3
"""N concurrent streams through ebb's batched decode, one decode_batch.prefill_chunk value against
another, alternated in one run (issue 40; docs/benchmarks.md "Prompts between the batched steps").

  make bench-llamacpp      # builds bench/llamacpp/ebb_probe
  /usr/bin/python3 bench/batch_prefill_chunk.py MODEL_DIR --streams 4 --chunks 0,32,64 --rounds 5

Each run is one `ebb_probe --streams N --stream-mode batched --option
decode_batch.prefill_chunk=C` process (N threads, each with its own Generator and prompt, released
together); the values rotate every round. Figures per run, as bench/vs_llamacpp.py --streams
computes them (stream_figures): aggregate decode tok/s while every stream decodes, end-to-end
tok/s (prefills included), the gaps between a stream's consecutive tokens (TPOT p50 and p99, ms)
and the last stream's first token (s). Prints each run and the medians per value.
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
    ap.add_argument("model", help="an ebb model folder (a GQA graph with a shared KV buffer)")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--chunks", default="0,32", help="decode_batch.prefill_chunk values (comma list)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    a = ap.parse_args()
    if a.streams < 1 or a.rounds < 1:
        ap.error("--streams and --rounds must be at least 1")
    try:
        chunks = [int(c) for c in a.chunks.split(",")]
    except ValueError:
        ap.error(f"--chunks needs integers, got '{a.chunks}'")
    if any(c < 0 for c in chunks):
        ap.error("--chunks values must be >= 0")
    probe = os.path.join(a.build_dir, "bench", "llamacpp", "ebb_probe")
    if not os.path.exists(probe):
        sys.exit(f"{probe} is missing: run make bench-llamacpp")
    runs = {c: [] for c in chunks}
    for r in range(a.rounds):
        for c in chunks[r % len(chunks):] + chunks[:r % len(chunks)]:
            out = vs_llamacpp.run_probe(
                probe, a.model, a.threads, a.prompt_tokens, a.gen_tokens,
                ["--streams", str(a.streams), "--warm-steps", "0", "--stream-mode", "batched",
                 "--option", f"decode_batch.prefill_chunk={c}"], first_token=False)
            vs_llamacpp.stream_figures(out)
            runs[c].append(out)
            print(f"round {r + 1} prefill_chunk {c}: aggregate decode {out['agg_decode_tok_s']:.1f} tok/s, "
                  f"end to end {out['agg_tok_s']:.1f} tok/s, TPOT p50 {out['tpot_p50_ms']:.1f} ms "
                  f"p99 {out['tpot_p99_ms']:.1f} ms, last first token {out['ttft_max_s']:.3f} s, "
                  f"others' CPU {100 * out.get('other_cpu_frac', 0):.1f} %", flush=True)
    print(f"\nmedians of {a.rounds} rounds, {a.streams} streams, prompt {a.prompt_tokens}, "
          f"{a.gen_tokens} tokens each:")
    print("| decode_batch.prefill_chunk | aggregate decode tok/s | end-to-end tok/s | TPOT p50 / p99 (ms) "
          "| last stream's first token (s) |")
    print("|---:|---:|---:|---:|---:|")
    for c in chunks:
        def med(k, c=c):
            return statistics.median(x[k] for x in runs[c])
        print(f"| {c} | {med('agg_decode_tok_s'):.1f} | {med('agg_tok_s'):.1f} | {med('tpot_p50_ms'):.1f} / "
              f"{med('tpot_p99_ms'):.1f} | {med('ttft_max_s'):.3f} |")


if __name__ == "__main__":
    main()
