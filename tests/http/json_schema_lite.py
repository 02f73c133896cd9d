"""A small JSON-Schema validator for the subset docs/*.schema.json use (the same keywords as
tests/bench/json_schema_lite.h: type, const, enum, required, properties, additionalProperties,
items, minItems, minimum, oneOf, $ref to "#/$defs/..."; $schema, $id, title and description are
annotations). Any other keyword is an error, so a schema cannot silently use one this validator
would skip. Debian's python3 has no jsonschema package; this is what the tests use instead."""

import json
from pathlib import Path

_KNOWN = {"$schema", "$id", "title", "description", "$defs", "$ref", "type", "const", "enum",
          "required", "properties", "additionalProperties", "items", "minItems", "minimum",
          "oneOf"}

SOURCE = Path(__file__).resolve().parents[2]


def load_schema(name):
    """docs/<name> of this source tree."""
    return json.loads((SOURCE / "docs" / name).read_text())


def _has_type(v, t):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    return False


def validate(root, doc, ref=None):
    """The errors of `doc` against `root` (or its "#/$defs/..." `ref`), each prefixed with the
    JSON pointer of the value; [] when it is valid."""
    errors = []

    def resolve(r):
        prefix = "#/$defs/"
        name = r[len(prefix):] if r.startswith(prefix) else None
        if name is None or name not in root.get("$defs", {}):
            errors.append(f"schema: unresolvable $ref {r}")
            return {}
        return root["$defs"][name]

    def check(s, v, at):
        for k in s:
            if k not in _KNOWN:
                errors.append(f"schema: unsupported keyword {k} at {at}")
        if "$ref" in s:
            check(resolve(s["$ref"]), v, at)
        if "type" in s:
            types = [s["type"]] if isinstance(s["type"], str) else s["type"]
            if not any(_has_type(v, t) for t in types):
                errors.append(f"{at}: expected type {s['type']}, got {json.dumps(v)[:200]}")
                return
        if "const" in s and v != s["const"]:
            errors.append(f"{at}: expected {s['const']!r}, got {v!r}")
        if "enum" in s and v not in s["enum"]:
            errors.append(f"{at}: {v!r} is not one of {s['enum']}")
        if ("minimum" in s and _has_type(v, "number") and v < s["minimum"]):
            errors.append(f"{at}: {v} is below the minimum {s['minimum']}")
        if "oneOf" in s:
            matches = 0
            for sub in s["oneOf"]:
                before = len(errors)
                check(sub, v, at)
                matches += len(errors) == before
                del errors[before:]
            if matches != 1:
                errors.append(f"{at}: matches {matches} of oneOf, not 1")
        if isinstance(v, dict):
            for r in s.get("required", []):
                if r not in v:
                    errors.append(f"{at}: missing required {r}")
            for k, child in v.items():
                if k in s.get("properties", {}):
                    check(s["properties"][k], child, f"{at}/{k}")
                elif "additionalProperties" in s:
                    ap = s["additionalProperties"]
                    if ap is False:
                        errors.append(f"{at}: unexpected property {k}")
                    elif isinstance(ap, dict):
                        check(ap, child, f"{at}/{k}")
        if isinstance(v, list):
            if "minItems" in s and len(v) < s["minItems"]:
                errors.append(f"{at}: fewer than {s['minItems']} items")
            if "items" in s:
                for i, item in enumerate(v):
                    check(s["items"], item, f"{at}/{i}")

    check(resolve(ref) if ref else root, doc, "")
    return errors
