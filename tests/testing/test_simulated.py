"""The simulated mutation LLM (issue 13): families score inside their ranges under the
real scorer (a sample through the real sandbox), anchoring matches its configured switch
rates, replies repeat per seed, and the server answers with real usage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from basevolve.prompts.openevolve import build_openevolve_messages
from basevolve.prompts.parse import extract_program
from basevolve.sandbox import SandboxPool
from basevolve.tasks import load_task
from basevolve.testing.sim import MODELS, SimulatedLLM, TokenRateLatency, simulated_server
from basevolve.testing.sim.mmd import attractor_fitness

FAMILIES = [(t, f.name) for t, m in MODELS.items() for f in m.families]
TOL = 1e-6


def prompt(task: str, code: str, fitness: float, seed: int) -> dict:
    t = load_task(task)
    msgs = build_openevolve_messages(
        system_message=t.system_message, current_program=code, fitness_score=fitness,
        language="python", improvement_areas="", artifacts="", evolution_history="")
    return {"messages": msgs, "seed": seed}


@pytest.mark.parametrize(("task", "name"), FAMILIES)
def test_family_scores_inside_its_range_under_the_real_scorer(task: str, name: str) -> None:
    model = MODELS[task]
    fam = model.family(name)
    t = load_task(task)
    rng = np.random.default_rng(7)
    for u in np.concatenate([[0.0, 1.0], rng.random(40)]):
        target = fam.fitness_at(float(u))
        code, value = fam.render(rng, target, True)
        res = t.score_value(value)
        assert res.valid == (fam.hi > 0), res.error
        assert fam.lo - TOL <= res.score <= fam.hi + TOL, (name, target, res.score)
        assert model.classify(code) == name  # the child's family is readable by the next call
        assert f"def {model.entry}(" in code
    code, value = fam.render(rng, fam.fitness_at(0.5), False)
    assert not t.score_value(value).valid  # an invalid output scores 0 under the scorer


@pytest.mark.parametrize(("task", "name"), FAMILIES)
def test_rendered_programs_return_what_the_simulator_predicted(pool: SandboxPool, task: str,
                                                               name: str) -> None:
    """A sample per family through the real sandbox: the program really computes the value."""
    model, t = MODELS[task], load_task(task)
    fam = model.family(name)
    rng = np.random.default_rng(11)
    for u in (0.1, 0.6, 1.0):
        code, value = fam.render(rng, fam.fitness_at(u), True)
        ev = t.evaluate(pool.run(code, t.entry, timeout_s=20))
        assert ev.score == pytest.approx(t.score_value(value).score, abs=1e-9), ev.error
        assert fam.lo - TOL <= ev.score <= fam.hi + TOL


def test_mmd_rings_top_is_the_5_plus_11_attractor() -> None:
    assert attractor_fitness() == pytest.approx(0.9603, abs=5e-5)  # paper: 0.9603
    fam = MODELS["min_max_distance"].family("rings")
    code, value = fam.render(np.random.default_rng(0), fam.hi, True)
    assert "math.sin(math.pi / 5)" in code
    assert load_task("min_max_distance").score_value(value).score == attractor_fitness()


@pytest.mark.parametrize(("task", "name"), FAMILIES)
def test_anchoring_switch_rate_matches_configuration(task: str, name: str) -> None:
    """1,000 seeded replies to a parent of family F: the share that leaves F is F.leave
    within 3.5 binomial standard errors, and destinations follow the configured odds."""
    sim = SimulatedLLM(task, capability=1.0)
    fam = sim.model.family(name)
    fit = fam.fitness_at(0.5)
    n = 1000
    decisions = [sim.decide(name, fit, np.random.default_rng(s)) for s in range(n)]
    switched = sum(d.switched for d in decisions)
    assert all(d.switched == (d.family != name) for d in decisions)
    se = math.sqrt(fam.leave * (1 - fam.leave) / n)
    assert abs(switched / n - fam.leave) <= 3.5 * se + 1e-12, (switched, fam.leave)
    probs = sim.switch_probabilities(name)
    assert sum(probs.values()) == pytest.approx(1.0)
    for g, p in probs.items():
        k = sum(d.family == g for d in decisions)
        assert abs(k / n - p) <= 3.5 * math.sqrt(p * (1 - p) / n) + 1e-12, (g, k, p)


def test_capability_scales_only_good_families() -> None:
    weak = SimulatedLLM("circle_packing", capability=0.5).switch_probabilities("hex_rows")
    strong = SimulatedLLM("circle_packing", capability=2.0).switch_probabilities("hex_rows")
    assert weak["hex_rows"] == strong["hex_rows"]  # anchoring itself is unchanged
    assert strong["slsqp"] > 2 * weak["slsqp"]
    assert strong["ring_feasible"] < weak["ring_feasible"]


@pytest.mark.parametrize("task", sorted(MODELS))
def test_reply_reads_parent_from_prompt_and_repeats_per_seed(task: str) -> None:
    sim = SimulatedLLM(task)
    t = load_task(task)
    body = prompt(task, t.initial_program, 0.1234, seed=5)
    assert sim.read_parent(body) == (sim.model.initial, 0.1234)
    a, b = sim(body, 0), sim(dict(body), 99)
    assert a == b  # same seed, same prompt: the same reply (the index is not used)
    fam = sim.model.families[1]  # a family whose children vary in their numbers
    parent, _ = fam.render(np.random.default_rng(0), fam.fitness_at(0.5), True)
    fit = round(fam.fitness_at(0.5), 4)
    texts = {sim(prompt(task, parent, fit, seed=s), 0) for s in range(20)}
    assert len(texts) > 10
    other = SimulatedLLM(task, capability=0.5)  # another model: its own stream per seed
    same = sum(other(prompt(task, parent, fit, seed=s), 0)
               == sim(prompt(task, parent, fit, seed=s), 0) for s in range(20))
    assert same < 10


@pytest.mark.parametrize("task", sorted(MODELS))
def test_broken_replies_score_zero(pool: SandboxPool, task: str) -> None:
    """Prose, a syntax error or a wrong entry name: the real parser + sandbox give 0."""
    sim = SimulatedLLM(task, broken_rate=0.999)
    t = load_task(task)
    kinds = set()
    for s in range(12):
        rng = np.random.default_rng(s)
        d = sim.decide(sim.model.initial, 0.0, rng)
        kinds.add(d.kind)
        parsed = extract_program(sim.render(d, rng).text, entry=t.entry)
        if d.kind == "prose":
            assert parsed.code is None
        if parsed.code is not None:
            ev = t.evaluate(pool.run(parsed.code, t.entry, timeout_s=20))
            assert not ev.valid and ev.score == 0.0, (d.kind, ev)
    assert kinds == {"prose", "syntax", "wrong_entry"}


def test_server_serves_programs_with_usage_and_token_latency() -> None:
    import json
    import urllib.request

    lat = TokenRateLatency(prefill_tps=1e6, decode_tps=1e5, slots=2)
    with simulated_server("min_max_distance", latency_model=lat).start() as srv:
        t = load_task("min_max_distance")
        body = prompt("min_max_distance", t.initial_program, 0.02, seed=3)
        req = urllib.request.Request(srv.base_url + "/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        out = json.loads(urllib.request.urlopen(req, timeout=10).read())
        again = json.loads(urllib.request.urlopen(req, timeout=10).read())
    text = out["choices"][0]["message"]["content"]
    assert text == SimulatedLLM("min_max_distance")(body, 0)
    u = out["usage"]
    assert u["prompt_tokens"] > 100 and u["completion_tokens"] > 10
    assert u["prompt_tokens_details"]["cached_tokens"] == 0
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == u["prompt_tokens"] - 1
    assert srv.n_requests == 2 and srv.requests == []  # nothing recorded by default
    assert lat.seconds(u) == pytest.approx(u["prompt_tokens"] / 1e6 + u["completion_tokens"] / 1e5)


@pytest.mark.parametrize(("argv", "needle"), [
    (["--task", "nope"], "unknown task 'nope'"),
    (["--task", "circle_packing", "--capability", "0"], "--capability"),
    (["--task", "circle_packing", "--latency", "soon"], "--latency"),
    (["--task", "circle_packing", "--latency", "tokens", "--slots", "0"], "--slots"),
])
def test_simulate_server_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                      argv: list[str], needle: str) -> None:
    from basevolve.cli import main

    assert main(["simulate-server", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_light_entry_point_is_the_same_command(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m basevolve.cli.simulate_cmd`` (used by the benchmark) parses like the CLI."""
    from basevolve.cli.simulate_cmd import main

    assert main(["--task", "nope"]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err
