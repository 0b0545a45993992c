"""CodeEvolve-style island protocol (paper, Table 1 "CodeEvolve" and the Appendix
pairwise table; prompts: Appendix "Prompts" → CodeEvolve).

Population: ``num_islands`` islands with *alive* sets of at most ``max_size`` programs
(a newcomer at least as fit as the worst alive program replaces it, else it is stored
dead), a prompt database per island, ring migration by copies.  Asynchronous: fresh
jobs go to the islands in turn; each island's epoch counter advances when one of its
jobs is told, and every ``migration_interval`` epochs of an island its best
``max(1, floor(rate·alive))`` programs found there (not migrated before) are copied to
both ring neighbours (no barrier across islands).

Per job on island ``i``:

* init-pop phase (fewer than ``init_pop`` alive): parent = the initial program, the
  initial prompt, no inspirations; the child is a new root (no lineage);
* else u <= ``exploration_rate`` → exploration: parent and inspirations uniform over
  the alive set, chat depth 0, the exploration template;
* else exploitation: parent and ``num_inspirations`` inspirations (with replacement,
  parent excluded) by roulette by rank (weight 1/(1+rank)), the prompt that produced the
  parent, chat depth ``max_chat_depth``, the exploitation template;
* meta-prompting (init-pop and exploration jobs when ``meta_prompting``): first a call
  with purpose ``meta_prompt`` that edits the prompt inside PROMPT-BLOCK markers; its
  reply is applied with the strict applier (failure → the base prompt is used), then
  the code call follows.  Both calls count toward C.

With ``--feedback artifacts`` (issue 21, part 3) the code call's last user turn ends
with the parent's evaluator feedback (:mod:`basevolve.prompts.feedback`); CodeEvolve's
templates have no slot for it, so it is appended.  The meta-prompt call is unchanged.

The code call's reply must be strict SEARCH/REPLACE edits inside the EVOLVE blocks, by
CodeEvolve's own rule (:mod:`basevolve.prompts.exact_diff`: each stripped SEARCH an exact
substring of a block; none of the shared applier's relaxed levels, issue 23, item 4); any
failure is a child with score 0 and the reason.  The meta-prompt's PROMPT-BLOCK edits
follow the same rule.  A prompt's fitness is the best fitness of a child generated with
it.

Inspirations (CodeEvolve v1, issue 23, item 4): an island with ring neighbours (more than
one island) shows none until the job's epoch -- the island's told jobs + 1 -- exceeds
``migration_interval``, i.e. until the first migration could have brought programs from
elsewhere; a lone island shows them from the start.

Defaults (CodeEvolve v1, ``templates/python/configs/config_mp_insp.yaml`` keys under
EVOLVE_CONFIG): 5 islands [num_islands], 40 alive [max_size], init_pop 6 [init_pop],
exploration 0.3 [exploration_rate], roulette by rank [selection_policy], 3 inspirations
[num_inspirations], chat depth 3 [max_chat_depth], ring migration every 40 epochs at
0.1 [migration_interval / migration_rate], meta-prompting on [meta_prompting].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.prompts.codeevolve import (
    Shown,
    build_codeevolve_messages,
    build_meta_messages,
    edit_between,
    initial_prompt,
)
from basevolve.prompts.diff import PROMPT_MARKERS
from basevolve.prompts.exact_diff import apply_exact_search_replace
from basevolve.prompts.feedback import append_section
from basevolve.prompts.parse import ParsedProgram, strip_think
from basevolve.protocols.base import PROTOCOLS, Child, Param, Proposal
from basevolve.protocols.front_parents import PARENT_SELECTION
from basevolve.protocols.island_base import Call, IslandProtocol
from basevolve.protocols.islands import IslandPopulation, Member


@dataclass(slots=True)
class PromptEntry:
    pid: int
    text: str
    parent: int | None
    fitness: float = 0.0


class CodeEvolveProtocol(IslandProtocol):
    """Alive-set islands, lineage chat, explore/exploit templates, meta-prompting."""

    name = "codeevolve"
    PARAMS = (
        Param("num_islands", int, 5, "islands [num_islands]", low=1, high=64),
        Param("max_size", int, 40, "alive programs per island [max_size]", low=1, high=100_000),
        Param("init_pop", int, 6, "children of the initial program per island before "
              "selection starts [init_pop]", low=0, high=10_000),
        Param("exploration_rate", float, 0.3, "P(exploration job) [exploration_rate]",
              low=0.0, high=1.0),
        Param("num_inspirations", int, 3, "inspirations per exploitation job", low=0, high=20),
        Param("max_chat_depth", int, 3, "ancestors replayed as chat turns", low=0, high=50),
        Param("migration_interval", int, 40, "island epochs between migrations", low=1,
              high=1_000_000),
        Param("migration_rate", float, 0.1, "share of the alive set copied", low=0.0, high=1.0),
        Param("meta_prompting", bool, True, "evolve the system prompt (counted calls)"),
        Param("max_mem", str, "2048 MB", "memory limit shown in the budget block (the "
              "sandbox default)"),
        PARENT_SELECTION,
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reset()

    def _reset(self) -> None:
        p = self.params
        k = p["num_islands"]
        self.pop = IslandPopulation(k, max(1, k * p["max_size"]), self.rng)
        base = initial_prompt(self.task.name, self.task.system_message)
        self.prompts: list[list[PromptEntry]] = [[PromptEntry(0, base, None)] for _ in range(k)]
        self.epochs = [0] * k
        self.roots: list[int] = []
        self.migrations = 0
        self._fresh_asks = 0
        init = self.initial
        for i in range(k):  # every island evaluates the initial program (same result)
            m = self.pop.add(program_id=init.program_id, code=init.code or "", score=init.score,
                             valid=init.valid, island=i, error=init.error)
            m.meta["prompt"] = 0
            if self.feedback != "none":
                m.meta["feedback"] = self.feedback_section(init)
            self.roots.append(m.uid)

    def set_initial(self, child: Child) -> None:
        super().set_initial(child)
        self._reset()

    # ------------------------------------------------------------------ jobs
    def _roulette(self, ranked: list[Member]) -> Member:
        return self.pop.choice(ranked, (1.0 / (1 + r) for r in range(len(ranked))))

    def _fresh(self) -> Call:
        p = self.params
        island = self._fresh_asks % p["num_islands"]
        self._fresh_asks += 1
        alive = self.pop.ranked(island)
        root = self.pop.members[self.roots[island]]
        if len(alive) < p["init_pop"] or not alive:
            job = {"island": island, "kind": "init", "parent": root.uid, "insp": [],
                   "depth": 0, "prompt": 0, "explore": False}
        elif float(self.rng.random()) <= p["exploration_rate"]:
            parent = self.pop.choice(alive)
            others = [m for m in alive if m.uid != parent.uid] if self._inspiring(island) else []
            insp = [self.pop.choice(others).uid for _ in range(p["num_inspirations"])] if others else []
            prompts = self.prompts[island]
            base = prompts[int(self.rng.integers(len(prompts)))].pid
            job = {"island": island, "kind": "explore", "parent": parent.uid, "insp": insp,
                   "depth": 0, "prompt": base, "explore": True}
        else:
            parent = self.front_parent(alive) or self._roulette(alive)  # front: issue 36
            others = [m for m in alive if m.uid != parent.uid] if self._inspiring(island) else []
            insp = [self._roulette(others).uid for _ in range(p["num_inspirations"])] if others else []
            prompt = parent.meta.get("prompt")
            if prompt is None or prompt >= len(self.prompts[island]):
                ranked_prompts = sorted(self.prompts[island], key=lambda e: -e.fitness)
                weights = [1.0 / (1 + r) for r in range(len(ranked_prompts))]
                prompt = ranked_prompts[int(self.rng.choice(
                    len(ranked_prompts), p=[w / sum(weights) for w in weights]))].pid
            job = {"island": island, "kind": "exploit", "parent": parent.uid, "insp": insp,
                   "depth": p["max_chat_depth"], "prompt": prompt, "explore": False}
        if p["meta_prompting"] and job["kind"] in ("init", "explore"):
            return self._meta_call(job)
        return self._code_call(job)

    def _inspiring(self, island: int) -> bool:
        """CodeEvolve v1: an island with neighbours shows inspirations only once the
        job's epoch exceeds ``migration_interval`` (module docstring)."""
        lone = self.params["num_islands"] == 1
        return lone or self.epochs[island] + 1 > self.params["migration_interval"]

    def _shown(self, m: Member) -> Shown:
        return Shown(m.code, m.fitness, m.valid, m.error)

    def parse_format(self, proposal: Proposal, reply_text: str) -> ParsedProgram:
        """A code call's SEARCH/REPLACE edits by CodeEvolve's exact rule (module
        docstring); a text artifact (issue 15) has no markers, its whole text is the
        region."""
        if proposal.meta.get("format") != "diff" or self.task.language == FILES_LANGUAGE:
            return super().parse_format(proposal, reply_text)
        markers = getattr(self.task, "artifact", "program") == "program"
        res = apply_exact_search_replace(proposal.parent_code, strip_think(reply_text or ""),
                                         confine=markers)
        if res.code is None:
            return ParsedProgram(None, f"diff not applied: {res.error}", "none")
        return ParsedProgram(res.code, None, "diff:" + ",".join(res.methods))

    def _meta_call(self, job: dict[str, Any]) -> Call:
        parent = self.pop.members[job["parent"]]
        prompt = self.prompts[job["island"]][job["prompt"]].text
        messages = build_meta_messages(prompt=prompt, program=self._shown(parent),
                                       language=self.task.language)
        # its reply is always followed by the code call (_on_text): the engine reserves it
        meta = {"island": job["island"], "kind": job["kind"], "base_prompt": job["prompt"],
                "followups": 1}
        return Call(messages, parent.program_id, parent.code, "meta_prompt", meta, {"job": job})

    def _code_call(self, job: dict[str, Any]) -> Call:
        pop, island = self.pop, job["island"]
        parent = pop.members[job["parent"]]
        chain = pop.lineage(parent.uid, job["depth"]) if job["kind"] != "init" else []
        nexts = [*chain[1:], parent] if chain else []
        lineage = [(self._shown(a), edit_between(a.code, b.code))
                   for a, b in zip(chain, nexts, strict=True)]
        insp = [self._shown(pop.members[u]) for u in job["insp"]]
        messages = build_codeevolve_messages(
            prompt=self.prompts[island][job["prompt"]].text, parent=self._shown(parent),
            lineage=lineage, inspirations=insp, explore=job["explore"],
            language=self.task.language, timeout_s=self.task.timeout_s,
            max_mem=self.params["max_mem"])
        if self.feedback != "none":  # after the target program's evaluation
            messages = append_section(messages, parent.meta.get("feedback", ""))
        meta = {"island": island, "kind": job["kind"], "prompt": job["prompt"], "format": "diff",
                "confine": True, "depth": len(lineage),
                "inspirations": [pop.members[u].program_id for u in job["insp"]]}
        return Call(messages, parent.program_id, parent.code, "mutation", meta, {"job": job})

    def _on_text(self, proposal: Proposal, call: Call, text: str) -> None:
        job = dict(call.ctx["job"])
        island = job["island"]
        base = self.prompts[island][job["prompt"]]
        res = apply_exact_search_replace(base.text, text, markers=PROMPT_MARKERS)
        if res.code is not None:
            entry = PromptEntry(len(self.prompts[island]), res.code, base.pid)
            self.prompts[island].append(entry)
            job["prompt"] = entry.pid
        job["meta_error"] = res.error
        follow = self._code_call(job)
        follow.meta["meta_prompt_applied"] = res.code is not None
        self.follow_up(follow)

    # ------------------------------------------------------------------ insertion
    def _on_child(self, proposal: Proposal, call: Call, child: Child, reply: str | None) -> None:
        job = call.ctx["job"]
        island = job["island"]
        self.epochs[island] += 1
        if child.code is not None:
            entry = self.prompts[island][job["prompt"]]
            fitness = child.score if child.usable else 0.0
            entry.fitness = max(entry.fitness, fitness)
            parent_uid = None if job["kind"] == "init" else job["parent"]
            self.insert(child, island, parent_uid, job["prompt"])
        if self.epochs[island] % self.params["migration_interval"] == 0:
            self.migrate(island)

    def insert(self, child: Child, island: int, parent_uid: int | None = None,
               prompt: int = 0) -> Member:
        """Add a program to ``island`` under the alive-set rule (tell and tests)."""
        m = self.pop.add(program_id=child.program_id, code=child.code or "", score=child.score,
                         valid=child.valid, island=island, parent_uid=parent_uid,
                         error=child.error)
        m.meta["prompt"] = prompt
        if self.feedback != "none":  # rendered once, capped (issue 21, part 3)
            m.meta["feedback"] = self.feedback_section(child)
        self._admit(m)
        return m

    def _admit(self, m: Member) -> None:
        """Alive-set rule: a full island keeps the newcomer only if it is at least as fit
        as the worst alive program, which then dies."""
        alive = self.pop.ranked(m.island)
        if len(alive) <= self.params["max_size"]:
            return
        others = [a for a in alive if a.uid != m.uid]
        worst = min(others, key=lambda a: (a.fitness, a.born))
        self.pop.remove(worst.uid if m.fitness >= worst.fitness else m.uid)

    def migrate(self, island: int) -> None:
        """Copy island ``island``'s best programs found there to its ring neighbours."""
        rate = self.params["migration_rate"]
        self.migrations += 1

        def place(src: Member, target: int) -> Member:
            copy = self.pop.copy(src, target)
            copy.parent_uid = None  # received migrants lose parent and prompt links
            copy.meta.pop("prompt", None)
            self._admit(copy)
            return copy

        self.pop.migrate_ring(lambda n: max(1, int(n * rate)), place=place, sources=[island],
                              accept=lambda m: m.origin == island)

    def _summary(self) -> dict[str, Any]:
        return {**super()._summary(), **self.pop.summary(), "epochs": list(self.epochs),
                "prompts": [len(p) for p in self.prompts], "migrations": self.migrations}


PROTOCOLS.register(CodeEvolveProtocol.name, CodeEvolveProtocol)
