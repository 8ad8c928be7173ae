#!/usr/bin/env python3
"""Checks navkit's provider request bodies against the official SDKs' types.

Usage: validate_bodies.py DIR

DIR holds one JSON request body per file, named `<provider>-<case>.json`
with provider `openai`, `anthropic` or `gemini` (nav-planner's sdk_bodies
test writes them). Each body is checked strictly:

- openai: `openai.types.chat.completion_create_params.
  CompletionCreateParamsNonStreaming` (a TypedDict);
- anthropic: `anthropic.types.message_create_params.
  MessageCreateParamsNonStreaming` (a TypedDict);
- gemini: the REST body of `generateContent`: `contents` as
  `google.genai.types.Content`, `systemInstruction` as `Content`, `tools` as
  `Tool`, `toolConfig` as `ToolConfig`, `generationConfig` as
  `GenerationConfig` (pydantic models with `extra='forbid'`); no other
  top-level keys.

TypedDicts are walked by hand because Python does not check them: every key
must be declared (unknown keys are violations), required keys present,
literals among the allowed values, unions matched by one alternative. Prints
one line per violation and `N passed, N failed`; exits 1 on any violation.
"""

from __future__ import annotations

import collections.abc
import json
import pathlib
import sys
import types
import typing

import typing_extensions

Errors = list[str]

_WRAPPERS = {"Required", "NotRequired", "ReadOnly", "Annotated"}


def _unwrap(tp):
    """Strips Annotated / Required / NotRequired / ReadOnly."""
    while True:
        origin = typing.get_origin(tp)
        name = getattr(origin, "_name", None) or getattr(origin, "__name__", None)
        if origin is typing.Annotated or origin is typing_extensions.Annotated:
            tp = typing.get_args(tp)[0]
        elif name in _WRAPPERS or getattr(tp, "__origin__", None) in (
            typing_extensions.Required,
            typing_extensions.NotRequired,
        ):
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _is_sequence(origin) -> bool:
    if origin in (list, tuple, collections.abc.Iterable, collections.abc.Sequence):
        return True
    return getattr(origin, "__name__", "") == "SequenceNotStr"


def check(value, tp, path: str, errs: Errors) -> None:
    """Appends to `errs` every way `value` does not match the type `tp`."""
    tp = _unwrap(tp)
    if tp is typing.Any or tp is object:
        return
    if tp is type(None) or tp is None:
        if value is not None:
            errs.append(f"{path}: expected null, got {type(value).__name__}")
        return
    if typing_extensions.is_typeddict(tp):
        _check_typeddict(value, tp, path, errs)
        return
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        _check_union(value, typing.get_args(tp), path, errs)
        return
    if origin is typing.Literal or origin is typing_extensions.Literal:
        if value not in typing.get_args(tp):
            errs.append(f"{path}: {value!r} is not one of {list(typing.get_args(tp))}")
        return
    if origin is not None and _is_sequence(origin):
        if not isinstance(value, list):
            errs.append(f"{path}: expected an array, got {type(value).__name__}")
            return
        (item,) = typing.get_args(tp)[:1] or (typing.Any,)
        for i, v in enumerate(value):
            check(v, item, f"{path}[{i}]", errs)
        return
    if origin in (dict, collections.abc.Mapping) or tp in (dict, typing.Dict):
        if not isinstance(value, dict):
            errs.append(f"{path}: expected an object, got {type(value).__name__}")
        return
    if tp is bool:
        if not isinstance(value, bool):
            errs.append(f"{path}: expected a boolean, got {value!r}")
    elif tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            errs.append(f"{path}: expected an integer, got {value!r}")
    elif tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            errs.append(f"{path}: expected a number, got {value!r}")
    elif tp is str:
        if not isinstance(value, str):
            errs.append(f"{path}: expected a string, got {value!r}")
    elif isinstance(tp, type) and tp.__module__ == "builtins":
        if not isinstance(value, tp):
            errs.append(f"{path}: expected {tp.__name__}, got {type(value).__name__}")
    else:
        # A type we cannot check structurally (file inputs, protocols):
        # nothing navkit sends should land here.
        errs.append(f"{path}: cannot check against {tp!r}")


