"""Question-answering data for the prompt-optimisation (LPO) task.

The paper's prompt-optimisation task scores an evolved prompt template by an answering
LLM's accuracy on the first 40 HotpotQA questions (Appendix).  This module turns a QA
file into a list of :class:`QAItem` and nothing else: no prompting, no scoring (see
:mod:`basevolve.tasks.qa_metrics`).

Formats, chosen by file suffix:

* ``.jsonl`` -- one JSON object per line (blank lines skipped) with ``question``,
  ``answer`` and optionally ``id`` and ``context`` (a string).
* ``.csv`` -- a UTF-8 table read with :class:`csv.DictReader`, same columns.
* ``.json`` -- the official HotpotQA format: a list of objects with ``_id``,
  ``question``, ``answer`` and ``context`` = ``[[title, [sentence, ...]], ...]``; other
  keys (``supporting_facts``, ``type``, ``level``) are ignored.  The context is rendered
  as paragraphs ``"Title: sentence sentence ..."`` joined by blank lines (``context_style
  = "plain"``), or as OpenEvolve's HotpotQA example renders it (``"openevolve"``, the
  paper's LPO, issue 23, item 7): ``"Paragraph i (title):"``, a newline, the sentences
  joined by single spaces, blank lines between paragraphs.

Every problem with a file is a :class:`~basevolve.errors.TaskError` naming the file,
the place (line, row or item) and the fix, because these files are written by hand.
HotpotQA itself is CC BY-SA and is not shipped; :func:`load_sample` gives the project's
own 40-question sample (fictional entities, answerable only from the context).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from basevolve.errors import TaskError
from basevolve.outside_parse import RefusedText, load_json

SUPPORTED_SUFFIXES = (".jsonl", ".csv", ".json")
#: how a HotpotQA context is rendered (module docstring)
CONTEXT_STYLES = ("plain", "openevolve")
_REQUIRED = ("question", "answer")
_HOTPOT_KEYS = ("_id", "question", "answer", "context")


@dataclass(frozen=True, slots=True)
class QAItem:
    """One question with its gold answer and, optionally, the passage to answer from."""

    id: str
    question: str
    answer: str
    context: str | None = None


def load_qa(path: str | Path, *, limit: int | None = None,
            context_style: str = "plain") -> list[QAItem]:
    """Read a QA file (``.jsonl``, ``.csv`` or HotpotQA ``.json``) into items.

    ``limit`` keeps the first ``limit`` items (the paper used the first 40); rows after
    them are not read or checked.  Ids default to the 0-based row number as a string.
    ``context_style``: how HotpotQA's titled paragraphs are rendered (module docstring);
    ``"openevolve"`` needs the HotpotQA ``.json`` format, whose paragraphs have titles.
    Raises :class:`TaskError` for a missing file, an unsupported suffix, invalid JSON,
    a row without a non-empty ``question``/``answer``, duplicate ids or an empty file.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise TaskError(f"QA limit must be an integer >= 1 or None, got {limit!r}")
    if context_style not in CONTEXT_STYLES:
        raise TaskError(f"context_style must be one of {', '.join(CONTEXT_STYLES)}, got "
                        f"{context_style!r}")
    file = Path(path)
    if not file.is_file():
        raise TaskError(
            f"QA data file {file} does not exist; pass the path of an existing "
            f"{', '.join(SUPPORTED_SUFFIXES)} file"
        )
    suffix = file.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise TaskError(
            f"QA data file {file} has unsupported suffix {file.suffix!r}; "
            f"use one of: {', '.join(SUPPORTED_SUFFIXES)}"
        )
    if context_style != "plain" and suffix != ".json":
        raise TaskError(
            f"context_style={context_style!r} renders HotpotQA's titled paragraphs, but QA "
            f"data file {file} is {suffix}, whose contexts are used as written; pass the "
            "HotpotQA .json file (e.g. hotpot_dev_distractor_v1.json) or drop context_style")
    if suffix == ".json":
        rows = _hotpot_rows(file, context_style)
    else:
        rows = {".jsonl": _jsonl_rows, ".csv": _csv_rows}[suffix](file)
    items: list[QAItem] = []
    seen: dict[str, str] = {}
    for index, (where, row) in enumerate(rows):
        item = _make_item(file, where, index, row)
        if item.id in seen:
            raise TaskError(
                f"QA data file {file}: {where} repeats id {item.id!r} "
                f"(first used at {seen[item.id]}); ids must be unique"
            )
        seen[item.id] = where
        items.append(item)
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise TaskError(
            f"QA data file {file} contains no questions; add at least one row "
            f"with 'question' and 'answer'"
        )
    return items


