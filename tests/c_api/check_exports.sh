#!/bin/sh
# check_exports.sh LIBEBB_SO — libebb's dynamic symbol table is the public API and nothing else:
# every defined, non-weak symbol is a C function ebb_* (include/ebb/ebb.h) or a C++ symbol in
# namespace ebb (vtables, typeinfo and thunks of ebb's classes included), and nothing is in
# ebb::internal (weak symbols included). Prints each offender; exits 1 when there is one.
set -eu
lib=$1
[ -f "$lib" ] || { echo "no such library: $lib" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
syms=$(nm -D --defined-only "$lib") || { echo "nm -D failed on $lib" >&2; exit 2; }
[ -n "$syms" ] || { echo "no dynamic symbols in $lib" >&2; exit 1; }
echo "$syms" | awk '{print $2, $3}' | while read -r type name; do
  demangled=$(echo "$name" | c++filt)
  case "$demangled" in
    *ebb::internal*) echo "exported internal symbol: [$type] $demangled"; continue ;;
  esac
  case "$type" in
    W|w|V|v|u) continue ;;  # weak / unique: inline functions and template instances
  esac
  case "$name" in
    ebb_*|_init|_fini) continue ;;
  esac
  d=$demangled
  for prefix in "vtable for " "typeinfo for " "typeinfo name for " "VTT for " \
                "non-virtual thunk to " "virtual thunk to " "guard variable for "; do
    d=${d#"$prefix"}
  done
  case "$d" in
    ebb::*) ;;
    *) echo "exported non-ebb symbol: [$type] $demangled" ;;
  esac
done > "$out"
n=$(wc -l < "$out")
if [ "$n" -ne 0 ]; then
  cat "$out"
  echo "$n symbol(s) exported that are not the public API (mark them hidden, or EBB_API if public)"
  exit 1
fi
echo "$(echo "$syms" | wc -l) dynamic symbols: all ebb_* or ebb:: (none in ebb::internal)"
