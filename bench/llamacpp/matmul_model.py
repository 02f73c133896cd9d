#!/usr/bin/python3
"""One int4 matrix in both engines' formats, for bench/llamacpp/matmul_probe (issue 28 item 1).

Writes, for a weight matrix W of N output channels by K inputs with seeded random int4 codes and
fp16-representable scales:
  OUT.onnx   one com.microsoft MatMulNBits node (bits 4, --block-size, accuracy_level 4, symmetric:
             no zero points), input A float [M, K] (M dynamic), output Y float [M, N]; the weights
             inline (this is one matrix, at most a few tens of MB)
  OUT.q4_0   the same matrix as ggml Q4_0 rows: N rows of K/32 blocks of 18 bytes (fp16 d, then
             16 bytes: low nibbles = elements 0..15, high nibbles = 16..31); each 32-block takes
             the scale of the MatMulNBits block it lies in, so both hold exactly the same values
  OUT.json   K, N, block, seed, layers, the files' sizes

--layers L (K must equal N) chains L distinct matrices, Y = A W1^T W2^T ... WL^T (L MatMulNBits
nodes; L Q4_0 matrices one after the other in OUT.q4_0): with L x the matrix larger than the
caches, each call streams every weight from DRAM once, as a whole model's decode step does.

  /usr/bin/python3 bench/llamacpp/matmul_model.py --k 3072 --n 8192 --block-size 32 --out /tmp/mm/gate

Debian's python3 only (numpy, onnx); quantization as tools/synth_model.py does it, and the Q4_0
layout from tools/gguf.py, so the bytes match what the full-model benchmark feeds both engines.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gguf  # noqa: E402
from synth_model import quantize_int4_rows  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, required=True, help="inputs (a multiple of 32 and of the block)")
    ap.add_argument("--n", type=int, required=True, help="output channels")
    ap.add_argument("--block-size", type=int, default=32, choices=(32, 64, 128, 256))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=1, help="chain this many distinct matrices (needs K == N)")
    ap.add_argument("--out", required=True, help="path prefix: OUT.onnx, OUT.q4_0, OUT.json")
    a = ap.parse_args()
    if a.k % a.block_size:
        raise SystemExit(f"--k {a.k} must be a multiple of --block-size {a.block_size}")
    if a.layers < 1 or (a.layers > 1 and a.k != a.n):
        raise SystemExit("--layers must be >= 1, and --layers > 1 needs --k == --n")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    nb = a.k // a.block_size
    nodes, inits, int4_bytes, q4_bytes = [], [], 0, 0
    with open(a.out + ".q4_0", "wb") as f:
        for layer in range(a.layers):
            rng = np.random.default_rng([a.seed, layer])
            w = rng.standard_normal((a.n, a.k), dtype=np.float32) * np.float32(0.02)
            packed, scales = quantize_int4_rows(w, a.block_size, fp16_scales=True)  # [N, nb, block/2], [N, nb]
            # Codes 0..15 in element order, then Q4_0's 32-blocks with their MatMulNBits block's scale.
            q = np.empty((a.n, nb, a.block_size), dtype=np.uint8)
            q[:, :, 0::2] = packed & 0x0F
            q[:, :, 1::2] = packed >> 4
            rows = gguf.q4_0_blocks(q.reshape(a.n, a.k // 32, 32), np.repeat(scales, a.block_size // 32, axis=1))
            f.write(rows.tobytes())
            b, sc = f"B{layer}", f"scales{layer}"
            x = "A" if layer == 0 else f"Y{layer - 1}"
            y = "Y" if layer == a.layers - 1 else f"Y{layer}"
            nodes.append(helper.make_node("MatMulNBits", [x, b, sc], [y], domain="com.microsoft", K=a.k, N=a.n,
                                          bits=4, block_size=a.block_size, accuracy_level=4))
            inits += [helper.make_tensor(b, TensorProto.UINT8, [a.n, nb, a.block_size // 2], packed.tobytes(), raw=True),
                      helper.make_tensor(sc, TensorProto.FLOAT, [a.n * nb], scales.reshape(-1).tobytes(), raw=True)]
            int4_bytes += packed.nbytes + scales.nbytes
            q4_bytes += rows.nbytes
    graph = helper.make_graph(
        nodes, "matmul_nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", a.k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", a.n])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.save(model, a.out + ".onnx")
    info = {"k": a.k, "n": a.n, "block_size": a.block_size, "seed": a.seed, "layers": a.layers,
            "int4_bytes": int(int4_bytes), "q4_0_bytes": int(q4_bytes)}
    with open(a.out + ".json", "w") as f:
        json.dump(info, f)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
