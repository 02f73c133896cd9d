#!/usr/bin/env python3
"""Checks that dependencies between ebb's source folders point down (docs/architecture.md).

Each folder under src/ has a band; a file may include headers of its own folder and of folders
in a lower band. Folders of one band may not include each other (each part stands alone).
Each public header in include/ebb/ has the band of the src/ folder that implements it
(PUBLIC_HEADERS): a public header may include only public headers of its own folder or of a lower
band, and a src/ file may include a public header only when that header's folder is its own or
in a lower band (a ModelImpl that includes ebb/runtime.h points up as surely as one that
includes runtime/). Public headers must not expose ebb's internals (no `internal::`, no impl()).
Surfaces outside src/ built on the public API alone (PUBLIC_API_ONLY: genai/, python/src/,
bench/llamacpp/) may include no src/ header; the root bench/ measures the parts and may include any.
Definitions are checked too: a class's members, or an exported function (by name and first
parameter type), defined in a src/ folder of a higher band than the header that declares them is
an upward dependency the includes do not show; and a friend may not cross a band.
Prints every violation and exits 1 when there is one; exits 2 when a folder or a public header
has no band (add it to BANDS or PUBLIC_HEADERS).
"""
import pathlib
import re
import sys

# Lowest first. Keep in step with docs/architecture.md.
BANDS = {
    "platform": 0,
    "core": 1,
    "ort": 2, "kv": 2, "memory": 2, "tokenizer": 2, "template": 2, "constrain": 2,
    # ebb's ORT custom ops (libebb_cpu_ops.so, and compiled into libebb): include ORT and platform/.
    "cpu_ops": 2,
    "model": 3,
    "generate": 4, "embed": 4,
    "runtime": 5,
    "cli": 6, "bench": 6, "c_api": 6, "server": 6, "python": 6,
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
    "process_memory.h": "memory", "version.h": "ort", "tokenizer.h": "tokenizer", "chat_template.h": "template",
    "model.h": "model",
    # Model::runtime(); implemented in src/model/model_controls.cpp.
    # former name, a header that includes it.
    "model_controls.h": "model",
    "generator.h": "generate", "generation.h": "generate", "embedding.h": "embed",
    "runtime.h": "runtime", "model_manager.h": "runtime", "json.h": "runtime", "service.h": "runtime",
    "ebb.h": "c_api",
}

# Surfaces outside src/ that are built on the public API alone: a project header they include
# with a folder must be a public one (ebb/...); their own headers they include without one.
PUBLIC_API_ONLY = ["genai", "python/src", "bench/llamacpp"]

# The root bench/ measures ebb's parts (a kernel, the pool, the batcher), so its files may include
# any src/ folder; it is above every band (nothing in src/ may include it). Its probe against
# llama.cpp, bench/llamacpp/, uses ebb as a user does (PUBLIC_API_ONLY).
BENCH_BAND = max(BANDS.values()) + 1

# Internal headers only some folders may include, whatever their band: ModelImpl (the whole state of
# a loaded model) is for model/ and, until they go through narrow views (issue 38), the generator,
# the embedder and the runtime's registry. The surfaces (cli/, server/, c_api/, bench/) never.
# Headers only their own folder may include: ModelImpl is model/'s; generate/, embed/ and
# runtime/ see a model through the views of model/model_views.h (issue 38).
PRIVATE_HEADERS = {"model/model_impl.h": {"model"}}

# System headers only src/platform/ may include (docs/architecture.md "The platform seam"): the
# calls into the operating system live behind platform/'s interfaces, so a port is one folder.
OS_HEADERS = {
    "unistd.h", "fcntl.h", "dirent.h", "dlfcn.h", "malloc.h", "netdb.h", "poll.h", "pwd.h",
    "sched.h", "signal.h", "csignal", "termios.h", "spawn.h", "strings.h",
    "sys/mman.h", "sys/epoll.h", "sys/stat.h", "sys/file.h", "sys/resource.h", "sys/syscall.h",
    "sys/socket.h", "sys/eventfd.h", "sys/ioctl.h", "sys/wait.h", "sys/prctl.h", "sys/sysinfo.h",
    "sys/statvfs.h", "sys/un.h", "sys/utsname.h", "sys/uio.h", "sys/types.h", "sys/time.h",
    "arpa/inet.h", "netinet/in.h", "netinet/tcp.h",
}
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>', re.M)
# A string literal that starts with a /proc or /sys path: a read of the kernel's files.
PROC_PATH = re.compile(r'"/(?:proc|sys)(?:/|")')

