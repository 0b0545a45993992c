"""Protocol base: within-trajectory parent sampling as a pure ask/tell object.

A protocol is line "parent sampling" of the paper's Algorithm 1 (and line
``base-parent-sampling`` of Algorithm 2, where BaSE runs one protocol per trajectory):
it decides which archived program is the parent and builds the prompt.  It does no I/O
and owns no budget; the engine asks, calls the LLM, evaluates, and tells.

Template method (docs/design.md, style rule 1): the public :meth:`Protocol.ask`,
:meth:`Protocol.tell` and :meth:`Protocol.cancel` validate and keep the shared
bookkeeping (outstanding proposals, archive, best); subclasses implement ``_can_ask``,
``_ask``, ``_tell`` and optionally ``_cancel`` and ``_summary``.

Determinism contract: given the same constructor arguments (incl. a seeded
``np.random.Generator`` when a subclass needs randomness), :meth:`set_initial` and the
same sequence of ``ask``/``tell``/``cancel`` calls, a protocol produces the same proposals
and ends in the same state.  The engine rebuilds a protocol on resume by replaying the
stored sequence; a proposal that was in flight when the run died is :meth:`cancel`-ed (or
re-sent as stored) and then asked again.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from basevolve.errors import BasevolveError, ConfigError
from basevolve.objectives import Objectives
from basevolve.params import Param, parse_params
from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.prompts.feedback import render_feedback
from basevolve.prompts.files_reply import parse_files_reply
from basevolve.prompts.parse import ParsedProgram, extract_program
from basevolve.protocols.vectors import ObjectiveVectors
from basevolve.registry import Registry
from basevolve.tasks.base import Task
from basevolve.vocab import PURPOSES, TEXT_PURPOSES, check_feedback


class ProtocolStateError(BasevolveError, RuntimeError):
    """An ask/tell call out of order (asking at a barrier, telling an unknown proposal)."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class Child:
    """An evaluated program as the engine tells it back.

    ``code`` is ``None`` when the reply held no usable program; such a child has score 0,
    ``valid=False`` and the parser's reason in ``error``.  ``program_id`` is the store's id
    (``None`` for the initial program or when the engine does not store programs).
    """

    program_id: int | None
    code: str | None
    score: float
    valid: bool
    error: str | None = None
    metrics: dict[str, float] | None = None  # the trusted scorer's raw metrics
    output: str | None = None  # the program's stdout/stderr (OpenEvolve's "artifacts")
    artifacts: dict[str, str] | None = None  # the evaluator's feedback (issue 21)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def usable(self) -> bool:
        """Whether this child may become a parent: valid, has code, finite score."""
        return self.valid and self.code is not None and math.isfinite(self.score)


@dataclass(frozen=True, slots=True)
class Proposal:
    """One LLM call a protocol asks for.

    ``messages`` is the OpenAI chat prompt; ``generation`` is 1-based; ``slot`` is the
    child's index inside the generation (``0..generation_size-1``).  ``meta`` carries
    protocol-specific, JSON-able details (e.g. island id, inspiration ids) for the store.
    ``purpose`` is one of :data:`PURPOSES`: ``mutation`` and ``fix`` replies are programs
    (parsed, run, scored); the :data:`TEXT_PURPOSES` replies go back to the protocol as
    text.  A *gate* (``meta["gates_program"]``: ShinkaEvolve's novelty judge, issue 23,
    item 5) is a text purpose whose reply decides whether a program proposed earlier is
    evaluated: the engine treats it as a program call, and the protocol's
    ``parse_reply`` turns the verdict into that program or into a reason.
    """

    parent_id: int | None
    parent_code: str
    generation: int
    slot: int
    messages: list[dict[str, str]]
    trajectory: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    purpose: str = "mutation"

    def __post_init__(self) -> None:
        if self.purpose not in PURPOSES:
            raise ProtocolStateError(
                f"proposal purpose {self.purpose!r} is not one of {', '.join(PURPOSES)}")

    @property
    def is_text(self) -> bool:
        """Whether the reply is text for the protocol rather than a program (a gate's
        reply yields a program: class docstring)."""
        return self.purpose in TEXT_PURPOSES and not self.meta.get("gates_program")

    @property
    def key(self) -> tuple[int, int]:
        return (self.generation, self.slot)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for the store (messages included)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Told:
    """One entry of a protocol's archive: the proposal and the child it produced."""

    proposal: Proposal
    child: Child


