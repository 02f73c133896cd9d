#!/usr/bin/env bash
# Points scripts/bootstrap at a corrupted local tarball and checks that it fails with a clear
# message and leaves no extracted runtime behind. No network is used.
set -u
bootstrap="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
head -c 4096 /dev/urandom >"$work/tampered.tgz"
out="$(EBB_SKIP_APT=1 EBB_DEPS_DIR="$work/deps" EBB_ORT_TARBALL="$work/tampered.tgz" \
       bash "$bootstrap" 2>&1)"
rc=$?
fail() { echo "FAIL: $1"; echo "--- bootstrap output ---"; echo "$out"; exit 1; }
[ $rc -ne 0 ] || fail "bootstrap accepted a tampered tarball"
grep -q "integrity mismatch" <<<"$out" || fail "message does not say 'integrity mismatch'"
grep -q "fix:" <<<"$out" || fail "message does not name a fix"
[ ! -e "$work/deps/onnxruntime" ] || fail "left $work/deps/onnxruntime behind"
leftover="$(find "$work/deps" -mindepth 1 -maxdepth 1 -name '.tmp.*' 2>/dev/null)"
[ -z "$leftover" ] || fail "left temporary folders: $leftover"

# The same for the library's tarball (onnxruntime-node), checked before anything is fetched.
out="$(EBB_SKIP_APT=1 EBB_DEPS_DIR="$work/deps" EBB_ORT_LIB_TARBALL="$work/tampered.tgz" \
       bash "$bootstrap" 2>&1)"
[ $? -ne 0 ] || fail "bootstrap accepted a tampered library tarball"
grep -q "integrity mismatch for $work/tampered.tgz (onnxruntime-node@1.30.0)" <<<"$out" ||
  fail "library tarball: message does not say 'integrity mismatch' and name the package"
[ ! -e "$work/deps/onnxruntime" ] || fail "left $work/deps/onnxruntime behind (library tarball)"
leftover="$(find "$work/deps" -mindepth 1 -maxdepth 1 -name '.tmp.*' 2>/dev/null)"
[ -z "$leftover" ] || fail "left temporary folders: $leftover"
out="$(EBB_SKIP_APT=1 EBB_DEPS_DIR="$work/deps" EBB_ORT_LIB_TARBALL="$work/nope.tgz" bash "$bootstrap" 2>&1)"
[ $? -ne 0 ] || fail "bootstrap accepted a missing library tarball"
grep -q "EBB_ORT_LIB_TARBALL=$work/nope.tgz is not a readable file" <<<"$out" ||
  fail "missing library tarball: unclear message"

# A missing tarball is a clear error too.
out="$(EBB_SKIP_APT=1 EBB_DEPS_DIR="$work/deps" EBB_ORT_TARBALL="$work/nope.tgz" bash "$bootstrap" 2>&1)"
[ $? -ne 0 ] || fail "bootstrap accepted a missing tarball"
grep -q "not a readable file" <<<"$out" || fail "missing tarball: unclear message"

# EBB_ORT_ROOT pointing at a folder without ORT is refused with the fix named.
mkdir -p "$work/fake/include" "$work/fake/lib"
out="$(EBB_SKIP_APT=1 EBB_ORT_ROOT="$work/fake" bash "$bootstrap" 2>&1)"
[ $? -ne 0 ] || fail "bootstrap accepted an EBB_ORT_ROOT without ORT"
grep -q "onnxruntime_cxx_api.h" <<<"$out" || fail "EBB_ORT_ROOT: unclear message"
echo "PASS"
