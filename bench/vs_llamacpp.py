#!/usr/bin/python3
"""ebb against llama.cpp on the same weights (issue 15 item 4; docs/benchmarks.md).

Generates (or reuses) one synthesized model as an ebb int4 folder and its Q4_0 GGUF from the same
synth run (tools/synth_model.py --gguf), measures the machine's read bandwidth (membw), warms the
page cache, then runs --pairs alternated pairs (each run waits, up to --quiet-wait seconds, for a
second in which the CPUs are --quiet idle: on a shared 2-core machine another build turns both
engines' spinning thread barriers into time-slice waits) of one-process generations (ebb_probe,
llamacpp_probe; the order flips every other pair) and prints a markdown table of medians and
ebb / llama.cpp ratios, the greedy tokens' agreement, and (--json) every run.

  make bench-llamacpp       # scripts/bench_bootstrap + the probes in build/release/bench/llamacpp
  /usr/bin/python3 bench/vs_llamacpp.py --family llama --preset small --vocab 32000 \\
      --prompt-tokens 512 --gen-tokens 64 --pairs 3 --json small.json
  /usr/bin/python3 bench/vs_llamacpp.py ... --block-size 32   # ebb's int4 at block 32 (default 128)
  /usr/bin/python3 bench/vs_llamacpp.py --check   # the same-weights test (exit 77: deps absent)

Figures (per engine, medians over the pairs):
  prefill tok/s       prompt tokens / the prompt's forward pass (in-process)
  decode tok/s        (gen - 1) / first token -> last token (in-process)
  start -> first token  process spawn -> the probe's "first_token" line (outside; includes the
                      dynamic loader, the model load, context creation and the prefill)
  peak RSS            VmHWM at the end; anon / file RSS after the model load
  decode % roofline   decode tok/s x bytes of weights read per token / read bandwidth, with the
                      bytes read per token = every matmul weight (lm_head included) + the norms +
                      one embedding row: ebb int4 16 B + 4 B per block of codes and fp32 scales
                      per 32 weights (block 32: 20 B; 128: 17 B), Q4_0 18 B.

Debian's python3 only (numpy and onnx through tools/synth_model.py).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gguf  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE


def probes(build_dir):
    d = os.path.join(build_dir, "bench", "llamacpp")
    paths = {n: os.path.join(d, n) for n in ("ebb_probe", "llamacpp_probe", "membw")}
    missing = [p for p in paths.values() if not os.access(p, os.X_OK)]
    return paths, missing


def synth_version():
    with open(os.path.join(ROOT, "tools", "synth_model.py"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("SCRIPT_VERSION = "):
                return line.split('"')[1]
    return "?"


def synth(out_dir, family, preset, vocab, seed, precision="int4", block_size=None):
    """Makes out_dir/ebb (folder) and out_dir/model.gguf from one synth run, unless both exist
    from the same arguments (and synth_model.py's SCRIPT_VERSION). block_size: the int4
    MatMulNBits block (synth_model.py --block-size; None: its default, 128); each Q4_0 32-block
    of the GGUF takes its block's scale, so both engines still multiply by the same values.
    Returns (folder, gguf path)."""
    folder, gg = os.path.join(out_dir, "ebb"), os.path.join(out_dir, "model.gguf")
    args = ["--family", family, "--preset", preset, "--precision", precision, "--seed", str(seed)]
    if vocab:
        args += ["--vocab", str(vocab)]
    if block_size:
        args += ["--block-size", str(block_size)]
    stamp = os.path.join(out_dir, "synth_args.json")
    if os.path.exists(gg) and os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == args + ["SCRIPT_VERSION", synth_version()]:
                return folder, gg
    os.makedirs(out_dir, exist_ok=True)
    t = time.monotonic()
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "synth_model.py"), *args, "--out", folder,
                    "--gguf", gg], check=True, stdout=subprocess.DEVNULL)
    print(f"synthesized {family} {preset} ({' '.join(args)}) in {time.monotonic() - t:.0f} s", file=sys.stderr)
    with open(stamp, "w") as f:
        json.dump(args + ["SCRIPT_VERSION", synth_version()], f)
    return folder, gg


def warm(paths):
    """Reads the files once so that both engines start from a warm page cache."""
    for p in paths:
        with open(p, "rb") as f:
            while f.read(16 << 20):
                pass


def cpu_idle(interval=1.0):
    """Fraction of all CPUs idle over `interval` seconds (/proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)  # idle + iowait, total
    i0, t0 = sample()
    time.sleep(interval)
    i1, t1 = sample()
    return (i1 - i0) / max(1, t1 - t0)


def wait_quiet(threshold, max_wait):
    """Waits until the CPUs were >= threshold idle for one second, at most max_wait seconds: both
    engines spin their threads at barriers, so a busy machine (another build) distorts a run by
    far more than its share (llama.cpp's decode most of all). Returns the last idle fraction."""
    deadline = time.monotonic() + max_wait
    idle = cpu_idle()
    while idle < threshold and time.monotonic() < deadline:
        idle = cpu_idle()
    return idle


def run_probe(exe, model, threads, prompt, gen):
    """One process: returns its JSON plus start_to_first_token_s measured from outside."""
    cmd = [exe, "--model", model, "--threads", str(threads), "--prompt-tokens", str(prompt), "--gen-tokens", str(gen)]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t_first, last = None, None
    for line in p.stdout:
        if line.startswith("first_token ") and t_first is None:
            t_first = time.monotonic()
        elif line.startswith("{"):
            last = line
    err = p.stderr.read()
    if p.wait() != 0 or last is None:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{err}")
    r = json.loads(last)
    r["start_to_first_token_s"] = t_first - t0
    return r


def leading_agreement(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def weight_bytes_per_token(model_dir, gguf_path):
    """Bytes of weights each engine reads per decoded token (see the module doc)."""
    meta, infos = gguf.read_layout(gguf_path)
    H = meta["llama.embedding_length"]
    llama = sum(t["nbytes"] for t in infos if t["name"] != "token_embd.weight") + H * 4
    import onnx  # Debian's python3-onnx; only the tensor table is read
    m = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
    ebb = H * 4
    for t in m.graph.initializer:
        if t.name == "model.embed_tokens.weight" or t.name in ("cos_cache", "sin_cache"):
            continue
        n = 1
        for d in t.dims:
            n *= d
        ebb += n * {onnx.TensorProto.FLOAT: 4, onnx.TensorProto.UINT8: 1}.get(t.data_type, 8)
    return ebb, llama


def measure_bandwidth(membw, threads):
    out = subprocess.run([membw, "--threads", str(threads), "--mib", "1024", "--repeats", "5"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["read_gb_s"] * 1e9


ROWS = [  # (label, JSON key, format)
    ("prefill tok/s", "prefill_tok_s", "{:.1f}"),
    ("decode tok/s", "decode_tok_s", "{:.2f}"),
    ("process start -> first token (s)", "start_to_first_token_s", "{:.3f}"),
    ("model load (s)", "load_s", "{:.3f}"),
    ("peak RSS (MiB)", "peak_rss_mib", "{:.1f}"),
    ("anon RSS after load (MiB)", "rss_anon_after_load_mib", "{:.1f}"),
    ("file RSS after load (MiB)", "rss_file_after_load_mib", "{:.1f}"),
    ("decode % of read roofline", "roofline_pct", "{:.1f}"),
]


def table(med):
    lines = ["| | llama.cpp | ebb | ebb / llama.cpp |", "|---|---:|---:|---:|"]
    for label, key, fmt in ROWS:
        a, b = med["llama.cpp"][key], med["ebb"][key]
        ratio = f"{b / a:.2f}" if a else "-"
        lines.append(f"| {label} | {fmt.format(a)} | {fmt.format(b)} | {ratio} |")
    return "\n".join(lines)


def bench(a):
    paths, missing = probes(a.build_dir)
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make bench-llamacpp` first")
    if a.model_dir:
        folder, gg = a.model_dir, a.gguf
        if not gg:
            raise SystemExit("--model-dir needs --gguf (the GGUF written from the same synth run)")
    else:
        name = f"{a.family}-{a.preset}-int4" + (f"-b{a.block_size}" if a.block_size else "") + \
            (f"-v{a.vocab}" if a.vocab else "") + f"-s{a.seed}"
        folder, gg = synth(os.path.join(a.models, name), a.family, a.preset, a.vocab, a.seed,
                           block_size=a.block_size)
    wait_quiet(a.quiet, a.quiet_wait)
    bw = measure_bandwidth(paths["membw"], a.threads)
    ebb_bytes, llama_bytes = weight_bytes_per_token(folder, gg)
    print(f"read bandwidth {bw / 1e9:.2f} GB/s ({a.threads} threads); weights read per token: ebb "
          f"{ebb_bytes / 2**20:.1f} MiB, llama.cpp {llama_bytes / 2**20:.1f} MiB", file=sys.stderr)
    warm([os.path.join(folder, f) for f in os.listdir(folder)] + [gg])
    runs = []
    for i in range(a.pairs):
        order = ["ebb", "llama.cpp"] if i % 2 == 0 else ["llama.cpp", "ebb"]
        for eng in order:
            exe, model = (paths["ebb_probe"], folder) if eng == "ebb" else (paths["llamacpp_probe"], gg)
            idle = wait_quiet(a.quiet, a.quiet_wait)
            load_before = os.getloadavg()[0]
            r = run_probe(exe, model, a.threads, a.prompt_tokens, a.gen_tokens)
            r["pair"] = i
            r["cpu_idle_before"] = idle  # other work on the machine skews a run
            r["loadavg_1min_before"] = load_before
            r["roofline_pct"] = 100.0 * r["decode_tok_s"] * (ebb_bytes if eng == "ebb" else llama_bytes) / bw
            runs.append(r)
            if a.json:  # after every run, so that an interrupted benchmark keeps what it measured
                with open(a.json, "w") as f:
                    json.dump({"partial": True, "runs": runs}, f, indent=1)
            print(f"pair {i} {eng}: prefill {r['prefill_tok_s']:.1f} tok/s, decode {r['decode_tok_s']:.2f} tok/s, "
                  f"start->first {r['start_to_first_token_s']:.3f} s, peak {r['peak_rss_mib']:.0f} MiB, "
                  f"CPUs {100 * idle:.0f} % idle before", file=sys.stderr)
    med = {eng: {key: statistics.median(r[key] for r in runs if r["engine"] == eng) for _, key, _ in ROWS}
           for eng in ("ebb", "llama.cpp")}
    agree = [leading_agreement(x["tokens"], y["tokens"])
             for x in runs if x["engine"] == "ebb" for y in runs if y["engine"] == "llama.cpp"]
    block = json.load(open(os.path.join(folder, "synth_info.json"))).get("int4_block_size", 32) \
        if os.path.exists(os.path.join(folder, "synth_info.json")) else None
    print(f"\n{os.path.basename(os.path.normpath(folder))}: int4 block {block}, prompt {a.prompt_tokens}, "
          f"gen {a.gen_tokens}, "
          f"{a.threads} threads, medians of {a.pairs} alternated pairs; read bandwidth {bw / 1e9:.1f} GB/s; "
          f"CPUs {100 * min(r['cpu_idle_before'] for r in runs):.0f}-"
          f"{100 * max(r['cpu_idle_before'] for r in runs):.0f} % idle in the second before each run\n")
    print(table(med))
    print(f"\ngreedy tokens: the first {min(agree)} of {a.gen_tokens} agree (worst pair of runs)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model_dir": folder, "gguf": gg, "int4_block_size": block, "threads": a.threads, "prompt_tokens": a.prompt_tokens,
                       "gen_tokens": a.gen_tokens, "pairs": a.pairs, "read_bandwidth_bytes_s": bw,
                       "weight_bytes_per_token": {"ebb": ebb_bytes, "llama.cpp": llama_bytes},
                       "medians": med, "leading_tokens_agree": min(agree), "runs": runs}, f, indent=1)


# The same-weights test: (family, preset, extra synth args, prompt, gen, tokens that must agree).
# Both engines multiply by identical int4 values, so greedy tokens agree until a near-tie
# between two logits flips under the engines' different float rounding (activation int8
# quantization, F16 KV cache in llama.cpp); the synth models have margins of a few units, so
# on these shapes all of them agree.
CHECKS = [("llama", "tiny", [], 64, 32, 32), ("phi3", "tiny", [], 64, 32, 32),
          ("llama", "small", [], 128, 16, 16)]


def check(a):
    paths, missing = probes(a.build_dir)
    if missing:
        print(f"SKIP: {', '.join(os.path.basename(p) for p in missing)} not built in "
              f"{os.path.dirname(missing[0])}; run `make bench-llamacpp` (it needs the npm registry once, "
              f"for scripts/bench_bootstrap)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="vs_llamacpp_check.")
    failed = 0
    try:
        for family, preset, _, prompt, gen, need in CHECKS:
            folder, gg = synth(os.path.join(tmp, f"{family}-{preset}"), family, preset, None, 0,
                               block_size=a.block_size)
            e = run_probe(paths["ebb_probe"], folder, 2, prompt, gen)
            l = run_probe(paths["llamacpp_probe"], gg, 2, prompt, gen)
            n = leading_agreement(e["tokens"], l["tokens"])
            ok = n >= need
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {family} {preset} int4 (block {a.block_size or 'default'})/Q4_0: {n} of {gen} greedy tokens agree "
                  f"(need {need})\n     ebb       {e['tokens']}\n     llama.cpp {l['tokens']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--check", action="store_true", help="the same-weights agreement test, then exit")
    ap.add_argument("--family", default="llama", choices=("llama", "phi3"))
    ap.add_argument("--preset", default="small")
    ap.add_argument("--vocab", type=int, help="override the preset's vocabulary (the issue's small: 32000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block-size", type=int, choices=(32, 64, 128, 256),
                    help="ebb's int4 MatMulNBits block (synth_model.py --block-size; default: its 128); "
                    "run once with 32 and once with 128 to report both")
    ap.add_argument("--models", default=os.path.join(ROOT, "models", "vs-llamacpp"),
                    help="where generated models are kept (reused when the arguments match)")
    ap.add_argument("--model-dir", help="use this ebb int4 folder instead of generating one (with --gguf)")
    ap.add_argument("--gguf", help="the GGUF written by the same synth run as --model-dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--json", help="write every run and the medians here")
    ap.add_argument("--quiet", type=float, default=0.9,
                    help="before each run, wait until the CPUs were this idle for a second (0: don't wait)")
    ap.add_argument("--quiet-wait", type=float, default=120, help="at most this many seconds per run")
    a = ap.parse_args()
    if a.check:
        sys.exit(check(a))
    bench(a)


if __name__ == "__main__":
    main()
