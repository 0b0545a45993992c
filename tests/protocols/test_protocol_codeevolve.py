"""CodeEvolve-style protocol: explore/exploit ratio, roulette by rank, alive sets,
per-island ring migration, lineage chat, meta-prompting, determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest
from island_sim import drive
from protocol_fakes import ISLAND_INITIAL, IslandTask
from scipy import stats

from basevolve.prompts.diff import PROMPT_MARKERS, apply_search_replace
from basevolve.protocols import PROTOCOLS, Child

ALPHA = 0.001


def make(seed: int = 0, **params) -> object:
    task = IslandTask()
    proto = PROTOCOLS.get("codeevolve")(task=task, rng=np.random.default_rng(seed), **params)
    proto.set_initial(Child(1, ISLAND_INITIAL, 0.5, True, None))
    return proto


def prog(value: float) -> str:
    return ISLAND_INITIAL.replace("return 0.5", f"return {value!r}")


def sr(old: float, new: float) -> str:
    return f"<<<<<<< SEARCH\n    return {old!r}\n=======\n    return {new!r}\n>>>>>>> REPLACE"


def test_defaults_and_every_island_holds_the_initial_program():
    proto = make()
    p = proto.params
    assert (p["num_islands"], p["max_size"], p["init_pop"], p["exploration_rate"]) == (5, 40, 6, 0.3)
    assert (p["num_inspirations"], p["max_chat_depth"], p["migration_interval"]) == (3, 3, 40)
    assert p["meta_prompting"] is True
    assert [proto.pop.size(i) for i in range(5)] == [1] * 5


def test_exploration_rate_binomial():
    proto = make(num_islands=1, init_pop=0, meta_prompting=False)
    for v in (0.1, 0.2, 0.3):
        proto.insert(Child(2, prog(v), v, True, None), 0, None)
    n = 4000
    kinds = [proto.ask().meta["kind"] for _ in range(n)]
    explore = kinds.count("explore")
    assert kinds.count("explore") + kinds.count("exploit") == n
    assert stats.binomtest(explore, n, 0.3).pvalue > ALPHA


def test_roulette_by_rank_frequencies():
    """Exploitation parents: P(rank r) ∝ 1/(1+r) over the alive set, chi-square."""
    proto2 = make(num_islands=1, init_pop=0, exploration_rate=0.0, meta_prompting=False)
    for i, v in enumerate((0.9, 0.1, 0.7, 0.3)):
        proto2.insert(Child(10 + i, prog(v), v, True, None), 0, None)
    ranked = proto2.pop.ranked(0)
    w = np.array([1 / (1 + r) for r in range(len(ranked))])
    n = 6000
    counts = {m.program_id: 0 for m in ranked}
    for _ in range(n):
        counts[proto2.ask().parent_id] += 1
    observed = np.array([counts[m.program_id] for m in ranked])
    assert stats.chisquare(observed, w / w.sum() * n).pvalue > ALPHA


def test_alive_set_replaces_worst_if_at_least_as_fit():
    proto = make(num_islands=1, max_size=3)
    a = proto.insert(Child(2, prog(0.2), 0.2, True, None), 0)
    b = proto.insert(Child(3, prog(0.7), 0.7, True, None), 0)
    assert proto.pop.size(0) == 3
    c = proto.insert(Child(4, prog(0.2), 0.2, True, None), 0)  # ties the worst alive (a)
    alive = set(proto.pop.islands[0])
    assert a.uid not in alive and c.uid in alive and b.uid in alive
    d = proto.insert(Child(5, prog(0.1), 0.1, True, None), 0)  # worse: stored dead
    assert d.uid not in proto.pop.islands[0] and d.uid in proto.pop.members


def test_per_island_migration_copies_only_programs_found_there():
    proto = make(num_islands=3, migration_rate=0.5)
    proto.insert(Child(2, prog(0.9), 0.9, True, None), 1)
    proto.insert(Child(3, prog(0.8), 0.8, True, None), 1)
    proto.migrate(1)
    moved = sorted((m.program_id, m.island) for m in proto.pop.members.values() if m.migrant)
    # island 1 has 3 alive (initial copy + 2): max(1, floor(1.5)) = 1 migrant, its best
    assert moved == [(2, 0), (2, 2)]
    copy = next(m for m in proto.pop.members.values() if m.migrant)
    assert copy.parent_uid is None and "prompt" not in copy.meta  # links dropped


def test_meta_prompt_call_then_code_call_with_edited_prompt():
    proto = make(num_islands=1)
    meta = proto.ask()
    assert meta.purpose == "meta_prompt" and "PROMPT-BLOCK-START" in meta.messages[1]["content"]
    line = IslandTask().system_message
    edit = f"<<<<<<< SEARCH\n{line}\n=======\nYou are a careful fake-task expert.\n>>>>>>> REPLACE"
    proto.tell_text(meta, edit)
    code = proto.ask()
    assert code.purpose == "mutation" and code.meta["meta_prompt_applied"] is True
    system = code.messages[0]["content"]
    assert system.startswith("You are a careful fake-task expert.")
    assert "PROMPT-BLOCK" not in system and "# TASK: CODE EVOLUTION" in system
    assert "- Time limit: 5 seconds maximum execution time" in system
    meta2 = proto.ask()
    proto.tell_text(meta2, "I would not change anything.")  # failed edit: base prompt kept
    code2 = proto.ask()
    assert code2.meta["meta_prompt_applied"] is False and code2.meta["prompt"] == 0
    assert len(proto.prompts[0]) == 2


def test_lineage_chat_replays_ancestors_with_their_edits():
    proto = make(num_islands=1, init_pop=0, exploration_rate=0.0, num_inspirations=0,
                 meta_prompting=False, max_chat_depth=2)
    a = proto.insert(Child(2, prog(0.6), 0.6, True, None), 0, proto.roots[0])
    b = proto.insert(Child(3, prog(0.7), 0.7, True, None), 0, a.uid)
    c = proto.insert(Child(4, prog(0.8), 0.8, True, None), 0, b.uid)
    for _ in range(200):
        p = proto.ask()
        if p.parent_id == 4:
            break
    assert p.parent_id == 4 and c.generation == 3
    roles = [m["role"] for m in p.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "return 0.6" in p.messages[1]["content"] and sr(0.6, 0.7) in p.messages[2]["content"]
    assert sr(0.7, 0.8) in p.messages[4]["content"] and "return 0.8" in p.messages[5]["content"]


def test_edits_must_stay_inside_the_evolve_block():
    proto = make(meta_prompting=False)
    p = proto.ask()
    assert p.meta["format"] == "diff" and p.meta["confine"] is True
    outside = proto.parse_reply(p, "<<<<<<< SEARCH\nimport math\n=======\nimport os\n>>>>>>> REPLACE")
    assert outside.code is None and "outside" in outside.error
    ok = proto.parse_reply(p, sr(0.5, 0.75))
    assert ok.code == prog(0.75)


@pytest.mark.parametrize("meta_prompting", [True, False])
def test_seeded_determinism(meta_prompting):
    def run(seed):
        proto = make(seed, meta_prompting=meta_prompting, init_pop=2)
        return [json.dumps(p.messages) for p in drive(proto, 60, seed=2, in_flight=3, junk_every=7)]

    assert run(3) == run(3) and run(3) != run(4)


def test_search_blocks_must_match_exactly():
    """Issue 23, item 4 (spec section 3.5): CodeEvolve's SEARCH, stripped, must be a
    substring of an EVOLVE block.  The relaxed levels of the shared applier (trailing
    whitespace, tabs, re-indentation) are ShinkaEvolve's, not CodeEvolve's: an edit
    that needs them is a score-0 child here, while ShinkaEvolve's applier takes it."""
    parent = ("import math\n\n# EVOLVE-BLOCK-START\ndef make():\n    a = 0.5\n"
              "    return a\n# EVOLVE-BLOCK-END\n")
    task = IslandTask()
    proto = PROTOCOLS.get("codeevolve")(task=task, rng=np.random.default_rng(0),
                                        meta_prompting=False)
    proto.set_initial(Child(1, parent, 0.5, True, None))
    p = proto.ask()
    loose = {  # each matches only at one relaxed level of prompts/diff.py
        "indent": "        a = 0.5\n        return a",
        "rstrip": "    a = 0.5   \n    return a",
        "tabs": "\ta = 0.5\n\treturn a",
    }
    for level, search in loose.items():
        reply = f"<<<<<<< SEARCH\n{search}\n=======\n    a = 0.75\n    return a\n>>>>>>> REPLACE"
        got = proto.parse_reply(p, reply)
        assert got.code is None and "not found" in got.error, level
        fuzzy = apply_search_replace(parent, reply, require_in_evolve_block=True)
        assert fuzzy.methods == (level,) and "a = 0.75" in fuzzy.code, level  # Shinka's rule
    exact = ("<<<<<<< SEARCH\n    a = 0.5\n    return a\n=======\n    a = 0.75\n    return a\n"
             ">>>>>>> REPLACE")
    assert proto.parse_reply(p, exact).code == parent.replace("a = 0.5", "a = 0.75")
    # stripped, as CodeEvolve parses: the first line's indentation and the blank edges
    # around a block do not matter, the text in between must be exact
    stripped = "<<<<<<< SEARCH\n\n  a = 0.5\n=======\na = 0.25\n\n>>>>>>> REPLACE"
    assert proto.parse_reply(p, stripped).code == parent.replace("a = 0.5", "a = 0.25")
    # the meta-prompt's PROMPT-BLOCK edits follow the same rule
    meta = PROTOCOLS.get("codeevolve")(task=task, rng=np.random.default_rng(0), num_islands=1)
    meta.set_initial(Child(1, parent, 0.5, True, None))
    m = meta.ask()
    line = task.system_message.replace("You are", "You\tare")
    tabbed = f"<<<<<<< SEARCH\n{line}\n=======\nBe careful.\n>>>>>>> REPLACE"
    base = meta.prompts[0][0].text
    assert apply_search_replace(base, tabbed, require_in_evolve_block=True,
                                markers=PROMPT_MARKERS).methods == ("tabs",)
    meta.tell_text(m, tabbed)
    assert meta.ask().meta["meta_prompt_applied"] is False


def test_islands_with_neighbours_show_no_inspirations_before_the_first_migration():
    """Issue 23, item 4 (spec 3.3, CodeEvolve v1): an island with ring neighbours drops
    inspirations until its epoch exceeds migration_interval; a lone island never does."""
    def protocol(islands: int):
        proto = make(num_islands=islands, init_pop=0, meta_prompting=False,
                     exploration_rate=0.0, num_inspirations=2, migration_interval=3)
        for i in range(islands):
            for k, v in enumerate((0.6, 0.7, 0.8)):
                proto.insert(Child(10 * (i + 1) + k, prog(v), v, True, None), i)
        return proto

    proto = protocol(2)
    seen = []
    for _ in range(10):  # fresh jobs go to islands 0, 1, 0, 1, ...; each told at once
        p = proto.ask()
        island = p.meta["island"]
        seen.append((island, proto.epochs[island] + 1, len(p.meta["inspirations"])))
        proto.tell(p, Child(None, None, 0.0, False, "no program"))
    for _island, epoch, n in seen:
        assert n == (2 if epoch > 3 else 0), seen
    assert {e for _, e, n in seen if n} == {4, 5}
    lone = protocol(1)
    assert len(lone.ask().meta["inspirations"]) == 2
