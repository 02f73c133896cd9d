#!/usr/bin/python3
"""One GroupQueryAttention node, as com.microsoft and as ebb.cpu, for tests/integration/cpu_ops/gqa_check
(issue 40 item 3: ebb.cpu.GroupQueryAttention against ORT's own kernel, op by op).

  /usr/bin/python3 tools/gqa_model.py --out /tmp/gq/case [--heads 12 --kv-heads 4
      --head-size 64 --positions 64 --packed --interleaved --local-window W --softcap C --smooth]

Writes OUT_ref.onnx and OUT_op.onnx: inputs query [B, S, H*D] (packed: [B, S, (H+2Hkv)*D], no key
or value), key and value [B, S, Hkv*D], past_key / past_value [B, Hkv, P, D], seqlens_k int32 [B],
total_sequence_length int32 [1]; cos_cache / sin_cache [positions, D/2] as seeded initializers
(do_rotary 1); outputs output, present_key, present_value. OUT.json holds the dimensions.

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
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--head-size", type=int, default=64)
    ap.add_argument("--positions", type=int, default=64, help="rows of the cos/sin caches")
    ap.add_argument("--packed", action="store_true")
    ap.add_argument("--interleaved", action="store_true")
    ap.add_argument("--local-window", type=int, default=-1)
    ap.add_argument("--softcap", type=float, default=0.0)
    ap.add_argument("--smooth", action="store_true")
    a = ap.parse_args()
    h, kv, d = a.heads, a.kv_heads, a.head_size
    theta = 10000.0 ** (-np.arange(0, d // 2, dtype=np.float64) * 2 / d)
    ang = np.arange(a.positions)[:, None] * theta[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    q_width = (h + 2 * kv) * d if a.packed else h * d
    inputs = [helper.make_tensor_value_info("query", TensorProto.FLOAT, ["B", "S", q_width])]
    if not a.packed:
        # the width symbolic, so that a wrong one reaches the op (gqa_check's refusals), not ORT's check
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", "S", "KVW"]) for n in ("key", "value")]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", kv, "P", d]) for n in ("past_key", "past_value")]
    inputs += [helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["B"]),
               helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, [1])]
    outputs = [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["B", "S", h * d]),
               helper.make_tensor_value_info("present_key", TensorProto.FLOAT, ["B", kv, "T", d]),
               helper.make_tensor_value_info("present_value", TensorProto.FLOAT, ["B", kv, "T", d])]
    inits = [helper.make_tensor("cos_cache", TensorProto.FLOAT, list(cos.shape), cos.tobytes(), raw=True),
             helper.make_tensor("sin_cache", TensorProto.FLOAT, list(sin.shape), sin.tobytes(), raw=True)]
    node_inputs = ["query", "" if a.packed else "key", "" if a.packed else "value", "past_key", "past_value",
                   "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"]
    for domain, suffix in (("com.microsoft", "ref"), ("ebb.cpu", "op")):
        node = helper.make_node("GroupQueryAttention", node_inputs, ["output", "present_key", "present_value"],
                                domain=domain, num_heads=h, kv_num_heads=kv, do_rotary=1,
                                rotary_interleaved=int(a.interleaved), local_window_size=a.local_window,
                                softcap=a.softcap, smooth_softmax=int(a.smooth))
        graph = helper.make_graph([node], "gqa", inputs, outputs, initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
        model.ir_version = 8
        onnx.save(model, f"{a.out}_{suffix}.onnx")
    info = {"heads": h, "kv_heads": kv, "head_size": d, "positions": a.positions, "packed": a.packed,
            "interleaved": a.interleaved, "local_window": a.local_window, "softcap": a.softcap, "smooth": a.smooth}
    with open(a.out + ".json", "w") as f:
        json.dump(info, f)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
