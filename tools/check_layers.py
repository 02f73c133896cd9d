#!/usr/bin/env python3
"""Checks that dependencies between ebb's source folders point down (docs/architecture.md).

Each folder under src/ has a band; a file may include headers of its own folder and of folders
in a lower band. Folders of one band may not include each other (each part stands alone).
Each public header in include/ebb/ has the band of the src/ folder that implements it
(PUBLIC_HEADERS): a public header may include only public headers of its own folder or of a lower
band, and a src/ file may include a public header only when that header's folder is its own or
in a lower band (a ModelImpl that includes ebb/runtime.h points up as surely as one that
includes runtime/). Public headers must not expose ebb's internals (no `internal::`, no impl()).
Surfaces outside src/ built on the public API alone (PUBLIC_API_ONLY: genai/) may include no src/
header. Prints every violation and exits 1 when there is one; exits 2 when a folder or a public header
has no band (add it to BANDS or PUBLIC_HEADERS).
"""
import pathlib
import re
import sys

# Lowest first. Keep in step with docs/architecture.md.
BANDS = {
    "core": 0,
    "ort": 1, "kv": 1, "memory": 1, "tokenizer": 1, "template": 1, "constrain": 1,
    "model": 2,
    "generate": 3, "embed": 3,
    "runtime": 4,
    "cli": 5, "bench": 5, "c_api": 5, "server": 5, "python": 5,
}
# Surfaces may use one another's helpers where one is built into the other (the bench harness is
# linked into the CLI).
ALLOWED_SAME_BAND = {("cli", "bench"), ("cli", "server")}

# Each public header and the src/ folder that implements it (its band is that folder's). Keep in
# step with docs/architecture.md. Two are filed by what they declare, not (yet) by where their
# code is, each noted: moving the code is issue 22's work, and the check then holds unchanged.
PUBLIC_HEADERS = {
    "export.h": "core", "error.h": "core", "log.h": "core", "options.h": "core",
    "observer.h": "core",
    # Value types of the base vocabulary (ort/ and memory/ both fill them); ReadProcessMemory and
    # the ToJson overloads are implemented in src/memory/process_memory.cpp.
    "stats.h": "core",
    "version.h": "ort", "tokenizer.h": "tokenizer", "chat_template.h": "template",
    "model.h": "model",
    # Model::controls(); implemented in src/model/model_controls.cpp. runtime_handle.h is its
    # former name, a header that includes it.
    "model_controls.h": "model", "runtime_handle.h": "model",
    "generator.h": "generate", "generation.h": "generate", "embedding.h": "embed",
    "runtime.h": "runtime", "model_manager.h": "runtime",
    "ebb.h": "c_api",
}

# Surfaces outside src/ that are built on the public API alone: a project header they include
# with a folder must be a public one (ebb/...); their own headers they include without one.
PUBLIC_API_ONLY = ["genai"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root: pathlib.Path) -> int:
    problems = []
    src = root / "src"
    for h in sorted((root / "include" / "ebb").glob("*.h")):
        if h.name not in PUBLIC_HEADERS:
            print(f"check_layers: include/ebb/{h.name} has no band; add it to PUBLIC_HEADERS in "
                  f"{__file__} and to docs/architecture.md", file=sys.stderr)
            return 2

    def check(f, name, inc):
        """`f`, of folder `name` (a src/ folder or a public header's), includes `inc`."""
        top = inc.split("/")[0]
        if top == "ebb":
            header = inc[len("ebb/"):]
            top = PUBLIC_HEADERS.get(header)
            if top is None or top == name:
                return  # an unknown ebb/ header fails to compile anyway
            what = f"include/ebb/{header} (implemented in src/{top}/)"
        else:
            if top == name or "/" not in inc or top not in BANDS:
                return  # its own folder, or generated and third-party paths
            what = f"src/{top}/"
        if BANDS[top] > BANDS[name]:
            problems.append(f"{f.relative_to(root)} includes \"{inc}\": {what} (band "
                            f"{BANDS[top]}) is above src/{name}/ (band {BANDS[name]})")
        elif BANDS[top] == BANDS[name] and (name, top) not in ALLOWED_SAME_BAND:
            problems.append(f"{f.relative_to(root)} includes \"{inc}\": {what} and "
                            f"src/{name}/ are in the same band {BANDS[name]}")

    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        name = folder.name
        if name not in BANDS:
            print(f"check_layers: src/{name}/ has no band; add it to BANDS in {__file__} and to "
                  "docs/architecture.md", file=sys.stderr)
            return 2
        for f in sorted(folder.rglob("*")):
            if f.suffix not in (".h", ".cpp", ".inc"):
                continue
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                check(f, name, inc)
    for h in sorted((root / "include" / "ebb").glob("*.h")):
        text = h.read_text(errors="replace")
        for inc in INCLUDE.findall(text):
            if not inc.startswith("ebb/"):
                problems.append(f"{h.relative_to(root)} includes \"{inc}\": public headers may "
                                "include only ebb/ headers")
            else:
                check(h, PUBLIC_HEADERS[h.name], inc)
        code = re.sub(r"//[^\n]*", "", text)
        if "internal::" in code or re.search(r"\bnamespace\s+internal\b", code):
            problems.append(f"{h.relative_to(root)} exposes ebb's internals (internal::)")
        if re.search(r"\bimpl\s*\(\s*\)", code):
            problems.append(f"{h.relative_to(root)} exposes impl()")
    for top in PUBLIC_API_ONLY:
        base = root / top
        if not base.is_dir():
            continue
        for f in sorted(base.rglob("*")):
            if f.suffix not in (".h", ".cpp", ".c", ".inc"):
                continue
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                if "/" in inc and inc.split("/")[0] in BANDS:
                    problems.append(f"{f.relative_to(root)} includes \"{inc}\": {top}/ uses only "
                                    "the public API (include/ebb/)")
    for p in problems:
        print("layering:", p)
    print(f"check_layers: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
