#!/usr/bin/python3
"""One MatMulNBits node, as com.microsoft and as ebb.cpu, for tests/integration/cpu_ops/
matmul_check (ebb.cpu.MatMulNBits against MLAS, op by op).

  /usr/bin/python3 tools/matmul_nbits_model.py --out /tmp/mm/case --k 200 --n 70 --block-size 32 [--zero-points]

Writes OUT_ref.onnx and OUT_op.onnx: input A float [M, K] (M dynamic), output Y float [M, N],
bits 4, accuracy_level 4, seeded random codes and scales (and, with --zero-points, random 4-bit
zero points packed two per byte, low nibble first) as initializers. K need not be a multiple of
the block: B's padding codes are 8. OUT.json holds K and N.

Debian's python3 only (numpy, onnx).
"""

import argparse
import json

import numpy as np
import onnx
from onnx import TensorProto, helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--n", type=int, default=70)
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--zero-points", action="store_true")
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    blocks = (a.k + a.block_size - 1) // a.block_size
    codes = rng.integers(0, 16, size=(a.n, blocks * a.block_size), dtype=np.uint8)
    codes[:, a.k:] = 8
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).reshape(a.n, blocks, a.block_size // 2)
    scales = (rng.random((a.n, blocks), dtype=np.float32) * 0.02 + 0.001).astype(np.float32)
    inits = [helper.make_tensor("B", TensorProto.UINT8, list(packed.shape), packed.tobytes(), raw=True),
             helper.make_tensor("scales", TensorProto.FLOAT, [a.n * blocks], scales.tobytes(), raw=True)]
    inputs = ["A", "B", "scales"]
    if a.zero_points:
        zp = rng.integers(0, 16, size=(a.n, (blocks + 1) // 2 * 2), dtype=np.uint8)
        zpp = (zp[:, 0::2] | (zp[:, 1::2] << 4)).astype(np.uint8)
        inits.append(helper.make_tensor("zero_points", TensorProto.UINT8, [zpp.size], zpp.tobytes(), raw=True))
        inputs.append("zero_points")
    for domain, suffix in (("com.microsoft", "ref"), ("ebb.cpu", "op")):
        node = helper.make_node("MatMulNBits", inputs, ["Y"], domain=domain, K=a.k, N=a.n, bits=4,
                                block_size=a.block_size, accuracy_level=4)
        graph = helper.make_graph([node], "mm", [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", a.k])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", a.n])],
                                  initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
        model.ir_version = 8
        onnx.save(model, f"{a.out}_{suffix}.onnx")
    with open(a.out + ".json", "w") as f:
        json.dump({"k": a.k, "n": a.n}, f)


if __name__ == "__main__":
    main()