def _check_typeddict(value, tp, path: str, errs: Errors) -> None:
    if not isinstance(value, dict):
        errs.append(f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}")
        return
    hints = typing.get_type_hints(tp, include_extras=True)
    for key in value:
        if key not in hints:
            errs.append(f"{path}: unknown key `{key}` ({tp.__name__} has {sorted(hints)})")
    for key in getattr(tp, "__required_keys__", ()):
        if key not in value:
            errs.append(f"{path}: missing required key `{key}` ({tp.__name__})")
    for key, v in value.items():
        if key in hints:
            check(v, hints[key], f"{path}.{key}", errs)


def _check_union(value, alternatives, path: str, errs: Errors) -> None:
    # Report the alternative that got furthest: a shape mismatch at `path`
    # itself (wrong JSON type, wrong literal) ranks below errors deeper in.
    best: tuple | None = None
    for alt in alternatives:
        attempt: Errors = []
        check(value, alt, path, attempt)
        if not attempt:
            return
        shallow = any(e.startswith(f"{path}: ") for e in attempt)
        score = (shallow, len(attempt))
        if best is None or score < best[0]:
            best = (score, attempt)
    errs.extend(best[1] if best else [f"{path}: matches no alternative"])


def check_openai(body: dict) -> Errors:
    from openai.types.chat import completion_create_params as p

    errs: Errors = []
    check(body, p.CompletionCreateParamsNonStreaming, "body", errs)
    return errs


def check_anthropic(body: dict) -> Errors:
    from anthropic.types import message_create_params as p

    errs: Errors = []
    check(body, p.MessageCreateParamsNonStreaming, "body", errs)
    return errs


def check_gemini(body: dict) -> Errors:
    import pydantic
    from google.genai import types as g

    fields = {
        "contents": (g.Content, True),
        "systemInstruction": (g.Content, False),
        "tools": (g.Tool, True),
        "toolConfig": (g.ToolConfig, False),
        "generationConfig": (g.GenerationConfig, False),
    }
    errs: Errors = []
    if "contents" not in body:
        errs.append("body: missing required key `contents`")
    for key, value in body.items():
        if key not in fields:
            errs.append(f"body: unknown key `{key}` (generateContent has {sorted(fields)})")
            continue
        model, is_list = fields[key]
        items = value if is_list else [value]
        if is_list and not isinstance(value, list):
            errs.append(f"body.{key}: expected an array")
            continue
        for i, item in enumerate(items):
            where = f"body.{key}[{i}]" if is_list else f"body.{key}"
            try:
                model.model_validate_json(json.dumps(item))
            except pydantic.ValidationError as e:
                for err in e.errors():
                    loc = ".".join(str(x) for x in err["loc"])
                    errs.append(f"{where}.{loc}: {err['msg']}")
    return errs


CHECKS = {"openai": check_openai, "anthropic": check_anthropic, "gemini": check_gemini}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    files = sorted(pathlib.Path(argv[1]).glob("*.json"))
    if not files:
        print(f"no *.json bodies in {argv[1]}", file=sys.stderr)
        return 2
    passed = failed = 0
    for f in files:
        provider = f.stem.split("-", 1)[0]
        check_fn = CHECKS.get(provider)
        if check_fn is None:
            print(f"{f.name}: unknown provider prefix `{provider}` (expected {sorted(CHECKS)})")
            failed += 1
            continue
        errs = check_fn(json.loads(f.read_text()))
        if errs:
            failed += 1
            for e in errs:
                print(f"{f.name}: {e}")
        else:
            passed += 1
    print(f"bodies: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