# Namespaces, never classes: skipped when finding the class a qualified definition belongs to.
NAMESPACES = {"ebb", "internal", "std", "detail", "proto", "onnx", "Ort", "httplib", "nlohmann"}

# A class or struct declaration with a body or a base (not a forward declaration).
CLASS_DECL = re.compile(r"^\s*(?:template\s*<[^>]*>\s*)?(?:class|struct)\s+(?:EBB_API\s+)?(\w+)"
                        r"(?:\s+final)?\s*[:{]", re.M)
# An exported free function of a public header: EBB_API, a return type, the name, "(".
API_FUNCTION = re.compile(r"^EBB_API\s+[^;()]*?\b(\w+)\s*\(([^,)]*)", re.M)
# A definition at namespace scope: an unindented line with a qualified name and "(" (its return
# type, if any, before it), or an exported function's name. A call or a declaration at namespace
# scope does not take that form (a call is indented; a declaration is not qualified).
QUALIFIED_DEF = re.compile(r"^(?![ \t#/}])[^=;()\n]*?\b((?:\w+::)+)(~?\w+)\s*\(", re.M)
FREE_DEF = re.compile(r"^(?![ \t#/}])[^=;()\n]*?(?<!:)\b(\w+)\s*\(([^,;{)]*)[^;{]*\)[^;{]*\{",
                      re.M)
FRIEND_CLASS = re.compile(r"\bfriend\s+(?:class|struct)\s+(\w+)\s*;")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def overload(name, first_param):
    """An exported function's key: its name and its first parameter's type (overloads of ToJson
    are declared in different headers), e.g. "ToJson(const MemoryStats&)"."""
    p = first_param.split("=")[0].strip()
    p = re.sub(r"(?<=[\w&*>])\s+\w+$", "", p) if re.search(r"[\s&*>]\w+$", p) else p
    p = "" if p == "void" else re.sub(r"\s+", " ", p).replace(" &", "&").replace(" *", "*")
    return f"{name}({p})"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def namespaces_at(text):
    """A function of a position in `text` (comments stripped) giving the names of the scopes
    around it ("" for an anonymous namespace, None for any other brace), outermost first."""
    events = []  # (position, scope pushed, or False for a pop)
    i, n = 0, len(text)
    ns = re.compile(r"namespace\s*([\w:]*)\s*\{")
    while i < n:
        c = text[i]
        if c == 'R' and text.startswith('R"', i):  # raw string: R"d( ... )d"
            j = text.find("(", i)
            end = text.find(")" + text[i + 2:j] + '"', j)
            i = n if end < 0 else end + j - i
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "n":
            m = ns.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                events.append((m.end(), m.group(1)))
                i = m.end()
                continue
        if c == "{":
            events.append((i + 1, None))
        elif c == "}":
            events.append((i + 1, False))
        i += 1

    def at(pos):
        stack = []
        for p, e in events:
            if p > pos:
                break
            if e is False:
                if stack:
                    stack.pop()
            else:
                stack.append(e)
        return stack
    return at


