"""The generic ``evolve-block`` test-server reply against every protocol's real parser.

Each protocol is driven ask -> reply -> parse_reply -> tell (no engine, no LLM) on a
function task with an EVOLVE block; every code reply must parse into the parent with
exactly its EVOLVE block replaced by a candidate, every text reply must be used as the
protocol intends (judge verdicts, meta-prompt edits applied), and all the formats each
protocol asks for must come up.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from basevolve.prompts import evolve_blocks, outside_evolve_blocks
from basevolve.prompts.shinka import judge_says_novel
from basevolve.protocols import PROTOCOLS
from basevolve.protocols.base import Child
from basevolve.tasks import load_task
from basevolve.testing.evolve_block import EvolveBlockReplies, parent_program

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CANDIDATES = [
    "def sort_values(values):\n    return np.sort(values)\n",
    "def sort_values(values):\n    return sorted(values.tolist())\n",
    "def sort_values(values):\n    out = list(values)\n    out.sort()\n    return out\n",
]
SCORE = {0: 0.8, 1: 0.7, 2: 0.6}

CONFIGS = {  # protocol, params, the (purpose, format) pairs that must come up
    "greedy": ("greedy", {}, {("mutation", "full")}),
    "openevolve-full": ("openevolve", {"num_islands": 2, "migration_interval": 2},
                        {("mutation", "full")}),
    "openevolve-diff": ("openevolve", {"num_islands": 2, "mode": "diff"},
                        {("mutation", "diff")}),
    "codeevolve": ("codeevolve", {"num_islands": 2, "init_pop": 2, "exploration_rate": 0.5,
                                  "num_inspirations": 1},
                   {("mutation", "diff"), ("meta_prompt", None)}),
    "shinkaevolve": ("shinkaevolve", {"p_diff": 0.4, "p_full": 0.3, "p_cross": 0.3,
                                      "novelty": "judge", "novelty_threshold": 0.5},
                     {("mutation", "tagged_diff"), ("mutation", "tagged_code"),
                      ("fix", "tagged_diff"), ("judge", None)}),
}


@pytest.fixture(scope="module")
def task():
    return load_task(EXAMPLES / "speed_sort.py")


def block_of(code: str) -> str:
    s, e = evolve_blocks(code)[0]
    return code[s:e]


def drive(task, protocol: str, params: dict, replies: EvolveBlockReplies, asks: int = 60):
    """Ask/tell ``asks`` times; returns the (purpose, format) pairs seen and the protocol."""
    proto = PROTOCOLS.get(protocol)(task=task, rng=np.random.default_rng(5), **params)
    proto.set_initial(Child(1, task.initial_program, 0.2, True, None))
    seen, outside = set(), outside_evolve_blocks(task.initial_program)
    for i in range(asks):
        p = proto.ask()
        reply = replies({"messages": p.messages, "seed": 1000 + i}, i)
        if p.purpose == "judge":  # a gate (issue 23): its verdict releases the proposal
            seen.add((p.purpose, None))
            assert reply.split("\n")[0] in ("NOVEL", "NOT NOVEL")
            verdict = proto.parse_reply(p, reply)
            assert (verdict.code is not None) == reply.startswith("NOVEL")
            new = block_of(verdict.code) if verdict.code is not None else None
            proto.tell(p, Child(100 + i, verdict.code, SCORE[CANDIDATES.index(new)] if new
                                else 0.0, new is not None, verdict.error))
            continue
        if p.is_text:
            seen.add((p.purpose, None))
            if p.purpose == "judge":
                assert reply.split("\n")[0] in ("NOVEL", "NOT NOVEL")
                assert judge_says_novel(reply) == reply.startswith("NOVEL")
            proto.tell_text(p, reply)
            continue
        seen.add((p.purpose, p.meta.get("format", "full")))
        proto.observe_reply(p, reply)
        parsed = proto.parse_reply(p, reply)
        held = (parsed.error or "").startswith("novelty judge: ")  # the judge decides first
        if reply.startswith("I am not sure") or held:  # junk: the parser refuses it
            assert parsed.code is None
            proto.tell(p, Child(100 + i, None, 0.0, False, parsed.error))
            continue
        assert parsed.code is not None, (p.meta, parsed.error, reply)
        # only the EVOLVE block changed, to a candidate other than the parent's
        assert outside_evolve_blocks(parsed.code) == outside
        new = block_of(parsed.code)
        assert new in CANDIDATES and new != block_of(p.parent_code)
        proto.tell(p, Child(100 + i, parsed.code, SCORE[CANDIDATES.index(new)], True, None))
    return seen, proto


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_protocol_parses_every_reply(task, name):
    protocol, params, wanted = CONFIGS[name]
    replies = EvolveBlockReplies(CANDIDATES, junk_every=4 if protocol == "shinkaevolve" else 0)
    seen, proto = drive(task, protocol, params, replies)
    assert wanted <= seen, f"{name}: {sorted(seen, key=str)}"
    assert proto.best.score == max(SCORE.values())  # the best candidate was found


def test_meta_prompt_edits_are_applied(task):
    """CodeEvolve applies the PROMPT-BLOCK edit: the code call after it says so."""
    proto = PROTOCOLS.get("codeevolve")(task=task, rng=np.random.default_rng(1), num_islands=1)
    proto.set_initial(Child(1, task.initial_program, 0.2, True, None))
    meta = proto.ask()
    assert meta.purpose == "meta_prompt"  # the initial population's first job
    reply = EvolveBlockReplies(CANDIDATES)({"messages": meta.messages, "seed": 3}, 0)
    assert reply.startswith("<<<<<<< SEARCH\nYou are an expert in writing fast Python code.\n")
    proto.tell_text(meta, reply)
    follow = proto.ask()
    assert follow.meta["meta_prompt_applied"] is True
    assert "You are an expert in writing fast Python code. Think step by step." in \
        follow.messages[0]["content"]


def test_choice_is_a_function_of_the_seed_and_never_a_no_op(task):
    replies = EvolveBlockReplies(CANDIDATES)
    body = {"messages": [{"role": "system", "content": "s"},
                         {"role": "user", "content": f"```python\n{task.initial_program}```"}]}
    again = [replies({**body, "seed": s}, 0) for s in range(20)]
    assert again == [replies({**body, "seed": s}, 9) for s in range(20)]  # seed, not index
    assert {block_of(parent_program([r])[1]) for r in again} == set(CANDIDATES)
    # a parent already holding the hashed candidate gets another one
    for s in range(20):
        chosen = block_of(parent_program([again[s]])[1])
        nxt = replies({**body, "seed": s, "messages": [
            body["messages"][0], {"role": "user", "content": again[s]}]}, 0)
        assert block_of(parent_program([nxt])[1]) != chosen


def test_without_candidates_a_marker_comment_that_does_not_pile_up(task):
    replies = EvolveBlockReplies()
    code = task.initial_program
    for s in range(5):
        reply = replies({"messages": [{"role": "user", "content": f"```python\n{code}```"}],
                         "seed": s}, 0)
        code = parent_program([reply])[1]
        compile(code, "child", "exec")
    body = block_of(code)
    assert body.count("# evolve-block reply") == 1
    assert body.split("# evolve-block reply")[0] == block_of(task.initial_program)


def test_parent_is_the_last_evolve_program_but_never_the_crossover_inspiration():
    a = "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    b = "# EVOLVE-BLOCK-START\nx = 2\n# EVOLVE-BLOCK-END\n"
    users = [f"```python\n{a}```\n# Current program\n```python\n{b}```\n"
             f"# Crossover Inspiration\n```python\n{a}```\n",
             "```python\n# Your rewritten program here\n```"]
    assert parent_program(users) == ("python", b)
    assert parent_program(["no code"]) is None


def test_odd_request_bodies_get_a_reply_not_an_exception(task):
    replies = EvolveBlockReplies(CANDIDATES)
    program = f"```python\n{task.initial_program}```"
    parts = {"messages": ["junk", {"role": "user", "content": [{"type": "text", "text": program}]}]}
    assert block_of(parent_program([replies(parts, 0)])[1]) in CANDIDATES  # no seed: the index
    for body in ({}, {"messages": None}, {"messages": [{"role": "user", "content": 7}]}):
        assert replies(body, 1) == "The prompt shows no program with an EVOLVE-BLOCK to change."


def test_candidates_file_and_bad_input(tmp_path):
    good = tmp_path / "c.json"
    good.write_text(json.dumps(CANDIDATES))
    assert EvolveBlockReplies.from_file(good).candidates == tuple(CANDIDATES)
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="must hold a JSON list of strings"):
        EvolveBlockReplies.from_file(bad)
    with pytest.raises(ValueError, match="could not be read as JSON"):
        EvolveBlockReplies.from_file(tmp_path / "missing.json")
    with pytest.raises(TypeError):
        EvolveBlockReplies("def f(): pass")
    with pytest.raises(ValueError, match="junk_every"):
        EvolveBlockReplies(junk_every=-1)


def test_registered_with_the_server_process(tmp_path, monkeypatch):
    """``--reply-function evolve-block`` with candidates from BASEVOLVE_TEST_CANDIDATES."""
    import urllib.request

    from basevolve.testing.process import server_process

    path = tmp_path / "c.json"
    path.write_text(json.dumps(CANDIDATES[:1]))
    monkeypatch.setenv("BASEVOLVE_TEST_CANDIDATES", str(path))
    prog = "import numpy as np\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    with server_process("--reply-function", "evolve-block", latency=0.0) as url:
        req = urllib.request.Request(f"{url}/chat/completions", data=json.dumps({
            "model": "test-model", "seed": 1,
            "messages": [{"role": "user", "content": f"```python\n{prog}```"}]}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = json.loads(resp.read())["choices"][0]["message"]["content"]
    assert block_of(parent_program([text])[1]) == CANDIDATES[0]
