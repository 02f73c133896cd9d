#!/bin/bash
# bench/gpu_check.sh — a prepared check of ebb's WebGPU path (the KV on the device) on a real GPU,
# in one go and under 8 minutes, with everything it learns in one folder. Issue 35.
#
#   bench/gpu_check.sh [--toy] [OUT_DIR]
#
# OUT_DIR (else $OUT, else ./gpu-check-out) receives every file: the JSON (and CSV) reports of the
# `ebb bench` runs, each step's stdout/stderr (NAME.out, NAME.err), steps.tsv (step, status,
# seconds), vulkan.txt (how the Vulkan loader and driver were found) and summary.txt, the short
# report: the adapter, the device-KV-0 line of the seed loop, RSS and device bytes per iteration,
# decode and prefill tok/s on CPU and WebGPU side by side, the WebGPU buffer cache modes, and every
# failed step. Scratch (models, unpacked .debs) goes to a temporary folder, removed at exit
# (EBB_GPU_CHECK_WORK=DIR keeps it there instead).
#
# What it runs (the full scale; --toy in brackets):
#   1. nvidia-smi -q -d MEMORY (when present); `ebb --version`, which lists the Vulkan devices and
#      marks the one WebGPU uses; `ebb info MODEL --ep webgpu` (device, adapter, CPU fallbacks);
#      one `ebb --log-level info generate --ep webgpu --json` (its "KV on" line).
#   2. tools/synth_model.py: the `small` llama shape, int4 (69 MB) [the `tiny` shape, int4]; the
#      phi-3.5-mini shape (phi3 family, int4, ~2.5 GiB, ~2 min) in the background meanwhile [none].
#   3. On the small shape, WebGPU: the seed loop (`ebb bench --ep webgpu --scenario seed-loop`, 30
#      iterations [5]) and rag (prompt lengths 64..2048, 8 iterations [2]): RSS, the device KV in
#      use after each generator (must be 0), ebb's device bytes and the NVIDIA driver's figure
#      for the process (NVML) per iteration.
#   4. The WebGPU storage buffer cache modes (--provider-option
#      webgpu.storageBufferCacheMode=MODE: lazyRelease, bucket, simple, disabled), each in its own
#      process (ORT fixes the mode per process): decode tok/s, and RSS and the driver's bytes per
#      iteration of a seed loop (10 iterations [3]).
#   5. CPU and WebGPU side by side in one process, alternating (cpu, webgpu, cpu, webgpu): a
#      128-token prompt [16], 64 new tokens [8]: TTFT, prefill tok/s (prompt / TTFT) and decode
#      tok/s (tokens after the first, per second), medians.
#   6. The same on the phi-3.5-mini shape, one pair [skipped].
# Every step has its own timeout, capped by what is left of the budget (EBB_GPU_CHECK_BUDGET_S,
# default 450 s [400]); a failed or timed-out step is recorded in summary.txt and the next one
# runs. Exit status: 0 when every step passed and every generator's device KV went back to 0, 1
# otherwise (the folder is complete either way), 2 for a bad invocation.
#
# What it needs:
#   - A Release build of ebb: build/release/src/cli/ebb of this checkout (EBB_BIN=PATH for another
#     one, e.g. build/debug's for --toy), and ONNX Runtime's library, .deps/onnxruntime/lib (from
#     scripts/bootstrap; put first on LD_LIBRARY_PATH here, since the build's RUNPATH names the
#     folder of the machine it was built on).
#   - python3 with numpy and onnx (Debian: python3-numpy, python3-onnx) for tools/synth_model.py
#     and for summary.txt.
#   - A GPU with its Vulkan driver, and the Vulkan loader (libvulkan.so.1). A GPU machine may have
#     the NVIDIA driver but no loader (containers often do): then it unpacks the .debs in
#     EBB_GPU_CHECK_DEBS (default: the checkout's .gl folder; Debian's libvulkan1, from
#     `apt-get download libvulkan1`, and libglvnd's libglvnd0 libegl1 libgl1 libglx0 libopengl0
#     libgles2, which NVIDIA's Vulkan ICD needs: without them its ICD does not load and the loader
#     says VK_ERROR_INCOMPATIBLE_DRIVER, measured on an H200 whose image lacks them; there,
#     `for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig` and
#     VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json worked, see
#     docs/benchmarks.md) with `dpkg-deb -x` (else Python) and puts their library
#     folders on LD_LIBRARY_PATH. Unless VK_DRIVER_FILES (or VK_ICD_FILENAMES) is set, it points
#     VK_DRIVER_FILES at the NVIDIA driver's ICD file, searching /usr/share/vulkan/icd.d,
#     /etc/vulkan/icd.d, /usr/local/nvidia/share/vulkan/icd.d, /usr/local/share/vulkan/icd.d and
#     /usr/local/nvidia/etc/vulkan/icd.d (nvidia_icd*.json); with none there but the driver's
#     Vulkan library (libGLX_nvidia.so.0) present, it writes an ICD file for that library. It prints
#     which it used (vulkan.txt). Without any, the loader searches its default places.
#   - --toy (or EBB_GPU_CHECK_TOY=1): the same steps at toy scale, for CI on Mesa's llvmpipe:
#     `scripts/vulkan_env bench/gpu_check.sh --toy` (about 2 minutes once Mesa's shader cache is
#     warm; ctest: gpu_check_toy). Under scripts/vulkan_env, VK_DRIVER_FILES is set, and kept.
#
# Environment: EBB_BIN, EBB_GPU_CHECK_TOY, EBB_GPU_CHECK_DEBS, EBB_GPU_CHECK_BUDGET_S,
# EBB_GPU_CHECK_WORK (above); EBB_GPU_CHECK_SMALL and EBB_GPU_CHECK_BIG, the two shapes as
# "FAMILY PRESET" of tools/synth_model.py (default "llama small" [tiny] and "phi3 phi-3.5-mini"
# [""]; "" skips the big one), always int4; PYTHON (default: the first of python3 and /usr/bin/python3 that
# imports numpy and onnx). EBB_MODEL_CACHE_DIR defaults to off here,
# so that no background cache build competes with the measurements and nothing is written under
# $HOME.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

