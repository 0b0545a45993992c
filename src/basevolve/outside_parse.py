"""Bounded parsers for outside text: YAML, TOML, JSON and Python source (issue 32).

Why one module: text that a user downloads or a server sends (a task directory's
``config.yaml``, ``evaluator.py`` and ``initial_program.py``, a sweep's TOML, a server's
JSON) reached a parser at several places, each with its own idea of what can fail.  An
adversarial pass found three ways past them: a YAML alias bomb (nine levels of
``&a [*b, *b, ...]``) expanded to 10**9 values in the code that walks the parsed
mapping and held the host at 100% CPU; a 100,000-deep YAML list and a 300,000-term
Python expression ended in ``RecursionError`` with a traceback.  Every parse here fails
only with :class:`RefusedText` (a ``ValueError``) carrying one short phrase, which the
caller puts into its one line (exit 2); nothing else escapes, ``RecursionError`` and
``MemoryError`` included.

The YAML rule: before anything is built, the event stream (PyYAML's parser keeps its
own stack, so it does not recurse) is walked once counting the values the document
*expands* to, an alias counting as the whole value it names, and the deepest nesting,
an alias adding its value's depth.  A document over :data:`MAX_YAML_VALUES` values or
:data:`MAX_DEPTH` levels is refused; anchors and aliases within those bounds stay
allowed (merge keys ``<<: *defaults`` are common in configs).  Only then does
``yaml.safe_load`` build it, so whatever walks the result walks at most that much.

Bottom layer: imports the standard library and ``yaml`` only.
"""

from __future__ import annotations

import ast
import json
import tomllib
from typing import Any

#: Deepest nesting of lists/mappings (YAML, TOML, JSON) accepted from outside text.
MAX_DEPTH = 64
#: Most values a YAML document may expand to, aliases counted in full.
MAX_YAML_VALUES = 100_000


class RefusedText(ValueError):
    """Outside text that could not be read; ``str()`` is a short phrase for one line.

    ``kind``: ``syntax`` (malformed), ``depth`` (nested too deep), ``size`` (expands to
    too much or exhausted memory); ``lineno``/``colno`` where known (1-based)."""

    def __init__(self, why: str, kind: str = "syntax", lineno: int | None = None,
                 colno: int | None = None) -> None:
        super().__init__(why)
        self.kind, self.lineno, self.colno = kind, lineno, colno


def _too_deep(what: str) -> RefusedText:
    return RefusedText(f"is nested deeper than {MAX_DEPTH} levels ({what})", "depth")


def _too_large() -> RefusedText:
    return RefusedText("is too large to read (ran out of memory)", "size")


# ------------------------------------------------------------------------------- YAML
def _check_yaml_events(text: str) -> None:
    """Walk the event stream once: expanded size and depth, aliases counted in full."""
    import yaml

    # per open collection: [values so far, deepest level below it, anchor or None]
    stack: list[list[Any]] = [[0, 0, None]]
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded values, depth)

    def add(values: int, depth: int) -> None:
        top = stack[-1]
        top[0] += values
        top[1] = max(top[1], depth)
        if sum(frame[0] for frame in stack) > MAX_YAML_VALUES:
            raise RefusedText(f"expands to more than {MAX_YAML_VALUES:,} values (aliases "
                              "counted in full); write the values out or shorten it", "size")
        if len(stack) - 1 + depth > MAX_DEPTH:
            raise _too_deep("YAML lists and mappings")

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:  # safe_load says so, with the line
                continue
            add(*anchors[event.anchor])
        elif isinstance(event, yaml.ScalarEvent):
            add(1, 0)
            if event.anchor is not None:
                anchors[event.anchor] = (1, 0)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            stack.append([1, 0, event.anchor])
            if len(stack) - 1 > MAX_DEPTH:
                raise _too_deep("YAML lists and mappings")
        elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            values, depth, anchor = stack.pop()
            if anchor is not None:
                anchors[anchor] = (values, depth + 1)
            add(values, depth + 1)  # the collection (itself counted 1) to its parent


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` bounded in time, memory and depth (see the module docstring)."""
    import yaml

    try:
        _check_yaml_events(text)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RefusedText(f"is not valid YAML{where}: {problem}", "syntax",
                          None if mark is None else mark.line + 1) from None
    except RecursionError:
        raise _too_deep("YAML") from None
    except MemoryError:
        raise _too_large() from None


# ------------------------------------------------------------------------------- TOML
def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``; nesting is refused past :data:`MAX_DEPTH` after the parse."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RefusedText(f"is not valid TOML: {exc}") from None
    except RecursionError:
        raise _too_deep("TOML tables and arrays") from None
    except MemoryError:
        raise _too_large() from None
    check_depth(data, "TOML tables and arrays")
    return data


# ------------------------------------------------------------------------------- JSON
def load_json(text: str | bytes) -> Any:
    """``json.loads`` with every failure a :class:`RefusedText` (line/column kept)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RefusedText(f"is not valid JSON ({exc.msg} at line {exc.lineno}, column "
                          f"{exc.colno})", "syntax", exc.lineno, exc.colno) from None
    except (ValueError, TypeError) as exc:  # undecodable bytes
        raise RefusedText(f"is not valid JSON ({exc})") from None
    except RecursionError:
        raise _too_deep("JSON arrays and objects") from None
    except MemoryError:
        raise _too_large() from None
    check_depth(data, "JSON arrays and objects")
    return data


def check_depth(data: Any, what: str, limit: int = MAX_DEPTH) -> None:
    """Refuse lists/mappings nested deeper than ``limit`` (walked without recursion, so
    the check itself cannot overflow the stack); RefusedText of kind ``depth``."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            raise RefusedText(f"is nested deeper than {limit} levels ({what})", "depth")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


# ----------------------------------------------------------------------------- Python
def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse`` of outside source, never ``RecursionError``/``MemoryError``.

    A ``SystemError`` ("AST constructor recursion depth mismatch", CPython's
    thread-unsafe depth counter, python/cpython#106905) says nothing about the code, so
    the parse is tried once more first."""
    try:
        try:
            return ast.parse(source, filename=filename)
        except SystemError:
            return ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise RefusedText(f"has a syntax error at line {exc.lineno}: {exc.msg}", "syntax",
                          exc.lineno, exc.offset) from None
    except ValueError as exc:  # null bytes
        raise RefusedText(f"cannot be parsed: {exc}") from None
    except (RecursionError, SystemError):
        raise RefusedText("is nested or chained too deeply for Python's parser (e.g. an "
                          "expression of hundreds of thousands of terms); simplify it",
                          "depth") from None
    except MemoryError:
        raise _too_large() from None


__all__ = ["MAX_DEPTH", "MAX_YAML_VALUES", "RefusedText", "check_depth", "load_json",
           "load_toml", "load_yaml", "parse_python"]
