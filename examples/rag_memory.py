#!/usr/bin/env python3
"""RAG-style serving with bounded memory: the users' scenario of docs/python.md.

Each request is a question plus a mixed number of retrieved passages, so prompt lengths jump
between short and long. ORT's CPU arena grows to the longest prompt seen and keeps that memory;
ebb's shrink policy (shrink_every) gives it back every N requests without reloading the model.
--naive instead unloads and reloads the model every N requests (what users did before).

Every --report requests it prints process RSS, anonymous RSS, KV in use / reserved and the
arena's total allocation, so the two strategies can be compared side by side:

    PYTHONPATH=build/release/python python3 examples/rag_memory.py models/demo --requests 300
    PYTHONPATH=build/release/python python3 examples/rag_memory.py models/demo --requests 300 --naive
"""
import argparse
import random
import sys
import time

import ebb

WORDS = ("memory arena cache token model request budget shrink reload latency context passage "
         "retrieval answer question vector index document score rank chunk").split()
MiB = 1024 * 1024


def passage(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def prompt(rng: random.Random, max_words: int) -> str:
    k = rng.choice([1, 1, 2, 4, 8])  # retrieved passages: mostly few, sometimes many
    ctx = "\n\n".join(passage(rng, rng.randint(10, max(10, max_words // 8))) for _ in range(k))
    return f"Context:\n{ctx}\n\nQuestion: {passage(rng, 8)}?\nAnswer:"


def row(i: int, model: "ebb.Model", elapsed: float) -> str:
    s = model.runtime.stats()
    p, kv, arena = s["process"], s["kv"], s["cpu_arena"]
    arena_mib = arena["total_allocated_bytes"] / MiB if arena["available"] else float("nan")
    return (f"{i:>6} {p['rss_bytes'] / MiB:>8.1f} {p['anon_bytes'] / MiB:>8.1f} "
            f"{kv['in_use_bytes'] / MiB:>7.2f} {kv['reserved_bytes'] / MiB:>7.2f} "
            f"{arena_mib:>8.1f} {s['num_shrinks']:>7} {elapsed:>7.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="model folder (genai_config.json, model.onnx, tokenizer.json)")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--every", type=int, default=25,
                    help="shrink (or, with --naive, reload) every N requests")
    ap.add_argument("--report", type=int, default=50, help="print a row every N requests")
    ap.add_argument("--max-words", type=int, default=1200, help="longest retrieved context")
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--prefill-chunk-size", type=int, default=0,
                    help="tokens per prefill Run (0: the whole prompt at once, as many apps do)")
    ap.add_argument("--naive", action="store_true", help="unload and reload every N requests")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    rt = ebb.Runtime(memory_limit="4GiB")
    opts = {"prefill_chunk_size": args.prefill_chunk_size}
    if not args.naive:
        opts["memory.shrink_every"] = args.every

    def load():
        return rt.load(args.model, id="rag", options=opts)

    model = load()
    print(f"# ebb {ebb.__version__}, {'naive: reload' if args.naive else 'shrink_every'} "
          f"every {args.every} requests, {args.requests} requests")
    print(f"{'req':>6} {'rss_MiB':>8} {'anon_MiB':>8} {'kv_use':>7} {'kv_res':>7} "
          f"{'arena_MiB':>8} {'shrinks':>7} {'secs':>7}")
    print(row(0, model, 0.0))
    t0 = time.perf_counter()
    ctx_len = model.info["context_length"]
    for i in range(1, args.requests + 1):
        p = prompt(rng, args.max_words)
        ids = model.tokenizer.encode(p)[-(ctx_len - args.max_new_tokens - 1):]
        r = model.generate(ids, max_new_tokens=args.max_new_tokens)
        assert r.finish_reason in ("length", "stop"), r
        if args.naive and i % args.every == 0:
            model.unload()
            model = load()
        if i % args.report == 0 or i == args.requests:
            print(row(i, model, time.perf_counter() - t0), flush=True)
    model.unload()
    return 0


if __name__ == "__main__":
    sys.exit(main())
