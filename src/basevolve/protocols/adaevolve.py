"""AdaEvolve-style adaptive island protocol (issue 26; the island-protocols spec,
Section 5: AdaEvolve, skydiscover; behaviour read from its public source, clean-room).

The closest published rival to BaSE: it too chooses where the next LLM call goes with a
UCB rule, but among the islands of *one* population and over decayed, normalised
improvements, and it adapts each island's exploration intensity.

Population: ``num_islands`` islands (2), each an archive of at most ``population_size``
(20) programs (the initial program is evaluated on island 0 and copied to the others),
admitted by the elite-score rule of :func:`.adaevolve_signals.admission` (code distance
= 1 - cosine of hashed character 3-grams, :mod:`.novelty`; AdaEvolve mixes token,
structure and length distances).  A rejected child is stored as usual but changes no
signal (AdaEvolve updates its state only for programs it keeps).

An *iteration* is one code call plus up to ``error_retries`` (2) retries:

1. island: the first iteration goes to island 0; then an island with fewer than
   ``min_visits`` (3) visits is chosen at random, else the largest decayed
   reward-per-visit + ``ucb_c`` (1.41) sqrt(ln t / visits), t = iterations so far
   (:class:`basevolve.allocators.adaptive_ucb.DecayedUCB`; a visit is an own program the
   island kept, its reward the gain over the island's best normalised by the global best);
2. parent mode from the island's intensity I (:mod:`.adaevolve_signals`: I falls from
   ``intensity_max`` towards ``intensity_min`` as the island's accumulated improvement G
   grows): u < I exploration (novelty-weighted); u < I + 0.7 (1 - I) exploitation
   (uniform over the top quarter by fitness); else balanced (half each of the top fifth
   and novelty-weighted);
3. context: ``num_context_programs`` (4): a ``local_context_ratio`` (60%) share of the
   island's better half that is most *unlike* the parent, the rest the global top (each
   program shown once), plus up to 5 earlier children of the parent on the island;
4. a reply that yields no program is retried (purpose ``fix``) with a new sample and the
   error in the prompt; the iteration's program joins the island (if admitted), updating
   G, the island-choice sums and the global improvement history;
5. after it: an island is spawned (``dynamic_islands``, at most ``max_islands`` (5), every
   ``spawn_cooldown`` (30) iterations at most) when improvements / evaluations over all
   islands falls below ``spawn_threshold`` (0.015), seeded with copies of the 5 best
   programs and archive weights drawn from :data:`.adaevolve_signals.ISLAND_PRESETS`;
   every ``migration_interval`` (15) iterations each island's ``migration_count`` (5) best
   are copied to the next island of the ring (skipping identical code), which moves that
   island's best and G but not its visits.

Paradigm breakthrough: when the improvement rate of the last ``paradigm_window`` (10)
kept programs is below ``paradigm_threshold`` (0.12) and no idea is left, the iteration
starts with a counted call of purpose ``paradigm`` asking for ``paradigm_ideas`` (3)
ideas as JSON (an unreadable reply is asked again, ``paradigm_attempts`` (3) calls at
most); then each code call while ideas remain uses the global best as parent and the
next idea in its prompt (``paradigm_max_uses`` (2) per idea).  Every call -- code,
retry, paradigm -- is one unit of C.  Prompts: :mod:`basevolve.prompts.adaevolve`;
``mode=diff`` (default, AdaEvolve's ``diff_based_generation``) accepts a complete
program too, ``mode=full`` asks for one.

Asynchronous like the other island protocols: an island's in-flight iterations count as
provisional visits (as pending pulls do in the allocator); with ``--max-in-flight 1`` the
run is AdaEvolve's sequential loop.  Defaults: skydiscover ``configs/adaevolve.yaml``
(keys in brackets in ``PARAMS``; context ratio, elite ratio and k: archive defaults).
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

import numpy as np

from basevolve.allocators.adaptive_ucb import DecayedUCB
from basevolve.errors import ConfigError
from basevolve.prompts import ParsedProgram
from basevolve.prompts.adaevolve import (
    ShownProgram,
    build_adaevolve_messages,
    build_paradigm_messages,
    parse_paradigms,
)
from basevolve.protocols.adaevolve_archive import AdaEvolveArchive
from basevolve.protocols.adaevolve_signals import (
    IslandSignal,
    ParadigmTracker,
)
from basevolve.protocols.base import PROTOCOLS, Child, Param, Proposal
from basevolve.protocols.front_parents import PARENT_SELECTION
from basevolve.protocols.island_base import Call, IslandProtocol
from basevolve.protocols.islands import IslandPopulation, Member
from basevolve.protocols.novelty import VectorTable

SEARCH_LINE = "<<<<<<< SEARCH"


class AdaEvolveProtocol(AdaEvolveArchive, IslandProtocol):
    """Adaptive islands: G-driven intensity, decayed-UCB island choice, paradigms."""

    name = "adaevolve"
    PARAMS = (
        Param("num_islands", int, 2, "islands at the start [num_islands]", low=1, high=64),
        Param("max_islands", int, 5, "islands at most [max_islands]", low=1, high=64),
        Param("dynamic_islands", bool, True, "spawn islands [use_dynamic_islands]"),
        Param("spawn_threshold", float, 0.015, "spawn below this productivity "
              "[spawn_productivity_threshold]", low=0.0, high=1.0),
        Param("spawn_cooldown", int, 30, "iterations between spawns [spawn_cooldown_iterations]",
              low=0, high=1_000_000),
        Param("population_size", int, 20, "archive per island [population_size]", low=2,
              high=10_000),
        Param("decay", float, 0.9, "decay of G and of the island-choice sums [decay]",
              low=0.0, high=1.0),
        Param("intensity_min", float, 0.15, "lowest intensity [intensity_min]", low=0.0, high=1.0),
        Param("intensity_max", float, 0.5, "highest intensity [intensity_max]", low=0.0, high=1.0),
        Param("fitness_weight", float, 1.0, "elite score weight [fitness_weight]", low=0.0,
              high=100.0),
        Param("novelty_weight", float, 0.0, "elite score weight [novelty_weight]", low=0.0,
              high=100.0),
        Param("elite_ratio", float, 0.2, "protected share of an archive [archive_elite_ratio]",
              low=0.0, high=1.0),
        Param("k_neighbors", int, 5, "neighbours of the novelty score [k_neighbors]", low=1,
              high=1000),
        Param("num_context_programs", int, 4, "context programs [num_context_programs]",
              low=0, high=50),
        Param("local_context_ratio", float, 0.6, "share of them from the island "
              "[local_context_program_ratio]", low=0.0, high=1.0),
        Param("migration_interval", int, 15, "iterations between migrations [migration_interval]",
              low=1, high=1_000_000),
        Param("migration_count", int, 5, "programs copied per island [migration_count]", low=0,
              high=10_000),
        Param("ucb_c", float, 1.41, "island-choice exploration constant", low=0.0, high=100.0),
        Param("min_visits", int, 3, "visits before the island index is used", low=0, high=1000),
        Param("paradigm", bool, True, "paradigm breakthrough [use_paradigm_breakthrough]"),
        Param("paradigm_window", int, 10, "improvement-rate window [paradigm_window_size]",
              low=1, high=100_000),
        Param("paradigm_threshold", float, 0.12, "stagnation below this rate "
              "[paradigm_improvement_threshold]", low=0.0, high=1.0),
        Param("paradigm_max_uses", int, 2, "code calls per idea [paradigm_max_uses]", low=1,
              high=1000),
        Param("paradigm_max_tried", int, 10, "tried ideas remembered [paradigm_max_tried]",
              low=0, high=1000),
        Param("paradigm_ideas", int, 3, "ideas per paradigm call [paradigm_num_to_generate]",
              low=1, high=20),
        Param("paradigm_attempts", int, 3, "paradigm calls until one is readable", low=1,
              high=10),
        Param("error_retries", int, 2, "retries of a reply without a program "
              "[max_error_retries]", low=0, high=20),
        Param("mode", str, "diff", "SEARCH/REPLACE edits (a full program accepted too) or a "
              "full rewrite [diff_based_generation]", choices=("diff", "full")),
        PARENT_SELECTION,
    )

    @classmethod
    def check_params(cls, values: dict[str, Any]) -> None:
        if values["intensity_min"] > values["intensity_max"]:
            raise ConfigError(
                f"--protocol-param intensity_min={values['intensity_min']} must not exceed "
                f"intensity_max={values['intensity_max']} for protocol 'adaevolve'")
        if values["num_islands"] > values["max_islands"]:
            raise ConfigError(
                f"--protocol-param num_islands={values['num_islands']} must not exceed "
                f"max_islands={values['max_islands']} for protocol 'adaevolve'")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reset()

    def set_initial(self, child: Child) -> None:
        super().set_initial(child)
        self._reset()

    def _reset(self) -> None:
        p = self.params
        self.pop = IslandPopulation(p["max_islands"], p["population_size"], self.rng)
        self.vecs = VectorTable()
        self.signals: list[IslandSignal] = []
        self.weights: list[tuple[float, float, float]] = []
        self.island_names: list[str] = []
        self.ucb = DecayedUCB(0, decay=p["decay"], c=p["ucb_c"], min_visits=p["min_visits"])
        self.inflight: list[int] = []
        for _ in range(p["num_islands"]):
            self._new_island("balanced", (p["fitness_weight"], p["novelty_weight"],
                                          p["elite_ratio"]))
        self.paradigms = ParadigmTracker(p["paradigm_window"], p["paradigm_threshold"],
                                         p["paradigm_max_uses"], p["paradigm_max_tried"])
        self.started = self.ended = 0
        self.last_spawn = -p["spawn_cooldown"]
        self.migrations = self.retries = self.failed_iterations = self.failed_paradigms = 0
        self._paradigm_busy = False
        init = self.initial
        for i in range(p["num_islands"]):  # evaluated on island 0, copied to the others
            m = self.offer(init.program_id, init.code or "", init.score, init.valid, i,
                          own=i == 0, error=init.error)
            if m is not None and self.feedback != "none":
                m.meta["feedback"] = self.feedback_section(init)

    # ------------------------------------------------------------------ sampling
    def _choose_island(self) -> int:
        if self.started == 0:
            return 0
        eligible = np.ones(self.n_islands, dtype=bool)
        island, _ = self.ucb.choose(eligible, self.rng, np.array(self.inflight),
                                    total=self.ended + sum(self.inflight))
        return island

    # ------------------------------------------------------------------ calls
    def _fresh(self) -> Call:
        island = self._choose_island()
        ctx = {"iteration": self.started, "island": island, "attempt": 0}
        self.started += 1
        self.inflight[island] += 1
        if self.params["paradigm"] and not self._paradigm_busy and self.paradigms.stagnating():
            self._paradigm_busy = True
            return self._paradigm_call(ctx, 0)
        return self._code_call(ctx)

    @staticmethod
    def _shown(m: Member, label: str = "") -> ShownProgram:
        return ShownProgram(m.code, m.fitness, m.valid, label)

    def _siblings(self, parent: Member, island: int) -> list[ShownProgram]:
        kids = [m for m in self.pop.on_island(island) if m.parent_uid == parent.uid
                and not m.migrant][-5:]
        return [self._shown(k, f"{_changed_lines(parent.code, k.code)} lines changed")
                for k in kids]

    def _code_call(self, ctx: dict[str, Any]) -> Call:
        island = ctx["island"]
        parent, mode = self.sample_parent(island)
        context = self.context(parent, island)
        idea = self.paradigms.current_idea() if self.params["paradigm"] else None
        if idea is not None:  # the idea was made for the best program: apply it there
            parent = self.pop.best() or parent
            self.paradigms.use()
        diff = self.params["mode"] == "diff"
        messages = build_adaevolve_messages(
            system_message=self.task.system_message, parent=self._shown(parent),
            context=[self._shown(m, label) for m, label in context],
            siblings=self._siblings(parent, island), mode=mode, language=self.task.language,
            diff=diff, feedback=parent.meta.get("feedback", "") if self.feedback != "none"
            else "", idea=idea, error=ctx.get("error"))
        meta = {"island": island, "iteration": ctx["iteration"], "mode": mode,
                "intensity": round(self.signals[island].intensity, 6),
                "attempt": ctx["attempt"], "paradigm": idea is not None,
                "format": "diff" if diff else "full", "confine": False,
                "context": [m.program_id for m, _ in context]}
        purpose = "mutation" if ctx["attempt"] == 0 else "fix"
        return Call(messages, parent.program_id, parent.code, purpose, meta,
                    {**ctx, "parent_uid": parent.uid})

    def _paradigm_call(self, ctx: dict[str, Any], attempt: int) -> Call:
        best = self.pop.best() or self.pop.members[0]
        messages = build_paradigm_messages(
            system_message=self.task.system_message, best=self._shown(best),
            tried=self.paradigms.tried_lines(), n=self.params["paradigm_ideas"],
            language=self.task.language,
            feedback=best.meta.get("feedback", "") if self.feedback != "none" else "")
        meta = {"island": ctx["island"], "iteration": ctx["iteration"], "attempt": attempt,
                "tried": len(self.paradigms.tried)}
        return Call(messages, best.program_id, best.code, "paradigm", meta,
                    {"iteration": ctx["iteration"], "island": ctx["island"], "attempt": 0,
                     "paradigm_attempt": attempt})

    def parse_reply(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """``mode=diff`` takes a complete program when the reply has no SEARCH block."""
        if proposal.meta.get("format") == "diff" and SEARCH_LINE not in (reply_text or ""):
            proposal = dataclasses.replace(proposal, meta={**proposal.meta, "format": "full"})
        return super().parse_reply(proposal, reply_text)

    def _cancel(self, proposal: Proposal) -> None:
        """A lost call is asked again as it was (its iteration stays open)."""
        call = self._ctx.pop(proposal.key, None)
        self._replies.pop(proposal.key, None)
        if call is not None:
            self._followups.appendleft(call)

    # ------------------------------------------------------------------ tells
    def _on_text(self, proposal: Proposal, call: Call, text: str) -> None:
        ctx = call.ctx
        ideas = parse_paradigms(text, self.params["paradigm_ideas"])
        if not ideas and ctx["paradigm_attempt"] + 1 < self.params["paradigm_attempts"]:
            self.follow_up(self._paradigm_call(ctx, ctx["paradigm_attempt"] + 1))
            return
        self._paradigm_busy = False
        if ideas:
            self.paradigms.set_ideas(ideas, self.ucb.global_best)
        else:
            self.failed_paradigms += 1
        self.follow_up(self._code_call({k: ctx[k] for k in ("iteration", "island", "attempt")}))

    def _on_child(self, proposal: Proposal, call: Call, child: Child, reply: str | None) -> None:
        ctx = call.ctx
        if child.code is None and ctx["attempt"] < self.params["error_retries"]:
            self.retries += 1
            self.follow_up(self._code_call({
                "iteration": ctx["iteration"], "island": ctx["island"],
                "attempt": ctx["attempt"] + 1, "error": child.error or "no usable program"}))
            return
        if child.code is None:
            self.failed_iterations += 1
        else:
            m = self.offer(child.program_id, child.code, child.score, child.valid, ctx["island"],
                          own=True, parent_uid=ctx["parent_uid"], error=child.error)
            if m is not None and self.feedback != "none":  # rendered once, capped
                m.meta["feedback"] = self.feedback_section(child)
        self._end_iteration(ctx["island"])

    def _end_iteration(self, island: int) -> None:
        self.inflight[island] -= 1
        index = self.ended
        self.ended += 1
        if self._should_spawn(index):
            self._spawn(index)
        if index > 0 and index % self.params["migration_interval"] == 0:
            self.migrate()

    def _summary(self) -> dict[str, Any]:
        return {**super()._summary(), **self.pop.summary(), "islands": self.n_islands,
                "island_presets": list(self.island_names), "iterations": self.ended,
                "signals": [s.summary() for s in self.signals],
                "island_choice": self.ucb.summary(np.array(self.inflight)),
                "paradigm": self.paradigms.summary(), "migrations": self.migrations,
                "retries": self.retries, "failed_iterations": self.failed_iterations,
                "failed_paradigms": self.failed_paradigms}


def _changed_lines(old: str, new: str) -> int:
    """Lines added or removed between two programs (a sibling's size of change)."""
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))


PROTOCOLS.register(AdaEvolveProtocol.name, AdaEvolveProtocol)
