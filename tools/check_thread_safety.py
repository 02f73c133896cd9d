#!/usr/bin/env python3
"""Clang's thread-safety analysis over ebb's library and tests (`make thread-safety`).

Runs `clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety` on the C++ files of a CMake
build tree's compile_commands.json (the Debug build: the library, the CLI, the server and the
tests) that include src/core/thread_annotations.h, in parallel: the analysis can report nothing
in a file that sees no annotation. Which files those are comes from the build's own dependency
records (`ninja -t deps`, so the tree must have been built, as CI's `make test` has); without
them, or with --all, every file is checked. Compile only: nothing is generated, linked or run. The annotations (GUARDED_BY, REQUIRES, ...) are in src/core/thread_annotations.h;
GCC builds see none of them. Only thread-safety diagnostics fail the check: other clang
warnings are GCC's business in the real builds.

  tools/check_thread_safety.py [BUILD_DIR] [-j N] [--all]   (default build/debug, N = cores)
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


def annotated_sources(build_dir):
    """Sources whose objects depend on thread_annotations.h, from ninja's deps log; None when
    the log has no record of it (not built yet, or not a Ninja tree)."""
    try:
        out = subprocess.run(["ninja", "-C", str(build_dir), "-t", "deps"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    objects, obj, any_header = set(), None, False
    for line in out.splitlines():
        if line and not line.startswith(" "):
            obj = line.split(":")[0]
        elif line.strip().endswith("core/thread_annotations.h"):
            objects.add(obj)
            any_header = True
    return objects if any_header else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir", nargs="?", default="build/debug")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--all", action="store_true", help="every file, not only annotated ones")
    a = ap.parse_args()
    clang = shutil.which("clang++")
    db = pathlib.Path(a.build_dir) / "compile_commands.json"
    if clang is None or not db.exists():
        print(f"check_thread_safety: need clang++ ({clang}) and {db} (configure the build first)",
              file=sys.stderr)
        return 2
    entries = [e for e in json.loads(db.read_text())
               if e["file"].endswith((".cpp", ".cc")) and "/_deps/" not in e["file"]]
    objects = None if a.all else annotated_sources(a.build_dir)
    if objects is not None:
        # compile_commands.json's "output" is the object, relative to the build directory.
        entries = [e for e in entries if e.get("output") in objects or
                   any(f" -o {o} " in f" {e.get('command', '')} " for o in objects)]

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
