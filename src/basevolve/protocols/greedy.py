"""Greedy T×N protocol (paper, Section 3 "Greedy Protocol"; Algorithm 1).

Each generation freezes the current best program as the parent and asks for N full
rewrites from the *same* prompt (byte-identical messages for all N siblings, so a
prefix-caching server reads the prompt once; paper, Appendix "Effective FLOPs").  When all
N children are told, the best usable child (highest score; ties: lowest slot) replaces the
parent only if it is strictly better.  A run of budget C with depth T has N = C/T:
T=1 is best-of-N, T=C (N=1) is pure sequential refinement.  Under BaSE (Algorithm 2) one
pull of a trajectory is one call, i.e. one child; with N=1 every tell closes a generation.

Prompt: OpenEvolve's verbatim template (:mod:`basevolve.prompts.openevolve`), filled as:

* fitness = the parent's score; artifacts = the parent's evaluation error, if any; with
  ``--feedback artifacts`` (issue 21, part 3) the parent's whole evaluator feedback
  instead (error, artifacts, output; :mod:`basevolve.prompts.feedback`);
* feature coordinates / dimensions: greedy keeps no MAP-Elites grid and says so;
* evolution history: the paper surfaces "three top programs and two diverse programs from
  the archive".  Greedy's archive is this trajectory's evaluated programs (the initial one
  and every child with code), distinct by code, excluding the parent itself, ordered by
  (score desc, generation, slot) so the order never depends on tell order.  Top = the
  first ``n_top``; diverse = ``n_diverse`` programs at evenly spaced ranks of the rest
  (e.g. ranks m/3 and 2m/3 of m), deterministic and showing mid-ranked alternatives.
* focus areas: "improved a → b" after an accepting generation, else how many generations
  the score has been unchanged, or "not valid" for an invalid parent.

``--protocol-param mode=diff`` (issue 31, item 5: an OpenEvolve task directory's
``diff_based_evolution``) asks for SEARCH/REPLACE edits with the OpenEvolve diff template
and applies them with the one strict applier (:func:`~basevolve.prompts.formats.
parse_diff_reply`, not confined to the EVOLVE block, as OpenEvolve); a reply with no
SEARCH block is taken as a full rewrite, as AdaEvolve's diff mode does.  Default
``mode=full``: the paper's prompt, unchanged.

A text task (``prompt_optimization``, issue 15) writes its own mutation prompt
(:meth:`basevolve.tasks.text.TextTask.mutation_messages`: the current template, its
accuracy and the questions it got wrong); everything else above is unchanged.

Acceptance: a child may become the parent only if usable (valid, has code, finite score)
and strictly better than the parent; a usable child also replaces an unusable parent
(e.g. an initial program that failed), whatever the scores.

Several objectives (issue 36, item 3).  When the run declares objectives the parent is not
the best score but a member of the trajectory's Pareto front (the initial program and every
usable child offered as told), chosen by :mod:`basevolve.protocols.front_parents` (turns by
use, ties by crowding distance); the best score is still kept as :attr:`best` for the
engine.  A cancelled asynchronous ask gives its choice back, so the re-ask is identical.

Asynchronous trajectories (issue 9; engine docstring).  Under BaSE with N = 1 the engine
builds greedy with ``asynchronous=True``: the trajectory may hold several calls in flight.
Every ask is then its own generation of one child whose parent is the trajectory's best
*at ask time* -- exactly what sequential Algorithm 2 would send if it chose this arm again
-- and a returning child is accepted if and only if it is usable and strictly better than
the trajectory's best *at tell time* (a sibling that returned first may already have
raised it).  With one call in flight this is identical, call for call, to the barrier
mode with N = 1.  With N > 1 the generation barrier is kept (``asynchronous`` is ignored):
a generation's N children share one frozen parent, as Algorithm 1 requires.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType
from typing import Any

import numpy as np

from basevolve.errors import ConfigError
from basevolve.objectives import Objectives
from basevolve.prompts import ParsedProgram
from basevolve.prompts.feedback import append_section
from basevolve.prompts.formats import parse_diff_reply
from basevolve.prompts.openevolve import (
    DIFF_TEMPLATE_NAME,
    TEMPLATE_NAME,
    HistoryEntry,
    build_openevolve_messages,
    format_artifacts,
    format_evolution_history,
    format_improvement_areas,
)
from basevolve.protocols.base import PROTOCOLS, Child, Param, Proposal, Protocol
from basevolve.protocols.front_parents import ParentFront
from basevolve.tasks.base import Task

SEARCH_LINE = "<<<<<<< SEARCH"  # a reply with none is a full rewrite in mode=diff


@dataclass(frozen=True, slots=True)
class HistoryOptions:
    """What the ``{evolution_history}`` block surfaces (paper default: 3 top + 2 diverse).

    ``include_code=False`` lists only scores, for small-context models.
    """

    n_top: int = 3
    n_diverse: int = 2
    include_code: bool = True

    def __post_init__(self) -> None:
        if self.n_top < 0 or self.n_diverse < 0:
            raise ConfigError(
                f"history counts must be >= 0, got n_top={self.n_top}, n_diverse={self.n_diverse}"
            )


@dataclass(frozen=True, slots=True)
class _Archived:
    child: Child
    generation: int
    slot: int
    key: str  # identity for "distinct programs", see :func:`program_key`


@lru_cache(maxsize=4096)
def program_key(code: str | None) -> str:
    """Identity of a program for de-duplicating the history.

    The digest of its compiled bytecode (instructions, constants, names; recursively),
    so copies that differ only in comments, blank lines or formatting (common with small
    models) count once.  Bytecode rather than ``ast.dump``: ~10× cheaper, and the engine
    budget is ~2 ms CPU per call.  Code that does not compile is keyed by its text.
    """
    text = (code or "").strip()
    try:
        compiled = compile(text, "<program>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "text:" + hashlib.sha256(text.encode()).hexdigest()
    return "code:" + hashlib.sha256(repr(_code_identity(compiled)).encode()).hexdigest()


def _code_identity(co: CodeType) -> tuple[Any, ...]:
    consts = tuple(_const_identity(c) for c in co.co_consts)
    return (co.co_code, consts, co.co_names, co.co_varnames)


def _const_identity(c: object) -> object:
    if isinstance(c, CodeType):
        return _code_identity(c)
    if isinstance(c, frozenset):  # iteration order is not stable across processes
        return ("frozenset", sorted(repr(x) for x in c))
    return repr(c)


class GreedyProtocol(Protocol):
    """Generation barrier + strict-improvement replacement of a single best program."""

    name = "greedy"
    PARAMS = (Param("mode", str, "full", "full rewrite (paper) or SEARCH/REPLACE diff "
                    "[OpenEvolve's diff_based_evolution]", choices=("full", "diff")),)

    def __init__(
        self,
        *,
        task: Task,
        breadth: int = 1,
        trajectory: int = 0,
        rng: np.random.Generator | None = None,
        history: HistoryOptions | None = None,
        asynchronous: bool = False,
        feedback: str = "none",
        mode: str = "full",
        objectives: Objectives | None = None,
    ) -> None:
        super().__init__(task=task, breadth=breadth, trajectory=trajectory, rng=rng,
                         asynchronous=asynchronous and breadth == 1, feedback=feedback,
                         objectives=objectives)
        self.history = history or HistoryOptions()
        # a text task writes its own prompt: its edits are never diffs
        self.diff = mode == "diff" and getattr(task, "artifact", "program") == "program"
        self._gen = 1
        self._parent: Child | None = None  # frozen at the first ask of a generation
        self._messages: list[dict[str, str]] | None = None
        self._free: list[int] = list(range(breadth))
        self._children: dict[int, Child] = {}
        self._programs: list[_Archived] = []
        self._prev_score: float | None = None  # parent score before the last acceptance
        self._stagnant = 0
        self._accepted: list[int] = []  # generations whose best child was accepted
        # several objectives (issue 36): the parent is a front member, not the best
        self._front: ParentFront[Child] | None = (
            ParentFront(objectives) if objectives is not None else None)
        self._chosen: dict[tuple[int, int], tuple[int, int]] = {}  # proposal -> front key

    @property
    def generation(self) -> int:
        return self._gen

    @property
    def generations_completed(self) -> int:
        return self.n_told if self.asynchronous else self._gen - 1

    # -- hooks ------------------------------------------------------------------------
    def _can_ask(self) -> bool:
        return self.asynchronous or bool(self._free)

    def settled(self, proposal: Proposal) -> bool:
        """A child of the open generation may still become the parent when its last
        sibling is told (issue 23, item 2: its pull earns that gain)."""
        return self.asynchronous or proposal.generation < self._gen

    def set_initial(self, child: Child) -> None:
        super().set_initial(child)
        if self._front is not None:  # the initial program is the first front member
            self._front = ParentFront(self._front.objectives)
            self._offer((0, 0), self.initial)

    def _offer(self, key: tuple[int, int], child: Child) -> None:
        if self._front is not None and child.usable:
            self._front.offer(key, self.vectors.get(child.program_id), child)

    def _parent_now(self, key: tuple[int, int]) -> Child:
        """The trajectory's best, or with several objectives the front member chosen by
        :mod:`basevolve.protocols.front_parents` (the best while the front is empty)."""
        chosen = self._front.choose() if self._front is not None else None
        if chosen is None:
            return self.best
        self._chosen[key] = chosen[0]  # type: ignore[assignment]
        return chosen[1]

    def _ask(self) -> Proposal:
        if self.asynchronous:  # one-child generation from the best as of now
            parent, self._gen = self._parent_now((self._gen, 0)), self._gen + 1
            return Proposal(
                parent_id=parent.program_id, parent_code=parent.code or "",
                generation=self._gen - 1, slot=0, messages=self._build_messages(parent),
                trajectory=self.trajectory, meta=self._meta(),
            )  # fmt: skip
        if self._parent is None:
            self._parent = self._parent_now((self._gen, 0))
            self._messages = self._build_messages(self._parent)
        assert self._messages is not None
        slot = self._free.pop(0)
        return Proposal(
            parent_id=self._parent.program_id,
            parent_code=self._parent.code or "",
            generation=self._gen,
            slot=slot,
            # a fresh list of fresh dicts per sibling (callers may mutate), same content
            messages=[dict(m) for m in self._messages],
            trajectory=self.trajectory, meta=self._meta(),
        )

    def _meta(self) -> dict[str, Any]:
        return {"format": "diff"} if self.diff else {}

    def parse_reply(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """``mode=diff``: SEARCH/REPLACE edits of the parent; a reply without a SEARCH
        block is read as a full rewrite (the module docstring)."""
        if proposal.meta.get("format") == "diff" and SEARCH_LINE in (reply_text or ""):
            return parse_diff_reply(proposal.parent_code, reply_text, confine=False)
        return super().parse_reply(proposal, reply_text)

    def _cancel(self, proposal: Proposal) -> None:
        if self.asynchronous and self._front is not None and proposal.key in self._chosen:
            self._front.release(self._chosen.pop(proposal.key))  # the re-ask chooses it again
        if not self.asynchronous:  # an asynchronous ask holds no slot
            self._free.append(proposal.slot)
            self._free.sort()

    def _tell(self, proposal: Proposal, child: Child) -> None:
        self._chosen.pop(proposal.key, None)
        self._offer(proposal.key, child)
        if child.code is not None:
            self._programs.append(
                _Archived(child, proposal.generation, proposal.slot, program_key(child.code))
            )
        if self.asynchronous:  # compare with the best as of now, not the ask-time parent
            self._accept([child] if child.usable else [], proposal.generation)
            return
        self._children[proposal.slot] = child
        if len(self._children) == self.generation_size:
            self._close_generation()

    def _accept(self, usable: list[Child], generation: int) -> None:
        """Replace the best by the top usable child if strictly better (or best unusable)."""
        best, accepted = self.best, False
        if usable:
            top = usable[0]
            if not best.usable or top.score > best.score:
                self._prev_score = best.score if best.usable else None
                self._set_best(top)
                self._accepted.append(generation)
                accepted = True
        self._stagnant = 0 if accepted else self._stagnant + 1

    def _close_generation(self) -> None:
        assert self._parent is not None and (self._front is not None or self._parent is self.best)
        usable = [(slot, c) for slot, c in sorted(self._children.items()) if c.usable]
        ranked = sorted(usable, key=lambda sc: (-sc[1].score, sc[0]))
        self._accept([c for _, c in ranked[:1]], self._gen)
        self._gen += 1
        self._parent = None
        self._messages = None
        self._children = {}
        self._free = list(range(self.generation_size))

    def _summary(self) -> dict[str, Any]:
        return {
            "generations_completed": self.generations_completed,
            "children_told_this_generation": len(self._children),
            "accepted_generations": list(self._accepted),
            "stagnant_generations": self._stagnant,
            **({"front_size": len(self._front)} if self._front is not None else {}),
        }

    # -- prompt -----------------------------------------------------------------------
    def _history_entries(self, parent: Child) -> tuple[list[HistoryEntry], list[HistoryEntry]]:
        initial = _Archived(self.initial, 0, 0, program_key(self.initial.code))
        pool = sorted(
            [initial, *self._programs], key=lambda a: (-a.child.score, a.generation, a.slot)
        )
        seen = {program_key(parent.code), program_key(None)}
        distinct: list[_Archived] = []
        for a in pool:
            if a.key not in seen:
                seen.add(a.key)
                distinct.append(a)
        top, rest = distinct[: self.history.n_top], distinct[self.history.n_top :]
        k, m = self.history.n_diverse, len(rest)
        if m <= k:
            diverse = rest
        else:
            diverse = [rest[(i + 1) * m // (k + 1)] for i in range(k)]
        return [self._entry(a) for a in top], [self._entry(a) for a in diverse]

    @staticmethod
    def _entry(a: _Archived) -> HistoryEntry:
        label = "initial program" if a.generation == 0 else f"generation {a.generation}"
        return HistoryEntry(
            code=a.child.code or "", score=a.child.score, valid=a.child.valid,
            error=a.child.error, label=label,
        )  # fmt: skip

    def _build_messages(self, parent: Child) -> list[dict[str, str]]:
        own = getattr(self.task, "mutation_messages", None)  # a text task's own prompt
        if own is not None and (messages := own(parent)) is not None:
            return append_section(messages, self.feedback_section(parent))
        top, diverse = self._history_entries(parent)
        language = self.task.language
        return build_openevolve_messages(
            system_message=self.task.system_message,
            current_program=parent.code or "",
            fitness_score=parent.score,
            language=language,
            improvement_areas=format_improvement_areas(  # the trend is the best's: a
                parent.score,  # front parent other than the best (issue 36) gets none
                self._prev_score if self._stagnant == 0 and parent is self.best else None,
                self._stagnant if parent is self.best else 0,
                parent.usable,
            ),
            artifacts=self.feedback_section(parent) if self.feedback != "none"
            else format_artifacts(parent.error),
            evolution_history=format_evolution_history(
                top, diverse, language=language, include_code=self.history.include_code
            ),
            template=DIFF_TEMPLATE_NAME if self.diff else TEMPLATE_NAME,
        )


PROTOCOLS.register(GreedyProtocol.name, GreedyProtocol)
