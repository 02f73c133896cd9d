#!/usr/bin/env python3
"""Renders chat templates with the reference Jinja2 implementation, the way Hugging Face
transformers' `apply_chat_template` does, to produce the expected outputs that ebb's own
Jinja-subset interpreter (src/template/) is tested against.

Environment (mirrors transformers.utils.chat_template_utils._compile_jinja_template):
  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[jinja2.ext.loopcontrols])
  filters["tojson"]  = json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)
  globals["raise_exception"](msg) raises TemplateError(msg)
  globals["strftime_now"](fmt)    formats a FIXED clock (--now) so outputs are reproducible
Render context (mirrors apply_chat_template): messages, tools (None unless given),
documents (None unless given), add_generation_prompt, then the case's extra variables
(bos_token, eos_token, tools_in_user_message, ...), which override.

Usage:
  /usr/bin/python3 tools/render_chat_template.py --cases tests/template/data/cases.json \
      --out-dir tests/template/data/expected
  /usr/bin/python3 tools/render_chat_template.py --template T.jinja --context ctx.json
Reference used for the committed outputs: Debian 12 python3-jinja2 3.1.2.
"""
import argparse
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

DEFAULT_NOW = "2024-07-26T12:00:00"


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(source, context, now):
    env = make_env(now)
    ctx = {"messages": context.get("messages", []), "tools": None, "documents": None,
           "add_generation_prompt": bool(context.get("add_generation_prompt", False))}
    for k, v in context.items():
        if k not in ("messages", "add_generation_prompt"):
            ctx[k] = v
    return env.from_string(source).render(**ctx)


def run_cases(cases_path, out_dir):
    base = os.path.dirname(os.path.abspath(cases_path))
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    os.makedirs(out_dir, exist_ok=True)
    for case in cases:
        if "template" in case:
            with open(os.path.join(base, case["template"]), encoding="utf-8", newline="") as f:
                source = f.read()
        else:
            source = case["source"]
        now = datetime.datetime.fromisoformat(case.get("now", DEFAULT_NOW))
        out_ok = os.path.join(out_dir, case["name"] + ".txt")
        out_err = os.path.join(out_dir, case["name"] + ".error.txt")
        for p in (out_ok, out_err):
            if os.path.exists(p):
                os.remove(p)
        try:
            text = render(source, case.get("context", {}), now)
            path = out_ok
        except jinja2.exceptions.TemplateError as e:  # raise_exception and jinja errors
            text = str(e)
            path = out_err
        except Exception as e:  # noqa: BLE001 - Python errors in the template (TypeError, ...)
            text = f"{type(e).__name__}: {e}"
            path = out_err
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        print(f"{case['name']}: {'ok' if path == out_ok else 'error: ' + text}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="cases.json to render (writes <name>.txt or .error.txt)")
    ap.add_argument("--out-dir", help="output folder for --cases")
    ap.add_argument("--template", help="a single .jinja template file")
    ap.add_argument("--context", help="JSON file with messages, add_generation_prompt, ...")
    ap.add_argument("--now", default=DEFAULT_NOW, help="fixed clock for strftime_now (ISO)")
    args = ap.parse_args()
    print(f"jinja2 {jinja2.__version__}", file=sys.stderr)
    if args.cases:
        run_cases(args.cases, args.out_dir or os.path.join(os.path.dirname(args.cases), "expected"))
        return
    if not args.template:
        ap.error("give --cases or --template")
    with open(args.template, encoding="utf-8", newline="") as f:
        source = f.read()
    context = {}
    if args.context:
        with open(args.context, encoding="utf-8") as f:
            context = json.load(f)
    sys.stdout.write(render(source, context, datetime.datetime.fromisoformat(args.now)))


if __name__ == "__main__":
    main()