def has_context(items: Sequence[QAItem]) -> bool:
    """True if every item has a non-empty context (and there is at least one item).

    The task uses this to decide whether ``{context}`` is a placeholder every prompt
    template must contain: with only some contexts present it cannot be required.
    """
    return bool(items) and all(item.context and item.context.strip() for item in items)


def sample_path() -> Path:
    """Path of the project's own 40-question sample (package data, see module docstring)."""
    resource = files("basevolve.tasks") / "data" / "qa_sample.jsonl"
    path = Path(str(resource))
    if not path.is_file():
        raise TaskError(f"package data file {path} is missing; reinstall basevolve")
    return path


def load_sample(limit: int | None = None) -> list[QAItem]:
    """The shipped sample as items (:func:`load_qa` on :func:`sample_path`)."""
    return load_qa(sample_path(), limit=limit)


def dataset_digest(items: Iterable[QAItem]) -> str:
    """SHA-256 (hex) of a canonical JSON of the items, in order.

    Part of the task's identity, so resuming a run against a changed dataset (an edited
    answer, another ``limit``, reordered rows) is noticed rather than silently mixed.
    """
    canonical = [
        {"id": it.id, "question": it.question, "answer": it.answer, "context": it.context}
        for it in items
    ]
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- readers
# Each reader yields (where, row): a human place name for messages and a plain mapping.


def _read_text(file: Path) -> str:
    try:
        # utf-8-sig: a byte-order mark (spreadsheet exports) would otherwise corrupt
        # the first column name or make the first JSON line invalid.
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskError(
            f"QA data file {file} is not valid UTF-8 ({exc.reason} at byte "
            f"{exc.start}); save it as UTF-8"
        ) from None


