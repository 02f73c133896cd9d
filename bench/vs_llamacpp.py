#!/usr/bin/python3
"""ebb against llama.cpp on the same weights (issue 15 item 4, issue 28 item 4; docs/benchmarks.md).

Generates (or reuses) one synthesized model as an ebb int4 folder and its Q4_0 GGUF from the same
synth run (tools/synth_model.py --gguf), measures the machine's read bandwidth (membw, built with
-O3 -march=native) before and after, warms the page cache, then runs --pairs rounds ("pairs") of
one-process generations: ebb_probe and every llama.cpp variant (llamacpp_probe with each of
--llama-backends x --llama-fa x --llama-mmap), the order rotated by one every pair. Each run waits,
up to --quiet-wait seconds, for a second in which the CPUs are --quiet idle, and the CPU time other
processes used during the run is measured (/proc/stat busy time minus the probe's and this
script's own): a pair in which any run's share exceeds --max-other-cpu is dropped and rerun (at
most --max-reruns times). On a shared 2-core machine another build turns both engines' spinning
thread barriers into time-slice waits, which distorts a run by far more than its share.

It prints the CPU (lscpu's model name, the ISA flags that matter), the kernel path of each engine,
the bandwidth, the dropped pairs, and one markdown table per llama.cpp backend: for every metric
llama.cpp's best median over its flash-attention (and mmap) settings, naming the setting, against
ebb's median, and their ratio; memory rows once per mmap setting. Then every variant's medians, the
greedy tokens' agreement, and (--json) everything, kept and dropped runs apart.

  make bench-llamacpp       # scripts/bench_bootstrap + the probes in build/release/bench/llamacpp
  /usr/bin/python3 bench/vs_llamacpp.py --family llama --preset small --vocab 32000 \\
      --prompt-tokens 512 --gen-tokens 64 --pairs 3 --llama-mmap on,off --json small.json
  /usr/bin/python3 bench/vs_llamacpp.py ... --block-size 32   # ebb's int4 at block 32 (default 128)
  /usr/bin/python3 bench/vs_llamacpp.py ... --llama-backends native --llama-fa auto --llama-mmap auto  # as before
  /usr/bin/python3 bench/vs_llamacpp.py --check   # the same-weights test (exit 77: deps absent)
  /usr/bin/python3 bench/vs_llamacpp.py --family llama --preset small --vocab 32000 \\
      --streams 1,2,4,8 --prompt-tokens 128 --gen-tokens 64   # N concurrent sequences per engine
      # (docs/benchmarks.md "Concurrent streams against llama.cpp"; figures in stream_figures())

Figures (per variant, medians over the kept pairs):
  prefill tok/s       prompt tokens / the prompt's forward pass (in-process)
  decode tok/s, cold  (gen - 1) / first token -> last token (in-process): every decode step
  decode tok/s, warm  (gen - 1 - W) / token W -> last token, W = --warm-steps (default 8): the
                      first steps' one-off costs (graph and buffer set-up, first touches) left out
  start -> first token  process spawn -> the probe's "first_token" line (outside; includes the
                      dynamic loader, the model load, context creation, the --warmup generation
                      if any, and the prefill)
  peak RSS            VmHWM at the end; anon / file RSS after the model load
  decode % roofline   decode tok/s x bytes of weights read per token / read bandwidth (the higher
                      of membw's before and after figures, so that a slow membw pass cannot
                      inflate it), with the bytes read per token = every matmul weight (lm_head
                      included) + the norms + one embedding row: ebb int4 16 B + 4 B per block of
                      codes and fp32 scales per 32 weights (block 32: 20 B; 128: 17 B), Q4_0 18 B.

Debian's python3 only (numpy and onnx through tools/synth_model.py).
"""

