"""A scripted reply for the test server that works with every protocol on any task with
an EVOLVE block (issue 21, part 4: the examples run end to end with every protocol).

:func:`~basevolve.testing.replies.island_reply` rewrites a region of MinMaxDist programs
only.  :class:`EvolveBlockReplies` needs nothing task-specific: it finds the parent in
the prompt -- the last fenced code block holding ``EVOLVE-BLOCK-START`` (ShinkaEvolve's
crossover inspiration, which follows the parent, is skipped) -- replaces the text
between its first EVOLVE-BLOCK markers with one of a list of candidate blocks, and
renders that child in the format the prompt asks for:

* ``<DIFF>`` in the system message (ShinkaEvolve diff patches): ``<NAME>`` /
  ``<DESCRIPTION>`` / ``<DIFF>`` holding one SEARCH/REPLACE block;
* ``<CODE>`` in the system message (ShinkaEvolve full and crossover patches): ``<NAME>``
  / ``<DESCRIPTION>`` / ``<CODE>`` holding the whole program, fenced;
* ``<<<<<<< SEARCH`` in the system message or the last user message (CodeEvolve;
  OpenEvolve's diff mode): one SEARCH/REPLACE block whose SEARCH side is the parent's
  whole block;
* anything else (greedy, OpenEvolve's full rewrite): the whole program, fenced.

Text calls are answered as ``island_reply`` answers them: a novelty judge ("NOVEL or NOT
NOVEL" in the system message) gets ``NOVEL`` or ``NOT NOVEL`` by a hash of the seed; a
meta-prompt call ("prompt engineer") gets a SEARCH/REPLACE edit of the first non-empty
line inside the PROMPT-BLOCK.

Which candidate: the one at a SHA-256 hash of the request's ``seed`` (the engine derives
it from the run seed and the call index) modulo their number, so a run is reproducible
call for call with ``--max-in-flight 1``; when that candidate equals the parent's block
(a diff would be a no-op, which the strict applier refuses), the next different one.
Without candidates, or when all of them equal the parent's block, the reply is the
parent's block with one marker comment (``# evolve-block reply K``) -- a valid child of
the same behaviour.  ``junk_every=J`` answers about one code request in J with prose
(no program), so retries and score-0 children occur.

Candidates for several tasks at once (issue 37, item 5): a mapping of task name to a
list of blocks (the shape of ``tests/data/function_example_blocks.json``).  A request is
answered from the list whose blocks define a function or class the parent's block
defines (``def priority`` -> ``bin_packing``'s); if several or none do, from the list
whose task name the prompt mentions; else there are none for that parent.

From the command line (``--reply-function evolve-block``) the candidates come from the
JSON file named by the environment variable ``BASEVOLVE_TEST_CANDIDATES`` (a list of
strings, or an object mapping task names to lists of strings), or there are none.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from basevolve.prompts.diff import PROMPT_MARKERS, START_MARKER, evolve_blocks

CANDIDATES_ENV = "BASEVOLVE_TEST_CANDIDATES"
_FENCED = re.compile(r"```([A-Za-z0-9_+.-]*)\n(.*?)```", re.S)
_VARIANT = re.compile(r"^# evolve-block reply \d+\n", re.M)
_CROSSOVER = "# Crossover Inspiration"  # ShinkaEvolve's crossover section follows the parent
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
Candidates = Sequence[str] | Mapping[str, Sequence[str]]


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def seed_hash(seed: Any, salt: str) -> int:
    """A 64-bit number from a request's seed and a salt: reproducible, call for call."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{seed}".encode()).digest()[:8], "big")


def _as_block(text: str) -> str:
    """A candidate as block text: no leading blank lines, exactly one final newline."""
    return text.lstrip("\n").rstrip() + "\n"


