"""Evaluator feedback in prompts (issue 21, part 3; ``--feedback artifacts``).

OpenEvolve calls them *artifacts*: what an evaluation reports besides the score -- the
program's stderr/stdout, failing cases, the evaluator's own notes.  With the run option
``feedback = "artifacts"`` every protocol shows a parent's feedback in the next prompt
built from that parent; with the default ``"none"`` the paper's verbatim prompts are
sent unchanged (byte for byte; the prompt snapshot tests hold that).

This module is the one place that renders the section; the protocols only decide where
it goes (OpenEvolve's template and ShinkaEvolve's iteration message have a slot for it,
CodeEvolve's chat gets it appended to the last user turn).  What is shown, in order:

1. the parent's evaluation error (``Child.error``);
2. every evaluator artifact (``Child.artifacts``), by key in sorted order -- the store
   keeps them sorted, so a resumed run renders the same prompt as an uninterrupted one;
3. the program's own output (``Child.output``: its stdout and stderr).

Why caps, and these: the text comes from outside (a task's evaluator, an untrusted
program's output), so its size is not ours to choose, while every prompt token is paid
for (paper, "Effective FLOPs").  Each item is cut to :data:`ITEM_CHARS` (2,000)
characters, keeping its head and tail (a traceback puts the cause at the end), and the
whole section, headings included, never exceeds :data:`TOTAL_CHARS` (4,000) characters;
items that no longer fit are counted in one closing line.  About 1,000 tokens at most:
small next to a prompt that already holds five programs.

Why cleaning: a lone surrogate cannot be encoded as UTF-8 (the request body and the
store would fail), and control characters garble a prompt.  Surrogates follow the one
rule of :mod:`basevolve.safe_text` (a pair becomes the character it encodes, a lone
surrogate U+FFFD); carriage returns become line breaks;
other control characters (C0 except tab and newline, DEL, C1) are shown as ``\\xNN``.
Each item is fenced with a backtick run longer than any inside it, so no text can close
the fence early and pose as the prompt's own instructions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from basevolve.safe_text import utf8_safe
from basevolve.vocab import FEEDBACK_MODES

__all__ = ["FEEDBACK_MODES", "ITEM_CHARS", "TOTAL_CHARS", "append_section", "clean", "clip",
           "feedback_items", "render_feedback"]

#: Characters kept of one item (the error, one artifact, the program's output).
ITEM_CHARS = 2_000
#: Characters of the whole section, headings and fences included.
TOTAL_CHARS = 4_000
#: Characters kept of an artifact's name (shown as a heading, on one line).
KEY_CHARS = 80
HEADING = "## Evaluator feedback on the program to improve"
INTRO = ("What the evaluation of this program reported (each item cut to {item:,} "
         "characters, {total:,} in all):")

#: control characters (C0 but tab and newline, DEL, C1) -> a visible ``\xNN`` (str.translate)
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20),
                                      *range(0x7F, 0xA0))}
_BACKTICKS = re.compile("`+")
_MIN_BODY = 40  # below this, an item is counted as omitted rather than shown as a stub


def clean(text: str) -> str:
    """``text`` safe to send and store: surrogates and control characters handled as the
    module docstring says; everything else kept."""
    text = utf8_safe(text)  # the one rule for surrogates (basevolve.safe_text)
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_ESCAPES)


def clip(text: str, limit: int, *, length: int | None = None) -> str:
    """At most ``limit`` characters: head and tail with a note of what was cut between
    (``length``: the original length to report, when ``text`` is already a part of it)."""
    if len(text) <= limit:
        return text
    note = f"\n... [{length or len(text):,} characters, cut to {limit:,}] ...\n"
    room = limit - len(note)
    if room < 2:
        return text[:limit]
    tail = room // 2
    return f"{text[:room - tail]}{note}{text[len(text) - tail:]}"


def _prepare(text: str, limit: int) -> str:
    """One item, cleaned and cut to ``limit``.  The middle of a long text is dropped
    before cleaning (a megabyte is never scanned whole); escapes may lengthen what is
    left, so the cut comes after cleaning."""
    length = len(text)
    if length > 2 * limit:
        text = text[:limit] + text[-limit:]
    return clip(clean(text).strip("\n"), limit, length=length)


def _fence(body: str) -> str:
    longest = max((len(m) for m in _BACKTICKS.findall(body)), default=0)
    return "`" * max(3, longest + 1)


def _block(title: str, body: str) -> str:
    fence = _fence(body)
    return f"### {title}\n{fence}\n{body}\n{fence}"


def feedback_items(error: str | None, output: str | None,
                   artifacts: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """(title, raw text) of what is shown, in order; empty items are left out."""
    items: list[tuple[str, str]] = []
    if error and error.strip():
        items.append(("error", error))
    shown = artifacts or {}
    for key in sorted(shown, key=str):
        value = shown[key]
        if isinstance(value, str) and value.strip():
            name = " ".join(clean(str(key)[:KEY_CHARS + 1]).split()) or "(unnamed)"
            if len(name) > KEY_CHARS:
                name = name[:KEY_CHARS - 3] + "..."
            items.append((f"artifact: {name}", value))
    if output and output.strip():
        items.append(("program output", output))
    return items


def render_feedback(error: str | None = None, output: str | None = None,
                    artifacts: Mapping[str, str] | None = None, *,
                    item_chars: int = ITEM_CHARS, total_chars: int = TOTAL_CHARS) -> str:
    """The delimited feedback section (``""`` when there is nothing to show).

    Guarantee: the result has at most ``total_chars`` characters and holds no lone
    surrogate and no control character other than newline and tab.
    """
    items = feedback_items(error, output, artifacts)
    if not items:
        return ""
    intro = INTRO.format(item=item_chars, total=total_chars)
    parts = [f"{HEADING}\n{intro}"]
    used = len(parts[0])
    omitted = 0
    for i, (title, raw) in enumerate(items):
        # room for this block ("\n\n" before it), keeping space for the closing line
        # while items follow
        reserve = len(_omitted_line(len(items))) + 2 if i < len(items) - 1 else 0
        room = total_chars - used - 2 - reserve
        body = _prepare(raw, item_chars)
        block = _block(title, body)
        if len(block) > room:
            # cut again from the raw text, so the note gives the item's real length
            fit = room - (len(block) - len(body))
            block = _block(title, _prepare(raw, fit)) if fit >= _MIN_BODY else ""
            if not block or len(block) > room:
                omitted = len(items) - i
                break
        parts.append(block)
        used += 2 + len(block)
    if omitted:
        parts.append(_omitted_line(omitted))
    text = "\n\n".join(parts)
    return text if len(text) <= total_chars else text[:total_chars]


def _omitted_line(n: int) -> str:
    return f"[{n} more item(s) not shown: the section is capped at the length above]"


def append_section(messages: list[dict[str, str]], section: str) -> list[dict[str, str]]:
    """``messages`` with ``section`` appended to the last user message (a fresh list of
    fresh dicts); unchanged when ``section`` is empty."""
    out = [dict(m) for m in messages]
    if not section:
        return out
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m['content']}\n\n{section}"
            return out
    out.append({"role": "user", "content": section})
    return out
