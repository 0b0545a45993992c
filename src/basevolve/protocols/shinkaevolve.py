"""ShinkaEvolve-style island protocol (paper, Table 1 "ShinkaEvolve" and the Appendix
pairwise table; prompts: Appendix "Prompts" → ShinkaEvolve).

Population: ``num_islands`` islands (the initial program is copied to each) and one
global archive of at most ``archive_size`` correct programs (fitness rule).  Children
stay on their parent's island; every ``migration_interval`` inserted programs,
``max(1, floor(size·rate))`` random correct non-initial programs per island (never the
island best) *move* to a random other island.

A *generation* is one fresh mutation plus its retries, all counted calls:

* parent: ``weighted`` (default) samples the island's correct archive members with
  P ∝ sigmoid(λ·(score − median)/MAD) · 1/(1 + children); ``power_law`` ranks with
  P ∝ (rank+1)^−α (from the island's archive with probability ``exploitation_ratio``,
  else from all its correct programs); ``hill_climbing`` = power law with α = 100 from
  the archive (always the best); ``beam_search`` keeps a parent until it has
  ``num_beams`` children, then locks onto the current global best.  The island is drawn
  uniformly among islands with a correct program;
* inspirations: ``num_archive_inspirations`` from the island's archive (global best,
  elites, random) + ``num_top_k_inspirations`` best others, shown worst to best;
* patch type diff / full / cross with probabilities ``p_diff`` / ``p_full`` /
  ``p_cross`` (cross needs an inspiration; otherwise renormalised), a full rewrite uses
  one of five variants uniformly; replies in NAME / DESCRIPTION / DIFF or CODE format;
* a reply that cannot be applied → up to ``max_patch_attempts`` calls in the same
  conversation (purpose ``fix``, the reply and the reason appended), then up to
  ``max_patch_resamples`` fresh samples (new parent, inspirations, patch type);
* novelty (``novelty=ngram``, default): a proposal whose EVOLVE-block code has
  character-3-gram cosine similarity above ``novelty_threshold`` to a program on the
  parent's island (as of the ask) is rejected before evaluation (child score 0, reason
  ``novelty: ...``) and the generation is resampled, up to ``max_novelty_attempts``;
  ``novelty=judge`` asks an LLM judge (purpose ``judge``) *before* evaluating it, as
  ShinkaEvolve does (issue 23, item 5): the code reply yields no program (reason
  ``novelty judge: ...``, nothing is run), the judge call follows at once, and only an
  answer that starts with NOVEL (:func:`~basevolve.prompts.shinka.judge_says_novel`)
  releases the proposal: the judge call's child is then that program, evaluated and
  inserted; otherwise the generation is resampled.  The judge call is a *gate*
  (``meta["gates_program"]``): the engine treats it as a program call, so its reply is
  parsed by :meth:`parse_reply` into the proposal or a reason; the proposal itself is
  re-derived from the stored code reply at the tell (the same parse), so a resumed run
  rebuilds it.  ``off`` disables the check.

With ``--feedback artifacts`` (issue 21, part 3) the iteration message's text-feedback
slot holds the parent's whole evaluator feedback (:mod:`basevolve.prompts.feedback`)
instead of its error alone; patch retries continue that conversation, so they keep it.

When C runs out in the middle of a retry sequence the engine simply stops: the queued
retry is never asked, so the run ends at exactly C.

Defaults (ShinkaEvolve paper-era circle-packing example, ``examples/circle_packing/
run_evo.py`` @5885bb7, keys in brackets): 2 islands [num_islands], archive 40
[archive_size], weighted selection λ = 10 [parent_selection_strategy,
parent_selection_lambda], elite ratio 0.3 [elite_selection_ratio], 4 archive + 2 top-k
inspirations [num_archive_inspirations, num_top_k_inspirations], migration every 10 at
0.1 [migration_interval, migration_rate], patch types 0.6/0.3/0.1 [patch_type_probs],
3 attempts × 3 resamples [max_patch_attempts, max_patch_resamples], 3 novelty attempts
[max_novelty_attempts], threshold 0.995 [code_embed_sim_threshold]; α 1.0, ratio 0.2,
5 beams from the paper-era dataclass [exploitation_alpha, exploitation_ratio,
num_beams].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from basevolve.errors import ConfigError
from basevolve.prompts import ParsedProgram, evolve_block_text
from basevolve.prompts.codeevolve import Shown
from basevolve.prompts.shinka import (
    FULL_VARIANTS,
    build_novelty_messages,
    build_shinka_messages,
    judge_says_novel,
    retry_messages,
    task_prompt,
)
from basevolve.protocols.base import PROTOCOLS, Child, Param, Proposal
from basevolve.protocols.front_parents import FRONT
from basevolve.protocols.island_base import Call, IslandProtocol
from basevolve.protocols.islands import IslandPopulation, Member
from basevolve.protocols.novelty import VectorTable

NOVELTY_PREFIX = "novelty: "
#: the reason of a code reply held for the judge (not evaluated; issue 23, item 5)
JUDGE_PREFIX = "novelty judge: "
STRATEGIES = ("weighted", "power_law", "hill_climbing", "beam_search", FRONT)


class ShinkaEvolveProtocol(IslandProtocol):
    """Islands + archive, weighted parents, patch retries and novelty rejection."""

    name = "shinkaevolve"
    PARAMS = (
        Param("num_islands", int, 2, "islands [num_islands]", low=1, high=64),
        Param("archive_size", int, 40, "archive of correct programs [archive_size]", low=1,
              high=10_000),
        Param("parent_selection", str, "weighted", "parent sampling strategy",
              choices=STRATEGIES),
        Param("parent_selection_lambda", float, 10.0, "λ of weighted sampling", low=0.0,
              high=1e6),
        Param("exploitation_alpha", float, 1.0, "α of power-law sampling", low=0.0, high=1e3),
        Param("exploitation_ratio", float, 0.2, "power law: P(parent from the archive)",
              low=0.0, high=1.0),
        Param("num_beams", int, 5, "beam search: children per locked parent", low=1, high=1000),
        Param("elite_selection_ratio", float, 0.3, "share of elite archive inspirations",
              low=0.0, high=1.0),
        Param("num_archive_inspirations", int, 4, "archive inspirations", low=0, high=50),
        Param("num_top_k_inspirations", int, 2, "top-k inspirations", low=0, high=50),
        Param("migration_interval", int, 10, "inserted programs between migrations", low=1,
              high=1_000_000),
        Param("migration_rate", float, 0.1, "share of an island moved", low=0.0, high=1.0),
        Param("p_diff", float, 0.6, "P(diff patch)", low=0.0, high=1.0),
        Param("p_full", float, 0.3, "P(full rewrite)", low=0.0, high=1.0),
        Param("p_cross", float, 0.1, "P(crossover)", low=0.0, high=1.0),
        Param("max_patch_attempts", int, 3, "calls per conversation for one patch", low=1,
              high=20),
        Param("max_patch_resamples", int, 3, "fresh samples per generation", low=1, high=20),
        Param("max_novelty_attempts", int, 3, "resample rounds after novelty rejections",
              low=1, high=20),
        Param("novelty", str, "ngram", "novelty check", choices=("ngram", "judge", "off")),
        Param("novelty_threshold", float, 0.995, "similarity above which a proposal is not "
              "novel", low=0.0, high=1.0),
    )

    @classmethod
    def check_params(cls, values: dict[str, Any]) -> None:
        if values["p_diff"] + values["p_full"] + values["p_cross"] <= 0:
            raise ConfigError("--protocol-param p_diff + p_full + p_cross must be > 0 for "
                              "protocol 'shinkaevolve' (they are normalised to sum to 1)")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        probs = np.array([self.params[k] for k in ("p_diff", "p_full", "p_cross")])
        self.patch_probs = probs / probs.sum()
        self.system = task_prompt(self.task.name, self.task.system_message)
        self._reset()

    def _reset(self) -> None:
        k = self.params["num_islands"]
        self.pop = IslandPopulation(k, self.params["archive_size"], self.rng)
        self.vecs = VectorTable()
        self.inserted = 0
        self.migrations = 0
        self.beam: int | None = None
        self.generations = 0
        self.failed_generations = 0
        init = self.initial
        for i in range(k):  # the initial program is copied to every island
            m = self.insert(Child(init.program_id, init.code, init.score, init.valid,
                                  init.error), i, None)
            if self.feedback != "none":  # the initial program's own evaluation
                m.meta["feedback"] = self.feedback_section(init)

    def set_initial(self, child: Child) -> None:
        super().set_initial(child)
        self._reset()

    def insert(self, child: Child, island: int, parent_uid: int | None = None) -> Member:
        m = self.pop.add(program_id=child.program_id, code=child.code or "", score=child.score,
                         valid=child.valid, island=island, parent_uid=parent_uid,
                         error=child.error)
        if self.feedback != "none":  # rendered once, capped (issue 21, part 3)
            m.meta["feedback"] = self.feedback_section(child)
        self.vecs.put(m.uid, evolve_block_text(m.code))
        self.pop.offer_archive(m.uid, require_valid=True)
        return m

    # ------------------------------------------------------------------ sampling
    def sample_parent(self, island: int) -> Member:
        pop, p = self.pop, self.params
        correct = [m for m in pop.on_island(island) if m.valid]
        arch = [m for m in pop.archive_members(island) if m.valid]
        strategy = p["parent_selection"]
        if strategy == FRONT and (front := self.front_parent(correct)) is not None:
            return front  # issue 36; no member with a vector yet: the power law below
        if strategy == "beam_search":
            best = pop.best()
            if self.beam is None or self.beam not in pop.members or \
                    pop.members[self.beam].children >= p["num_beams"]:
                self.beam = best.uid if best is not None else correct[0].uid
            return pop.members[self.beam]
        if strategy == "weighted":
            if not arch:
                best = pop.best()
                return best if best is not None and best.island == island else pop.choice(correct)
            scores = np.array([m.fitness for m in arch])
            med = float(np.median(scores))
            scale = max(float(np.median(np.abs(scores - med))), 1e-6)
            z = np.clip(p["parent_selection_lambda"] * (scores - med) / scale, -500, 500)
            w = 1.0 / (1.0 + np.exp(-z)) / (1.0 + np.array([m.children for m in arch]))
            return pop.choice(arch, w)
        alpha, ratio = ((100.0, 1.0) if strategy == "hill_climbing"
                        else (p["exploitation_alpha"], p["exploitation_ratio"]))
        pool = arch if arch and float(self.rng.random()) < ratio else correct
        ranked = sorted(pool, key=lambda m: m.rank_key, reverse=True)
        return pop.choice(ranked, ((r + 1.0) ** -alpha for r in range(len(ranked))))

    def sample_inspirations(self, parent: Member) -> list[Member]:
        pop, p = self.pop, self.params
        n, k = p["num_archive_inspirations"], p["num_top_k_inspirations"]
        arch = sorted((m for m in pop.archive_members(parent.island) if m.valid),
                      key=lambda m: m.rank_key, reverse=True)
        chosen: list[Member] = []

        def take(m: Member, limit: int) -> None:
            if m.uid != parent.uid and m not in chosen and m.code != parent.code \
                    and len(chosen) < limit:
                chosen.append(m)

        best = pop.best()
        if best is not None and best.island == parent.island and n > 0:
            take(best, n)
        for m in arch[: int(n * p["elite_selection_ratio"])]:
            take(m, n)
        rest = [m for m in arch if m not in chosen and m.uid != parent.uid]
        while len(chosen) < n and rest:
            take(rest.pop(int(self.rng.integers(len(rest)))), n)
        for m in arch:
            take(m, n + k)
        return sorted(chosen, key=lambda m: m.rank_key)  # worst first, best last

    # ------------------------------------------------------------------ calls
    def _fresh(self, novelty: int = 0, resample: int = 0) -> Call:
        pop = self.pop
        islands = [i for i in range(pop.n_islands) if any(m.valid for m in pop.on_island(i))]
        if len(islands) < pop.n_islands:  # not every island has a correct program yet
            first = pop.members[0]
            parent, island, insp = first, first.island, []
        else:
            island = islands[int(self.rng.integers(len(islands)))]
            parent = self.sample_parent(island)
            insp = self.sample_inspirations(parent)
        probs = self.patch_probs if insp else self._without_cross()
        patch = ("diff", "full", "cross")[int(self.rng.choice(3, p=probs))]
        variant = FULL_VARIANTS[int(self.rng.integers(len(FULL_VARIANTS)))] \
            if patch == "full" else ""
        cross = insp[int(self.rng.integers(len(insp)))] if patch == "cross" else None
        messages = build_shinka_messages(
            system=self.system, patch_type=patch, variant=variant, parent=self._shown(parent),
            inspirations=[self._shown(m) for m in insp],
            crossover=self._shown(cross) if cross is not None else None,
            language=self.task.language,
            feedback=parent.meta.get("feedback", "") if self.feedback != "none" else None)
        meta = {"island": parent.island, "patch_type": patch, "variant": variant,
                "format": "tagged_diff" if patch == "diff" else "tagged_code",
                "attempt": 0, "resample": resample, "novelty_attempt": novelty,
                "inspirations": [m.program_id for m in insp]}
        if resample == 0 and novelty == 0:
            self.generations += 1
        ctx = {"parent": parent.uid, "island": parent.island,
               "snapshot": list(pop.islands[parent.island])}
        return Call(messages, parent.program_id, parent.code,
                    "mutation" if resample == 0 and novelty == 0 else "fix", meta, ctx)

    def _without_cross(self) -> np.ndarray:
        probs = self.patch_probs.copy()
        probs[2] = 0.0
        return probs / probs.sum() if probs.sum() > 0 else np.array([1.0, 0.0, 0.0])

    @staticmethod
    def _shown(m: Member) -> Shown:
        return Shown(m.code, m.fitness, m.valid, m.error)

    def parse_reply(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """A judge's verdict releases its proposal or gives the reason; any other reply
        is parsed by its format and checked for novelty."""
        if proposal.purpose != "judge":
            return super().parse_reply(proposal, reply_text)
        call = self._ctx[proposal.key]
        if judge_says_novel(reply_text):
            return ParsedProgram(call.ctx["candidate"], None, "judge")
        return ParsedProgram(None, f"{NOVELTY_PREFIX}the judge did not answer NOVEL "
                                   f"(similarity {call.meta['similarity']} to program "
                                   f"{call.meta['similar_to']})", "novelty")

    def _check_parsed(self, proposal: Proposal, parsed: ParsedProgram) -> ParsedProgram:
        if self.params["novelty"] == "off" or parsed.code is None:
            return parsed
        call = self._ctx.get(proposal.key)
        if call is None:
            return parsed
        sim, uid = self.vecs.max_similarity(evolve_block_text(parsed.code), call.ctx["snapshot"])
        if sim > self.params["novelty_threshold"] and uid is not None:
            other = self.pop.members[uid].program_id
            why = (f"code similarity {sim:.4f} > {self.params['novelty_threshold']} to program "
                   f"{other} on the same island")
            if self.params["novelty"] == "judge":
                return ParsedProgram(None, f"{JUDGE_PREFIX}{why}; the novelty judge decides "
                                           "before it is evaluated", "novelty")
            return ParsedProgram(None, f"{NOVELTY_PREFIX}{why}", "novelty")
        return parsed

    # ------------------------------------------------------------------ tells
    def _on_child(self, proposal: Proposal, call: Call, child: Child, reply: str | None) -> None:
        meta = call.meta
        if child.code is None:
            if (child.error or "").startswith(JUDGE_PREFIX):
                self._ask_judge(proposal, call, reply)
            elif (child.error or "").startswith(NOVELTY_PREFIX):
                self._novelty_retry(meta)
            else:
                self._patch_retry(proposal, call, child, reply)
            return
        self._accept(child, call)

    def _ask_judge(self, proposal: Proposal, call: Call, reply: str | None) -> None:
        """Queue the judge call for a proposal held back before evaluation; the proposal
        is the code reply parsed again (the stored reply on resume)."""
        code = self.parse_format(proposal, reply or "").code
        if code is None:  # cannot happen for the reply that was held; resample then
            self._novelty_retry(call.meta)
            return
        sim, uid = self.vecs.max_similarity(evolve_block_text(code), call.ctx["snapshot"])
        existing = self.pop.members[uid] if uid is not None else self.pop.members[0]
        messages = build_novelty_messages(existing=existing.code, proposed=code,
                                          language=self.task.language)
        jmeta = {**call.meta, "similar_to": existing.program_id, "similarity": round(sim, 6),
                 "gates_program": True}
        self.follow_up(Call(messages, call.parent_id, call.parent_code, "judge", jmeta,
                            {**call.ctx, "candidate": code}))

    def _accept(self, child: Child, call: Call) -> None:
        self.insert(child, call.ctx["island"], call.ctx["parent"])
        self.inserted += 1
        if self.inserted % self.params["migration_interval"] == 0:
            if self.pop.migrate_random(self.params["migration_rate"]):
                self.migrations += 1

    def _patch_retry(self, proposal: Proposal, call: Call, child: Child, reply: str | None
                     ) -> None:
        meta, p = call.meta, self.params
        if meta["attempt"] + 1 < p["max_patch_attempts"]:
            messages = retry_messages(proposal.messages, reply or "(reply not available)",
                                      child.error or "unknown error")
            follow = Call(messages, call.parent_id, call.parent_code, "fix",
                          {**meta, "attempt": meta["attempt"] + 1}, dict(call.ctx))
            self.follow_up(follow)
        elif meta["resample"] + 1 < p["max_patch_resamples"]:
            self.follow_up(self._fresh(meta["novelty_attempt"], meta["resample"] + 1))
        else:
            self.failed_generations += 1

    def _novelty_retry(self, meta: dict[str, Any]) -> None:
        if meta["novelty_attempt"] + 1 < self.params["max_novelty_attempts"]:
            self.follow_up(self._fresh(meta["novelty_attempt"] + 1, 0))
        else:
            self.failed_generations += 1

    def _summary(self) -> dict[str, Any]:
        return {**super()._summary(), **self.pop.summary(), "migrations": self.migrations,
                "generations": self.generations, "failed_generations": self.failed_generations}


PROTOCOLS.register(ShinkaEvolveProtocol.name, ShinkaEvolveProtocol)
