"""ShinkaEvolve-style protocol: weighted / power-law / beam parents, patch types, retries
as counted calls, novelty rejection (n-gram and judge), determinism."""

from __future__ import annotations

import json

import numpy as np
import pytest
from island_sim import drive
from protocol_fakes import ISLAND_INITIAL, IslandTask
from scipy import stats

from basevolve.protocols import PROTOCOLS, Child
from basevolve.protocols.novelty import ngram_vector

ALPHA = 0.001


def make(seed: int = 0, **params) -> object:
    proto = PROTOCOLS.get("shinkaevolve")(task=IslandTask(), rng=np.random.default_rng(seed),
                                          **params)
    proto.set_initial(Child(1, ISLAND_INITIAL, 0.5, True, None))
    return proto


def prog(value: float, body: str = "") -> str:
    return ISLAND_INITIAL.replace("return 0.5", f"{body}return {value!r}")


def synthetic(proto, scores=(0.9, 0.2, 0.6, 0.4, 0.75), island=0, children=(0, 3, 0, 1, 0)):
    members = []
    for i, (s, c) in enumerate(zip(scores, children, strict=True)):
        m = proto.insert(Child(10 + i, prog(s, f"x = {i}\n    "), s, True, None), island, 0)
        m.children = c
        members.append(m)
    return members


def test_defaults_and_initial_copied_to_every_island():
    proto = make()
    p = proto.params
    assert (p["num_islands"], p["archive_size"], p["parent_selection"]) == (2, 40, "weighted")
    assert (p["num_archive_inspirations"], p["num_top_k_inspirations"]) == (4, 2)
    assert (p["p_diff"], p["p_full"], p["p_cross"]) == (0.6, 0.3, 0.1)
    assert (p["max_patch_attempts"], p["max_patch_resamples"], p["novelty"]) == (3, 3, "ngram")
    assert [proto.pop.size(i) for i in range(2)] == [1, 1]


def test_weighted_parent_frequencies():
    """P ∝ sigmoid(λ(s − median)/MAD) / (1 + children) over the island's archive."""
    proto = make(num_islands=1)
    synthetic(proto)
    arch = [m for m in proto.pop.archive_members(0) if m.valid]
    s = np.array([m.fitness for m in arch])
    med = np.median(s)
    mad = max(np.median(np.abs(s - med)), 1e-6)
    w = 1 / (1 + np.exp(-10 * (s - med) / mad)) / (1 + np.array([m.children for m in arch]))
    n = 20000
    counts = {m.uid: 0 for m in arch}
    for _ in range(n):
        counts[proto.sample_parent(0).uid] += 1
    observed = np.array([counts[m.uid] for m in arch])
    keep = w / w.sum() * n >= 5  # chi-square needs expected counts >= 5
    assert observed[~keep].sum() <= 10
    exp = w[keep] / w[keep].sum() * observed[keep].sum()
    assert stats.chisquare(observed[keep], exp).pvalue > ALPHA


def test_power_law_and_hill_climbing():
    proto = make(num_islands=1, parent_selection="power_law", exploitation_ratio=1.0,
                 exploitation_alpha=1.0)
    synthetic(proto)
    ranked = sorted(proto.pop.archive_members(0), key=lambda m: m.rank_key, reverse=True)
    w = np.array([(r + 1.0) ** -1 for r in range(len(ranked))])
    n = 12000
    counts = {m.uid: 0 for m in ranked}
    for _ in range(n):
        counts[proto.sample_parent(0).uid] += 1
    observed = np.array([counts[m.uid] for m in ranked])
    assert stats.chisquare(observed, w / w.sum() * n).pvalue > ALPHA
    hill = make(num_islands=1, parent_selection="hill_climbing")
    synthetic(hill)
    assert {hill.sample_parent(0).score for _ in range(200)} == {0.9}


def test_beam_search_locks_parent_until_num_beams_children():
    proto = make(num_islands=1, parent_selection="beam_search", num_beams=2)
    best = synthetic(proto)[0]
    assert proto.sample_parent(0).uid == best.uid
    best.children = 2
    better = proto.insert(Child(50, prog(0.95, "y = 1\n    "), 0.95, True, None), 0, 0)
    assert proto.sample_parent(0).uid == better.uid


def test_patch_type_frequencies():
    proto = make(num_islands=1)
    synthetic(proto)
    n = 3000
    kinds = [proto.ask().meta["patch_type"] for _ in range(n)]
    obs = np.array([kinds.count(k) for k in ("diff", "full", "cross")])
    assert stats.chisquare(obs, np.array([0.6, 0.3, 0.1]) * n).pvalue > ALPHA
    fulls = [p for p in proto.outstanding if p.meta["patch_type"] == "full"]
    variants = {p.meta["variant"] for p in fulls}
    assert variants == {"default", "different", "motivated", "structural", "parametric"}


