#!/usr/bin/env python3
"""Checks that dependencies between ebb's source folders point down (docs/architecture.md).

Each folder under src/ has a band; a file may include headers of its own folder, of folders in
a lower band, and the public headers in include/ebb/. Folders of one band may not include each
other (each part stands alone). Public headers may include only other public headers and must
not expose ebb's internals (no `internal::`, no impl()). Prints every violation and exits 1 when
there is one; exits 2 when a folder has no band (add it to BANDS).
"""
import pathlib
import re
import sys

# Lowest first. Keep in step with docs/architecture.md.
BANDS = {
    "core": 0,
    "ort": 1, "kv": 1, "memory": 1, "tokenizer": 1, "template": 1,
    "model": 2,
    "generate": 3, "embed": 3,
    "runtime": 4,
    "cli": 5, "bench": 5, "c_api": 5, "server": 5, "python": 5,
}
# Surfaces may use one another's helpers where one is built into the other (the bench harness is
# linked into the CLI).
ALLOWED_SAME_BAND = {("cli", "bench"), ("cli", "server")}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(root: pathlib.Path) -> int:
    problems = []
    src = root / "src"
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
                top = inc.split("/")[0]
                if top == "ebb" or top == name or "/" not in inc:
                    continue
                if top not in BANDS:
                    continue  # generated or third-party paths
                if BANDS[top] > BANDS[name]:
                    problems.append(f"{f.relative_to(root)} includes \"{inc}\": src/{top}/ "
                                    f"(band {BANDS[top]}) is above src/{name}/ (band {BANDS[name]})")
                elif BANDS[top] == BANDS[name] and (name, top) not in ALLOWED_SAME_BAND:
                    problems.append(f"{f.relative_to(root)} includes \"{inc}\": src/{top}/ and "
                                    f"src/{name}/ are in the same band {BANDS[name]}")
    for h in sorted((root / "include" / "ebb").glob("*.h")):
        text = h.read_text(errors="replace")
        for inc in INCLUDE.findall(text):
            if not inc.startswith("ebb/"):
                problems.append(f"{h.relative_to(root)} includes \"{inc}\": public headers may "
                                "include only ebb/ headers")
        code = re.sub(r"//[^\n]*", "", text)
        if "internal::" in code or re.search(r"\bnamespace\s+internal\b", code):
            problems.append(f"{h.relative_to(root)} exposes ebb's internals (internal::)")
        if re.search(r"\bimpl\s*\(\s*\)", code):
            problems.append(f"{h.relative_to(root)} exposes impl()")
    for p in problems:
        print("layering:", p)
    print(f"check_layers: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
