"""OpenEvolve-style protocol: selection mixture, MAP-Elites cells, archive, migration,
determinism and prompt content."""

from __future__ import annotations

import json

import numpy as np
import pytest
from island_sim import drive
from protocol_fakes import ISLAND_INITIAL, IslandTask
from scipy import stats

from basevolve.errors import ConfigError
from basevolve.protocols import PROTOCOLS, Child

ALPHA = 0.001  # chi-square tests: a correct sampler fails one run in a thousand


def make(seed: int = 0, **params) -> object:
    task = IslandTask()
    proto = PROTOCOLS.get("openevolve")(task=task, rng=np.random.default_rng(seed), **params)
    proto.set_initial(Child(1, ISLAND_INITIAL, 0.5, True, None))
    return proto


def prog(value: float, pad: int = 0) -> str:
    return ISLAND_INITIAL.replace("return 0.5", f"return {value!r}" + " " * pad)


def test_registered_with_paper_defaults():
    proto = make()
    assert proto.params["num_islands"] == 5 and proto.params["mode"] == "full"
    assert proto.params["num_top_programs"] == 3 and proto.params["num_diverse_programs"] == 2
    assert (proto.params["exploration_ratio"], proto.params["exploitation_ratio"]) == (0.2, 0.7)
    assert proto.pop.size(0) == 1 and all(proto.pop.size(i) == 0 for i in range(1, 5))
    with pytest.raises(ConfigError, match="exploration_ratio \\+ exploitation_ratio"):
        make(exploration_ratio=0.5, exploitation_ratio=0.6)
    with pytest.raises(ConfigError, match="unknown --protocol-param 'islands'"):
        make(islands=3)


def test_parent_selection_mixture_matches_ratios():
    """P(m) = 0.2/|island| + 0.7·[m in archive]/|archive| + 0.1·f_m/Σf, chi-square."""
    proto = make(num_islands=1, archive_size=4, feature_dimensions="complexity",
                 feature_bins=50)
    # the longest first, then lengths in between: running min-max scaling gives each its
    # own bin (a new maximum would always land in the top bin; the lone initial is in bin 25)
    pairs = zip([0.1, 0.9, 0.3, 0.6, 0.2, 0.8], [60, 10, 20, 35, 40, 50], strict=True)
    for i, (v, pad) in enumerate(pairs):
        proto.place(Child(10 + i, prog(v, pad=pad), v, True, None), 0)
    members = proto.pop.on_island(0)
    assert len(members) == 7  # distinct lengths: every program owns its own cell
    arch = set(proto.pop.archive)
    fit = np.array([max(m.fitness, 0.001) for m in members])
    expected = (0.2 / len(members) + 0.7 * np.array([m.uid in arch for m in members]) / len(arch)
                + 0.1 * fit / fit.sum())
    n = 20000
    counts = {m.uid: 0 for m in members}
    for _ in range(n):
        counts[proto.sample_parent(0).uid] += 1
    observed = np.array([counts[m.uid] for m in members])
    assert stats.chisquare(observed, expected * n).pvalue > ALPHA


def test_map_elites_cell_replacement_and_archive_swap():
    proto = make(num_islands=1, archive_size=2, feature_dimensions="complexity")
    init = proto.pop.on_island(0)[0]
    cell = init.meta["cell"]
    x = proto.place(Child(2, prog(0.7), 0.7, True, None), 0)  # same length -> same cell
    assert x.meta["cell"] == cell and proto.grids[0][cell] == x.uid
    assert init.uid not in proto.pop.islands[0]  # displaced owner leaves the island
    assert list(proto.pop.archive) == [x.uid]  # and its archive place goes to x
    y = proto.place(Child(3, prog(0.6), 0.6, True, None), 0)  # loses: homeless member
    assert proto.grids[0][cell] == x.uid and y.uid in proto.pop.islands[0]
    assert y.uid in proto.pop.archive  # archive not full yet
    z = proto.place(Child(4, prog(0.65), 0.65, True, None), 0)  # archive full: replaces y
    assert proto.grids[0][cell] == x.uid and list(proto.pop.archive) == [x.uid, z.uid]
    w = proto.place(Child(5, prog(0.1), 0.1, True, None), 0)
    assert w.uid not in proto.pop.archive  # not strictly better than the worst
    tie = proto.place(Child(6, prog(0.7), 0.7, True, None), 0)
    assert proto.grids[0][cell] == x.uid and tie.uid in proto.pop.islands[0]  # equal: no take


