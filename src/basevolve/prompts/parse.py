"""Extract the program from an LLM reply (full-rewrite mode; paper Section 3 / Appendix
"Prompts": the OpenEvolve template asks for the complete program in a fenced block).

Small models rarely answer cleanly, so the parser tolerates, in this order:

1. fenced blocks (```` ``` ```` or ``~~~``, any info string); among several, a block that
   defines the task's entry function wins, else the longest (ties: the later one, the
   final answer usually comes last); blocks tagged with another language are ignored;
   a closing fence may also follow the last code line on the same line (``return x```,
   as OpenEvolve's parser accepts; issue 31, item 10);
2. an unterminated fence (reply cut by ``max_tokens``): the rest of the reply, if it parses;
3. no fence at all: the reply from its first code-looking line, if it parses and looks like
   code (has a ``def``/``class``/``import``/assignment, so a lone word of prose does not
   count).

Every candidate is validated with :func:`ast.parse` (Python only).  A reply without a
usable program gives ``ParsedProgram(code=None, error=<reason>)``; the engine turns it into
a child with score 0 and that reason.

Text artifacts (``language="text"``, e.g. the prompt templates of ``prompt_optimization``,
issue 15) follow :func:`extract_text` instead: the text must stand in ``<prompt>`` tags
or a fenced block, because a bare reply cannot be told apart from the prose around it.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache

from basevolve.languages import fence_tags

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_CODE_START = re.compile(r"^(import |from \S+ import |def |async def |class |@|#!|# |\"\"\"|''')")
_PY_TAGS = {"python", "py", "python3", "py3", "python 3"}
_MAX_TRIM_TRIES = 200


@dataclass(frozen=True, slots=True)
class ParsedProgram:
    """Result of :func:`extract_program`.

    ``code`` is ``None`` exactly when no usable program was found; ``error`` then says why.
    ``method`` names the path taken (``fence``, ``fence_entry``, ``unterminated_fence``,
    ``bare``, ``none``); ``warnings`` carries non-fatal findings (e.g. missing entry).
    """

    code: str | None
    error: str | None
    method: str
    warnings: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.code is not None


@dataclass(frozen=True, slots=True)
class _Block:
    code: str
    info: str
    closed: bool
    index: int


def strip_think(text: str) -> str:
    """Remove ``<think>...</think>`` reasoning (the LLM layer already does; defensive).

    An unclosed ``<think>`` swallows the rest of the reply; a stray ``</think>`` drops
    everything before it (some chat templates open the block in the prompt).
    """
    text = _THINK_BLOCK.sub("", text)
    low = text.lower()
    if "</think>" in low:
        text = text[low.rindex("</think>") + len("</think>") :]
        low = text.lower()
    if "<think>" in low:
        text = text[: low.index("<think>")]
    return text


def _fenced_blocks(text: str) -> list[_Block]:
    lines = text.splitlines()
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip().lower()
        close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        # issue 31, item 10: "    return x```" closes the block on its last code line
        # (OpenEvolve's parser accepts it); the line's code is kept
        tail = re.compile(rf"^(?P<code>.*[^{re.escape(fence[0])}\s])"
                          rf"{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j, last = i + 1, None
        while j < len(lines) and not close.match(lines[j]):
            if (t := tail.match(lines[j])) is not None:
                last = t.group("code")
                break
            j += 1
        # dedent: fences nested in a Markdown list indent the whole block
        body_lines = lines[i + 1 : j] + ([last] if last is not None else [])
        body = textwrap.dedent("\n".join(body_lines))
        blocks.append(_Block(body, info, j < len(lines), len(blocks)))
        i = j + 1
    return blocks


@dataclass(frozen=True, slots=True)
class _Analysis:
    error: str | None  # why it does not parse, or None
    looks_like_code: bool  # has a def/class/import/assignment/loop at top level
    names: frozenset[str]  # functions and classes defined anywhere


_STATEMENT_KINDS = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.With,
)  # fmt: skip
_DEF_KINDS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@lru_cache(maxsize=256)
def _analyse(code: str) -> _Analysis:
    """Parse once; every check below reads this (the engine budget is ~2 ms CPU/call).

    A ``SystemError`` ("AST constructor recursion depth mismatch") is CPython 3.11's
    thread-unsafe AST depth counter (python/cpython#106905), seen once in ~3,000 replies
    of the allocation benchmark; it says nothing about the code, so the parse is retried.
    """
    try:
        try:
            tree = ast.parse(code)
        except SystemError:
            tree = ast.parse(code)
    except SyntaxError as exc:
        return _Analysis(f"SyntaxError line {exc.lineno}: {exc.msg}", False, frozenset())
    except (ValueError, RecursionError, MemoryError, SystemError) as exc:  # e.g. null bytes
        return _Analysis(f"{type(exc).__name__}: {exc}", False, frozenset())
    looks = any(isinstance(n, _STATEMENT_KINDS) for n in tree.body)
    return _Analysis(None, looks, frozenset(_defined_names(tree.body)))


# Fields of statement-like nodes that hold statement lists (bodies of if/for/while/with/
# try/def/class, except handlers, match cases).  Definitions are statements, so they
# only ever sit in these lists.
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _defined_names(stmts: list[ast.AST]) -> list[str]:
    """Names of functions and classes defined anywhere in ``stmts``.

    Same result as filtering ``ast.walk`` for definitions, but descends only through
    statement lists and never into expressions (definitions cannot occur there): a
    reply whose program holds a large literal (e.g. an array of points) has thousands
    of expression nodes, and the full walk cost ~1 ms per reply.
    """
    names: list[str] = []
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, _DEF_KINDS):
            names.append(node.name)
        for fld in _BLOCK_FIELDS:
            sub = getattr(node, fld, None)
            if isinstance(sub, list):
                stack.extend(sub)
    return names


def _syntax_error(code: str) -> str | None:
    return _analyse(code).error


def defines(code: str, name: str) -> bool:
    """Whether ``code`` parses and defines a function or class called ``name``."""
    return name in _analyse(code).names


def _looks_like_code(code: str) -> bool:
    return _analyse(code).looks_like_code


def _is_python_tag(info: str, language: str) -> bool:
    tag = re.split(r"[\s:{,]", info, maxsplit=1)[0]  # "python title=x", "python:main.py"
    return (tag == "" or tag == language.lower() or (language == "python" and tag in _PY_TAGS)
            or tag.lower() in fence_tags(language))  # ```c++ for cpp, ```R for r (issue 31)


def _choose(codes: list[str], entry: str | None) -> tuple[str, bool]:
    """Pick among valid candidates: entry-defining first, then the longest, then the later."""
    with_entry = [c for c in codes if entry and defines(c, entry)]
    pool = with_entry or codes
    best = max(enumerate(pool), key=lambda ic: (len(ic[1].strip()), ic[0]))[1]
    return best, bool(with_entry)


def _bare_program(text: str) -> str | None:
    """The longest code-looking tail of a fenceless reply, starting at a code-like line."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if _CODE_START.match(ln)] or [0]
    tries = 0
    for s in starts[:5]:
        for e in range(len(lines), s, -1):
            tries += 1
            if tries > _MAX_TRIM_TRIES:
                return None
            code = "\n".join(lines[s:e]).strip("\n")
            if code.strip() and _looks_like_code(code):
                return code
    return None


def extract_program(
    reply_text: str, *, language: str = "python", entry: str | None = None
) -> ParsedProgram:
    """Extract one program from ``reply_text``; see the module docstring for the rules.

    ``entry`` (the task's entry function) breaks ties between several code blocks; a
    chosen program that lacks it is still returned (the sandbox will report the missing
    function), with a warning.
    """
    if language.lower() == "text":
        return extract_text(reply_text)
    text = strip_think(reply_text or "")
    if not text.strip():
        return ParsedProgram(None, "empty reply (no text after removing <think> blocks)", "none")
    validate = language.lower() == "python"
    all_blocks = _fenced_blocks(text)
    blocks = [b for b in all_blocks if _is_python_tag(b.info, language)]
    if all_blocks and not blocks:
        return ParsedProgram(
            None, f"no {language} code block (only blocks in other languages)", "none"
        )

    closed = [b for b in blocks if b.closed and b.code.strip()]
    if closed:
        good = [b.code for b in closed if not validate or _syntax_error(b.code) is None]
        if validate:
            good = [c for c in good if _looks_like_code(c) or (entry and defines(c, entry))]
        if good:
            code, has_entry = _choose(good, entry)
            return _result(code, "fence_entry" if has_entry else "fence", entry)
        largest = max(closed, key=lambda b: len(b.code))
        reason = _syntax_error(largest.code) or "it contains no definitions or statements"
        return ParsedProgram(
            None,
            f"{len(closed)} fenced code block(s) but none is a usable program: {reason}",
            "none",
        )
    opened = [b for b in blocks if not b.closed and b.code.strip()]
    if opened:
        code = opened[-1].code.strip("\n")
        err = _syntax_error(code) if validate else None
        if err is None:
            return _result(code, "unterminated_fence", entry)
        return ParsedProgram(
            None, f"unterminated code block (reply truncated?) that does not parse: {err}", "none"
        )
    if blocks:
        return ParsedProgram(None, "only empty code blocks in the reply", "none")
    if not validate:
        return _result(text.strip("\n"), "bare", entry)
    code = _bare_program(text)
    if code is None:
        return ParsedProgram(None, "no code block and the reply is not a Python program", "none")
    return _result(code, "bare", entry)


def _result(code: str, method: str, entry: str | None) -> ParsedProgram:
    warnings: tuple[str, ...] = ()
    if entry and not defines(code, entry):
        warnings = (f"program does not define the entry function {entry!r}",)
    return ParsedProgram(code.strip("\n") + "\n", None, method, warnings)


_PROMPT_TAG = re.compile(r"<prompt>(.*?)</prompt>", re.DOTALL | re.IGNORECASE)
_TEXT_TAGS = {"", "text", "txt", "prompt", "plaintext", "plain", "markdown", "md"}


def extract_text(reply_text: str) -> ParsedProgram:
    """The text artifact of a reply: the last ``<prompt>…</prompt>`` section, else the
    longest closed fenced block (preferring untagged / ``text`` / ``prompt`` /
    ``markdown`` blocks; ties: the later one), else an unterminated fence's rest.

    Why strict: a template is free text, so without a delimiter the explanation around
    it ("Here is an improved prompt: …") would become part of the evolved prompt.  No
    delimiter gives ``code=None`` and the reason (a child with score 0).
    """
    text = strip_think(reply_text or "")
    if not text.strip():
        return ParsedProgram(None, "empty reply (no text after removing <think> blocks)", "none")
    tagged = [m.group(1).strip("\n") for m in _PROMPT_TAG.finditer(text)]
    tagged = [t for t in tagged if t.strip()]
    if tagged:
        return ParsedProgram(tagged[-1].strip("\n") + "\n", None, "tags")
    blocks = [b for b in _fenced_blocks(text) if b.code.strip()]
    closed = [b for b in blocks if b.closed]
    if closed:
        preferred = [b for b in closed if b.info.split(" ")[0] in _TEXT_TAGS] or closed
        best = max(preferred, key=lambda b: (len(b.code.strip()), b.index))
        return ParsedProgram(best.code.strip("\n") + "\n", None, "fence")
    if blocks:
        return ParsedProgram(blocks[-1].code.strip("\n") + "\n", None, "unterminated_fence")
    return ParsedProgram(None, "no prompt template in the reply: expected it inside "
                               "<prompt>...</prompt> tags or a fenced ``` block", "none")


def extract_tag(reply_text: str, tag: str) -> str | None:
    """Content of the first ``<TAG>...</TAG>`` section (ShinkaEvolve's ``<NAME>``,
    ``<DESCRIPTION>``, ``<CODE>`` response format), stripped; ``None`` if absent."""
    m = re.search(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", reply_text, re.DOTALL)
    return m.group(1).strip() if m else None
