"""OpenEvolve-style island protocol (paper, Table 1 "OpenEvolve" and the Appendix
pairwise table; prompt: Appendix "Prompts" → OpenEvolve, verbatim).

Population (one per trajectory): ``num_islands`` islands, each with a MAP-Elites grid
over ``feature_dimensions`` (:mod:`basevolve.protocols.map_elites`), a global archive,
ring migration by copies.  Asynchronous: fresh calls go to the islands in turn (as
OpenEvolve's parallel controller assigns iterations), each sees the population as of its
ask.

Per call (a fresh mutation on island ``i``):

* parent: u < ``exploration_ratio`` → uniform over the island; u < exploration +
  ``exploitation_ratio`` → uniform over the archive members on the island (the whole
  archive if none); else fitness-proportional over the island (weight max(f, 0.001)).
  An empty island samples from island 0 and its child lands on island ``i`` (this is
  how OpenEvolve seeds islands 1..K-1);
* inspirations (``num_diverse_programs``): island best, the top elite, programs from
  nearby grid cells (parent's cell ± 2 per dimension), random island members;
* prompt: the verbatim user-message template with the parent's feature coordinates,
  focus areas, artifacts (its error and output; with ``--feedback artifacts`` its whole
  evaluator feedback, :mod:`basevolve.prompts.feedback`), evolution history (previous attempts,
  ``num_top_programs`` top programs, the inspirations as diverse programs);
  ``mode=full`` (paper) asks for a rewrite, ``mode=diff`` for SEARCH/REPLACE edits.

Insertion: a child with code joins its island even when it loses its cell ("homeless"
member); it takes the cell if the cell is empty or its fitness is strictly greater, the
displaced owner leaves the island (and its archive place goes to the new owner); archive
= fitness rule; beyond ``population_size`` the worst non-owners, then owners, leave
(never the best or the newcomer).  After each added child, when the largest island
generation has advanced ``migration_interval`` since the last migration, each island's
best ``max(1, floor(size·migration_rate))`` not-yet-migrated programs are copied to both
ring neighbours.

Defaults (OpenEvolve ``openevolve/config.py`` / ``configs/default_config.yaml``, keys in
brackets): 5 islands [database.num_islands], population 1000 [database.population_size],
archive 100 [database.archive_size], 0.2 / 0.7 / 0.1 selection
[database.exploration_ratio / exploitation_ratio], elite ratio 0.1
[database.elite_selection_ratio], features complexity,diversity with 10 bins
[database.feature_dimensions / feature_bins], diversity reference 20
[database.diversity_reference_size], migration every 50 at rate 0.1
[database.migration_interval / migration_rate], 3 top + 2 diverse programs
[prompt.num_top_programs / num_diverse_programs], full rewrite (the paper's setting;
OpenEvolve's own default is diff) [diff_based_evolution], simplification hint after 500
characters [prompt.suggest_simplification_after_chars].
"""

from __future__ import annotations

import heapq
from typing import Any

from basevolve.errors import ConfigError
from basevolve.prompts.openevolve import (
    DIFF_TEMPLATE_NAME,
    TEMPLATE_NAME,
    HistoryEntry,
    build_openevolve_messages,
    format_artifacts,
    format_evolution_history,
    format_fitness,
    format_previous_attempts,
)
from basevolve.protocols.base import PROTOCOLS, Child, Param, Proposal
from basevolve.protocols.front_parents import PARENT_SELECTION
from basevolve.protocols.island_base import Call, IslandProtocol
from basevolve.protocols.islands import IslandPopulation, Member
from basevolve.protocols.map_elites import FeatureSpace


def _dims(text: str) -> tuple[str, ...]:
    return tuple(d.strip() for d in text.split(",") if d.strip())


