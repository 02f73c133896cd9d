#!/usr/bin/python3
"""Copies a synthesized fp32 model folder with its token embedding table set to NaN.

Usage: tools/poison_nan.py SRC_DIR DST_DIR

Every logit the copy produces is NaN: the regression model for "NaN logits must fail the request,
not silently generate token 0" (tests/integration/hardening_test.cpp). Needs only python3-onnx
and python3-numpy.
"""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    cfg = json.loads((src / "genai_config.json").read_text())
    dec = cfg["model"]["decoder"]
    ids_name = dec.get("inputs", {}).get("input_ids", "input_ids")
    model = onnx.load(str(src / dec["filename"]))
    g = model.graph
    gather = next(n for n in g.node if n.op_type == "Gather" and n.input[1] == ids_name)
    inits = {t.name: t for t in g.initializer}
    table = inits[gather.input[0]]
    poisoned = numpy_helper.from_array(
        np.full(numpy_helper.to_array(table).shape, np.nan, dtype=np.float32), table.name)
    table.CopyFrom(poisoned)
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(dec["filename"], "*.data"))
    onnx.save(model, str(dst / dec["filename"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
