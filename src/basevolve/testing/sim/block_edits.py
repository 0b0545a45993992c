"""``simulate-server --task ANY``: seeded edits of the parent's own EVOLVE block
(issue 37, item 6).

Why: the family simulator (:mod:`basevolve.testing.sim.model`) knows only the three
geometric tasks, and the embedded model decodes at under 1 token/s on a loaded 2-core
box, so a user's first dry run of a task of their own (a function task, a task file, an
OpenEvolve directory) had no offline LLM at all.  This one needs nothing task-specific:
it takes the parent program shown in the prompt, applies one or two simple edits to the
text of its first EVOLVE block (the whole program when it has no markers) and answers in
the format the prompt asks for -- the rendering of
:class:`~basevolve.testing.evolve_block.EvolveBlockReplies`, so every protocol's parser
gets what it expects, and judge and meta-prompt calls are answered as there.

The edits (all drawn from ``numpy.random.default_rng`` seeded by the request's ``seed``,
so a run repeats call for call with ``--max-in-flight 1``):

* **constant**: a number literal multiplied by 0.5, 0.8, 0.9, 1.1, 1.25 or 2;
* **operator**: one of ``+``/``-``, ``*``/``/``, ``<``/``>``, ``<=``/``>=``, ``min(``/``max(``
  swapped for its partner;
* **lines**: two adjacent lines of equal indentation swapped.

With probability ``broken_rate`` the reply is broken on purpose, one of three ways:
prose with no program, a syntax error (a ``def``'s colon dropped), or a program that
raises when it runs.  When no edit applies (a block without numbers, operators or
swappable lines) the child is the parent's block with a marker comment.

It is a **plumbing check** -- prompt, parse, sandbox, score, store, budget, resume -- and
not a model of search quality: whether a child scores better is an accident of the edit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from basevolve.errors import ConfigError
from basevolve.tasks import load_task
from basevolve.testing.evolve_block import (
    EvolveBlockReplies,
    last_program,
    parent_program,
    seed_hash,
)
from basevolve.testing.llm_server import LatencyModel, LLMTestServer
from basevolve.testing.sim.server import PREFIX_CACHE_PROMPTS

_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d*|\d*\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
_FACTORS = (0.5, 0.8, 0.9, 1.1, 1.25, 2.0)
_SWAPS = ((" + ", " - "), (" * ", " / "), (" < ", " > "), (" <= ", " >= "),
          ("min(", "max("))
_DEF_LINE = re.compile(r"^([ \t]*(?:async[ \t]+)?def .*\)(?:[ \t]*->[^:]*)?):[ \t]*$", re.M)
BROKEN_KINDS = ("prose", "syntax", "raises")


def _code_lines(block: str) -> list[int]:
    """Indices of the lines that are code: not blank, not comments, not a docstring's
    first line (a line opening with a quote)."""
    return [i for i, ln in enumerate(block.split("\n"))
            if ln.strip() and not ln.lstrip().startswith(("#", '"', "'"))]


def _code_part(line: str) -> str:
    """The line without a trailing comment (roughly: the text before a ``#``)."""
    return line.split("#", 1)[0].rstrip()


def nudge_constant(block: str, rng: np.random.Generator) -> str | None:
    """A number literal in a code line scaled by one of ``_FACTORS``; None if none."""
    lines = block.split("\n")
    hits = [(i, m) for i in _code_lines(block) for m in _NUMBER.finditer(lines[i])
            if "#" not in lines[i][:m.start()]]
    if not hits:
        return None
    i, m = hits[int(rng.integers(len(hits)))]
    text = m.group(0)
    value = float(text) * _FACTORS[int(rng.integers(len(_FACTORS)))]
    is_int = text.isdigit()
    new = str(max(1, round(value))) if is_int else f"{value:.6g}"
    if "." not in new and "e" not in new and not is_int:
        new += ".0"
    if new == text:
        new = str(int(text) + 1) if is_int else f"{float(text) + 0.1:.6g}"
    lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    return "\n".join(lines)


def swap_operator(block: str, rng: np.random.Generator) -> str | None:
    """One operator of a code line swapped for its partner; None if there is none."""
    lines = block.split("\n")
    hits = []
    for i in _code_lines(block):
        for a, b in _SWAPS:
            for old, new in ((a, b), (b, a)):
                hits += [(i, m.start(), old, new)
                         for m in re.finditer(re.escape(old), lines[i])]
    if not hits:
        return None
    i, at, old, new = hits[int(rng.integers(len(hits)))]
    lines[i] = lines[i][:at] + new + lines[i][at + len(old):]
    return "\n".join(lines)


def swap_lines(block: str, rng: np.random.Generator) -> str | None:
    """Two adjacent code lines of equal indentation swapped (neither a ``def``, a
    ``return`` or a block opener, which would change the structure); None if none."""
    lines = block.split("\n")

    code = set(_code_lines(block))

    def movable(i: int) -> bool:
        s = _code_part(lines[i]).strip()
        return i in code and bool(s) and not s.endswith((":", "(", "[", "{", ",", "\\")) \
            and not s.startswith(("def ", "return", "class ", "@", ")", "]", "}"))

    def indent(ln: str) -> str:
        return ln[:len(ln) - len(ln.lstrip())]

    pairs = [i for i in range(len(lines) - 1) if movable(i) and movable(i + 1)
             and indent(lines[i]) == indent(lines[i + 1]) and lines[i] != lines[i + 1]]
    if not pairs:
        return None
    i = pairs[int(rng.integers(len(pairs)))]
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines)


