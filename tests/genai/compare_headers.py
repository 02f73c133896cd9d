#!/usr/bin/env python3
"""Checks that ebb's genai/include/ort_genai_c.h declares exactly the functions of genai's own
ort_genai_c.h, with the same parameter types (names and whitespace aside).

Usage: compare_headers.py OURS THEIRS. Exit 0 when they agree, 1 naming each difference."""
import re
import sys


def functions(path):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out = {}
    for ret, name, args in re.findall(
            r"OGA_EXPORT\s+([^;#]*?)\s*OGA_API_CALL\s+(\w+)\s*\(([^;]*?)\)\s*;", text, flags=re.S):
        params = []
        for a in [x.strip() for x in " ".join(args.split()).split(",") if x.strip()]:
            if a == "void":
                continue
            if "(*" in a:  # a function pointer: keep its whole type without the name
                params.append(re.sub(r"\(\*\s*\w*\s*\)", "(*)", re.sub(r"\b\w+\s*\)$", ")", a)))
                continue
            a = re.sub(r"\s*\*\s*", "*", a)
            m = re.match(r"^(.*?[\*\s])(\w+)$", a)
            params.append((m.group(1) if m and m.group(1).strip() not in ("const", "") else a).strip())
        out[name] = (re.sub(r"\s*\*\s*", "*", ret.strip()), tuple(params))
    return out


def main():
    ours, theirs = functions(sys.argv[1]), functions(sys.argv[2])
    problems = [f"missing in ebb's header: {n}" for n in sorted(set(theirs) - set(ours))]
    problems += [f"not in genai's header: {n}" for n in sorted(set(ours) - set(theirs))]
    for n in sorted(set(ours) & set(theirs)):
        if ours[n] != theirs[n]:
            problems.append(f"{n}: ebb {ours[n]} vs genai {theirs[n]}")
    for p in problems:
        print(p)
    print(f"{len(ours)} functions in ebb's header, {len(theirs)} in genai's, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