class Protocol(ABC):
    """Base class of every parent-sampling protocol (one instance per trajectory)."""

    name: ClassVar[str]
    #: Declared ``--protocol-param`` keys (see :mod:`basevolve.protocols.params`).
    PARAMS: ClassVar[tuple[Param, ...]] = ()

    def __init__(
        self,
        *,
        task: Task,
        breadth: int = 1,
        trajectory: int = 0,
        rng: np.random.Generator | None = None,
        asynchronous: bool = False,
        feedback: str = "none",
        objectives: Objectives | None = None,
    ) -> None:
        """``rng``: the only source of randomness a protocol may use (seeded by the engine
        per trajectory); deterministic protocols such as greedy ignore it.

        ``asynchronous``: the engine may ask this trajectory again while earlier proposals
        are still in flight (BaSE under concurrency, issue 9).  Each proposal then sees
        the trajectory as of its ask; how a protocol uses the flag is its own contract
        (greedy: only with N = 1, see :mod:`basevolve.protocols.greedy`).

        ``feedback``: the run's ``--feedback`` (issue 21, part 3).  ``"artifacts"`` puts a
        parent's evaluator feedback (:meth:`feedback_section`) into the prompts built from
        it; ``"none"`` leaves every prompt as the paper prints it.
        ``objectives``: a run's several objectives (issue 36; :mod:`.vectors`), else None.
        """
        self.feedback = check_feedback(feedback)
        if not isinstance(breadth, int) or isinstance(breadth, bool) or breadth < 1:
            raise ConfigError(f"breadth must be an integer >= 1, got {breadth!r}")
        self.task = task
        self.trajectory = trajectory
        self.rng = rng
        self.asynchronous = bool(asynchronous)
        self._breadth = breadth
        self._best = Child(None, task.initial_program, 0.0, False, "initial program not evaluated")
        self._initial = self._best
        self._outstanding: dict[tuple[int, int], Proposal] = {}
        self._archive: list[Told] = []
        self._n_asked = 0
        self._started = False
        self.objectives, self.vectors = objectives, ObjectiveVectors(objectives)

    # -- public API -------------------------------------------------------------------
    @property
    def best(self) -> Child:
        """The trajectory's current best program (initially the initial program)."""
        return self._best

    @property
    def initial(self) -> Child:
        return self._initial

    @property
    def generation_size(self) -> int:
        """N: calls per generation (greedy breadth)."""
        return self._breadth

    @property
    @abstractmethod
    def generation(self) -> int:
        """The 1-based generation the next (or outstanding) proposals belong to."""

    @property
    def outstanding(self) -> list[Proposal]:
        """Asked but not yet told proposals, in ask order."""
        return list(self._outstanding.values())

    @property
    def archive(self) -> list[Told]:
        """Every told (proposal, child), in tell order."""
        return list(self._archive)

    @property
    def n_asked(self) -> int:
        return self._n_asked

    @property
    def n_outstanding(self) -> int:
        """How many asked proposals are not yet told (the trajectory's calls in flight)."""
        return len(self._outstanding)

    @classmethod
    def parse_params(cls, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Typed ``--protocol-param`` values, or :class:`ConfigError` naming the key."""
        return parse_params(cls.PARAMS, raw, cls.name)

    @property
    def n_told(self) -> int:
        return len(self._archive)

    def parse_reply(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """Turn the LLM's reply to ``proposal`` into a program (the engine calls this).

        Default: full-rewrite extraction (:func:`~basevolve.prompts.extract_program`) with
        the task's language and entry function.  Diff-based protocols override it (e.g.
        :func:`~basevolve.prompts.apply_search_replace` on ``proposal.parent_code``).  A
        program of several files (``language="mixed"``) is read by
        :func:`~basevolve.prompts.files_reply.parse_files_reply`.
        """
        if self.task.language == FILES_LANGUAGE:  # several files, one text (issue 31)
            return parse_files_reply(proposal.parent_code, reply_text)
        return extract_program(reply_text, language=self.task.language, entry=self.task.entry)

    def set_initial(self, child: Child) -> None:
        """Give the evaluated initial program; must precede the first :meth:`ask`."""
        if self._started:
            raise ProtocolStateError("set_initial must be called before the first ask()")
        if child.code is None:
            child = Child(
                child.program_id, self.task.initial_program, child.score, child.valid, child.error
            )
        self._initial = self._best = child
        self.vectors.note(child)

    @property
    def queued_followups(self) -> int:
        """Calls this protocol will ask before anything new: follow-ups its tells queued
        (a code call after a meta prompt, a judge call, a retry).  The engine continues
        the pull that caused them with them (engine/followups.py); 0 for protocols
        without follow-ups."""
        return 0

    def can_ask(self) -> bool:
        """Whether :meth:`ask` may be called now (False at a generation barrier)."""
        return self._can_ask()

    def ask(self) -> Proposal:
        if not self._can_ask():
            raise ProtocolStateError(
                f"{self.name} trajectory {self.trajectory} cannot ask now: generation "
                f"{self.generation} waits for {len(self._outstanding)} outstanding child(ren); "
                "tell them (or cancel lost ones) first"
            )
        self._started = True
        proposal = self._ask()
        if self.objectives is not None and proposal.purpose in ("mutation", "fix"):  # #36
            proposal = replace(proposal, messages=self.vectors.prompt(proposal.messages,
                                                                      proposal.parent_id))
        if proposal.key in self._outstanding:
            raise ProtocolStateError(f"{self.name} produced a duplicate proposal {proposal.key}")
        self._outstanding[proposal.key] = proposal
        self._n_asked += 1
        return proposal

    def tell(self, proposal: Proposal, child: Child) -> None:
        if self._outstanding.get(proposal.key) != proposal or proposal.is_text:
            raise ProtocolStateError(
                f"tell() for proposal (generation, slot)={proposal.key} of trajectory "
                f"{proposal.trajectory}, which is not outstanding in trajectory {self.trajectory}"
            )
        if child.code is None and (child.valid or child.score != 0.0):
            child = Child(child.program_id, None, 0.0, False, child.error or "no program")
        del self._outstanding[proposal.key]
        self._archive.append(Told(proposal, child))
        self.vectors.note(child)
        self._tell(proposal, child)

    def tell_text(self, proposal: Proposal, text: str) -> None:
        """Give back the reply to a :data:`TEXT_PURPOSES` proposal (judge, meta prompt).

        The engine calls this instead of :meth:`tell` for such proposals; nothing is run
        or scored and the archive is unchanged.
        """
        if self._outstanding.get(proposal.key) != proposal or not proposal.is_text:
            raise ProtocolStateError(
                f"tell_text() for proposal {proposal.key} (purpose {proposal.purpose!r}), "
                f"which is not an outstanding text proposal of trajectory {self.trajectory}")
        del self._outstanding[proposal.key]
        self._tell_text(proposal, text)

    def settled(self, proposal: Proposal) -> bool:
        """Whether the told ``proposal``'s child has had its whole effect on :attr:`best`.

        The engine credits a trajectory's gain to the pull whose child became the best
        (``--reward improvement``, issue 23, item 2) and waits to tell a pull until its
        children are settled.  Default: a child is settled when told (asynchronous
        protocols compare it with the best at once); a protocol that holds children
        back (greedy's generation barrier) says so.
        """
        return True

    def cancel(self, proposal: Proposal) -> None:
        """Forget an outstanding proposal that will never be told (lost call).

        The protocol may then ask for the same slot again (greedy re-issues an identical
        proposal).
        """
        if proposal.key not in self._outstanding:
            raise ProtocolStateError(
                f"cancel() for proposal {proposal.key}, which is not outstanding"
            )
        del self._outstanding[proposal.key]
        self._n_asked -= 1
        self._cancel(proposal)

    def feedback_section(self, child: Child) -> str:
        """``child``'s evaluator feedback as the delimited, capped prompt section of
        :mod:`basevolve.prompts.feedback`; ``""`` when feedback is off or nothing was
        reported (so the default prompts never change)."""
        if self.feedback != "artifacts":
            return ""
        return render_feedback(child.error, child.output, child.artifacts)

    def state_summary(self) -> dict[str, Any]:
        """JSON-able state, stored with events and compared in replay tests."""
        return {
            "protocol": self.name,
            "trajectory": self.trajectory,
            "generation": self.generation,
            "generation_size": self.generation_size,
            "n_asked": self._n_asked,
            "n_told": len(self._archive),
            "outstanding": [list(k) for k in self._outstanding],
            "best_program_id": self._best.program_id,
            "best_score": self._best.score,
            "best_valid": self._best.valid,
            **self._summary(),
        }

    # -- subclass hooks ---------------------------------------------------------------
    @abstractmethod
    def _can_ask(self) -> bool: ...

    @abstractmethod
    def _ask(self) -> Proposal: ...

    @abstractmethod
    def _tell(self, proposal: Proposal, child: Child) -> None: ...

    def observe_reply(self, proposal: Proposal, reply_text: str) -> None:  # noqa: B027
        """Hook: the raw reply to a program proposal, before its :meth:`tell`.

        The engine calls it with every ``parse_reply`` and, on resume, for every stored
        reply whose child is replayed (``parse_reply`` is not run again then), so a
        protocol that continues a conversation with the failed reply (ShinkaEvolve-style
        patch retries) rebuilds the same messages after a crash.  Default: ignored.
        """

    def _cancel(self, proposal: Proposal) -> None:  # noqa: B027 - optional hook
        """Hook: undo the bookkeeping of an asked-but-lost proposal."""

    def _tell_text(self, proposal: Proposal, text: str) -> None:
        """Hook: use a text reply.  Only protocols that ask text proposals override it."""
        raise ProtocolStateError(f"{self.name} asked no text proposals")

    def _summary(self) -> dict[str, Any]:
        return {}

    def _set_best(self, child: Child) -> None:
        self._best = child


PROTOCOLS: Registry[type[Protocol]] = Registry("protocol")