def check_definitions(root, problems):
    """A class's members, or an exported function, defined in a higher band than the header that
    declares them (Model::Load, declared in ebb/model.h, band 2, defined in src/runtime/, band 4,
    hid an upward dependency from the include check); and a friend that crosses a band."""
    src = root / "src"
    declared = {}  # class name -> (band, header); a name declared in several bands takes the highest
    functions = {}  # exported free function -> (band, header)

    def declare(table, name, band, where):
        if name not in table or table[name][0] < band:
            table[name] = (band, where)

    headers = []
    for h in sorted((root / "include" / "ebb").glob("*.h")):
        headers.append((h, BANDS[PUBLIC_HEADERS[h.name]]))
    for folder in sorted(p for p in src.iterdir() if p.is_dir() and p.name in BANDS):
        for h in sorted(folder.rglob("*.h")):
            headers.append((h, BANDS[folder.name]))
    for h, band in headers:
        text = strip_comments(h.read_text(errors="replace"))
        rel = str(h.relative_to(root))
        for name in CLASS_DECL.findall(text):
            declare(declared, name, band, rel)
        if h.parent.name == "ebb":
            for name, first in API_FUNCTION.findall(text):
                declare(functions, overload(name, first), band, rel)
    for h, band in headers:
        for name in FRIEND_CLASS.findall(strip_comments(h.read_text(errors="replace"))):
            if name in declared and declared[name][0] != band:
                problems.append(f"{h.relative_to(root)} makes {name} ({declared[name][1]}, band "
                                f"{declared[name][0]}) a friend: a friend may not cross a band")
    for folder in sorted(p for p in src.iterdir() if p.is_dir() and p.name in BANDS):
        band = BANDS[folder.name]
        for f in sorted(folder.rglob("*.cpp")):
            text = strip_comments(f.read_text(errors="replace"))
            found = set()
            for quals, name in QUALIFIED_DEF.findall(text):
                cls = next((q for q in quals.split("::")[:-1] if q not in NAMESPACES), None)
                if cls in declared and declared[cls][0] < band:
                    found.add((f"{cls}::{name}", declared[cls]))
            scopes = None
            for m in FREE_DEF.finditer(text):
                name = overload(m.group(1), m.group(2))
                if name in functions and functions[name][0] < band:
                    # Only a definition in namespace ebb itself is the declared function (a
                    # file's own helper may share its name).
                    scopes = scopes or namespaces_at(text)
                    if scopes(m.start(1)) == ["ebb"]:
                        found.add((name, functions[name]))
            for what, (hband, header) in sorted(found):
                problems.append(f"{f.relative_to(root)} defines {what}, declared in {header} "
                                f"(band {hband}) below src/{folder.name}/ (band {band}): move "
                                "the definition down or the declaration up")


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
        if inc in PRIVATE_HEADERS and name not in PRIVATE_HEADERS[inc]:
            problems.append(f"{f.relative_to(root)} includes \"{inc}\": only "
                            f"{', '.join(sorted(PRIVATE_HEADERS[inc]))}/ may (a narrow header "
                            "declares what others need)")
            return
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
    check_definitions(root, problems)
    for f in sorted((root / "bench").glob("*")) if (root / "bench").is_dir() else []:
        if f.suffix not in (".h", ".cpp", ".inc"):
            continue
        for inc in INCLUDE.findall(f.read_text(errors="replace")):
            top = inc.split("/")[0]
            if "/" in inc and top not in BANDS and top != "ebb" and not (root / "bench" / inc).exists():
                problems.append(f"{f.relative_to(root)} includes \"{inc}\": no such part of ebb")
    # The platform seam: OS headers and /proc or /sys paths only in src/platform/.
    for base in (src, root / "include", root / "python" / "src"):
        for f in sorted(base.rglob("*")) if base.is_dir() else []:
            if f.suffix not in (".h", ".cpp", ".c", ".inc") or "platform" in f.relative_to(root).parts[:2]:
                continue
            text = f.read_text(errors="replace")
            for inc in SYSTEM_INCLUDE.findall(text):
                if inc in OS_HEADERS:
                    problems.append(f"{f.relative_to(root)} includes <{inc}>: only src/platform/ "
                                    "calls the operating system (add what you need to a "
                                    "platform/ interface)")
            code = re.sub(r"//[^\n]*", "", text)
            if PROC_PATH.search(code):
                problems.append(f"{f.relative_to(root)} names a /proc or /sys path: only "
                                "src/platform/ reads the kernel's files")
    # A private header stays private outside src/ too: the root bench/ and the tests use the
    # narrow headers (model/model_views.h), as the folders above model/ do.
    for top in ("bench", "tests"):
        base = root / top
        for f in sorted(base.rglob("*")) if base.is_dir() else []:
            if f.suffix not in (".h", ".cpp", ".inc") or "node_modules" in f.parts:
                continue
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                if inc in PRIVATE_HEADERS:
                    problems.append(f"{f.relative_to(root)} includes \"{inc}\": only "
                                    f"{', '.join(sorted(PRIVATE_HEADERS[inc]))}/ may (a narrow "
                                    "header declares what others need)")
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