toy=${EBB_GPU_CHECK_TOY:-0}
out_arg=
while [ $# -gt 0 ]; do
  case "$1" in
    --toy) toy=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*)
      echo "gpu_check: unknown flag '$1' (try --help)" >&2
      exit 2
      ;;
    *)
      if [ -n "$out_arg" ]; then
        echo "gpu_check: one output folder only (got '$out_arg' and '$1')" >&2
        exit 2
      fi
      out_arg=$1
      ;;
  esac
  shift
done
[ "$toy" = 1 ] || toy=0

repo=$(cd "$(dirname "$0")/.." && pwd)
OUT=${out_arg:-${OUT:-gpu-check-out}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
EBB=${EBB_BIN:-$repo/build/release/src/cli/ebb}
case "$EBB" in /*) ;; */*) EBB=$(pwd)/$EBB ;; esac
# The first Python that has numpy and onnx: $PYTHON, python3 on PATH, Debian's /usr/bin/python3.
py_ok() { "$1" -c 'import numpy, onnx' >/dev/null 2>&1; }
for p in "${PYTHON:-}" python3 /usr/bin/python3; do
  if [ -n "$p" ] && py_ok "$p"; then
    PYTHON=$p
    break
  fi
done
PYTHON=${PYTHON:-python3}
export EBB_MODEL_CACHE_DIR=${EBB_MODEL_CACHE_DIR:-off}
if [ "$toy" = 1 ]; then
  BUDGET=${EBB_GPU_CHECK_BUDGET_S:-400}
  small_shape=${EBB_GPU_CHECK_SMALL-llama tiny} big_shape=${EBB_GPU_CHECK_BIG-}
else
  BUDGET=${EBB_GPU_CHECK_BUDGET_S:-450}
  small_shape=${EBB_GPU_CHECK_SMALL-llama small} big_shape=${EBB_GPU_CHECK_BIG-phi3 phi-3.5-mini}
fi
DEADLINE=$((SECONDS + BUDGET))

if [ -n "${EBB_GPU_CHECK_WORK:-}" ]; then
  WORK=$EBB_GPU_CHECK_WORK
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/ebb-gpu-check.XXXXXX")
fi
phi_pid=
# At exit: stops the background synthesizer if it still runs (its `timeout` passes the signal on)
# and removes the scratch folder.
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  if [ -n "$phi_pid" ] && [ -f "$WORK/synth-phi.pid" ]; then
    kill "$(cat "$WORK/synth-phi.pid")" 2>/dev/null || true
  fi
  if [ -z "${EBB_GPU_CHECK_WORK:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

: >"$OUT/steps.tsv"
log() { echo "gpu_check: $*" | tee -a "$OUT/log.txt" >&2; }

# record NAME STATUS SECONDS: one line of steps.tsv.
record() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT/steps.tsv"
  log "$1: $2 (${3}s)"
}

