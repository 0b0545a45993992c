"""SEARCH/REPLACE application and EVOLVE-BLOCK helpers."""

from __future__ import annotations

from basevolve.prompts.diff import (
    apply_search_replace,
    evolve_blocks,
    outside_evolve_blocks,
    parse_search_replace,
    preserves_outside,
)

PROGRAM = """import numpy as np

# EVOLVE-BLOCK-START
def run():
    x = 1
    y = 2
    return x + y
# EVOLVE-BLOCK-END

def main():
    x = 1
    return run()
"""


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_apply_two_edits_first_occurrence():
    reply = "Change:\n" + sr("    x = 1\n", "    x = 10\n") + sr("    y = 2\n", "    y = 20\n")
    assert len(parse_search_replace(reply)) == 2
    res = apply_search_replace(PROGRAM, reply)
    assert res.error is None and res.applied == 2
    assert "    x = 10\n    y = 20\n" in res.code
    assert res.code.count("x = 10") == 1  # only the first occurrence (inside run)


def test_trailing_whitespace_tolerated_and_missing_search_rejected():
    res = apply_search_replace(PROGRAM, sr("    y = 2   \n", "    y = 3\n"))
    assert res.code is not None and "    y = 3\n    return x + y" in res.code
    bad = apply_search_replace(PROGRAM, sr("    z = 9\n", "    z = 0\n") + sr("    y = 2\n", ""))
    assert bad.code is None and bad.applied == 0 and "not found" in bad.error
    assert apply_search_replace(PROGRAM, "no edits here").error.startswith("no SEARCH")


def test_edit_outside_evolve_block_refused_when_required():
    reply = sr("def main():\n", "def main2():\n")
    assert apply_search_replace(PROGRAM, reply).code is not None
    res = apply_search_replace(PROGRAM, reply, require_in_evolve_block=True)
    assert res.code is None and "outside" in res.error


def test_evolve_block_spans_and_outside_check():
    ((s, e),) = evolve_blocks(PROGRAM)
    assert PROGRAM[s:e].startswith("def run():") and PROGRAM[s:e].endswith("return x + y\n")
    assert "def run" not in outside_evolve_blocks(PROGRAM)
    rewritten = PROGRAM.replace("    y = 2\n", "    y = 5  # better\n")
    assert preserves_outside(PROGRAM, rewritten)
    assert not preserves_outside(PROGRAM, rewritten.replace("def main", "def main_"))
    assert not preserves_outside(PROGRAM, rewritten.replace("# EVOLVE-BLOCK-END\n", ""))
