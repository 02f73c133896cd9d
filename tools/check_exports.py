#!/usr/bin/env python3
"""Checks libebb.so's dynamic symbol table: it exports the public API and nothing else.

Allowed: C symbols `ebb_*` (the C ABI) and C++ symbols in namespace `ebb` (with their typeinfo
and vtables), never `ebb::internal`. Weak symbols (template instantiations of the standard
library, which libstdc++ gives default visibility) are ignored unless they are ebb's internals.
Usage: check_exports.py LIBEBB_SO. Exits 1 listing what should not be there.
"""
import subprocess
import sys


def main(lib):
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        check=True).stdout.splitlines()
    raw = [l.split(maxsplit=2) for l in nm if len(l.split(maxsplit=2)) == 3]
    names = subprocess.run(["c++filt"], input="\n".join(r[2] for r in raw), capture_output=True,
                           text=True, check=True).stdout.splitlines()
    bad = []
    public = 0
    for (addr, kind, mangled), name in zip(raw, names):
        if "ebb::internal" in name:
            bad.append(name)
            continue
        if kind in ("W", "V", "u", "w", "v"):
            continue
        if mangled.startswith("ebb_") or name.startswith("ebb::") or " for ebb::" in name:
            public += 1
            continue
        bad.append(f"{name} ({kind})")
    for b in bad:
        print("unexpected export:", b[:200])
    print(f"check_exports: {public} public symbols, {len(bad)} unexpected")
    return 1 if bad or public == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