# step NAME TIMEOUT_S CMD...: runs CMD under `timeout`, capped by what is left of the budget, with
# stdout in $OUT/NAME.out and stderr in $OUT/NAME.err; records the outcome. Never fails: the exit
# status is in STEP_RC (124: timed out; 125: skipped, no budget left).
STEP_RC=0
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((DEADLINE - SECONDS))
  if [ "$left" -lt 20 ]; then
    record "$name" "SKIPPED: the ${BUDGET}s budget is spent" 0
    STEP_RC=125
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  log "$name: $* (timeout ${limit}s)"
  local t0=$SECONDS
  STEP_RC=0
  timeout -k 10 "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err" || STEP_RC=$?
  local took=$((SECONDS - t0))
  if [ "$STEP_RC" = 0 ]; then
    record "$name" ok "$took"
  elif [ "$STEP_RC" = 124 ] || [ "$STEP_RC" = 137 ]; then
    record "$name" "FAILED: timed out after ${limit}s" "$took"
  else
    local why
    why=$(grep -v '^\s*$' "$OUT/$name.err" | grep -iv 'warning' | tail -n 1 || true)
    # Long errors keep their start (what failed) and their end (ORT's reason).
    [ "${#why}" -le 420 ] || why="${why:0:150} ... ${why: -260}"
    record "$name" "FAILED: exit $STEP_RC${why:+: $why}" "$took"
  fi
  return 0
}

# --- ebb and ONNX Runtime ---------------------------------------------------------------------
if [ -d "$repo/.deps/onnxruntime/lib" ]; then
  export LD_LIBRARY_PATH="$repo/.deps/onnxruntime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [ ! -x "$EBB" ]; then
  record ebb "FAILED: no ebb binary at $EBB (build it: cmake --preset release, or set EBB_BIN)" 0
fi

# --- Vulkan: the loader, and the NVIDIA driver's ICD -------------------------------------------
vk() { echo "$*" | tee -a "$OUT/vulkan.txt" >&2; }
: >"$OUT/vulkan.txt"

# Unpacks one .deb into $2 (dpkg-deb, else Python's ar + tarfile).
unpack_deb() {
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  "$PYTHON" - "$1" "$2" <<'EOF'
import io, sys, tarfile
deb, root = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
assert data[:8] == b"!<arch>\n", deb + ": not a .deb"
pos = 8
while pos + 60 <= len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(root)
        break
    pos += 60 + size + (size & 1)
EOF
}

# Whether ebb runs and finds a Vulkan loader (its --version names what it lacks).
ebb_sees_loader() {
  local v
  v=$("$EBB" --version 2>&1) || return 1
  ! grep -q 'no Vulkan loader' <<<"$v"
}

debs=${EBB_GPU_CHECK_DEBS:-$repo/.gl}
debroot=$WORK/debroot
if ebb_sees_loader; then
  vk "loader: ebb finds libvulkan.so.1 as the machine is (LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-})"
