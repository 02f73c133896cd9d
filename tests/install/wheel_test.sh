#!/bin/sh
# The Python wheel, offline (issue 27): builds it from a copy of python/ with Debian's pip,
# setuptools and wheel (pip wheel --no-build-isolation --no-index), packing the extension this
# build made (EBB_PYTHON_EXTENSION_DIR) and the ONNX Runtime library beside it; installs it into
# a fresh venv (--system-site-packages, for Debian's numpy: PyPI is not reachable); imports ebb
# from the venv, outside the source and build trees, and generates with MODEL_DIR, and with
# stories260k (checking its known text) when SHARED_DIR/models/stories260k exists.
# usage: wheel_test.sh PYTHON3 EXTENSION_DIR SOURCE_DIR MODEL_DIR SHARED_DIR
set -eu
PY=$1
EXT=$2
SRC=$3
MODEL=$4
SHARED=$5
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ebb-wheel-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }

cp -r "$SRC/python" "$WORK/src"
rm -rf "$WORK/src/tests" "$WORK/src/build" "$WORK/src/"*.egg-info
echo "wheel_test: pip wheel --no-build-isolation --no-index --no-deps"
EBB_PYTHON_EXTENSION_DIR=$EXT "$PY" -m pip wheel --no-build-isolation --no-index --no-deps \
  -w "$WORK/dist" "$WORK/src" >"$WORK/wheel.log" 2>&1 || { cat "$WORK/wheel.log"; fail "pip wheel"; }
WHEEL=$(ls "$WORK"/dist/ebb-*.whl)
echo "wheel_test: $(basename "$WHEEL")"
case "$(basename "$WHEEL")" in
  *-none-any.whl) fail "the wheel is tagged pure Python, but it holds a compiled extension" ;;
esac
"$PY" -m zipfile -l "$WHEEL" | grep -q "ebb/libonnxruntime.so.1" || fail "the wheel lacks libonnxruntime.so.1"

"$PY" -m venv --system-site-packages "$WORK/venv" || fail "python3 -m venv (python3-venv)"
"$WORK/venv/bin/python" -m pip install --no-index --no-deps "$WHEEL" >"$WORK/install.log" 2>&1 ||
  { cat "$WORK/install.log"; fail "pip install the wheel"; }

cd "$WORK"
env -u PYTHONPATH "$WORK/venv/bin/python" - "$MODEL" "$SHARED" "$WORK/venv" <<'PYEOF' || fail "import ebb / generate from the venv"
import os, sys
import ebb
model_dir, shared, venv = sys.argv[1:4]
assert os.path.realpath(ebb.__file__).startswith(os.path.realpath(venv)), ebb.__file__
# The extension loads the libonnxruntime.so.1 the wheel put beside it.
maps = open("/proc/self/maps").read()
here = os.path.dirname(os.path.realpath(ebb.__file__))
assert os.path.join(here, "libonnxruntime.so.1") in maps, "ONNX Runtime not loaded from the wheel"
rt = ebb.Runtime()
with rt.load(model_dir) as m:
    r = m.generate("Hello", max_new_tokens=8)
    assert r.usage["completion_tokens"] > 0, r
    print("wheel_test: tiny model:", r.usage)
stories = os.path.join(shared, "models", "stories260k")
if os.path.isdir(stories):
    with rt.load(stories) as m:
        r = m.generate("Once upon a time, a dog", max_length=30)
        print("wheel_test: stories260k:", repr(r.text))
        assert "named Max was very excited" in r.text, r.text
else:
    print("wheel_test: stories260k skipped:", stories, "is absent (needs ../shared)")
# onnxruntime_genai from the same wheel: genai's API on ebb's library packed beside it.
import onnxruntime_genai as og
assert os.path.realpath(og.__file__).startswith(os.path.realpath(venv)), og.__file__
og_model = og.Model(model_dir)
og_params = og.GeneratorParams(og_model)
og_params.set_search_options(max_length=12)
og_gen = og.Generator(og_model, og_params)
og_gen.append_tokens([1, 5, 9])
while not og_gen.is_done():
    og_gen.generate_next_token()
assert len(og_gen.get_sequence(0)) == 12, og_gen.get_sequence(0)
maps = open("/proc/self/maps").read()
og_here = os.path.dirname(os.path.realpath(og.__file__))
assert os.path.join(og_here, "libonnxruntime-genai.so") in maps, "genai library not from the wheel"
assert os.path.join(og_here, "libebb.so.0") in maps, "libebb.so.0 not from the wheel"
print("wheel_test: onnxruntime_genai:", og_gen.get_sequence(0).tolist())
PYEOF
echo "wheel_test: OK"