def test_retries_are_fix_calls_then_resamples_then_give_up():
    proto = make(max_patch_attempts=2, max_patch_resamples=2, novelty="off")
    p = proto.ask()
    assert p.purpose == "mutation"
    reply = "I cannot do it"
    proto.observe_reply(p, reply)  # the engine hands every reply over before parsing
    parsed = proto.parse_reply(p, reply)
    assert parsed.code is None
    proto.tell(p, Child(2, None, 0.0, False, parsed.error))
    fix = proto.ask()  # same conversation + the failed reply + the reason
    assert fix.purpose == "fix" and fix.meta["attempt"] == 1
    assert fix.messages[: len(p.messages)] == p.messages
    assert fix.messages[-2] == {"role": "assistant", "content": reply}
    assert parsed.error in fix.messages[-1]["content"]
    proto.parse_reply(fix, reply)
    proto.tell(fix, Child(3, None, 0.0, False, "diff not applied"))
    resample = proto.ask()  # attempts used up: a fresh sample, still the same generation
    assert resample.purpose == "fix" and resample.meta["resample"] == 1
    assert resample.meta["attempt"] == 0
    for q in (resample, None):
        q = q or proto.ask()
        proto.parse_reply(q, reply)
        proto.tell(q, Child(4, None, 0.0, False, "bad"))
    assert proto.failed_generations == 1 and proto.generations == 1
    assert proto.ask().purpose == "mutation" and proto.generations == 2


def test_ngram_novelty_rejects_near_copies_and_resamples():
    proto = make(novelty="ngram")
    p = proto.ask()
    copy = f"<NAME>same</NAME><CODE>\n```python\n{ISLAND_INITIAL}```\n</CODE>"
    if p.meta["patch_type"] == "diff":  # a no-op diff is an applier error, not novelty
        copy = copy.replace("<CODE>", "<DIFF>").replace("</CODE>", "</DIFF>")
    parsed = proto.parse_reply(p, copy)
    assert parsed.code is None
    if p.meta["patch_type"] != "diff":
        assert parsed.error.startswith("novelty: code similarity 1.0000 > 0.995")
        proto.tell(p, Child(2, None, 0.0, False, parsed.error))
        redo = proto.ask()
        assert redo.purpose == "fix" and redo.meta["novelty_attempt"] == 1
    a, b = ngram_vector(prog(0.5)), ngram_vector(prog(0.5, "z = [i * i for i in range(9)]\n    "))
    assert 0.5 < float(a @ b) < 0.995 and float(a @ a) == pytest.approx(1.0)


def test_judge_is_asked_before_the_child_is_evaluated():
    """Issue 23, item 5: in judge mode a too-similar proposal is not evaluated first.  Its
    reply yields no program (the reason says the judge decides); the judge call follows,
    and its reply releases the proposal for evaluation only when it starts with NOVEL."""
    proto = make(novelty="judge", novelty_threshold=0.8, p_diff=1.0, p_full=0.0, p_cross=0.0)
    child_code = prog(0.5, "pass\n    ")  # cosine 0.89 to the initial program
    reply = ("<NAME>n</NAME>\n<DESCRIPTION>d</DESCRIPTION>\n<DIFF>\n<<<<<<< SEARCH\n"
             "    return 0.5\n=======\n    pass\n    return 0.5\n>>>>>>> REPLACE\n</DIFF>")

    def propose(p):
        proto.observe_reply(p, reply)
        parsed = proto.parse_reply(p, reply)
        assert parsed.code is None and parsed.error.startswith("novelty judge: code similarity")
        proto.tell(p, Child(None, None, 0.0, False, parsed.error))  # nothing was run
        judge = proto.ask()
        assert judge.purpose == "judge" and not judge.is_text  # its reply gates a program
        assert "NOVEL or NOT NOVEL" in judge.messages[0]["content"]
        assert "pass" in judge.messages[-1]["content"]  # the proposal is shown to the judge
        return judge

    size = proto.pop.size()
    judge = propose(proto.ask())
    verdict = proto.parse_reply(judge, "The proposal is NOVEL in its structure.")
    assert verdict.code is None and verdict.error.startswith("novelty: ")  # not at the start
    proto.tell(judge, Child(7, None, 0.0, False, verdict.error))
    assert proto.pop.size() == size  # rejected unevaluated: the generation is resampled
    redo = proto.ask()
    assert redo.meta["novelty_attempt"] == 1
    judge2 = propose(redo)
    verdict = proto.parse_reply(judge2, "NOVEL: it adds a statement")
    assert verdict.code == child_code  # released for evaluation
    proto.tell(judge2, Child(8, verdict.code, 0.6, True, None))
    assert proto.pop.size() == size + 1 and proto.best.program_id == 8


@pytest.mark.parametrize(("text", "novel"), [
    ("NOVEL: a new construction", True), ("novel", True), ("  **NOVEL**, because", True),
    ("<think>Is it NOT NOVEL? No.</think>\nNOVEL.", True), ("NOT NOVEL: same idea", False),
    ("The proposal is NOVEL.", False), ("I find it NOVEL", False), ("NOVELTY: low", False),
    ("Not novel.", False), ("", False)])
def test_novel_counts_only_at_the_start_of_the_answer(text, novel):
    """Issue 23, item 5: ShinkaEvolve accepts iff the answer starts with NOVEL (spec);
    reasoning and Markdown emphasis before it are not the answer."""
    from basevolve.prompts.shinka import judge_says_novel

    assert judge_says_novel(text) is novel


def test_seeded_determinism():
    def run(seed):
        proto = make(seed)
        return [json.dumps(p.messages) for p in drive(proto, 60, seed=5, in_flight=3, junk_every=4)]

    assert run(1) == run(1) and run(1) != run(2)


def test_cancelled_follow_up_is_asked_again_with_the_same_messages():
    proto = make(novelty="off")
    p = proto.ask()
    proto.observe_reply(p, "no edit")
    proto.tell(p, Child(2, None, 0.0, False, "diff not applied: no SEARCH/REPLACE block"))
    fix = proto.ask()
    proto.cancel(fix)  # a lost call: the retry chain must continue with the same call
    again = proto.ask()
    assert again.purpose == "fix" and again.messages == fix.messages and again.key != fix.key
