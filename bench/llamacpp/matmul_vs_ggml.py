#!/usr/bin/python3
"""ORT's MatMulNBits against ggml's Q4_0 mul_mat, one matrix at a time (issue 28 item 1).

For each matrix of a shape preset, writes the same int4 weights in both formats
(bench/llamacpp/matmul_model.py), then runs bench/llamacpp/matmul_probe --repeats times per ggml
variant (separate processes, so that neither engine's thread pool is measured against the other's;
the variants' order rotates every repeat) and prints a markdown table of medians: milliseconds per
multiply, GB/s of weights and GFLOP/s per engine, and ORT's time over ggml's. The ggml variants are
its CPU backend for this CPU ("native": the libggml-cpu-<isa>.so llama.cpp loads here) with the
weights in each buffer type it offers (AMX, CPU_REPACK, plain CPU), and the AVX2 ("haswell")
backend, so a figure can be read against the ISA it came from. --op adds the variant "op":
ggml's kernels inside ORT, the matrix rewritten as ebb.ggml.MatMulQ4_0 (bench/llamacpp/
ggml_op_model.py --onnx) and run by libebb_ggml_matmul.so in an ORT session (issue 28 item 3),
with its own difference from MatMulNBits' output in the last column; --op rows instead adds ebb's own
multi-row int4 VNNI kernel (ebb.cpu.MatMulNBits, libebb_cpu_ops.so, src/cpu_ops/int4_rows_op.cpp;
the model rewritten by tools/cpu_ops_model.py), issue 40 item 2.

  make bench-llamacpp
  /usr/bin/python3 bench/llamacpp/matmul_vs_ggml.py --shape phi-3.5-mini --block-size 128 --repeats 5
  /usr/bin/python3 bench/llamacpp/matmul_vs_ggml.py --shape dram --m 1 --repeats 3
  /usr/bin/python3 bench/llamacpp/matmul_vs_ggml.py --variants native:AMX:caller --op
  /usr/bin/python3 bench/llamacpp/matmul_vs_ggml.py --shape small --m 1,2,4,8 --variants none --op rows

The weights of one matrix stay in the caches between calls (a phi matrix is 6-28 MB; this
machine's L2 is 2 MiB per core), so M = 1 there measures the kernel, not the DRAM stream a whole
model's decode pays. The "dram" shape is a chain of 128 distinct 3072 x 3072 matrices (642 MB of
int4, more than any cache), Y = A W1^T ... W128^T, so that each call streams every weight once, as
a decode step does; GB/s there is the figure to hold against membw's read bandwidth.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, K, N) per shape: the distinct matmuls of one decoder layer (q/k/v fused as the model
# builder writes them for phi3; gate/up fused), then the LM head.
SHAPES = {  # (name, K, N[, layers])
    "dram": [("chain of 128", 3072, 3072, 128)],
    "phi-3.5-mini": [("qkv", 3072, 9216), ("o_proj", 3072, 3072), ("gate_up", 3072, 16384),
                     ("down", 8192, 3072), ("lm_head", 3072, 32064)],
    "small": [("q/k/v/o", 768, 768), ("gate/up", 768, 2048), ("down", 2048, 768),
              ("lm_head", 768, 32000)],
}


def run(probe, prefix, m, threads, rounds, buft, backend, engines, ggml_threads="pool", op_library=None,
        op_model=None):
    cmd = [probe, "--model", prefix, "--m", ",".join(map(str, m)), "--threads", str(threads), "--rounds",
           str(rounds), "--buft", buft, "--cpu-backend", backend, "--engines", engines,
           "--ggml-threads", ggml_threads]
    if op_library:
        cmd += ["--op-library", op_library, "--op-model", op_model]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr}")
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    return lines[0], {r["m"]: r for r in lines[1:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--shape", default="phi-3.5-mini", choices=sorted(SHAPES))
    ap.add_argument("--block-size", type=int, default=128, choices=(32, 64, 128, 256))
    ap.add_argument("--m", default="1,128,512", help="rows of A (tokens per call)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=10, help="timed calls per engine per process")
    ap.add_argument("--repeats", type=int, default=3, help="processes per variant (medians over them)")
    ap.add_argument("--variants", default="native:AMX,native:CPU_REPACK,native:CPU,haswell:CPU_REPACK",
                    help="ggml BACKEND:BUFFER_TYPE[:caller] (a pair the CPU lacks is reported and skipped); "
                    ":caller cuts the matrix in --threads row blocks and runs one single-threaded ggml "
                    "call per thread on the probe's own spinning threads, as an ORT custom op would from "
                    "ORT's pool; none: no ggml variant (with --op: ORT against the op)")
    ap.add_argument("--op", nargs="?", const="ggml", choices=("ggml", "rows"),
                    help="add the variant op inside ORT: ggml (default) = ebb.ggml.MatMulQ4_0 "
                    "(libebb_ggml_matmul.so); rows = ebb.cpu.MatMulNBits (libebb_cpu_ops.so, ebb's "
                    "multi-row VNNI kernel, src/cpu_ops/int4_rows_op.cpp)")
    ap.add_argument("--models", default="/tmp/ebb-matmul-models")
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    probe = os.path.join(a.build_dir, "bench", "llamacpp", "matmul_probe")
    if not os.access(probe, os.X_OK):
        raise SystemExit(f"{probe} not built: run `make bench-llamacpp` first")
    ms = [int(x) for x in a.m.split(",")]
    variants = [] if a.variants == "none" else [tuple(v.split(":")) for v in a.variants.split(",")]
    for v in variants:
        if len(v) not in (2, 3) or (len(v) == 3 and v[2] != "caller"):
            raise SystemExit(f"--variants: '{':'.join(v)}' is not BACKEND:BUFFER_TYPE[:caller]")
    op_library = None
    if a.op:
        op_library = (os.path.join(a.build_dir, "bench", "llamacpp", "libebb_ggml_matmul.so") if a.op == "ggml"
                      else os.path.join(a.build_dir, "src", "cpu_ops", "libebb_cpu_ops.so"))
        if not os.path.exists(op_library):
            raise SystemExit(f"{op_library} not built: make bench-llamacpp")
        variants.append(("op",))
    runs, rows = [], []
    for name, k, n, *rest in SHAPES[a.shape]:
        layers = rest[0] if rest else 1
        prefix = os.path.join(a.models, f"{a.shape}-{name.replace('/', '_').replace(' ', '_')}-k{k}-n{n}-l{layers}"
                              f"-b{a.block_size}")
        if not os.path.exists(prefix + ".json"):
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "llamacpp", "matmul_model.py"), "--k",
                            str(k), "--n", str(n), "--block-size", str(a.block_size), "--layers", str(layers),
                            "--out", prefix], check=True, stdout=subprocess.DEVNULL)
        op_model = prefix + ("_op.onnx" if a.op == "ggml" else "_cpu_ops.onnx")
        if a.op == "ggml" and not os.path.exists(op_model):
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "llamacpp", "ggml_op_model.py"), "--onnx",
                            prefix + ".onnx", "--out", op_model, "--without-amx"],  # --op: measure it
                           check=True, stdout=subprocess.DEVNULL)
        if a.op == "rows" and not os.path.exists(op_model):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "cpu_ops_model.py"), "--onnx",
                            prefix + ".onnx", "--out", op_model, "--ops", "matmul"], check=True, stdout=subprocess.DEVNULL)
        with open(prefix + ".json") as f:
            q4_bytes = json.load(f)["q4_0_bytes"]
        got = {}  # variant -> list of {m: result}
        setup = {}
        ort = []
        for rep in range(a.repeats):
            order = variants[rep % len(variants):] + variants[:rep % len(variants)]
            s, r = run(probe, prefix, ms, a.threads, a.rounds, "CPU", "native", "ort")
            ort.append(r)
            for v in order:
                if v == ("op",):  # the op's times as the ggml fields the table reads
                    s, r = run(probe, prefix, ms, a.threads, a.rounds, "auto", "native", "op", op_library=op_library,
                                  op_model=op_model)
                    s["ggml_backend"] = op_library
                    for x in r.values():
                        x["ggml_median_s"] = x["op_median_s"]
                        x["ggml_gb_s"] = q4_bytes / x["op_median_s"] / 1e9
                    setup[v] = s
                    got.setdefault(v, []).append(r)
                    runs.append({"matrix": name, "variant": "op", "setup": s, "results": r})
                    continue
                backend, buft = v[0], v[1]
                mode = "caller" if len(v) == 3 else "pool"
                try:
                    s, r = run(probe, prefix, ms, a.threads, a.rounds, buft, backend, "ggml", mode)
                except SystemExit as e:
                    print(f"skipped {':'.join(v)}: {str(e).splitlines()[-1]}", file=sys.stderr)
                    continue
                setup[v] = s
                got.setdefault(v, []).append(r)
                runs.append({"matrix": name, "variant": ":".join(v), "setup": s, "results": r})
        _, diff = run(probe, prefix, ms, a.threads, 2, "auto", "native", "ort,ggml,op" if a.op else "ort,ggml",
                      op_library=op_library, op_model=op_model)
        for m in ms:
            o = statistics.median(x[m]["ort_median_s"] for x in ort)
            flop = 2 * m * n * k * layers
            row = {"matrix": name, "k": k, "n": n, "layers": layers, "m": m, "ort_ms": o * 1e3,
                   "ort_gflop_s": flop / o / 1e9, "ort_gb_s": statistics.median(x[m]["ort_gb_s"] for x in ort),
                   "diff_rel": diff[m]["max_diff_rel"], "op_diff_rel": diff[m].get("max_diff_rel_op", 0.0),
                   "ggml": {}}
            for v, lst in got.items():
                g = statistics.median(x[m]["ggml_median_s"] for x in lst)
                row["ggml"][":".join(v)] = {"ms": g * 1e3, "gflop_s": flop / g / 1e9,
                                                  "gb_s": statistics.median(x[m]["ggml_gb_s"] for x in lst),
                                                  "lib": os.path.basename(setup[v]["ggml_backend"])}
            rows.append(row)
            print(f"{name} M={m}: ORT {o * 1e3:.3f} ms; " + ", ".join(
                f"{v} {d['ms']:.3f} ms" for v, d in row["ggml"].items()), file=sys.stderr)
    names = list(rows[0]["ggml"])
    print(f"\n{a.shape}, MatMulNBits block {a.block_size} (accuracy_level 4) against Q4_0, {a.threads} threads, "
          f"medians of {a.repeats} processes x {a.rounds} calls\n")
    print("ms per multiply; in brackets GFLOP/s, or for M = 1 GB/s of weights read\n")
    op_col = " | op max diff (rel.)" if a.op else ""
    print("| matrix (K x N) | M | ORT | " + " | ".join(f"op ({a.op}) in ORT" if v == "op" else f"ggml {v}" for v in names) +
          " | ORT / best ggml | max diff (rel.)" + op_col + " |")
    print("|---|---:|---:|" + "---:|" * len(names) + "---:|---:|" + ("---:|" if a.op else ""))
    def cell(ms, gflop_s, gb_s, m):
        return f"{ms:.3f} ({gb_s:.1f} GB/s)" if m == 1 else f"{ms:.3f} ({gflop_s:.0f})"
    for r in rows:
        best = min(d["ms"] for d in r["ggml"].values())
        print(f"| {r['matrix']} ({r['k']} x {r['n']}) | {r['m']} | {cell(r['ort_ms'], r['ort_gflop_s'], r['ort_gb_s'], r['m'])} | " +
              " | ".join(cell(r["ggml"][v]["ms"], r["ggml"][v]["gflop_s"], r["ggml"][v]["gb_s"], r["m"])
                         if v in r["ggml"] else "-" for v in names) +
              f" | {r['ort_ms'] / best:.2f} | {r['diff_rel']:.1e}" +
              (f" | {r['op_diff_rel']:.1e}" if a.op else "") + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"shape": a.shape, "block_size": a.block_size, "threads": a.threads, "rows": rows, "runs": runs},
                      f, indent=1)


if __name__ == "__main__":
    main()
