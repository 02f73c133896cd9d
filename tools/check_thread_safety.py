#!/usr/bin/env python3
"""Clang's thread-safety analysis over ebb's library and tests (`make thread-safety`).

Runs `clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety` on every C++ file of a CMake
build tree's compile_commands.json (the Debug build: the library, the CLI, the server and the
tests), in parallel. Compile only: nothing is generated, linked or run, so it takes a fraction
of a build. The annotations (GUARDED_BY, REQUIRES, ...) are in src/core/thread_annotations.h;
GCC builds see none of them. Only thread-safety diagnostics fail the check: other clang
warnings are GCC's business in the real builds.

  tools/check_thread_safety.py [BUILD_DIR] [-j N]     (default build/debug, N = cores)
Exits 1 listing the diagnostics, 2 when clang++ or the compile database is missing.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

FLAGS = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
         "-Wno-unknown-warning-option"]


def clang_command(entry, clang):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True  # the object file: nothing is written
        elif a in ("-c", "-Werror") or a.startswith("-Wshadow=") or a.startswith("-fcf-protection"):
            continue  # GCC's -Werror set is for GCC; clang fails on thread-safety only
        else:
            out.append(a)
    return out + FLAGS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir", nargs="?", default="build/debug")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    clang = shutil.which("clang++")
    db = pathlib.Path(a.build_dir) / "compile_commands.json"
    if clang is None or not db.exists():
        print(f"check_thread_safety: need clang++ ({clang}) and {db} (configure the build first)",
              file=sys.stderr)
        return 2
    entries = [e for e in json.loads(db.read_text())
               if e["file"].endswith((".cpp", ".cc")) and "/_deps/" not in e["file"]]

    def run(e):
        r = subprocess.run(clang_command(e, clang), cwd=e["directory"], capture_output=True,
                           text=True)
        return e["file"], r.returncode, r.stderr

    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.j) as pool:
        for f, rc, err in pool.map(run, entries):
            if rc != 0:
                failed.append(f)
                sys.stdout.write(err)
    print(f"check_thread_safety: {len(entries)} file(s), {len(failed)} with errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
