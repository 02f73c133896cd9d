#!/usr/bin/python3
"""Copies a decoder model folder with its logits passed through the custom op ebb.test.Scale.

Usage: tools/custom_op_model.py SRC_DIR DST_DIR LIBRARY [FACTOR [OP_TYPE]]

The copy's graph computes the same logits, then Y = logits * FACTOR (default 1.0) in the op
ebb.test.Scale, which ORT does not have: the copy loads only with the custom-op library
(tests/integration/custom_ops/scale_op.cpp) registered. LIBRARY is written into the copy's
genai_config.json as model.decoder.session_options.custom_ops_library, as given (a relative
path is the model folder's). OP_TYPE (default Scale) names another op of the domain, one the
library does not provide, for the error a library without the graph's op gives. Needs only
python3-onnx and python3-numpy.
"""
import json
import shutil
import sys
from pathlib import Path

import onnx
from onnx import helper


def main() -> int:
    if len(sys.argv) not in (4, 5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, lib = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    factor = float(sys.argv[4]) if len(sys.argv) >= 5 else 1.0
    op_type = sys.argv[5] if len(sys.argv) == 6 else "Scale"
    cfg = json.loads((src / "genai_config.json").read_text())
    dec = cfg["model"]["decoder"]
    logits = dec.get("outputs", {}).get("logits", "logits")
    model = onnx.load(str(src / dec["filename"]))
    g = model.graph
    raw = logits + "_before_scale"
    for n in g.node:
        n.output[:] = [raw if o == logits else o for o in n.output]
    g.node.append(helper.make_node(op_type, [raw], [logits], domain="ebb.test", factor=factor,
                                   name="ebb_test_scale"))
    model.opset_import.append(helper.make_opsetid("ebb.test", 1))
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(dec["filename"], "*.data"))
    onnx.save(model, str(dst / dec["filename"]))
    dec.setdefault("session_options", {})["custom_ops_library"] = lib
    (dst / "genai_config.json").write_text(json.dumps(cfg, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