class EvolveBlockReplies:
    """``(request_body, index) -> reply`` for the LLM test server; see the module docstring.

    ``candidates``: EVOLVE-block bodies (the text between the marker lines), or a
    mapping of task name to such a list (see the module docstring).
    """

    def __init__(self, candidates: Candidates | None = None, *, junk_every: int = 0) -> None:
        groups = (dict(candidates) if isinstance(candidates, Mapping)
                  else {"": candidates or ()})
        for blocks in groups.values():
            if isinstance(blocks, str) or not all(isinstance(c, str) for c in blocks):
                raise TypeError("candidates must be a sequence of strings (EVOLVE-block "
                                "bodies) or a mapping of task names to such sequences")
        if isinstance(junk_every, bool) or not isinstance(junk_every, int) or junk_every < 0:
            raise ValueError(f"junk_every={junk_every!r} must be an int >= 0 (0 = never)")
        self.groups = {str(k): tuple(_as_block(c) for c in v) for k, v in groups.items()}
        self.candidates = tuple(c for blocks in self.groups.values() for c in blocks)
        self.junk_every = junk_every

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> EvolveBlockReplies:
        """Candidates from a JSON file: a list of strings, or an object mapping task names
        to lists of strings."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"candidates file {os.fspath(path)!r} could not be read as JSON: "
                             f"{exc}") from None
        lists = data.values() if isinstance(data, dict) else [data]
        if not all(isinstance(v, list) and all(isinstance(c, str) for c in v) for v in lists):
            raise ValueError(f"candidates file {os.fspath(path)!r} must hold a JSON list of "
                             "strings (EVOLVE-block bodies) or an object mapping task names "
                             "to such lists")
        return cls(data, **kwargs)

    def candidates_for(self, old: str, prompt: str = "") -> tuple[str, ...]:
        """The candidate blocks for a parent whose block is ``old``: the one list when
        there is one, else the task's list (the names ``old`` defines; the task name in
        ``prompt``)."""
        if len(self.groups) == 1:
            return next(iter(self.groups.values()))
        names = set(_DEFINES.findall(old))
        fits = [k for k, blocks in self.groups.items()
                if any(names & set(_DEFINES.findall(b)) for b in blocks)]
        named = [k for k in (fits or self.groups) if k and k in prompt]
        chosen = named[0] if named else fits[0] if len(fits) == 1 else None
        return self.groups[chosen] if chosen is not None else ()

    # ------------------------------------------------------------------ answering
    def __call__(self, body: dict[str, Any], index: int) -> str:
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = _text(msgs[0].get("content")) if msgs and msgs[0].get("role") == "system" else ""
        users = [_text(m.get("content")) for m in msgs if m.get("role") == "user"]
        seed = body.get("seed", index)
        if "NOVEL or NOT NOVEL" in system:
            return ("NOVEL\nA different idea." if seed_hash(seed, "judge") % 2
                    else "NOT NOVEL\nThe same idea.")
        if "prompt engineer" in system:
            return self.meta_edit(users[-1] if users else "")
        if '{"ideas"' in system:  # AdaEvolve's paradigm call
            return json.dumps({"ideas": [{"idea": "try another candidate", "description": "",
                                          "what_to_optimize": "score", "cautions": "",
                                          "approach_type": "candidates"}]})
        if self.is_junk(seed):
            return "I am not sure how to improve this program."
        found = self.parent(users)
        if found is None:
            return "The prompt shows no program with an EVOLVE-BLOCK to change."
        language, parent = found
        # a program without markers evolves whole (prompts/formats.py); a subclass's
        # parent() may return one (testing/sim/block_edits.py)
        start, end = (evolve_blocks(parent) or [(0, len(parent))])[0]
        old = parent[start:end]
        new = self.choose(old, seed, "\n".join(users))
        child = parent[:start] + new + parent[end:]
        if not child.endswith("\n"):
            child += "\n"
        k = seed_hash(seed, "name") % 10_000
        label = f"<NAME>candidate_{k}</NAME>\n<DESCRIPTION>Replace the EVOLVE block.</DESCRIPTION>\n"
        search = old if old.endswith("\n") or not old else old + "\n"  # an unclosed block
        diff = f"<<<<<<< SEARCH\n{search}=======\n{new}>>>>>>> REPLACE\n"
        if "<DIFF>" in system:
            return f"{label}<DIFF>\n{diff}</DIFF>\n"
        if "<CODE>" in system:
            return f"{label}<CODE>\n```{language}\n{child}```\n</CODE>\n"
        if "<<<<<<< SEARCH" in system or (users and "<<<<<<< SEARCH" in users[-1]):
            return diff
        return f"Here is the new program.\n```{language}\n{child}```\n"

    def is_junk(self, seed: Any) -> bool:
        """Whether a code request is answered with prose (about one in ``junk_every``)."""
        return bool(self.junk_every) and seed_hash(seed, "junk") % self.junk_every == 0

    def parent(self, users: Sequence[str]) -> tuple[str, str] | None:
        """(language, code) of the program to change: :func:`parent_program`."""
        return parent_program(users)

    def choose(self, old: str, seed: Any, prompt: str = "") -> str:
        """The new block for a parent whose block is ``old``: a candidate other than
        ``old`` (the hashed one first), else ``old`` with a marker comment."""
        candidates = self.candidates_for(old, prompt)
        n = len(candidates)
        if n:
            first = seed_hash(seed, "candidate") % n
            for i in range(n):
                cand = candidates[(first + i) % n]
                if cand.rstrip() != old.rstrip():
                    return cand
        kept = _VARIANT.sub("", old)
        if kept and not kept.endswith("\n"):
            kept += "\n"
        k = seed_hash(seed, "variant") % 1_000_000
        new = f"{kept}# evolve-block reply {k}\n"
        return new if new != old else f"{kept}# evolve-block reply {k + 1}\n"

    @staticmethod
    def meta_edit(user: str) -> str:
        """A SEARCH/REPLACE edit of the first non-empty line of the PROMPT-BLOCK."""
        begin, _ = PROMPT_MARKERS
        inside = user.split(begin, 1)[-1].split("\n")[1:]
        line = next((ln for ln in inside if ln.strip() and PROMPT_MARKERS[1] not in ln), "")
        if not line:
            return "The prompt has no PROMPT-BLOCK text to improve."
        return f"<<<<<<< SEARCH\n{line}\n=======\n{line} Think step by step.\n>>>>>>> REPLACE\n"


def parent_program(users: Sequence[str]) -> tuple[str, str] | None:
    """(language tag, code) of the last fenced block with an EVOLVE-BLOCK in ``users``
    (a ShinkaEvolve crossover inspiration after the parent is skipped), or None."""
    found = None
    for text in users:
        text = text.split(_CROSSOVER, 1)[0]
        for language, code in _FENCED.findall(text):
            if START_MARKER in code and evolve_blocks(code):
                found = (language or "python", code)
    return found


def last_program(users: Sequence[str]) -> tuple[str, str] | None:
    """(language tag, code) of the last fenced block in ``users`` that defines a function
    (a ShinkaEvolve crossover inspiration skipped): the parent of a program without
    EVOLVE-BLOCK markers, which evolves whole."""
    found = None
    for text in users:
        for language, code in _FENCED.findall(text.split(_CROSSOVER, 1)[0]):
            if re.search(r"^\s*(?:async\s+)?def\s", code, re.M):
                found = (language or "python", code)
    return found


_FROM_ENV: EvolveBlockReplies | None = None


def evolve_block_reply(body: dict[str, Any], index: int) -> str:
    """The server's ``--reply-function evolve-block``: :class:`EvolveBlockReplies` with the
    candidates of the file named by ``BASEVOLVE_TEST_CANDIDATES`` (none if unset)."""
    global _FROM_ENV
    if _FROM_ENV is None:
        path = os.environ.get(CANDIDATES_ENV)
        _FROM_ENV = EvolveBlockReplies.from_file(path) if path else EvolveBlockReplies()
    return _FROM_ENV(body, index)


__all__ = ["CANDIDATES_ENV", "EvolveBlockReplies", "evolve_block_reply", "last_program",
           "parent_program", "seed_hash"]
