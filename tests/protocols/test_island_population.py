"""Island population: archive rule, ring copies, random moves, lineage (hand-made cases)."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.errors import ConfigError
from basevolve.protocols.islands import IslandPopulation


def pop_with(scores_per_island: list[list[float]], archive: int = 100, seed: int = 0
             ) -> IslandPopulation:
    pop = IslandPopulation(len(scores_per_island), archive, np.random.default_rng(seed))
    root = pop.add(program_id=0, code="root", score=0.0, valid=True, island=0)
    for i, scores in enumerate(scores_per_island):
        for s in scores:
            pop.add(program_id=100 * i + int(s * 10), code=f"p{i}_{s}", score=s, valid=True,
                    island=i, parent_uid=root.uid)
    return pop


def test_archive_fills_then_replaces_worst_only_if_strictly_better():
    pop = IslandPopulation(1, 2, np.random.default_rng(0))
    a = pop.add(program_id=1, code="a", score=0.3, valid=True, island=0)
    b = pop.add(program_id=2, code="b", score=0.5, valid=True, island=0)
    assert pop.offer_archive(a.uid) is None and pop.offer_archive(b.uid) is None
    c = pop.add(program_id=3, code="c", score=0.3, valid=True, island=0)
    assert pop.offer_archive(c.uid) is None and c.uid not in pop.archive  # equal: no entry
    d = pop.add(program_id=4, code="d", score=0.4, valid=True, island=0)
    assert pop.offer_archive(d.uid) == a.uid and list(pop.archive) == [b.uid, d.uid]
    bad = pop.add(program_id=5, code="e", score=0.9, valid=False, island=0)
    assert pop.offer_archive(bad.uid, require_valid=True) is None and bad.uid not in pop.archive
    assert bad.fitness == 0.0  # invalid programs rank as 0
    pop.swap_archive(b.uid, bad.uid)
    assert list(pop.archive) == [bad.uid, d.uid]


def test_ring_copies_best_to_both_neighbours_once():
    pop = pop_with([[0.9, 0.1], [0.5], [0.7, 0.2, 0.3]])
    moves = pop.migrate_ring(lambda n: 1)
    by_src = {}
    for src, copy, target in moves:
        by_src.setdefault(pop.members[src].code, set()).add(target)
        assert pop.members[copy].migrant and pop.members[copy].parent_uid == src
        assert pop.members[copy].island == target
    # island 0's best (0.9) -> islands 1 and 2; island 1's best (0.5) -> 0 and 2;
    # island 2's best (0.7) -> 1 and 0
    assert by_src == {"p0_0.9": {1, 2}, "p1_0.5": {0, 2}, "p2_0.7": {0, 1}}
    # a second migration never re-sends those programs nor their copies
    again = pop.migrate_ring(lambda n: 1)
    sources = {pop.members[s].code for s, _, _ in again}
    # next-best originals; island 1 has only its sent program and migrant copies left
    assert sources == {"p0_0.1", "p2_0.3"}


def test_ring_skips_islands_holding_identical_code_and_honours_sources():
    pop = pop_with([[0.9], [0.5]])
    pop.add(program_id=9, code="p0_0.9", score=0.9, valid=True, island=1)
    moves = pop.migrate_ring(lambda n: 1, sources=[0])
    assert moves == []  # island 1 already holds that code
    pop2 = pop_with([[0.9], [0.5], [0.4]])
    moves = pop2.migrate_ring(lambda n: 1, sources=[1], both_ways=False)
    assert [(pop2.members[s].code, t) for s, _, t in moves] == [("p1_0.5", 2)]


def test_random_moves_keep_island_best_and_go_elsewhere():
    pop = pop_with([[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05], [0.5, 0.4], [0.1]])
    before = {u: m.island for u, m in pop.members.items()}
    best0 = pop.best(0).uid
    moves = pop.migrate_random(0.2)
    per_island = {}
    for uid, src, dst in moves:
        assert before[uid] == src != dst and pop.members[uid].island == dst
        assert pop.members[uid].generation > 0 and uid != best0
        per_island[src] = per_island.get(src, 0) + 1
    # island 0: 11 members (root + 10) -> floor(11*0.2)=2; island 1: 2 members -> 1;
    # island 2: a single member -> none
    assert per_island == {0: 2, 1: 1}
    again = pop_with([[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05], [0.5, 0.4], [0.1]])
    assert again.migrate_random(0.2) == moves  # seeded: same moves


def test_lineage_oldest_first_and_bad_sizes():
    pop = IslandPopulation(1, 5, np.random.default_rng(0))
    a = pop.add(program_id=1, code="a", score=0.1, valid=True, island=0)
    b = pop.add(program_id=2, code="b", score=0.2, valid=True, island=0, parent_uid=a.uid)
    c = pop.add(program_id=3, code="c", score=0.3, valid=True, island=0, parent_uid=b.uid)
    assert [m.code for m in pop.lineage(c.uid, 5)] == ["a", "b"]
    assert [m.code for m in pop.lineage(c.uid, 1)] == ["b"]
    assert a.children == 1 and c.generation == 2
    with pytest.raises(ConfigError):
        IslandPopulation(0, 5, np.random.default_rng(0))
