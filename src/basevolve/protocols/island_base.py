"""Shared ask/tell skeleton of the island protocols (OpenEvolve / CodeEvolve /
ShinkaEvolve style; paper, Section 3 "Island Protocol", Table 1, Appendix pairwise table).

Why one skeleton: all three are *asynchronous* (no generation barrier; any number of
proposals in flight, each seeing the population as of its ask) and all charge every
LLM call to the budget C, including the extra calls (patch retries = purpose ``fix``,
novelty judge = ``judge``, CodeEvolve's meta-prompt = ``meta_prompt``).  The skeleton:

* numbers proposals by ask (``generation`` = ask counter, ``slot`` = 0), so keys are
  unique however many are in flight;
* keeps a FIFO of *follow-up* calls (a retry after a failed patch, the code call after
  a meta-prompt call, a judge call) that are asked before any fresh one;
* keeps per-proposal context from ask to tell, and re-queues a lost follow-up on
  :meth:`cancel`;
* parses replies by the format named in ``proposal.meta["format"]`` (``full``,
  ``diff``, ``tagged_code``, ``tagged_diff``) with the one strict applier, so a reply
  that cannot be used is a child with score 0 and the reason;
* validates the protocol's declared parameters (``PARAMS``).

Subclasses implement ``_fresh()`` (sample a parent and build a new mutation),
``_on_child`` and optionally ``_on_text`` / ``_check_parsed``.  All randomness comes
from ``self.rng`` (seeded per trajectory by the engine), so replaying the stored
ask/tell sequence rebuilds the same population on resume.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from basevolve.objectives import Objectives
from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.prompts import (
    ParsedProgram,
    parse_diff_reply,
    parse_full_rewrite,
    parse_tagged_reply,
)
from basevolve.prompts.files_reply import parse_files_reply
from basevolve.protocols.base import Child, Param, Proposal, Protocol
from basevolve.protocols.front_parents import FRONT, check_parent_selection, front_choice
from basevolve.protocols.islands import Member
from basevolve.tasks.base import Task

FORMATS = ("full", "diff", "tagged_code", "tagged_diff")


@dataclass(slots=True)
class Call:
    """A call about to be asked: what the proposal carries plus the protocol's context."""

    messages: list[dict[str, str]]
    parent_id: int | None
    parent_code: str
    purpose: str = "mutation"
    meta: dict[str, Any] = field(default_factory=dict)
    ctx: dict[str, Any] = field(default_factory=dict)