elif compgen -G "$debs/*.deb" >/dev/null; then
  mkdir -p "$debroot"
  for deb in "$debs"/*.deb; do
    if unpack_deb "$deb" "$debroot"; then vk "unpacked $deb"; else vk "FAILED to unpack $deb"; fi
  done
  for d in "$debroot/usr/lib/x86_64-linux-gnu" "$debroot/lib/x86_64-linux-gnu" \
    "$debroot/usr/lib64" "$debroot/usr/lib"; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:$LD_LIBRARY_PATH"
  done
  if ebb_sees_loader; then
    vk "loader: from the unpacked .debs of $debs (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  else
    vk "loader: NONE, even after unpacking $debs/*.deb: WebGPU steps will fail"
  fi
else
  vk "loader: NONE, and no .debs in $debs to unpack (apt-get download libvulkan1 there):" \
    "WebGPU steps will fail"
fi
# The NVIDIA driver's libraries outside the linker's default path (the container toolkit's place).
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  if [ -e "$d/libGLX_nvidia.so.0" ] || [ -e "$d/libnvidia-ml.so.1" ]; then
    case ":$LD_LIBRARY_PATH:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d" ;; esac
    vk "driver libraries: $d added to LD_LIBRARY_PATH"
  fi
done
if [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  vk "driver: VK_DRIVER_FILES=${VK_DRIVER_FILES:-} VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-}" \
    "(set by the caller; kept)"
else
  icd=
  for f in /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json \
    /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json \
    /usr/local/share/vulkan/icd.d/nvidia_icd*.json \
    /usr/local/nvidia/etc/vulkan/icd.d/nvidia_icd*.json \
    "$debroot"/usr/share/vulkan/icd.d/nvidia_icd*.json; do
    if [ -f "$f" ]; then
      icd=$f
      break
    fi
  done
  if [ -z "$icd" ]; then
    glx=
    for f in /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 \
      /usr/local/nvidia/lib64/libGLX_nvidia.so.0 /usr/lib/libGLX_nvidia.so.0; do
      if [ -e "$f" ]; then
        glx=$f
        break
      fi
    done
    if [ -z "$glx" ] && command -v ldconfig >/dev/null 2>&1; then
      glx=$(ldconfig -p 2>/dev/null | awk '/libGLX_nvidia\.so\.0 .*x86-64/ {print $NF; exit}' || true)
    fi
    if [ -n "$glx" ]; then
      icd=$WORK/nvidia_icd.json
      printf '{"file_format_version": "1.0.1", "ICD": {"library_path": "%s", "api_version": "1.3.0"}}\n' \
        "$glx" >"$icd"
      vk "driver: no NVIDIA ICD file found; wrote $icd for $glx"
    fi
  fi
  if [ -n "$icd" ]; then
    export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
    vk "driver: VK_DRIVER_FILES=$icd"
    vk "  $(tr -d '\n' <"$icd" | tr -s ' ' | cut -c1-300)"
  else
    vk "driver: no NVIDIA Vulkan ICD file nor libGLX_nvidia.so.0 found (the container may lack" \
      "the 'graphics' driver capability); the loader searches its default places"
  fi
fi

# --- the machine ---------------------------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm)"
  echo "mode: $([ "$toy" = 1 ] && echo toy || echo full), budget ${BUDGET}s"
  echo "ebb: $EBB"
  if command -v lscpu >/dev/null 2>&1; then
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)' || true
  fi
  echo "isa: $(grep -owE 'avx2|avx512f|avx512_vnni|amx_tile' /proc/cpuinfo 2>/dev/null | sort -u | tr '\n' ' ')"
} >"$OUT/machine.txt" 2>&1
if command -v nvidia-smi >/dev/null 2>&1; then
  step nvidia-smi-memory 30 nvidia-smi -q -d MEMORY
  step nvidia-smi 30 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used \
    --format=csv
else
  log "nvidia-smi: not present"
fi
step version 60 "$EBB" --version

# --- models ----------------------------------------------------------------------------------------
small=$WORK/models/small
phi=$WORK/models/phi
mkdir -p "$WORK/models"
# shellcheck disable=SC2086  # "FAMILY PRESET", split on purpose
set -- $small_shape
step synth-small 180 "$PYTHON" "$repo/tools/synth_model.py" --family "$1" --preset "$2" \
  --precision int4 --out "$small"
if [ -n "$big_shape" ]; then
  # shellcheck disable=SC2086
  set -- $big_shape
  # The phi shape in the background while the WebGPU-only steps run (it takes ~2 min of one core).
  phi_limit=$((DEADLINE - SECONDS - 120))
  [ "$phi_limit" -le 300 ] || phi_limit=300
  if [ "$phi_limit" -gt 30 ]; then
    log "synth-phi: started in the background (timeout ${phi_limit}s)"
    (
      rc=0 t0=$SECONDS
      timeout -k 10 "$phi_limit" nice "$PYTHON" "$repo/tools/synth_model.py" --family "$1" \
        --preset "$2" --precision int4 --out "$phi" >"$OUT/synth-phi.out" \
        2>"$OUT/synth-phi.err" &
      echo $! >"$WORK/synth-phi.pid"
      wait $! || rc=$?
      echo "$rc $((SECONDS - t0))" >"$WORK/synth-phi.rc"
    ) &
    phi_pid=$!
  else
    record synth-phi "SKIPPED: the ${BUDGET}s budget is spent" 0
  fi
fi

if [ "$toy" = 1 ]; then
  seed_iters=5 seed_gen=8 rag_iters=2 mode_iters=3 pair_iters=2 prompt=16 gen=8
else
  seed_iters=30 seed_gen=32 rag_iters=8 mode_iters=10 pair_iters=5 prompt=128 gen=64
fi

# --- WebGPU on the small shape -----------------------------------------------------------------------
step info-webgpu 120 "$EBB" info "$small" --ep webgpu
step generate-webgpu 120 "$EBB" --log-level info generate "$small" --ep webgpu \
  --prompt "Once upon a time, a dog" --max-length 48 --json
step seed-loop-webgpu 150 "$EBB" bench "$small" --ep webgpu --scenario seed-loop \
  --iterations "$seed_iters" --warmup 2 --prompt-tokens "$prompt" --gen-tokens "$seed_gen" \
  --json "$OUT/seed-loop-webgpu.json" --csv "$OUT/seed-loop-webgpu.csv"
step rag-webgpu 120 "$EBB" bench "$small" --ep webgpu --scenario rag \
  --iterations "$rag_iters" --warmup 1 --gen-tokens 16 --json "$OUT/rag-webgpu.json"
for mode in lazyRelease bucket simple disabled; do
  step "cache-$mode" 90 "$EBB" bench "$small" --ep webgpu \
    --provider-option "webgpu.storageBufferCacheMode=$mode" --scenario seed-loop \
    --iterations "$mode_iters" --warmup 1 --prompt-tokens "$prompt" --gen-tokens "$gen" \
    --json "$OUT/cache-$mode.json"
done

# --- CPU and WebGPU side by side ---------------------------------------------------------------------
if [ -n "$phi_pid" ]; then  # the CPU figures without the synthesizer on a core
  left=$((DEADLINE - SECONDS - 150))
  while [ ! -f "$WORK/synth-phi.rc" ] && [ "$left" -gt 0 ]; do
    sleep 1
    left=$((left - 1))
  done
fi
pair() {  # pair NAME MODEL TIMEOUT: cpu, webgpu, cpu, webgpu in one process
  step "$1" "$3" "$EBB" bench "$2" --ep cpu --scenario seed-loop --iterations "$pair_iters" \
    --warmup 1 --prompt-tokens "$prompt" --gen-tokens "$gen" \
    --compare seed-loop,execution_provider=webgpu seed-loop seed-loop,execution_provider=webgpu \
    --json "$OUT/$1.json"
}
pair small-cpu-vs-webgpu "$small" 180

if [ -n "$phi_pid" ]; then
  wait "$phi_pid" 2>/dev/null || true
  phi_pid=
  read -r phi_rc phi_s 2>/dev/null <"$WORK/synth-phi.rc" || phi_rc=killed phi_s=0
  if [ "$phi_rc" = 0 ]; then
    record synth-phi ok "$phi_s"
    step phi-cpu-vs-webgpu 240 "$EBB" bench "$phi" --ep cpu --scenario seed-loop --iterations 2 \
      --warmup 1 --prompt-tokens 128 --gen-tokens 64 \
      --compare seed-loop,execution_provider=webgpu --json "$OUT/phi-cpu-vs-webgpu.json"
  else
    record synth-phi "FAILED: exit $phi_rc ($(tail -n 1 "$OUT/synth-phi.err" 2>/dev/null))" \
      "$phi_s"
  fi
fi

# --- summary.txt ----------------------------------------------------------------------------------
log "writing $OUT/summary.txt (${SECONDS}s so far)"
status=0
"$PYTHON" - "$OUT" "$toy" "$SECONDS" "$BUDGET" "$repo" "$small_shape" "$big_shape" <<'EOF' || status=$?
import glob, json, os, re, sys

out, toy, elapsed, budget = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
repo, small_shape, big_shape = sys.argv[5], sys.argv[6], sys.argv[7]
lines, failed = [], []
MiB = 1 << 20


def read(name):
    try:
        with open(os.path.join(out, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def bench(name):
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def mib(b, sign=False):
    if b is None:
        return "-"
    s = "+" if sign and b >= 0 else ("-" if b < 0 else "")
    for unit, size in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if abs(b) >= size:
            return f"{s}{abs(b) / size:.{2 if unit == 'GiB' else 1}f} {unit}"
    return f"{s}{abs(b):.0f} B"


def slope(fit):
    if not fit:
        return "-"
    return (f"{mib(fit['bytes_per_iteration'], sign=True)}/iter +- "
            f"{mib(fit['stderr_bytes_per_iteration'])}")


def ep(run):
    return run["device"]["device"] if run.get("device") else "cpu"


# Every bench report against docs/bench.schema.json, with the tests' validator when the checkout
# has it (tests/http/json_schema_lite.py): a failed validation is a failed step.
schema_errors = []
try:
    sys.path.insert(0, os.path.join(repo, "tests", "http"))
    from json_schema_lite import validate
    with open(os.path.join(repo, "docs", "bench.schema.json")) as f:
        schema = json.load(f)
except (ImportError, OSError, ValueError):
    validate = None
if validate:
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        doc = bench(os.path.basename(path)[:-5])
        if doc and doc.get("tool") == "ebb bench":
            errs = validate(schema, doc)
            if errs:
                schema_errors.append(f"{os.path.basename(path)}: {len(errs)} schema errors, first: {errs[0]}")
with open(os.path.join(out, "steps.tsv"), "a") as f:
    for e in schema_errors:
        f.write(f"schema\tFAILED: {e}\t0\n")

steps = [l.split("\t") for l in read("steps.tsv").splitlines() if l.strip()]
failed = [s for s in steps if not s[1].startswith("ok")]

lines.append(f"ebb gpu_check ({'toy' if toy else 'full'} scale): {len(steps) - len(failed)}/{len(steps)} "
             f"steps ok, {elapsed} s of a {budget} s budget")
lines.append(read("machine.txt").splitlines()[1] if read("machine.txt") else "")
lines.append("bench reports against docs/bench.schema.json: " +
             ("not checked (no tests/http/json_schema_lite.py)" if not validate else
              f"{len(schema_errors)} invalid" if schema_errors else "all valid"))
lines.append("")
lines.append("adapter (ebb --version; * = the one WebGPU uses):")
adapters = [l for l in read("version.out").splitlines() if l.startswith(("vulkan:", "  "))]
lines += ["  " + l.strip() for l in adapters] or ["  (none printed)"]
lines.append("vulkan setup: " + "; ".join(l.strip() for l in read("vulkan.txt").splitlines()[:4]))
kv_on = [re.sub(r"^\[[^]]*\] \[ebb\] \[info\] ", "", l) for l in read("generate-webgpu.err").splitlines()
         if "KV on" in l]
lines += ["log: " + l for l in kv_on[:2]]
smi = read("nvidia-smi.out").strip().splitlines()
if smi:
    lines.append("nvidia-smi: " + " | ".join(smi[1:]))
fb = re.search(r"FB Memory Usage\s*\n((?:\s+\w[^\n]*\n){1,4})", read("nvidia-smi-memory.out"))
if fb:
    lines.append("nvidia-smi FB memory: " + ", ".join(" ".join(l.split()) for l in fb.group(1).splitlines()))
lines.append("")

kv_ok = True
lines.append("device memory per iteration (WebGPU; 'after' = once each generator is destroyed):")
for name in ("seed-loop-webgpu", "rag-webgpu"):
    for l in read(name + ".out").splitlines():
        if l.startswith("device ") and "KV in use after" in l:
            lines.append("  " + name + ": " + l)
    b = bench(name)
    if not b:
        lines.append(f"  {name}: no report")
        continue
    for r in b["runs"]:
        s, d = r["summary"], r["summary"].get("device")
        rss = s["slopes"]["rss_after"]
        lines.append(f"  {name}: {s['measured_iterations']} iterations; RSS after {slope(rss)} "
                     f"(moved {s['rss_after_steps']['changed']}/{s['rss_after_steps']['intervals']}), "
                     f"peak RSS {mib(s['peak_rss_bytes'])}")
        if not d:
            lines.append(f"  {name}: NO device figures (did the model run on the CPU?)")
            kv_ok = False
            continue
        if d["kv_back_to_zero"] is False:
            kv_ok = False
        its = [i for i in r["iterations"] if not i["warmup"]]
        drv = [i["memory_after"]["device_driver_process_bytes"] for i in its]
        drv_txt = "not reported (no NVML)" if drv[0] is None else (
            f"{mib(drv[0])} -> {mib(drv[-1])}, {slope(d['slopes']['driver_process_after'])}, "
            f"peak {mib(d['peak_driver_process_bytes'])}")
        lines.append(f"  {name}: device KV 0 after {d['kv_zero_after']}/{d['iterations']} generators "
                     f"(peak in use {mib(d['peak_kv_in_use_bytes'])}); ebb's device bytes "
                     f"{mib(its[0]['memory_after']['device_used_bytes'])} -> "
                     f"{mib(its[-1]['memory_after']['device_used_bytes'])} ({slope(d['slopes']['used_after'])}); "
                     f"driver process bytes {drv_txt}")
lines.append("")

lines.append("WebGPU storageBufferCacheMode (each in its own process; seed loop):")
lines.append(f"  {'mode':<12} {'in force':<12} {'decode tok/s':>12} {'ttft p50':>10} {'RSS slope':>26} "
             f"{'peak RSS':>12} {'driver bytes after (first -> last, slope)':>44}")
for mode in ("lazyRelease", "bucket", "simple", "disabled"):
    b = bench("cache-" + mode)
    if not b:
        lines.append(f"  {mode:<12} no report")
        continue
    r = b["runs"][0]
    s, d = r["summary"], r["summary"].get("device") or {}
    its = [i for i in r["iterations"] if not i["warmup"]]
    drv = [i["memory_after"]["device_driver_process_bytes"] for i in its]
    drv_txt = "-" if not drv or drv[0] is None else (
        f"{mib(drv[0])} -> {mib(drv[-1])}, {slope((d.get('slopes') or {}).get('driver_process_after'))}")
    if d.get("kv_back_to_zero") is False:
        kv_ok = False
    lines.append(f"  {mode:<12} {(r.get('device') or {}).get('cache_mode', 'cpu?'):<12} "
                 f"{s['tps']['p50']:>12.1f} {s['ttft_s']['p50'] * 1e3:>8.1f}ms "
                 f"{slope(s['slopes']['rss_after']):>26} {mib(s['peak_rss_bytes']):>12} {drv_txt:>44}")
lines.append("")


def side_by_side(name, title):
    b = bench(name)
    lines.append(title)
    if not b:
        lines.append("  no report")
        return
    by = {}
    lines.append(f"  {'run':<44} {'ep':<10} {'ttft p50':>10} {'prefill tok/s':>14} {'decode tok/s':>13} "
                 f"{'peak RSS':>12}")
    for r in b["runs"]:
        s = r["summary"]
        its = [i for i in r["iterations"] if not i["warmup"]]
        prompt = its[0]["prompt_tokens"] if its else 0
        ttft = s["ttft_s"]["p50"]
        prefill = prompt / ttft if ttft > 0 else 0
        by.setdefault(ep(r), []).append((ttft, prefill, s["tps"]["p50"]))
        lines.append(f"  {r['name']:<44} {ep(r):<10} {ttft * 1e3:>8.1f}ms {prefill:>14.1f} "
                     f"{s['tps']['p50']:>13.1f} {mib(s['peak_rss_bytes']):>12}")
    if "cpu" in by and len(by) > 1:
        def med(v):
            v = sorted(v)
            return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
        cpu = [med([x[k] for x in by["cpu"]]) for k in range(3)]
        for dev, vals in by.items():
            if dev == "cpu":
                continue
            g = [med([x[k] for x in vals]) for k in range(3)]
            ratio = lambda a, b: f"{a / b:.2f}x" if b else "-"
            lines.append(f"  {dev} vs cpu (medians over the runs): prefill {ratio(g[1], cpu[1])}, "
                         f"decode {ratio(g[2], cpu[2])}, ttft {ratio(g[0], cpu[0])}")


side_by_side("small-cpu-vs-webgpu", f"CPU and WebGPU, {small_shape} shape (int4), alternating in one process:")
if big_shape:
    lines.append("")
    side_by_side("phi-cpu-vs-webgpu", f"CPU and WebGPU, {big_shape} shape (int4):")
lines.append("")

if failed:
    lines.append("failed steps:")
    lines += [f"  {s[0]}: {s[1]} ({s[2]} s)" for s in failed]
else:
    lines.append("failed steps: none")
lines.append("RESULT: " + ("PASS" if not failed and kv_ok else "FAIL") +
             ("" if kv_ok else " (device KV not back to 0 after every generator, or no device figures)"))
with open(os.path.join(out, "summary.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
sys.exit(0 if not failed and kv_ok else 1)
EOF
if [ -f "$OUT/summary.txt" ]; then
  cat "$OUT/summary.txt"
else
  echo "gpu_check: no summary.txt (python3 failed); steps:" >&2
  cat "$OUT/steps.tsv" >&2
  status=1
fi
exit "$status"
