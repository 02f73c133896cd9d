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
  OUT.json   K, N, block, seed, the files' sizes

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
    ap.add_argument("--out", required=True, help="path prefix: OUT.onnx, OUT.q4_0, OUT.json")
    a = ap.parse_args()
    if a.k % a.block_size:
        raise SystemExit(f"--k {a.k} must be a multiple of --block-size {a.block_size}")
    rng = np.random.default_rng(a.seed)
    w = rng.standard_normal((a.n, a.k), dtype=np.float32) * np.float32(0.02)
    packed, scales = quantize_int4_rows(w, a.block_size, fp16_scales=True)  # [N, nb, block/2], [N, nb]
    nb = a.k // a.block_size
    # Codes 0..15 in element order, then Q4_0's 32-blocks with their MatMulNBits block's scale.
    q = np.empty((a.n, nb, a.block_size), dtype=np.uint8)
    q[:, :, 0::2] = packed & 0x0F
    q[:, :, 1::2] = packed >> 4
    per = a.block_size // 32
    q32 = q.reshape(a.n, a.k // 32, 32)
    d32 = np.repeat(scales, per, axis=1)
    rows = gguf.q4_0_blocks(q32, d32)

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out + ".q4_0", "wb") as f:
        f.write(rows.tobytes())
    node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["Y"], domain="com.microsoft", K=a.k, N=a.n,
                            bits=4, block_size=a.block_size, accuracy_level=4)
    graph = helper.make_graph(
        [node], "matmul_nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", a.k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", a.n])],
        initializer=[
            helper.make_tensor("B", TensorProto.UINT8, [a.n, nb, a.block_size // 2], packed.tobytes(), raw=True),
            helper.make_tensor("scales", TensorProto.FLOAT, [a.n * nb], scales.reshape(-1).tobytes(), raw=True),
        ])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.save(model, a.out + ".onnx")
    info = {"k": a.k, "n": a.n, "block_size": a.block_size, "seed": a.seed,
            "int4_bytes": int(packed.nbytes + scales.nbytes), "q4_0_bytes": int(rows.nbytes)}
    with open(a.out + ".json", "w") as f:
        json.dump(info, f)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