class OpenEvolveProtocol(IslandProtocol):
    """MAP-Elites islands + archive + three-way parent selection + ring copies."""

    name = "openevolve"
    PARAMS = (
        Param("num_islands", int, 5, "islands [database.num_islands]", low=1, high=64),
        Param("population_size", int, 1000, "programs kept [database.population_size]",
              low=10, high=100_000),
        Param("archive_size", int, 100, "archive size [database.archive_size]", low=1,
              high=10_000),
        Param("exploration_ratio", float, 0.2, "P(uniform parent from the island)", low=0.0,
              high=1.0),
        Param("exploitation_ratio", float, 0.7, "P(parent from the archive); the rest is "
              "fitness-weighted", low=0.0, high=1.0),
        Param("elite_selection_ratio", float, 0.1, "share of elite inspirations", low=0.0,
              high=1.0),
        Param("feature_dimensions", str, "complexity,diversity", "MAP-Elites dimensions: "
              "complexity, diversity, score or task metric names, comma-separated"),
        Param("feature_bins", int, 10, "bins per feature dimension", low=1, high=1000),
        Param("diversity_reference_size", int, 20, "programs in the diversity reference set",
              low=1, high=1000),
        Param("migration_interval", int, 50, "island generations between migrations", low=1,
              high=1_000_000),
        Param("migration_rate", float, 0.1, "share of an island copied per migration",
              low=0.0, high=1.0),
        Param("num_top_programs", int, 3, "top programs shown", low=0, high=20),
        Param("num_diverse_programs", int, 2, "diverse (inspiration) programs shown", low=0,
              high=20),
        Param("mode", str, "full", "full rewrite (paper) or SEARCH/REPLACE diff",
              choices=("full", "diff")),
        Param("suggest_simplification_after_chars", int, 500, "focus-area hint threshold",
              low=0, high=1_000_000),
        PARENT_SELECTION,
    )

    @classmethod
    def check_params(cls, values: dict[str, Any]) -> None:
        if values["exploration_ratio"] + values["exploitation_ratio"] > 1.0 + 1e-12:
            raise ConfigError(
                f"--protocol-param exploration_ratio + exploitation_ratio must be <= 1 for "
                f"protocol 'openevolve', got {values['exploration_ratio']} + "
                f"{values['exploitation_ratio']}; the rest is the fitness-weighted share")
        if not _dims(values["feature_dimensions"]):
            raise ConfigError("--protocol-param feature_dimensions must name at least one "
                              "dimension, e.g. complexity,diversity")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        dims = _dims(self.params["feature_dimensions"])
        self.dims = dims
        self._reset()

    def _reset(self) -> None:
        p = self.params
        self.pop = IslandPopulation(p["num_islands"], p["archive_size"], self.rng)
        self.features = FeatureSpace(self.dims, p["feature_bins"], p["diversity_reference_size"])
        self.grids: list[dict[tuple[int, ...], int]] = [{} for _ in range(p["num_islands"])]
        self.island_gens = [0] * p["num_islands"]
        self.last_migration = 0
        self.migrations = 0
        self._fresh_asks = 0
        init = self.initial
        m = self.place(Child(init.program_id, init.code, init.score, init.valid, init.error), 0,
                       None, migrant=False)
        if self.feedback != "none":  # the initial program's own evaluation, not the stub's
            m.meta["feedback"] = self.feedback_section(init)

    def set_initial(self, child: Child) -> None:
        super().set_initial(child)
        self._reset()  # the initial program lives on island 0 only (OpenEvolve)

    # ------------------------------------------------------------------ insertion
    def place(self, child: Child, island: int, parent_uid: int | None = None, *,
              migrant: bool = False,
               source: Member | None = None) -> Member:
        """Insert a program on ``island`` by OpenEvolve's rules (tell, migration and
        tests building a synthetic population go through here)."""
        code = child.code or ""
        self.features.observe(code)
        m = self.pop.add(program_id=child.program_id, code=code, score=child.score,
                         valid=child.valid, island=island, parent_uid=parent_uid,
                         error=child.error, migrant=migrant,
                         origin=source.origin if source is not None else None)
        if source is not None:
            m.generation = source.generation
            m.meta.update({k: v for k, v in source.meta.items()
                           if k in ("output", "metrics", "feedback")})
        else:
            m.meta["output"], m.meta["metrics"] = child.output, child.metrics
            if self.feedback != "none":  # rendered once, capped (issue 21, part 3)
                m.meta["feedback"] = self.feedback_section(child)
        raw = self.features.raw(code, m.fitness, m.meta.get("metrics"))
        self.features.update(raw)
        cell = self.features.cell(raw)
        m.meta["raw"], m.meta["cell"] = raw, cell
        grid = self.grids[island]
        owner_uid = grid.get(cell)
        owner = self.pop.members.get(owner_uid) if owner_uid is not None else None
        if owner is None or owner.island != island or owner_uid not in self.pop.islands[island]:
            grid[cell] = m.uid
            self.pop.offer_archive(m.uid)
        elif m.fitness > owner.fitness:
            grid[cell] = m.uid
            if owner.uid in self.pop.archive:
                self.pop.swap_archive(owner.uid, m.uid)
            else:
                self.pop.offer_archive(m.uid)
            self.pop.remove(owner.uid)
        else:
            self.pop.offer_archive(m.uid)  # homeless member: on the island, no cell
        self._enforce_limit(m.uid)
        return m

    def _enforce_limit(self, newest: int) -> None:
        excess = self.pop.size() - self.params["population_size"]
        if excess <= 0:
            return
        owners = {u for g in self.grids for u in g.values()}
        protected = {newest, self.pop.best_uid}
        on = (self.pop.members[u] for isl in self.pop.islands for u in isl if u not in protected)
        # the worst first: non-owners before cell owners, then lower fitness, then older
        for m in heapq.nsmallest(excess, on, key=lambda m: (m.uid in owners, m.fitness, m.born)):
            self.pop.remove(m.uid)

    def _on_child(self, proposal: Proposal, call: Call, child: Child, reply: str | None) -> None:
        if child.code is None:
            return  # a failed iteration adds nothing (its call is still spent and stored)
        island = call.ctx["island"]
        self.place(child, island, call.ctx["parent_uid"], migrant=False)
        self.island_gens[island] += 1
        if max(self.island_gens) - self.last_migration >= self.params["migration_interval"]:
            self.migrate()

    def migrate(self) -> None:
        rate = self.params["migration_rate"]
        self.last_migration = max(self.island_gens)
        self.migrations += 1

        def place(src: Member, island: int) -> Member:
            # the copy enters like a new program (cell competition, archive, limit)
            return self.place(Child(src.program_id, src.code, src.score, src.valid, src.error),
                               island, src.uid, migrant=True, source=src)

        self.pop.migrate_ring(lambda n: max(1, int(n * rate)), place=place)

    # ------------------------------------------------------------------ sampling
    def sample_parent(self, island: int) -> Member:
        pop, p = self.pop, self.params
        members = pop.on_island(island)
        if not members:
            members, island = pop.on_island(0), 0
        if (front := self.front_parent(members)) is not None:  # issue 36
            return front
        u = float(self.rng.random())
        if u < p["exploration_ratio"]:
            return pop.choice(members)
        if u < p["exploration_ratio"] + p["exploitation_ratio"]:
            arch = pop.archive_members(island) or pop.archive_members()
            if arch:
                return pop.choice(arch)
            return pop.choice(members)
        return pop.choice(members, (max(m.fitness, 0.001) for m in members))

    def sample_inspirations(self, parent: Member, island: int,
                            exclude: frozenset[int] = frozenset()) -> list[Member]:
        """OpenEvolve's inspiration order; ``exclude``: programs already shown as top
        programs (the prompt shows distinct programs)."""
        pop, n = self.pop, self.params["num_diverse_programs"]
        if n <= 0:
            return []
        members = pop.on_island(island) or pop.on_island(0)
        chosen: list[Member] = []

        def take(m: Member | None) -> None:
            if m is not None and m.uid != parent.uid and m not in chosen and len(chosen) < n \
                    and m.uid not in exclude:
                chosen.append(m)

        ranked = sorted(members, key=lambda m: m.rank_key, reverse=True)
        take(ranked[0] if ranked else None)
        n_elite = max(1, int(n * self.params["elite_selection_ratio"]))
        for m in [m for m in ranked if m.uid != parent.uid][:n_elite]:
            take(m)
        if len(members) > n and len(chosen) < n:
            cell = parent.meta.get("cell")
            grid = self.grids[members[0].island]
            for _ in range(3 * (n - len(chosen))):
                if cell is None or len(chosen) >= n:
                    break
                near = tuple(int(c + self.rng.integers(-2, 3)) for c in cell)
                uid = grid.get(near)
                if uid is not None and uid in pop.islands[members[0].island]:
                    take(pop.members[uid])
        rest = [m for m in members if m.uid != parent.uid and m not in chosen
                and m.uid not in exclude]
        while len(chosen) < n and rest:
            take(rest.pop(int(self.rng.integers(len(rest)))))
        return chosen

    # ------------------------------------------------------------------ prompt
    def _fresh(self) -> Call:
        island = self._fresh_asks % self.params["num_islands"]
        self._fresh_asks += 1
        parent = self.sample_parent(island)
        top = self.top_programs(island)
        inspirations = self.sample_inspirations(parent, island, frozenset(m.uid for m in top))
        diff = self.params["mode"] == "diff"
        messages = build_openevolve_messages(
            system_message=self.task.system_message, current_program=parent.code,
            fitness_score=parent.fitness, language=self.task.language,
            feature_coords=self.feature_coords(parent),
            improvement_areas=self.focus_areas(parent),
            artifacts=parent.meta.get("feedback", "") if self.feedback != "none"
            else format_artifacts(parent.error, parent.meta.get("output")),
            evolution_history=self.history(top, inspirations),
            feature_dimensions=", ".join(self.dims),
            template=DIFF_TEMPLATE_NAME if diff else TEMPLATE_NAME)
        meta = {"island": island, "parent_island": parent.island, "format":
                "diff" if diff else "full", "confine": False,
                "inspirations": [m.program_id for m in inspirations]}
        return Call(messages, parent.program_id, parent.code, "mutation", meta,
                    {"island": island, "parent_uid": parent.uid})

    def feature_coords(self, m: Member) -> str:
        raw, cell = m.meta.get("raw", {}), m.meta.get("cell", ())
        parts = [f"{d}={raw.get(d, 0.0):.2f} (bin {c + 1} of {self.params['feature_bins']})"
                 for d, c in zip(self.dims, cell, strict=False)]
        return ", ".join(parts) or "none"

    def focus_areas(self, m: Member) -> str:
        notes = []
        parent = self.pop.members.get(m.parent_uid) if m.parent_uid is not None else None
        if not m.valid:
            notes.append("The current program is not valid; make it run and satisfy all "
                         "constraints")
        elif parent is not None and m.fitness > parent.fitness:
            notes.append(f"Fitness improved: {format_fitness(parent.fitness)} → "
                         f"{format_fitness(m.fitness)}")
        elif parent is not None and m.fitness < parent.fitness:
            notes.append(f"Fitness declined: {format_fitness(parent.fitness)} → "
                         f"{format_fitness(m.fitness)}; consider a different approach")
        elif parent is not None:
            notes.append(f"Fitness unchanged at {format_fitness(m.fitness)}")
        else:
            notes.append("Improve the fitness score")
        if m.meta.get("cell") is not None:
            notes.append(f"Exploring region {self.feature_coords(m)} of the feature grid")
        limit = self.params["suggest_simplification_after_chars"]
        if limit and len(m.code) > limit:
            notes.append(f"Consider simplifying: the code is longer than {limit} characters")
        return "; ".join(notes)

    def _entry(self, m: Member, label: str = "") -> HistoryEntry:
        return HistoryEntry(code=m.code, score=m.fitness, valid=m.valid, error=m.error,
                            label=label)

    def _outcome(self, m: Member) -> str:
        parent = self.pop.members.get(m.parent_uid) if m.parent_uid is not None else None
        if parent is None:
            return "initial program" if m.program_id == self.initial.program_id else "a root"
        verdict = ("improved" if m.fitness > parent.fitness else
                   "regressed" if m.fitness < parent.fitness else "unchanged")
        return f"{verdict} vs its parent ({format_fitness(parent.fitness)})"

    def top_programs(self, island: int) -> list[Member]:
        ranked = self.pop.ranked(island) or self.pop.ranked(0)
        return ranked[: self.params["num_top_programs"]]

    def history(self, top: list[Member], inspirations: list[Member]) -> str:
        attempts = format_previous_attempts([self._entry(m, self._outcome(m)) for m in top])
        rest = format_evolution_history([self._entry(m) for m in top],
                                        [self._entry(m) for m in inspirations],
                                        language=self.task.language)
        return f"{attempts}\n\n{rest}" if attempts else rest

    def _summary(self) -> dict[str, Any]:
        return {**super()._summary(), **self.pop.summary(), "migrations": self.migrations,
                "island_generations": list(self.island_gens),
                "grid_cells": [len(g) for g in self.grids]}


PROTOCOLS.register(OpenEvolveProtocol.name, OpenEvolveProtocol)
