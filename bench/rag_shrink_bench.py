#!/usr/bin/env python3
"""RSS slope of a RAG loop under each Tier 2 shrink setting, side by side (issue 24, Done-when 2).

Each mode runs in its own child process (RSS is per process), one after another in one
invocation, on the same seeded request stream: N requests, each an embedding of a few retrieved
passages followed by a chat completion over them, with prompt lengths that jump between short
and long (prefill in one Run, as many apps do, so ORT's CPU arena grows to the longest prompt).
Process RSS is sampled every --sample requests; the slope is a least-squares fit over the last
three quarters (the first quarter is warm-up: the arena and the heap find their high water).

    PYTHONPATH=build/release/python python3 bench/rag_shrink_bench.py \\
        --chat build/debug/test-models/llama-small-int4 \\
        --embed build/debug/test-models/minilm-shape-fp32 --requests 1000

Modes: `defaults` (no shrink), `ort-key` (run option memory.enable_memory_arena_shrinkage=cpu:0
set through model.runtime, the key onnxruntime-genai users are told to use), `shrink-every-50`
(memory.shrink_every=50 through model.runtime).
"""
import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time

WORDS = ("memory arena cache token model request budget shrink reload latency context passage "
         "retrieval answer question vector index document score rank chunk").split()
MODES = ("defaults", "ort-key", "shrink-every-50")
KiB, MiB = 1024, 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def slope(ys):
    n = len(ys)
    mx, my = (n - 1) / 2, sum(ys) / n
    den = sum((i - mx) ** 2 for i in range(n))
    return sum((i - mx) * (y - my) for i, y in enumerate(ys)) / den if den else 0.0


def child(args) -> int:
    import ebb  # noqa: PLC0415 - only the child needs the module

    rng = random.Random(args.seed)
    rt = ebb.Runtime()
    chat = rt.load(args.chat, id="chat", options={"prefill_chunk_size": 0})
    emb = rt.load(args.embed, id="embed")
    if args.mode == "ort-key":
        chat.runtime.set_option("memory.enable_memory_arena_shrinkage", "cpu:0")
    elif args.mode == "shrink-every-50":
        chat.runtime.set_option("memory.shrink_every", "50")
    ctx_len = chat.info["context_length"]
    samples = []
    t0 = time.perf_counter()
    for i in range(1, args.requests + 1):
        k = rng.choice([1, 1, 2, 4, 8])
        passages = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, args.max_words // 8)))
                    for _ in range(k)]
        emb.embed(passages)
        question = " ".join(rng.choice(WORDS) for _ in range(8))
        prompt = "Context:\n" + "\n\n".join(passages) + f"\n\nQuestion: {question}?\nAnswer:"
        ids = chat.tokenizer.encode(prompt)[-(ctx_len - args.max_new_tokens - 1):]
        r = chat.generate(ids, max_new_tokens=args.max_new_tokens)
        assert r.finish_reason in ("length", "stop"), r
        if i % args.sample == 0:
            samples.append(rss_bytes())
    elapsed = time.perf_counter() - t0
    stats = chat.runtime.stats()
    warm = samples[len(samples) // 4:]
    print(json.dumps({
        "mode": args.mode, "requests": args.requests, "seconds": elapsed,
        "rss_first_mib": samples[0] / MiB, "rss_last_mib": samples[-1] / MiB,
        "rss_peak_mib": max(samples) / MiB,
        "slope_bytes_per_request": slope(warm) / args.sample,
        "num_shrinks": stats["num_shrinks"], "policies": stats.get("policies"),
    }))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chat", required=True, help="decoder model folder")
    ap.add_argument("--embed", required=True, help="encoder model folder")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=10, help="read RSS every N requests")
    ap.add_argument("--max-words", type=int, default=1200, help="longest retrieved passage x 8")
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--mode", help=argparse.SUPPRESS)  # the child's
    args = ap.parse_args()
    if args.mode:
        return child(args)

    cpu = "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        cpu = next(l.split(":", 1)[1].strip() for l in out.splitlines()
                   if l.startswith("Model name"))
    except Exception:  # noqa: BLE001 - the CPU name is for the record only
        pass
    print(f"# {args.requests} RAG requests (embed + chat) per mode; {cpu}, {os.cpu_count()} "
          f"CPUs, {platform.release()}")
    print(f"{'mode':<18} {'RSS first':>10} {'RSS last':>10} {'peak':>10} {'slope':>14} "
          f"{'shrinks':>8} {'time':>8}")
    results = []
    for mode in args.modes.split(","):
        cmd = [sys.executable, __file__, "--mode", mode, "--chat", args.chat, "--embed",
               args.embed, "--requests", str(args.requests), "--sample", str(args.sample),
               "--max-words", str(args.max_words), "--max-new-tokens", str(args.max_new_tokens),
               "--seed", str(args.seed)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{mode}: failed\n{p.stderr[-2000:]}", file=sys.stderr)
            return 1
        r = json.loads(p.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{mode:<18} {r['rss_first_mib']:>7.1f} MiB {r['rss_last_mib']:>6.1f} MiB "
              f"{r['rss_peak_mib']:>6.1f} MiB {r['slope_bytes_per_request'] / KiB:>+8.2f} KiB/req "
              f"{r['num_shrinks']:>8} {r['seconds']:>6.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