import argparse
import json
import os
import resource
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
CLK_TCK = os.sysconf("SC_CLK_TCK")  # /proc/stat's unit: 1 / CLK_TCK seconds
NCPU = os.cpu_count() or 1  # /proc/stat's first line sums all of them
# The ISA flags (lscpu / /proc/cpuinfo names) that decide which kernels the engines can use.
ISA_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni",
             "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")


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
    """Reads the files once so that both engines start from a warm page cache. A folder is walked
    (recursively, files only: a model folder may hold a cache folder)."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += [os.path.join(d, f) for d, _, names in os.walk(p) for f in sorted(names)]
        else:
            files.append(p)
    for p in files:
        if not os.path.isfile(p):  # a dangling link, a socket, ...
            continue
        with open(p, "rb") as f:
            while f.read(16 << 20):
                pass


def stat_cpu():
    """/proc/stat's all-CPU line, in seconds: (busy, idle + iowait). busy = user + nice + system +
    irq + softirq + steal (guest time is already inside user and nice; steal counts as busy, since
    a hypervisor's other guests take the time from the run)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / CLK_TCK, (v[3] + v[4]) / CLK_TCK


def cpu_idle(interval=1.0):
    """Fraction of all CPUs idle over `interval` seconds (/proc/stat)."""
    b0, i0 = stat_cpu()
    time.sleep(interval)
    b1, i1 = stat_cpu()
    return (i1 - i0) / max(1e-9, (b1 - b0) + (i1 - i0))


def wait_quiet(threshold, max_wait):
    """Waits until the CPUs were >= threshold idle for one second, at most max_wait seconds: both
    engines spin their threads at barriers, so a busy machine (another build) distorts a run by
    far more than its share (llama.cpp's decode most of all). Returns the last idle fraction."""
    if threshold <= 0:
        return cpu_idle(0.1)
    deadline = time.monotonic() + max_wait
    idle = cpu_idle()
    while idle < threshold and time.monotonic() < deadline:
        idle = cpu_idle()
    return idle


def run_probe(exe, model, threads, prompt, gen, extra=(), first_token=True):
    """One process: returns its JSON plus, measured from outside, start_to_first_token_s, wall_s
    (spawn -> reaped), probe_cpu_s (its user + system time, os.wait4) and the other processes' CPU
    time during the run: other_cpu_s = /proc/stat busy seconds (all CPUs) across the run - the
    probe's - this script's own; other_cpu_frac = other_cpu_s / (wall_s x CPUs). /proc/stat counts
    in ticks, so other_cpu_s is only good to other_cpu_resolution_s (2 ticks per CPU)."""
    cmd = [exe, "--model", model, "--threads", str(threads), "--prompt-tokens", str(prompt),
           "--gen-tokens", str(gen), *extra]
    with tempfile.TemporaryFile(mode="w+") as err:  # a file, not a pipe: it can never fill up
        self0 = resource.getrusage(resource.RUSAGE_SELF)
        busy0, _ = stat_cpu()
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        t_first, last = None, None
        for line in p.stdout:
            if line.startswith("first_token ") and t_first is None:
                t_first = time.monotonic()
            elif line.startswith("{"):
                last = line
        _, status, ru = os.wait4(p.pid, 0)
        t1 = time.monotonic()
        busy1, _ = stat_cpu()
        self1 = resource.getrusage(resource.RUSAGE_SELF)
        p.returncode = os.waitstatus_to_exitcode(status)
        p.stdout.close()
        err.seek(0)
        err_text = err.read()
    if p.returncode != 0 or last is None or (first_token and t_first is None):
        raise SystemExit(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{err_text}")
    r = json.loads(last)
    wall = t1 - t0
    probe_cpu = ru.ru_utime + ru.ru_stime
    self_cpu = (self1.ru_utime - self0.ru_utime) + (self1.ru_stime - self0.ru_stime)
    other = max(0.0, (busy1 - busy0) - probe_cpu - self_cpu)
    r.update(start_to_first_token_s=(t_first - t0) if t_first else None, wall_s=wall, probe_cpu_s=probe_cpu,
             runner_cpu_s=self_cpu, other_cpu_s=other, other_cpu_frac=other / (wall * NCPU),
             other_cpu_resolution_s=2.0 * NCPU / CLK_TCK, command=cmd)
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
    """membw's JSON (read_gb_s, build_flags, vector_isa, ...)."""
    out = subprocess.run([membw, "--threads", str(threads), "--mib", "1024", "--repeats", "5"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def cpu_info():
    """{"model": lscpu's "Model name", "flags": the ISA_FLAGS present} (/proc/cpuinfo if lscpu
    fails)."""
    model, flags = "?", set()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True,
                             env={**os.environ, "LC_ALL": "C"}).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name" and model == "?":
                model = v.strip()
            elif k.strip() == "Flags":
                flags = set(v.split())
    except (OSError, subprocess.CalledProcessError):
        pass
    if model == "?" or not flags:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() == "model name" and model == "?":
                    model = v.strip()
                elif k.strip() == "flags" and not flags:
                    flags = set(v.split())
    return {"model": model, "flags": [f for f in ISA_FLAGS if f in flags]}


# (JSON key, label, format, better: max or min). SPEED rows compare llama.cpp's best variant of
# a backend (over flash attention and mmap); MEMORY rows its best over flash attention, once per
# mmap setting.
SPEED = [
    ("prefill_tok_s", "prefill tok/s", "{:.1f}", max),
    ("decode_tok_s", "decode tok/s, cold (all gen - 1 steps)", "{:.2f}", max),
    ("decode_warm_tok_s", "decode tok/s, warm (after the first {W} steps)", "{:.2f}", max),
    ("start_to_first_token_s", "process start -> first token (s)", "{:.3f}", min),
    ("load_s", "model load (s)", "{:.3f}", min),
    ("roofline_pct", "decode % of read roofline, cold", "{:.1f}", max),
    ("roofline_warm_pct", "decode % of read roofline, warm", "{:.1f}", max),
]
MEMORY = [
    ("peak_rss_mib", "peak RSS (MiB)", "{:.1f}", min),
    ("rss_anon_after_load_mib", "anon RSS after load (MiB)", "{:.1f}", min),
    ("rss_file_after_load_mib", "file RSS after load (MiB)", "{:.1f}", min),
]
KEYS = [k for k, *_ in SPEED + MEMORY]


def variants(a):
    """ebb, then llama.cpp for every backend x flash-attention x mmap setting."""
    vs = [{"name": "ebb", "engine": "ebb"}]
    for b in a.llama_backends:
        for fa in a.llama_fa:
            for mm in a.llama_mmap:
                vs.append({"name": f"llama.cpp {b} fa={fa} mmap={mm}", "engine": "llama.cpp",
                           "backend": b, "flash_attn": fa, "mmap": mm})
    return vs


def run_variant(v, paths, folder, gg, a):
    extra = ["--warm-steps", str(a.warm_steps)] + (["--warmup"] if a.warmup else [])
    if v["engine"] == "ebb":
        return run_probe(paths["ebb_probe"], folder, a.threads, a.prompt_tokens, a.gen_tokens,
                         list(extra) + ebb_option_args(a))
    extra += ["--cpu-backend", v["backend"], "--flash-attn", v["flash_attn"], "--mmap", v["mmap"]]
    return run_probe(paths["llamacpp_probe"], gg, a.threads, a.prompt_tokens, a.gen_tokens, extra)


def add_roofline(runs, bw, ebb_bytes, llama_bytes):
    for r in runs:
        b = ebb_bytes if r["engine"] == "ebb" else llama_bytes
        r["roofline_pct"] = 100.0 * r["decode_tok_s"] * b / bw
        r["roofline_warm_pct"] = 100.0 * r["decode_warm_tok_s"] * b / bw


def setting(v, with_mmap):
    return f"fa {v['flash_attn']}" + (f", mmap {v['mmap']}" if with_mmap else "")


def best_of(vs, med, key, better):
    """(value, variant) of the variant in vs whose median `key` is the best."""
    v = better(vs, key=lambda x: med[x["name"]][key])
    return med[v["name"]][key], v


def backend_table(backend, vs, med, a):
    """The markdown table of one llama.cpp backend against ebb, and its JSON."""
    mine = [v for v in vs if v["engine"] == "llama.cpp" and v["backend"] == backend]
    many_mmap = len(a.llama_mmap) > 1
    e = med["ebb"]
    lines = ["| | llama.cpp | llama.cpp setting | ebb | ebb / llama.cpp |", "|---|---:|---|---:|---:|"]
    out = {}

    def row(label, key, fmt, better, cand, name):
        val, v = best_of(cand, med, key, better)
        ratio = f"{e[key] / val:.2f}" if val else "-"
        s = setting(v, many_mmap and cand is mine)
        lines.append(f"| {label} | {fmt.format(val)} | {s} | {fmt.format(e[key])} | {ratio} |")
        out[name] = {"llama.cpp": val, "variant": v["name"], "setting": s, "ebb": e[key],
                     "ebb_over_llama": e[key] / val if val else None}

    for key, label, fmt, better in SPEED:
        row(label.format(W=a.warm_steps), key, fmt, better, mine, key)
    for key, label, fmt, better in MEMORY:
        for mm in a.llama_mmap:
            cand = [v for v in mine if v["mmap"] == mm]
            row(f"{label}, llama.cpp mmap {mm}", key, fmt, better, cand, f"{key} mmap={mm}")
    return "\n".join(lines), out


def variants_table(vs, med, a):
    """Every variant's medians, one column each."""
    lines = ["| | " + " | ".join(v["name"] for v in vs) + " |", "|---|" + "---:|" * len(vs)]
    for key, label, fmt, _ in SPEED + MEMORY:
        lines.append(f"| {label.format(W=a.warm_steps)} | " +
                     " | ".join(fmt.format(med[v["name"]][key]) for v in vs) + " |")
    return "\n".join(lines)


def kernel_info(vs, runs, cpu):
    """Which kernels each engine ran, from the kept runs' JSON and the CPU flags."""
    ebb_run = next((r for r in runs if r["engine"] == "ebb"), {})
    # ebb::CpuKernels(): derived from the CPU flags in MLAS's own dispatch order (MLAS does not
    # report its choice; src/ort/cpu_kernels.cpp, tested in tests/unit/cpu_kernels_test.cpp).
    # model_kernels: the model's own line (ModelInfo::kernels), which names a custom op's library.
    info = {"ebb": {"ort_version": ebb_run.get("ort_version", "?"), "cpu_kernels": ebb_run.get("cpu_kernels", "?"),
                    "model_kernels": ebb_run.get("model_kernels", "?")},
            "llama.cpp": {}}
    for v in vs:
        r = next((r for r in runs if r["variant"] == v["name"]), None)
        if v["engine"] != "llama.cpp" or r is None:
            continue
        b = info["llama.cpp"].setdefault(v["backend"], {
            "library": r.get("cpu_backend_library") or r.get("log_backend_path", "?"),
            "features": next((x["features"] for x in r.get("backends", []) if x["name"] == "CPU"), {}),
            "variants": {}})
        b["variants"][v["name"]] = {k: r.get(k) for k in ("flash_attn_resolved", "load_mode_resolved",
                                                          "model_buffers_mib", "weights_repacked")}
    return info


def disturbed(r, limit):
    """Whether other processes took more than `limit` of the CPUs during run r (beyond what
    /proc/stat's tick can resolve)."""
    return r["other_cpu_frac"] > limit and r["other_cpu_s"] > r["other_cpu_resolution_s"]


def model_paths(a):
    """(ebb folder, GGUF): --model-dir and --gguf, or the synthesized model of --family, --preset,
    --vocab, --block-size and --seed (made once, then reused)."""
    if a.model_dir:
        if not a.gguf:
            raise SystemExit("--model-dir needs --gguf (the GGUF written from the same synth run)")
        return a.model_dir, a.gguf
    name = f"{a.family}-{a.preset}-int4" + (f"-b{a.block_size}" if a.block_size else "") + \
        (f"-v{a.vocab}" if a.vocab else "") + f"-s{a.seed}"
    return synth(os.path.join(a.models, name), a.family, a.preset, a.vocab, a.seed, block_size=a.block_size)


def bench(a):
    paths, missing = probes(a.build_dir)
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make bench-llamacpp` first")
    if a.gen_tokens < a.warm_steps + 2:
        raise SystemExit(f"--gen-tokens {a.gen_tokens} leaves no warm decode step after --warm-steps "
                         f"{a.warm_steps}: it must be >= {a.warm_steps + 2}")
    folder, gg = model_paths(a)
    cpu = cpu_info()
    vs = variants(a)
    wait_quiet(a.quiet, a.quiet_wait)
    membw = {"before": measure_bandwidth(paths["membw"], a.threads)}
    if "-march=native" not in membw["before"].get("build_flags", ""):
        print(f"warning: membw was built with '{membw['before'].get('build_flags', '?')}', without "
              f"-march=native: its bandwidth is low and every % of roofline too high", file=sys.stderr)
    ebb_bytes, llama_bytes = weight_bytes_per_token(folder, gg)
    print(f"CPU {cpu['model']} ({' '.join(cpu['flags'])}); read bandwidth {membw['before']['read_gb_s']:.2f} "
          f"GB/s ({a.threads} threads); weights read per token: ebb {ebb_bytes / 2**20:.1f} MiB, llama.cpp "
          f"{llama_bytes / 2**20:.1f} MiB; {len(vs)} variants per pair", file=sys.stderr)
    warm([folder, gg])
    kept, dropped, gave_up = [], [], []

    def save(final=None):  # after every run, so that an interrupted benchmark keeps what it measured
        if a.json:
            with open(a.json, "w") as f:
                json.dump(final or {"partial": True, "runs": kept, "dropped": dropped}, f, indent=1)

    for i in range(a.pairs):
        k = i % len(vs)
        order = vs[k:] + vs[:k]
        for attempt in range(a.max_reruns + 1):
            runs, bad = [], None
            for pos, v in enumerate(order):
                idle = wait_quiet(a.quiet, a.quiet_wait)
                load_before = os.getloadavg()[0]
                r = run_variant(v, paths, folder, gg, a)
                r.update(variant=v["name"], pair=i, attempt=attempt, position=pos, cpu_idle_before=idle,
                         loadavg_1min_before=load_before)
                runs.append(r)
                print(f"pair {i}.{attempt} {v['name']}: prefill {r['prefill_tok_s']:.1f} tok/s, decode "
                      f"{r['decode_tok_s']:.2f} (warm {r['decode_warm_tok_s']:.2f}) tok/s, start->first "
                      f"{r['start_to_first_token_s']:.3f} s, peak {r['peak_rss_mib']:.0f} MiB, CPUs "
                      f"{100 * idle:.0f} % idle before, others {100 * r['other_cpu_frac']:.1f} % during",
                      file=sys.stderr)
                if disturbed(r, a.max_other_cpu):
                    bad = r
                    break  # the pair is dropped: the remaining runs would be thrown away
            if bad is None:
                kept += runs
                save()
                break
            why = (f"{bad['variant']}: other processes used {100 * bad['other_cpu_frac']:.1f} % of the "
                   f"{NCPU} CPUs ({bad['other_cpu_s']:.2f} CPU s in {bad['wall_s']:.2f} s) > "
                   f"{100 * a.max_other_cpu:.0f} %")
            last = attempt == a.max_reruns
            print(f"pair {i}.{attempt} dropped ({why}); {'giving up on this pair' if last else 'rerunning it'}",
                  file=sys.stderr)
            dropped.append({"pair": i, "attempt": attempt, "reason": why, "runs": runs})
            if last:
                gave_up.append(i)
            save()
    if not kept:
        save({"partial": True, "runs": [], "dropped": dropped})
        raise SystemExit("every pair was disturbed: no runs kept (see --max-other-cpu)")
    wait_quiet(a.quiet, a.quiet_wait)
    membw["after"] = measure_bandwidth(paths["membw"], a.threads)
    bw = 1e9 * max(membw["before"]["read_gb_s"], membw["after"]["read_gb_s"])
    add_roofline(kept, bw, ebb_bytes, llama_bytes)
    for d in dropped:
        add_roofline(d["runs"], bw, ebb_bytes, llama_bytes)

    med = {v["name"]: {key: statistics.median(r[key] for r in kept if r["variant"] == v["name"]) for key in KEYS}
           for v in vs}
    ebb_runs = [r for r in kept if r["engine"] == "ebb"]
    agree = {v["name"]: min(leading_agreement(x["tokens"], y["tokens"]) for x in ebb_runs
                            for y in kept if y["variant"] == v["name"]) for v in vs[1:]}
    kernels = kernel_info(vs, kept, cpu)
    block = json.load(open(os.path.join(folder, "synth_info.json"))).get("int4_block_size", 32) \
        if os.path.exists(os.path.join(folder, "synth_info.json")) else None
    pairs_kept = a.pairs - len(gave_up)
    print(f"\n{os.path.basename(os.path.normpath(folder))}: int4 block {block}, prompt {a.prompt_tokens}, "
          f"gen {a.gen_tokens}, {a.threads} threads, warm-up {'on' if a.warmup else 'off'}; medians of "
          f"{pairs_kept} kept pairs (of {a.pairs}), each of {len(vs)} runs in rotated order")
    print(f"CPU: {cpu['model']}; ISA flags: {' '.join(cpu['flags']) or 'none of ' + ' '.join(ISA_FLAGS)}")
    print(f"ebb kernels: ONNX Runtime {kernels['ebb']['ort_version']}, {kernels['ebb']['model_kernels']} "
          f"(from the graph's operators and the CPU flags, in MLAS's dispatch order)")
    for b, info in kernels["llama.cpp"].items():
        feats = " ".join(k for k, val in info["features"].items() if val == "1") or "?"
        bufs = "; ".join(
            f"load mode {x['load_mode_resolved']}, fa {x['flash_attn_resolved']}: " +
            ", ".join(f"{n} {m:.1f} MiB" for n, m in (x["model_buffers_mib"] or {}).items()) +
            (" (weights repacked)" if x["weights_repacked"] else "")
            for x in info["variants"].values())
        print(f"llama.cpp {b} kernels: {os.path.basename(info['library'])} ({feats}); model buffers: {bufs}")
    print(f"read bandwidth: {membw['before']['read_gb_s']:.1f} GB/s before, {membw['after']['read_gb_s']:.1f} "
          f"GB/s after (membw {membw['before'].get('build_flags', '?')}, {membw['before'].get('vector_isa', '?')}); "
          f"the roofline uses {bw / 1e9:.1f}")
    print(f"disturbed: {len(dropped)} pair attempt(s) dropped (another process > {100 * a.max_other_cpu:.0f} % "
          f"of the CPUs during a run), {len(gave_up)} pair(s) given up after {a.max_reruns} reruns; kept runs: "
          f"others {100 * max(r['other_cpu_frac'] for r in kept):.1f} % of the CPUs at most, CPUs "
          f"{100 * min(r['cpu_idle_before'] for r in kept):.0f}-{100 * max(r['cpu_idle_before'] for r in kept):.0f} "
          f"% idle in the second before each run")
    for d in dropped:
        print(f"  dropped pair {d['pair']}.{d['attempt']}: {d['reason']}")
    best = {}
    for b in a.llama_backends:
        text, best[b] = backend_table(b, vs, med, a)
        print(f"\n### llama.cpp {b} ({os.path.basename(kernels['llama.cpp'][b]['library'])}) against ebb\n")
        print(text)
    print("\n### every variant (medians)\n")
    print(variants_table(vs, med, a))
    print()
    for name, n in agree.items():
        print(f"greedy tokens, ebb against {name}: the first {n} of {a.gen_tokens} agree (worst pair of runs)")
    save({"model_dir": folder, "gguf": gg, "int4_block_size": block, "threads": a.threads,
          "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens, "warm_steps": a.warm_steps,
          "warmup": a.warmup, "pairs": a.pairs, "pairs_kept": pairs_kept, "pairs_given_up": gave_up,
          "max_other_cpu": a.max_other_cpu, "max_reruns": a.max_reruns, "cpu": cpu, "ncpu": NCPU,
          "kernels": kernels, "membw": membw, "read_bandwidth_bytes_s": bw,
          "weight_bytes_per_token": {"ebb": ebb_bytes, "llama.cpp": llama_bytes}, "variants": vs,
          "medians": med, "best": best, "leading_tokens_agree": agree, "disturbed_attempts": len(dropped),
          "runs": kept, "dropped": dropped})


# The same-weights test: (family, preset, extra synth args, prompt, gen, tokens that must agree).
# Both engines multiply by identical int4 values, so greedy tokens agree until a near-tie
# between two logits flips under the engines' different float rounding (activation int8
# quantization, F16 KV cache in llama.cpp); the synth models have margins of a few units, so
# on these shapes all of them agree. llama.cpp runs with its defaults (native backend, automatic
# flash attention and load mode).
# The check's models use int4 block 32 unless --block-size says otherwise: at block 32 MLAS
# (accuracy_level 4) rounds the activations to int8 per 32 values, as ggml's Q8_0 does, so both
# engines compute the same integer products. At block 128 MLAS rounds them per 128 and ggml still
# per 32; on the small shape that alone flips a near-tie at token 5 on an AVX-512/AMX Xeon
# (2026-12-02: 5 of 16 agree at block 128, 16 of 16 at block 32), which says nothing about the
# weights being the same.
# ebb runs the check on ORT's kernels (cpu_ops=off): at block 32 they compute ggml's integer
# products, which is what the check is for. ebb's own kernels (the default, cpu_ops=auto) are
# checked against ORT's op by op in `make test` (CpuOps.*OpByOp); their agreement with llama.cpp
# is printed too, not required: ebb's attention moves activations by ~1e-7, which can flip one
# int8 activation code in the next matmul and, through it, a near-tie (2026-12-06, small shape:
# token 11 of 16, where ORT's top two log-probabilities are 0.013 apart and ebb's 0.017).
CHECK_BLOCK = 32
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
            block = a.block_size or CHECK_BLOCK
            folder, gg = synth(os.path.join(tmp, f"{family}-{preset}"), family, preset, None, 0,
                               block_size=block)
            e = run_probe(paths["ebb_probe"], folder, 2, prompt, gen, extra=["--option", "cpu_ops=off"])
            d = run_probe(paths["ebb_probe"], folder, 2, prompt, gen)
            l = run_probe(paths["llamacpp_probe"], gg, 2, prompt, gen)
            n = leading_agreement(e["tokens"], l["tokens"])
            ok = n >= need
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {family} {preset} int4 (block {block})/Q4_0: {n} of {gen} greedy tokens agree "
                  f"(need {need}; ebb on ORT's kernels)\n     ebb       {e['tokens']}\n     llama.cpp {l['tokens']}\n"
                  f"     ebb's own kernels (cpu_ops=auto, not required): {leading_agreement(d['tokens'], l['tokens'])} of {gen} agree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


# Concurrent streams (--streams; docs/benchmarks.md "Concurrent streams"): every figure is
# computed here from the probes' per-stream token times, on one clock per run.
STREAM_KEYS = [
    ("agg_decode_tok_s", "aggregate decode tok/s (all streams decoding)", "{:.2f}", max),
    ("agg_tok_s", "aggregate tok/s, end to end (prefill included)", "{:.2f}", max),
    ("tpot_p50_ms", "per-stream time per output token p50 (ms)", "{:.1f}", min),
    ("tpot_p99_ms", "per-stream time per output token p99 (ms)", "{:.1f}", min),
    ("ttft_max_s", "last stream's first token (s)", "{:.3f}", min),
    ("peak_rss_mib", "peak RSS (MiB)", "{:.1f}", min),
]


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return 0.0
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ebb_option_args(a):
    """--ebb-option K=V (repeatable) as ebb_probe's --option arguments: ebb model options for
    every ebb run (not the llama.cpp ones), after the probe's own."""
    return [x for kv in (a.ebb_option or []) for x in ("--option", kv)]


def stream_figures(r):
    """Adds the STREAM_KEYS figures to a --streams run. The aggregate decode rate counts the
    tokens sampled while every stream was decoding (after the last stream's first token and up to
    the first stream's last token) over that window, so that neither engine's prefill
    arrangement (ebb: each stream's own, concurrently; llama.cpp: every prompt in one batch)
    enters it; with no such window (one stream, or streams that never overlap) it is
    sum(tokens - 1) / (last token - first first token)."""
    times = [t for t in r["stream_times_s"] if t]
    firsts, lasts = [t[0] for t in times], [t[-1] for t in times]
    w0, w1 = max(firsts), min(lasts)
    n = sum(1 for t in times for x in t[1:] if w0 < x <= w1)
    if w1 > w0 and n > 0:
        r["agg_decode_tok_s"] = n / (w1 - w0)
    else:
        span = max(lasts) - min(firsts)
        r["agg_decode_tok_s"] = sum(len(t) - 1 for t in times) / span if span > 0 else 0.0
    r["agg_tok_s"] = sum(len(t) for t in times) / max(lasts) if max(lasts) > 0 else 0.0
    gaps = [1000.0 * (b - a) for t in times for a, b in zip(t, t[1:])]
    r["tpot_p50_ms"] = percentile(gaps, 0.5)
    r["tpot_p99_ms"] = percentile(gaps, 0.99)
    r["ttft_max_s"] = w0


def stream_variants(a):
    vs = [{"name": f"ebb {m}", "engine": "ebb", "stream_mode": m} for m in a.ebb_stream_modes]
    for b in a.llama_backends:
        for fa in a.llama_fa:
            for ku in a.llama_kv_unified:
                vs.append({"name": f"llama.cpp {b} fa={fa} kv_unified={ku}", "engine": "llama.cpp",
                           "backend": b, "flash_attn": fa, "kv_unified": ku})
    return vs


def run_stream_variant(v, paths, folder, gg, a, n):
    extra = ["--streams", str(n), "--warm-steps", "0"]
    if v["engine"] == "ebb":
        return run_probe(paths["ebb_probe"], folder, a.threads, a.prompt_tokens, a.gen_tokens,
                         extra + ["--stream-mode", v["stream_mode"]] + ebb_option_args(a), first_token=False)
    extra += ["--cpu-backend", v["backend"], "--flash-attn", v["flash_attn"], "--kv-unified", v["kv_unified"]]
    return run_probe(paths["llamacpp_probe"], gg, a.threads, a.prompt_tokens, a.gen_tokens, extra,
                     first_token=False)


def streams_bench(a):
    """N = each of --streams concurrent sequences, every variant, --pairs rounds in rotated order;
    one table per N, and the scaling of each variant against its own N = 1."""
    paths, missing = probes(a.build_dir)
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run `make bench-llamacpp` first")
    folder, gg = model_paths(a)
    cpu = cpu_info()
    vs = stream_variants(a)
    print(f"CPU {cpu['model']} ({' '.join(cpu['flags'])}); streams {a.streams}; {len(vs)} variants",
          file=sys.stderr)
    warm([folder, gg])
    runs, dropped = [], []
    for n in a.streams:
        for i in range(a.pairs):
            k = i % len(vs)
            for v in vs[k:] + vs[:k]:
                # A run another process disturbed (disturbed(), as for the single-stream pairs) is
                # dropped and run again, at most --max-reruns times; the last attempt is kept.
                for attempt in range(a.max_reruns + 1):
                    idle = wait_quiet(a.quiet, a.quiet_wait)
                    r = run_stream_variant(v, paths, folder, gg, a, n)
                    stream_figures(r)
                    r.update(variant=v["name"], n=n, pair=i, attempt=attempt, cpu_idle_before=idle)
                    print(f"N={n} pair {i}.{attempt} {v['name']}: aggregate decode {r['agg_decode_tok_s']:.2f} "
                          f"tok/s, end to end {r['agg_tok_s']:.2f}, TPOT p50 {r['tpot_p50_ms']:.1f} ms p99 "
                          f"{r['tpot_p99_ms']:.1f} ms, peak {r['peak_rss_mib']:.0f} MiB, others "
                          f"{100 * r['other_cpu_frac']:.1f} % of the CPUs", file=sys.stderr)
                    if not disturbed(r, a.max_other_cpu) or attempt == a.max_reruns:
                        break
                    dropped.append(r)
                runs.append(r)
                if a.json:
                    with open(a.json, "w") as f:
                        json.dump({"partial": True, "runs": runs, "dropped": dropped}, f, indent=1)
    med = {(v["name"], n): {key: statistics.median(r[key] for r in runs if r["variant"] == v["name"] and r["n"] == n)
                            for key, *_ in STREAM_KEYS} for v in vs for n in a.streams}
    ebb_run = next((r for r in runs if r["engine"] == "ebb"), {})
    print(f"\n{os.path.basename(os.path.normpath(folder))}: {a.prompt_tokens}-token prompt and {a.gen_tokens} "
          f"tokens per stream, {a.threads} threads; medians of {a.pairs} rounds")
    print(f"CPU: {cpu['model']}; ISA flags: {' '.join(cpu['flags'])}")
    print(f"ebb kernels: ONNX Runtime {ebb_run.get('ort_version', '?')}, {ebb_run.get('model_kernels', '?')}")
    print(f"disturbed: {len(dropped)} run(s) dropped and rerun (another process > {100 * a.max_other_cpu:.0f} % "
          f"of the CPUs); kept runs: others {100 * max(r['other_cpu_frac'] for r in runs):.1f} % at most, "
          f"{sum(disturbed(r, a.max_other_cpu) for r in runs)} kept although disturbed (reruns exhausted)")
    for n in a.streams:
        print(f"\n### {n} concurrent stream(s)\n")
        print("| | " + " | ".join(v["name"] for v in vs) + " |")
        print("|---|" + "---:|" * len(vs))
        for key, label, fmt, _ in STREAM_KEYS:
            print(f"| {label} | " + " | ".join(fmt.format(med[(v['name'], n)][key]) for v in vs) + " |")
        if a.streams[0] != n:
            base = a.streams[0]
            print(f"| aggregate decode vs N={base} | " + " | ".join(
                f"{med[(v['name'], n)]['agg_decode_tok_s'] / med[(v['name'], base)]['agg_decode_tok_s']:.2f}x"
                if med[(v['name'], base)]['agg_decode_tok_s'] else "-" for v in vs) + " |")
        llama = [v for v in vs if v["engine"] == "llama.cpp"]
        if llama:
            best = max(llama, key=lambda v: med[(v["name"], n)]["agg_decode_tok_s"])
            bl = med[(best["name"], n)]["agg_decode_tok_s"]
            for v in vs:
                if v["engine"] == "ebb" and bl:
                    print(f"\n{v['name']} / llama.cpp's best ({best['name']}), aggregate decode: "
                          f"{med[(v['name'], n)]['agg_decode_tok_s'] / bl:.2f}")
    # Batched rows against plain generators (each its own batch-1 Run, as a solo generation).
    modes = {v["stream_mode"] for v in vs if v["engine"] == "ebb"}
    if {"batched", "threads"} <= modes:
        for n in a.streams:
            b = [r for r in runs if r["variant"] == "ebb batched" and r["n"] == n]
            t = [r for r in runs if r["variant"] == "ebb threads" and r["n"] == n]
            worst = min(leading_agreement(x, y) for rb in b for rt in t
                        for x, y in zip(rb["stream_tokens"], rt["stream_tokens"]))
            print(f"greedy tokens, N={n}: batched rows against plain generators, the first {worst} of "
                  f"{a.gen_tokens} agree in every stream (worst pair of runs)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model_dir": folder, "gguf": gg, "cpu": cpu, "threads": a.threads,
                       "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens, "streams": a.streams,
                       "variants": vs, "medians": {f"{k[0]} N={k[1]}": m for k, m in med.items()},
                       "runs": runs, "dropped": dropped}, f, indent=1)


def csv_choices(allowed=None):
    """An argparse type: a comma-separated list (each in `allowed`, if given), duplicates dropped."""
    def parse(s):
        items = list(dict.fromkeys(x.strip() for x in s.split(",") if x.strip()))
        if not items:
            raise argparse.ArgumentTypeError("an empty list")
        bad = [x for x in items if allowed and x not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"{', '.join(bad)}: not one of {', '.join(allowed)}")
        return items
    return parse


def stream_counts(s):
    """An argparse type: --streams, comma-separated numbers of sequences, each 1 to 64 (the
    probes' range), duplicates dropped, in the order given."""
    try:
        ns = list(dict.fromkeys(int(x) for x in s.split(",") if x.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}': give comma-separated numbers, e.g. 1,2,4,8")
    if not ns or any(n < 1 or n > 64 for n in ns):
        raise argparse.ArgumentTypeError(f"'{s}': each number of streams must be 1 to 64")
    return ns


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
    ap.add_argument("--ebb-option", action="append", metavar="K=V",
                    help="an ebb model option for every ebb run (repeatable), e.g. decode_batch.prefill_chunk=0")
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--warm-steps", type=int, default=8,
                    help="the warm decode rate leaves out the first this many decode steps (gen must be >= this + 2)")
    ap.add_argument("--warmup", action="store_true",
                    help="both probes run a short untimed generation (32-token prompt, 8 tokens) before the "
                    "timed one; start -> first token then includes it")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--llama-backends", type=csv_choices(), default=["native", "haswell"],
                    help="llama.cpp CPU backends (llamacpp_probe --cpu-backend): native (ggml's best "
                    "libggml-cpu-<isa>.so for this CPU), an ISA name (haswell = AVX2 only) or a .so path; "
                    "default native,haswell")
    ap.add_argument("--llama-fa", type=csv_choices(("on", "off", "auto")), default=["on", "off"],
                    help="llama.cpp flash-attention settings to run (default on,off)")
    ap.add_argument("--llama-mmap", type=csv_choices(("on", "off", "auto")), default=["on"],
                    help="llama.cpp load modes to run (default on; on,off doubles the llama.cpp variants "
                    "and reports the memory rows for both)")
    ap.add_argument("--streams", type=stream_counts,
                    help="concurrent mode: these numbers of sequences (e.g. 1,2,4,8), each with its own "
                    "prompt of --prompt-tokens and --gen-tokens generated; see docs/benchmarks.md")
    ap.add_argument("--ebb-stream-modes", type=csv_choices(("batched", "threads")), default=["batched", "threads"],
                    help="--streams: ebb through the batched decode (decode_batch.max_rows = N) and/or as N "
                    "plain concurrent generators")
    ap.add_argument("--llama-kv-unified", type=csv_choices(("on", "off")), default=["on"],
                    help="--streams: llama.cpp's kv_unified settings to run (default on, llama-server's)")
    ap.add_argument("--max-other-cpu", type=float, default=0.05,
                    help="drop and rerun a pair when other processes used more than this fraction of the "
                    "CPUs during one of its runs")
    ap.add_argument("--max-reruns", type=int, default=3, help="reruns of a disturbed pair before giving up on it")
    ap.add_argument("--json", help="write every run (kept and dropped), the machine and the medians here")
    ap.add_argument("--quiet", type=float, default=0.9,
                    help="before each run, wait until the CPUs were this idle for a second (0: don't wait)")
    ap.add_argument("--quiet-wait", type=float, default=120, help="at most this many seconds per run")
    a = ap.parse_args()
    if a.check:
        sys.exit(check(a))
    if a.streams:
        streams_bench(a)
        return
    bench(a)


if __name__ == "__main__":
    main()