EDITS: dict[str, Callable[[str, np.random.Generator], str | None]] = {
    "constant": nudge_constant, "operator": swap_operator, "lines": swap_lines}


def break_block(block: str, kind: str) -> str:
    """``block`` broken on purpose: ``syntax`` drops a ``def``'s colon (or appends an
    unclosed bracket), ``raises`` makes the first code line raise when it runs."""
    if kind == "syntax":
        broken, n = _DEF_LINE.subn(r"\1", block, count=1)
        return broken if n else block.rstrip("\n") + "\nbroken = (\n"
    lines = block.split("\n")
    code = _code_lines(block)
    first = next((i for i in code if not lines[i].lstrip().startswith(("def ", "@", "class ",
                                                                         "import ", "from "))
                  and not lines[i].rstrip().endswith(":")), None)
    if first is None:  # nothing inside a function: raise at import
        return block.rstrip("\n") + "\nraise RuntimeError('simulated broken edit')\n"
    pad = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
    lines.insert(first, f"{pad}raise RuntimeError('simulated broken edit')")
    return "\n".join(lines)


class BlockEditReplies(EvolveBlockReplies):
    """``(request_body, index) -> reply``: the parent's EVOLVE block with seeded edits,
    in the protocol's reply format (see the module docstring)."""

    def __init__(self, *, broken_rate: float = 0.08, max_edits: int = 2) -> None:
        if not 0 <= broken_rate < 1:
            raise ConfigError(f"--broken-rate must be in [0, 1), got {broken_rate}")
        super().__init__()
        self.broken_rate = float(broken_rate)
        self.max_edits = int(max_edits)

    def _rng(self, seed: Any) -> np.random.Generator:
        return np.random.default_rng(seed_hash(seed, "block-edit"))

    def _broken(self, seed: Any) -> str | None:
        """The way this request's reply is broken (one of ``BROKEN_KINDS``), or None."""
        rng = self._rng(seed)
        if rng.random() < self.broken_rate:
            return BROKEN_KINDS[int(rng.integers(len(BROKEN_KINDS)))]
        return None

    def is_junk(self, seed: Any) -> bool:
        """A code request answered with prose (judge and meta-prompt calls never are)."""
        return self._broken(seed) == "prose"

    def parent(self, users: Sequence[str]) -> tuple[str, str] | None:
        """The parent with an EVOLVE block, else the last program shown (evolves whole)."""
        return parent_program(users) or last_program(users)

    def choose(self, old: str, seed: Any, prompt: str = "") -> str:
        kind = self._broken(seed)
        if kind is not None and kind != "prose":  # prose was answered by is_junk
            return _ends_line(break_block(old, kind))
        rng = self._rng([seed_hash(seed, "edits")])
        new = old
        names = list(EDITS)
        for _ in range(1 + int(rng.integers(self.max_edits))):
            for k in rng.permutation(len(names)):
                edited = EDITS[names[int(k)]](new, rng)
                if edited is not None and edited != new and edited.rstrip() != old.rstrip():
                    new = edited
                    break
        if new.rstrip() == old.rstrip():
            return super().choose(old, seed)  # nothing to edit: a marker comment
        return _ends_line(new)


def block_edit_server(task: str, *, broken_rate: float = 0.08, latency_s: float = 0.0,
                      latency_model: LatencyModel | None = None, port: int = 0,
                      record: bool = False) -> LLMTestServer:
    """An (unstarted) test server answering with :class:`BlockEditReplies` for ``task``
    (a registered name, a ``.py`` task file or an OpenEvolve directory).

    The task is loaded now so a wrong name or a broken file is one clear line before
    anything listens, and a task whose programs are not Python code (a text task
    evolves a prompt) is refused.  Usage and the prefix cache are the family
    simulator's (:data:`~basevolve.testing.sim.server.PREFIX_CACHE_PROMPTS`).
    """
    loaded = load_task(task)
    if getattr(loaded, "artifact", "program") != "program":
        raise ConfigError(f"--task {task!r} evolves {loaded.artifact}, not a program; "
                          "simulate-server edits programs (use the embedded model or "
                          "the test server's replies for a text task)")
    shown = [f"```python\n{loaded.initial_program}```"]
    if parent_program(shown) is None and last_program(shown) is None:
        raise ConfigError(f"--task {task!r}: its initial program has no EVOLVE block and "
                          "no function to edit")
    return LLMTestServer(BlockEditReplies(broken_rate=broken_rate), latency_s=latency_s,
                         latency_model=latency_model, port=port, record=record,
                         prefix_cache_prompts=PREFIX_CACHE_PROMPTS)


def _ends_line(block: str) -> str:
    return block if block.endswith("\n") else block + "\n"


__all__ = ["BROKEN_KINDS", "EDITS", "BlockEditReplies", "block_edit_server", "break_block",
           "nudge_constant",
           "swap_lines", "swap_operator"]