def test_population_limit_evicts_worst_non_owner_never_best_or_newest():
    proto = make(num_islands=1, population_size=10, feature_dimensions="complexity",
                 feature_bins=1)  # one cell: every newcomer but the cell owner is homeless
    for i in range(12):
        proto.place(Child(10 + i, prog(i / 100), i / 100, True, None), 0)
    assert proto.pop.size() == 10
    scores = sorted(m.score for m in proto.pop.on_island(0))
    assert scores[-1] == 0.5 and 0.0 not in scores and 0.01 not in scores and 0.11 in scores


def test_ring_migration_copies_island_bests_to_neighbours():
    proto = make(num_islands=3, migration_rate=0.1)
    proto.place(Child(2, prog(0.8), 0.8, True, None), 1)
    proto.place(Child(3, prog(0.3), 0.3, True, None), 1)
    proto.place(Child(4, prog(0.6), 0.6, True, None), 2)
    proto.migrate()
    copies = [(m.program_id, m.island) for m in proto.pop.members.values() if m.migrant]
    # one migrant per island (max(1, floor(size·0.1))), its best, to both neighbours:
    # island 0's initial program (id 1) -> 1, 2; island 1's 0.8 (id 2) -> 0, 2;
    # island 2's 0.6 (id 4) -> 0, 1
    assert sorted(copies) == [(1, 1), (1, 2), (2, 0), (2, 2), (4, 0), (4, 1)]


def test_migration_triggers_after_interval_of_island_generations():
    proto = make(num_islands=2, migration_interval=3)
    drive(proto, 12, seed=3)
    assert proto.migrations >= 1
    assert any(m.migrant for m in proto.pop.members.values())


def messages_of(seed: int, **params) -> list[str]:
    proto = make(seed, **params)
    return [json.dumps(p.messages) for p in drive(proto, 40, seed=1, in_flight=3)]


def test_seeded_determinism_and_async_in_flight():
    assert messages_of(4) == messages_of(4)
    assert messages_of(4) != messages_of(5)
    proto = make()
    first = [proto.ask() for _ in range(7)]  # asynchronous: no barrier, unique keys
    assert len({p.key for p in first}) == 7 and proto.can_ask()
    assert [p.meta["island"] for p in first] == [0, 1, 2, 3, 4, 0, 1]


def test_prompt_has_real_coordinates_history_and_artifacts():
    proto = make(num_islands=1)
    proto.place(Child(2, prog(0.7), 0.7, False, "ValueError: bad shape"), 0)
    for v, pad in ((0.2, 60), (0.3, 8), (0.4, 20), (0.25, 35), (0.35, 45)):
        proto.place(Child(3, prog(v, pad=pad), v, True, None), 0)  # distinct cells
    msgs = [proto.ask().messages for _ in range(40)]
    user = "\n".join(m[1]["content"] for m in msgs)
    assert "- Feature coordinates: complexity=" in user and "diversity=" in user
    assert "## Previous Attempts" in user and "## Top Performing Programs" in user
    assert "## Diverse Programs" in user and "Exploring region" in user
    assert "The system maintains diversity across these dimensions: complexity, diversity" in user
    assert "### error\n```\nValueError: bad shape" in user  # artifacts of an invalid parent
    assert all(m[0]["content"] == IslandTask().system_message for m in msgs)


def test_diff_mode_parses_search_replace_and_reports_failures():
    proto = make(mode="diff")
    p = proto.ask()
    assert "<<<<<<< SEARCH" in p.messages[1]["content"] and p.meta["format"] == "diff"
    ok = proto.parse_reply(p, "<<<<<<< SEARCH\n    return 0.5\n=======\n    return 0.9\n>>>>>>> REPLACE")
    assert ok.code is not None and "return 0.9" in ok.code
    bad = proto.parse_reply(p, "<<<<<<< SEARCH\n    return 7\n=======\n    return 0.9\n>>>>>>> REPLACE")
    assert bad.code is None and "not found" in bad.error


def test_task_metric_feature_and_output_artifacts():
    proto = make(num_islands=1, feature_dimensions="min_dist,score", feature_bins=4)
    m = proto.place(Child(2, prog(0.7), 0.7, True, None, metrics={"min_dist": 0.25},
                          output="stdout:\nsum of radii: 0.7"), 0)
    assert m.meta["raw"] == {"min_dist": 0.25, "score": 0.7}
    assert proto.pop.on_island(0)[0].meta["raw"]["min_dist"] == 0.0  # lacks the metric
    texts = [proto.ask().messages[1]["content"] for _ in range(30)]
    shown = [t for t in texts if "- Fitness: 0.7000" in t]
    assert shown and all("### output\n```\nstdout:\nsum of radii: 0.7" in t for t in shown)
    assert all("min_dist=" in t and "score=" in t for t in shown)