class IslandProtocol(Protocol):
    """Asynchronous protocol base with follow-up calls; see the module docstring."""

    PARAMS: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, *, task: Task, breadth: int = 1, trajectory: int = 0,
                 rng: np.random.Generator | None = None, asynchronous: bool = True,
                 feedback: str = "none", objectives: Objectives | None = None,
                 **params: Any) -> None:
        super().__init__(task=task, breadth=breadth, trajectory=trajectory, rng=rng,
                         asynchronous=True, feedback=feedback, objectives=objectives)
        values = {p.name: p.default for p in self.PARAMS}
        values.update(self.parse_params(params))
        self.params: dict[str, Any] = values
        check_parent_selection(self.name, values, objectives)
        self._front_uses: Counter[int | None] = Counter()
        self.rng: np.random.Generator = rng if rng is not None else np.random.default_rng(
            [0, trajectory])
        self._asks = 0
        self._ctx: dict[tuple[int, int], Call] = {}
        self._followups: deque[Call] = deque()
        self._replies: dict[tuple[int, int], str] = {}

    @classmethod
    def parse_params(cls, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Typed values of the given keys (see :mod:`basevolve.protocols.params`), plus
        the protocol's checks across parameters on the values with defaults filled in,
        so a bad combination is refused when the run config is built, before anything is
        stored."""
        given = super().parse_params(raw)
        cls.check_params({**{p.name: p.default for p in cls.PARAMS}, **given})
        return given

    @classmethod
    def check_params(cls, values: dict[str, Any]) -> None:
        """Hook: raise :class:`ConfigError` for an inconsistent combination."""

    # ------------------------------------------------------------------ skeleton
    @property
    def generation(self) -> int:
        return self._asks + 1

    def _can_ask(self) -> bool:
        return True

    def _ask(self) -> Proposal:
        call = self._followups.popleft() if self._followups else self._fresh()
        self._asks += 1
        proposal = Proposal(
            parent_id=call.parent_id, parent_code=call.parent_code, generation=self._asks,
            slot=0, messages=call.messages, trajectory=self.trajectory, meta=dict(call.meta),
            purpose=call.purpose)
        self._ctx[proposal.key] = call
        return proposal

    def _tell(self, proposal: Proposal, child: Child) -> None:
        call = self._ctx.pop(proposal.key)
        reply = self._replies.pop(proposal.key, None)
        if child.usable and (not self.best.usable or child.score > self.best.score):
            self._set_best(child)
        self._on_child(proposal, call, child, reply)

    def _tell_text(self, proposal: Proposal, text: str) -> None:
        self._on_text(proposal, self._ctx.pop(proposal.key), text)

    def _cancel(self, proposal: Proposal) -> None:
        call = self._ctx.pop(proposal.key, None)
        self._replies.pop(proposal.key, None)
        if call is not None and call.ctx.get("followup"):
            self._followups.appendleft(call)  # the chain continues with the same call

    @property
    def queued_followups(self) -> int:
        return len(self._followups)

    def follow_up(self, call: Call) -> None:
        call.ctx["followup"] = True
        self._followups.append(call)

    def front_parent(self, members: list[Member]) -> Member | None:
        """With ``--protocol-param parent_selection=front`` (issue 36, item 3): a member
        of the Pareto front of ``members`` (an island), the least-used first and the
        loneliest among those (:mod:`basevolve.protocols.front_parents`); None otherwise,
        or when no member has an objective vector, and the protocol keeps its own rule."""
        if self.objectives is None or self.params.get("parent_selection") != FRONT:
            return None
        m = front_choice(members, lambda m: self.vectors.get(m.program_id),
                         lambda m: self._front_uses[m.program_id], self.objectives)
        if m is not None:
            self._front_uses[m.program_id] += 1
        return m

    # ------------------------------------------------------------------ parsing
    def observe_reply(self, proposal: Proposal, reply_text: str) -> None:
        """Remember the reply until its tell (a patch retry continues the conversation
        with it; on resume the engine hands over the stored reply)."""
        self._replies[proposal.key] = reply_text

    def parse_reply(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """Parse by ``proposal.meta["format"]`` (:meth:`parse_format`), then let the
        protocol check the program (:meth:`_check_parsed`, e.g. novelty)."""
        parsed = self.parse_format(proposal, reply_text)
        if parsed.code is None:
            return parsed
        return self._check_parsed(proposal, parsed)

    def parse_format(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """The program a reply makes of ``proposal.parent_code`` by
        ``proposal.meta["format"]`` with the one strict applier, nothing checked.

        A text artifact (``task.artifact == "text"``, issue 15) has no EVOLVE blocks: the
        whole text is the evolvable region, so edits are not confined to markers.
        """
        fmt = proposal.meta.get("format", "full")
        task = self.task
        markers = getattr(task, "artifact", "program") == "program"
        if task.language == FILES_LANGUAGE:  # several files, per-file edits (issue 31)
            return parse_files_reply(proposal.parent_code, reply_text, fmt,
                                     confine=markers and bool(proposal.meta.get("confine", True)))
        if fmt == "diff":
            parsed = parse_diff_reply(proposal.parent_code, reply_text,
                                      confine=markers and bool(proposal.meta.get("confine", True)))
        elif fmt in ("tagged_code", "tagged_diff"):
            parsed = parse_tagged_reply(proposal.parent_code, reply_text,
                                        body="CODE" if fmt == "tagged_code" else "DIFF",
                                        language=task.language, entry=task.entry,
                                        confine=markers).parsed
        else:
            parsed = parse_full_rewrite(reply_text, language=task.language, entry=task.entry)
        return parsed

    def _check_parsed(self, proposal: Proposal, parsed: ParsedProgram) -> ParsedProgram:
        """Hook: reject a parsed program before evaluation (novelty); default: keep."""
        return parsed

    # ------------------------------------------------------------------ hooks
    def _fresh(self) -> Call:
        raise NotImplementedError

    def _on_child(self, proposal: Proposal, call: Call, child: Child, reply: str | None
                  ) -> None:
        raise NotImplementedError

    def _on_text(self, proposal: Proposal, call: Call, text: str) -> None:
        """Hook for text purposes (judge, meta_prompt); default: nothing to do."""

    def _summary(self) -> dict[str, Any]:
        return {"queued_followups": len(self._followups), "in_flight": len(self._ctx)}
