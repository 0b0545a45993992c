"""AdaEvolve-style protocol (issue 26): G and the intensity schedule, the three parent
modes, local + global context, the archive rule, ring migration, island spawning, the
island choice, paradigm calls and error retries as counted calls, asynchrony, cancel and
determinism -- driven without an engine by the fake LLM of ``island_sim``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from island_sim import drive, fake_reply, value_of
from protocol_fakes import ISLAND_INITIAL, IslandTask
from scipy import stats

from basevolve.errors import ConfigError
from basevolve.prompts.adaevolve import parse_paradigms
from basevolve.protocols import PROTOCOLS, Child
from basevolve.protocols.adaevolve_signals import ISLAND_PRESETS, IslandSignal, ParadigmTracker

ALPHA = 0.001


def make(seed: int = 0, initial: float = 0.5, **params):
    proto = PROTOCOLS.get("adaevolve")(task=IslandTask(), rng=np.random.default_rng(seed),
                                       **params)
    proto.set_initial(Child(1, ISLAND_INITIAL, initial, True, None))
    return proto


def prog(value: float, body: str = "") -> str:
    return ISLAND_INITIAL.replace("return 0.5", f"{body}return {value!r}")


def fill(proto, island: int, scores, start: int = 10):
    out = []
    for i, s in enumerate(scores):
        out.append(proto.offer(start + i, prog(s, f"x = {start + i}\n    "), s, True, island,
                               own=True, parent_uid=0))
    return out


def test_defaults_and_initial_program_on_every_island():
    proto = make()
    p = proto.params
    assert (p["num_islands"], p["max_islands"], p["population_size"]) == (2, 5, 20)
    assert (p["decay"], p["intensity_min"], p["intensity_max"]) == (0.9, 0.15, 0.5)
    assert (p["migration_interval"], p["migration_count"], p["ucb_c"]) == (15, 5, 1.41)
    assert (p["paradigm_window"], p["paradigm_threshold"], p["error_retries"]) == (10, 0.12, 2)
    assert [proto.pop.size(i) for i in range(2)] == [1, 1]
    # evaluated on island 0 (a visit), copied to island 1 (best and G only)
    assert proto.ucb.visits == [1, 0]
    assert [s.g for s in proto.signals] == pytest.approx([0.1, 0.1])
    assert [s.evaluations for s in proto.signals] == [1, 0]


def test_g_and_intensity_by_hand():
    s = IslandSignal(0.9, 0.15, 0.5)
    assert s.intensity == pytest.approx(0.15 + 0.35 / (1 + math.sqrt(1e-8)))
    assert s.record(0.5) == 1.0  # the first program
    assert s.g == pytest.approx(0.1)
    assert s.record(0.6) == pytest.approx(0.1 / (0.5 + 1e-8))  # (f - b) / |b|
    assert s.g == pytest.approx(0.9 * 0.1 + 0.1 * (0.1 / 0.5) ** 2)
    assert s.record(0.55) == 0.0 and s.evaluations == 3 and s.improvements == 2
    g = s.g
    s.receive(0.9)  # migration: best and G move, the counts do not
    assert s.best == 0.9 and s.g > g and (s.evaluations, s.improvements) == (3, 2)
    assert s.intensity == pytest.approx(0.15 + 0.35 / (1 + math.sqrt(s.g + 1e-8)))
    # a productive island exploits more: intensity falls as G grows
    assert IslandSignal(0.9, 0.15, 0.5, g=1.0).intensity < IslandSignal(0.9, 0.15, 0.5).intensity


def test_parent_mode_frequencies_follow_the_intensity():
    proto = make(num_islands=1)
    fill(proto, 0, [0.1 * k for k in range(1, 10)])
    intensity = proto.signals[0].intensity
    n = 6000
    modes = [proto.sample_parent(0)[1] for _ in range(n)]
    want = [intensity, 0.7 * (1 - intensity), 0.3 * (1 - intensity)]
    got = [modes.count(m) for m in ("exploration", "exploitation", "balanced")]
    assert stats.chisquare(got, [w * n for w in want]).pvalue > ALPHA


def test_exploitation_draws_from_the_top_quarter():
    proto = make(num_islands=1, intensity_min=0.0, intensity_max=0.0)  # never explores
    fill(proto, 0, [0.1 * k for k in range(1, 12)])  # 12 members with the initial
    parents = [proto.sample_parent(0) for _ in range(3000)]
    exploit = {round(m.fitness, 4) for m, mode in parents if mode == "exploitation"}
    assert exploit == {1.1, 1.0, 0.9}  # the top 12 // 4 = 3


def test_context_is_local_diverse_then_global_top_each_once():
    proto = make(num_islands=2, num_context_programs=4)
    fill(proto, 0, [0.6, 0.7, 0.8], start=10)
    fill(proto, 1, [0.95, 0.9], start=20)
    parent = next(m for m in proto.pop.on_island(0) if m.fitness == 0.8)
    ctx = proto.context(parent, 0)
    assert len(ctx) == 4
    local = [m for m, label in ctx if label == "from this island"]
    assert len(local) == 2 and all(m.island == 0 and m.uid != parent.uid for m in local)
    glob = [m for m, label in ctx if label != "from this island"]
    assert [m.fitness for m in glob] == [0.95, 0.9]  # the global top, not shown already
    assert len({m.code for m, _ in ctx} | {parent.code}) == 5


def test_the_parent_is_last_and_the_only_fitness_line():
    proto = make()
    last = [p for p in drive(proto, 12, seed=1) if not p.is_text][-1]
    text = last.messages[1]["content"]
    assert text.count("\n- Fitness:") == 1
    current = text.index("# Current Program")
    assert last.parent_code.rstrip() in text[current:]
    assert text.rindex("```python") > current  # no program after the parent's


def test_archive_rule_rejects_a_worse_newcomer_without_a_visit():
    proto = make(num_islands=1, population_size=4)
    fill(proto, 0, [0.6, 0.7, 0.8])
    visits = proto.ucb.visits[0]
    assert proto.offer(50, prog(0.05, "y = 1\n    "), 0.05, True, 0, own=True) is None
    assert proto.ucb.visits[0] == visits and proto.pop.size(0) == 4
    kept = proto.offer(51, prog(0.9, "y = 2\n    "), 0.9, True, 0, own=True)
    assert kept is not None and proto.pop.size(0) == 4  # replaced an unprotected member
    assert proto.ucb.visits[0] == visits + 1
    assert max(m.fitness for m in proto.pop.on_island(0)) == 0.9


def test_ring_migration_copies_the_best_forward_without_visits():
    proto = make(num_islands=3, migration_count=2)
    fill(proto, 0, [0.9, 0.8, 0.3], start=10)
    visits, g2 = list(proto.ucb.visits), proto.signals[1].g
    proto.migrate()
    codes1 = {m.code for m in proto.pop.on_island(1)}
    assert {prog(0.9, "x = 10\n    "), prog(0.8, "x = 11\n    ")} <= codes1
    assert proto.ucb.visits == visits  # the receiving island did not earn them
    assert proto.signals[1].best == 0.9 and proto.signals[1].g > g2
    assert all(m.migrant for m in proto.pop.on_island(1) if m.fitness >= 0.8)
    n1 = proto.pop.size(1)
    proto.migrate()  # identical code is never copied twice
    assert proto.pop.size(1) == n1


def test_islands_spawn_up_to_the_maximum_with_a_cooldown():
    proto = make(spawn_threshold=1.0, spawn_cooldown=4, max_islands=4, paradigm=False)
    spawned_at, islands = [], proto.n_islands
    for k in range(40):
        drive(proto, 1, seed=k)
        if proto.n_islands > islands:
            islands = proto.n_islands
            spawned_at.append(proto.ended - 1)  # the iteration after which it spawned
    assert proto.n_islands == 4 and len(spawned_at) == 2
    assert spawned_at[1] - spawned_at[0] >= 4  # the cooldown (none before the first)
    assert proto.island_names[:2] == ["balanced", "balanced"]
    assert set(proto.island_names[2:]) <= set(ISLAND_PRESETS) - {"balanced"}
    assert proto.weights[2] == ISLAND_PRESETS[proto.island_names[2]]
    assert proto.ucb.n_arms == 4 and len(proto.inflight) == 4
    # a spawned island is seeded with copies of the 5 best programs, its signals empty
    fresh = make(spawn_threshold=1.0, spawn_cooldown=0, max_islands=3, paradigm=False)
    fill(fresh, 0, [0.2, 0.9, 0.4, 0.7, 0.8, 0.6], start=10)
    drive(fresh, 1)
    assert fresh.n_islands == 3
    older = [m for i in (0, 1) for m in fresh.pop.on_island(i)]
    seeded = fresh.pop.on_island(2)
    assert len(seeded) == 5 and all(m.migrant for m in seeded)
    assert sorted(m.fitness for m in seeded) == sorted(m.fitness for m in older)[-5:]
    assert fresh.signals[2].evaluations == 0 and math.isinf(fresh.signals[2].best)
    assert fresh.ucb.visits[2] == 0


def test_island_choice_random_until_three_visits_then_decayed_ucb():
    proto = make(num_islands=3, max_islands=3, paradigm=False, migration_interval=1000)
    checked, seen = 0, set()
    for _ in range(60):
        state = proto.ucb
        pending = np.array(proto.inflight)
        under = [i for i in range(3) if state.visits[i] < 3]
        expect = None if under else int(np.argmax(state.indices(pending, proto.ended)))
        p = proto.ask()
        it = p.meta["iteration"]
        if it not in seen and p.purpose == "mutation":
            seen.add(it)
            if it == 0:
                assert p.meta["island"] == 0
            elif under:
                assert p.meta["island"] in range(3)
            else:
                assert p.meta["island"] == expect
                checked += 1
        child = 0.1 + 0.8 * np.random.default_rng(it).random()
        proto.tell(p, Child(100 + it, prog(round(child, 4), f"z = {it}\n    "), child, True))
    assert checked >= 30


def test_error_retries_are_counted_fix_calls_at_most_two_per_iteration():
    proto = make(paradigm=False)
    asked = drive(proto, 30, seed=3, junk_every=2) + drive(proto, 9, seed=3, junk_every=1)
    fixes = [p for p in asked if p.purpose == "fix"]
    assert fixes and all(p.meta["attempt"] in (1, 2) for p in fixes)
    assert all("could not be used" in p.messages[1]["content"] for p in fixes)
    by_iteration: dict[int, int] = {}
    for p in asked:
        by_iteration[p.meta["iteration"]] = by_iteration.get(p.meta["iteration"], 0) + 1
    assert max(by_iteration.values()) <= 3
    assert proto.failed_iterations >= 1  # three unusable replies end an iteration
    never = make(paradigm=False, error_retries=0)
    assert not [p for p in drive(never, 30, seed=3, junk_every=2) if p.purpose == "fix"]


def test_paradigm_calls_when_stalled_then_ideas_guide_code_calls_on_the_best():
    """A stalled search (every child worse than the initial) asks a counted paradigm call;
    each idea then guides ``paradigm_max_uses`` code calls, parented on the global best."""
    proto = make(initial=2.0, paradigm_window=3, paradigm_ideas=1)
    asked = drive(proto, 40, seed=4)
    para = [p for p in asked if p.purpose == "paradigm"]
    assert para and para[0].meta["attempt"] == 0
    assert "exactly 1 ideas" in para[0].messages[1]["content"]
    assert '{"ideas"' in para[0].messages[0]["content"]
    guided = [p for p in asked if p.purpose == "mutation" and p.meta["paradigm"]]
    assert guided and all("try a lattice" in p.messages[1]["content"] for p in guided)
    assert all(p.parent_id == 1 for p in guided)  # the global best: the initial program
    assert len(guided) <= 2 * len(para)  # 2 uses per idea
    assert proto.paradigms.tried  # spent ideas are remembered with their outcome
    later = para[-1].messages[1]["content"]
    assert len(para) < 2 or "FAILED:" in later


def test_unreadable_paradigm_replies_are_asked_again_then_the_iteration_goes_on():
    proto = make(initial=2.0, paradigm_window=3, paradigm_attempts=2)
    rng = np.random.default_rng(0)
    asked = []
    for k in range(30):
        p = proto.ask()
        asked.append(p)
        if p.is_text:  # every paradigm reply is unreadable
            proto.tell_text(p, fake_reply(p, rng, junk=True))
            continue
        code = prog(round(float(rng.random()), 4), f"w = {k}\n    ")
        proto.tell(p, Child(100 + k, code, value_of(code), True))
    para = [p for p in asked if p.purpose == "paradigm"]
    assert [p.meta["attempt"] for p in para[:2]] == [0, 1]
    after = asked[asked.index(para[1]) + 1]
    assert after.purpose == "mutation" and after.meta["iteration"] == para[1].meta["iteration"]
    assert not after.meta["paradigm"]
    assert proto.failed_paradigms >= 1 and not proto.paradigms.active


def test_all_calls_are_counted_and_accounting_closes_with_many_in_flight():
    proto = make(migration_interval=3, spawn_cooldown=5, spawn_threshold=0.5,
                 paradigm_window=4)
    asked = drive(proto, 150, seed=5, in_flight=8, junk_every=4)
    assert len(asked) == 150 == proto.n_asked == proto.n_told + len(
        [p for p in asked if p.is_text])
    purposes = {p.purpose for p in asked}
    assert purposes <= {"mutation", "fix", "paradigm"} and {"mutation", "fix"} <= purposes
    assert proto.outstanding == []
    open_iterations = proto.started - proto.ended  # each waits for its queued next call
    assert sum(proto.inflight) == open_iterations == proto.state_summary()["queued_followups"]
    assert proto.migrations >= 1
    assert json.loads(json.dumps(proto.state_summary()))["protocol"] == "adaevolve"


def test_sequential_runs_repeat_per_seed():
    def run(seed: int) -> list:
        proto = make(seed, migration_interval=4, paradigm_window=4)
        asked = drive(proto, 50, seed=6, junk_every=5)
        return [(p.purpose, p.meta.get("island"), p.messages) for p in asked]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_a_cancelled_call_is_asked_again_identically():
    proto = make()
    drive(proto, 5, seed=1)
    p = proto.ask()
    proto.cancel(p)
    q = proto.ask()
    assert (q.messages, q.parent_code, q.purpose, q.meta) == (
        p.messages, p.parent_code, p.purpose, p.meta)


def test_diff_mode_accepts_a_complete_program():
    proto = make()
    p = proto.ask()
    assert p.meta["format"] == "diff" and "<<<<<<< SEARCH" in p.messages[0]["content"]
    full = proto.parse_reply(p, f"```python\n{prog(0.7)}```")
    assert full.code is not None and value_of(full.code) == 0.7
    edit = proto.parse_reply(p, "<<<<<<< SEARCH\n    return 0.5\n=======\n    return 0.8\n"
                                ">>>>>>> REPLACE\n")
    assert value_of(edit.code) == 0.8
    assert make(mode="full").ask().meta["format"] == "full"


@pytest.mark.parametrize(("params", "msg"), [
    ({"intensity_min": 0.6}, "intensity_min"),
    ({"num_islands": 6}, "max_islands"),
    ({"mode": "patch"}, "mode"),
    ({"paradigm_attempts": 0}, "paradigm_attempts"),
])
def test_bad_parameters_are_refused(params, msg):
    with pytest.raises(ConfigError, match=msg):
        PROTOCOLS.get("adaevolve").parse_params(params)


def test_paradigm_replies_from_outside_are_data():
    """Hostile replies: nesting deep enough to break json, huge fields, control
    characters and lone surrogates, wrong shapes -- never an exception."""
    deep = "[" * 100_000 + "]" * 100_000
    assert parse_paradigms(deep, 3) == []
    assert parse_paradigms('{"ideas": "not a list"}', 3) == []
    assert parse_paradigms('{"ideas": [1, null, {"idea": ""}, {"x": 1}]}', 3) == []
    huge = json.dumps({"ideas": [{"idea": "a" * 50_000, "description": "\x1b[31m\ud800"}]})
    (idea,) = parse_paradigms(huge, 3)
    assert len(idea["idea"]) <= 800 and "\x1b" not in idea["description"]
    assert "\ud800" not in idea["description"]
    fenced = "Here:\n```json\n" + json.dumps([{"idea": f"i{k}"} for k in range(9)]) + "\n```"
    assert [i["idea"] for i in parse_paradigms(fenced, 3)] == ["i0", "i1", "i2"]
    assert parse_paradigms("<think>{}</think> no json", 3) == []


def test_paradigm_tracker_rotation_and_outcomes():
    t = ParadigmTracker(window=2, threshold=0.5, max_uses=2, max_tried=10)
    t.record(False, 0.5)
    assert not t.stagnating()  # window not full
    t.record(False, 0.5)
    assert t.stagnating()
    t.set_ideas([{"idea": "a"}, {"idea": "b"}], 0.5)
    assert not t.stagnating()
    order = []
    for _ in range(4):
        order.append(t.current_idea()["idea"])
        t.use()
    assert order == ["a", "b", "a", "b"] and not t.has_active()
    t.record(True, 0.7)
    t.set_ideas([{"idea": "c"}], 0.7)
    assert [x["outcome"] for x in t.tried] == ["SUCCESS", "SUCCESS"]
    assert t.tried_lines()[0].startswith("SUCCESS: approach - a (gain +0.2000)")