def _jsonl_rows(file: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for number, line in enumerate(_read_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = load_json(line)
        except RefusedText as exc:
            if exc.kind == "depth":  # a hostile file: nested deeper than a QA row
                raise TaskError(f"QA data file {file}: line {number} is nested too deeply "
                                "to be a QA row; write one flat JSON object per line") from None
            raise TaskError(
                f"QA data file {file}: line {number} {exc}; write one JSON object per line"
            ) from None
        if not isinstance(row, dict):
            raise TaskError(
                f"QA data file {file}: line {number} is a JSON "
                f"{type(row).__name__}, not an object; write one object per line"
            )
        yield f"line {number}", row


def _csv_rows(file: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    # newline="" keeps line ends, so a quoted multi-line context survives intact.
    reader = csv.DictReader(io.StringIO(_read_text(file), newline=""))
    header = reader.fieldnames or []
    if header:
        absent = [name for name in _REQUIRED if name not in header]
        if absent:
            raise TaskError(
                f"QA data file {file}: the header (line 1) lacks column(s) "
                f"{', '.join(map(repr, absent))}; the header must name "
                f"'question' and 'answer' (optional: 'id', 'context')"
            )
    for row in reader:
        yield f"line {reader.line_num}", row


def _hotpot_rows(file: Path, context_style: str = "plain"
                 ) -> Iterator[tuple[str, Mapping[str, Any]]]:
    expected = (
        "expected the HotpotQA format: a JSON list of objects with keys "
        + ", ".join(map(repr, _HOTPOT_KEYS))
        + "; for plain rows use .jsonl or .csv"
    )
    try:
        data = load_json(_read_text(file))
    except RefusedText as exc:
        if exc.kind == "depth":  # a hostile file: nested deeper than a QA set
            raise TaskError(f"QA data file {file} is nested too deeply to be a QA set; "
                            f"{expected}") from None
        raise TaskError(f"QA data file {file} {exc}") from None
    if not isinstance(data, list):
        raise TaskError(f"QA data file {file} holds a JSON {type(data).__name__}; {expected}")
    for index, entry in enumerate(data):
        where = f"item {index} (0-based)"
        absent = [k for k in _HOTPOT_KEYS if not isinstance(entry, dict) or k not in entry]
        if absent:
            raise TaskError(
                f"QA data file {file}: {where} lacks key(s) "
                f"{', '.join(map(repr, absent))}; {expected}"
            )
        row = {
            "id": entry["_id"],
            "question": entry["question"],
            "answer": entry["answer"],
            "context": _render_hotpot_context(file, where, entry["context"], context_style),
        }
        yield where, row


def _render_hotpot_context(file: Path, where: str, context: Any, style: str = "plain") -> str:
    """``[[title, [sentences]], ...]`` as ``"Title: s1 s2"`` paragraphs split by blank lines.

    HotpotQA sentences after the first usually carry their own leading space, so a
    sentence is appended as is when it starts with whitespace and after one space
    otherwise; that reproduces the original paragraph text in both cases.
    ``style="openevolve"``: ``"Paragraph i (title):\n"`` and the sentences joined by one
    space each, as OpenEvolve's HotpotQA example shows them (a sentence's own leading
    space then gives two), the whole stripped.
    """
    paragraphs = []
    for pair in context if isinstance(context, list) else [None]:
        if not (
            isinstance(pair, list | tuple)
            and len(pair) == 2
            and isinstance(pair[0], str)
            and isinstance(pair[1], list)
            and all(isinstance(s, str) for s in pair[1])
        ):
            raise TaskError(
                f"QA data file {file}: {where} has a malformed 'context'; "
                f"expected a list of [title, [sentence, ...]] pairs"
            )
        title, sentences = pair
        if style == "openevolve":
            paragraphs.append(f"Paragraph {len(paragraphs) + 1} ({title}):\n" + " ".join(sentences))
            continue
        body = ""
        for sentence in sentences:
            body += sentence if (not body or sentence[:1].isspace()) else " " + sentence
        paragraphs.append(f"{title}: {body.strip()}".rstrip())
    return "\n\n".join(paragraphs).strip() if style == "openevolve" else "\n\n".join(paragraphs)


def _make_item(file: Path, where: str, index: int, row: Mapping[str, Any]) -> QAItem:
    absent = [k for k in _REQUIRED if not isinstance(row.get(k), str) or not row[k].strip()]
    if absent:
        detail = " and ".join(_why_absent(k, row.get(k)) for k in absent)
        raise TaskError(
            f"QA data file {file}: {where}: {detail}; every row needs a "
            f"non-empty string 'question' and 'answer'"
        )
    raw_id = row.get("id")
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        item_id = str(index)
    elif isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
        item_id = str(raw_id).strip()
    else:
        raise TaskError(
            f"QA data file {file}: {where} has an 'id' of type "
            f"{type(raw_id).__name__}; use a string or an integer"
        )
    context = row.get("context")
    if context is not None and not isinstance(context, str):
        raise TaskError(
            f"QA data file {file}: {where} has a 'context' of type "
            f"{type(context).__name__}; use a string (or the HotpotQA .json format)"
        )
    context = context.strip() if context and context.strip() else None
    return QAItem(item_id, row["question"].strip(), row["answer"].strip(), context)


def _why_absent(key: str, value: Any) -> str:
    if value is None:
        return f"{key!r} is missing"
    if isinstance(value, str):
        return f"{key!r} is empty"
    return f"{key!r} is of type {type(value).__name__}, not a string (quote it)"


__all__ = [
    "CONTEXT_STYLES",
    "SUPPORTED_SUFFIXES",
    "QAItem",
    "dataset_digest",
    "has_context",
    "load_qa",
    "load_sample",
    "sample_path",
]
