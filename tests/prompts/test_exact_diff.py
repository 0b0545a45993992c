"""CodeEvolve's exact SEARCH/REPLACE rule (issue 23, item 4; prompts/exact_diff.py)."""

from __future__ import annotations

from basevolve.prompts.diff import apply_search_replace
from basevolve.prompts.exact_diff import apply_exact_search_replace

CODE = ("import math\n\n# EVOLVE-BLOCK-START\ndef f():\n    a = 1\n    b = 2\n    return a + b\n"
        "# EVOLVE-BLOCK-END\n\n# EVOLVE-BLOCK-START\ndef g():\n    return 3\n"
        "# EVOLVE-BLOCK-END\n")


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_stripped_substring_of_the_first_block_holding_it():
    got = apply_exact_search_replace(CODE, block("b = 2", "b = 5") + block("return 3", "return 4"))
    assert got.code == CODE.replace("b = 2", "b = 5").replace("return 3", "return 4")
    assert got.methods == ("exact", "exact") and got.applied == 2
    # surrounding blank lines and the first line's indentation are stripped away
    assert apply_exact_search_replace(CODE, block("\n   a = 1\n", "a = 7")).code == \
        CODE.replace("a = 1", "a = 7")


def test_no_relaxed_matching():
    for search in ("    a = 1  \n    b = 2", "\ta = 1\n\tb = 2", "        a = 1\n        b = 2"):
        edit = block(search, "    a = 0\n    b = 0")
        assert apply_search_replace(CODE, edit, require_in_evolve_block=True).code is not None
        got = apply_exact_search_replace(CODE, edit)
        assert got.code is None and "not found" in got.error and "exactly" in got.error


def test_each_search_is_looked_up_in_the_parent():
    # a SEARCH that only an earlier block of the same reply creates is not in the parent
    created = block("a = 1", "a = 10") + block("a = 10", "a = 11")
    assert apply_search_replace(CODE, created, require_in_evolve_block=True).code is not None
    got = apply_exact_search_replace(CODE, created)
    assert got.code is None and "block 2 not found" in got.error
    # one whose text an earlier block replaced changes nothing (CodeEvolve's replace)
    consumed = block("a = 1\n    b = 2", "a = 3\n    b = 4") + block("b = 2", "b = 9")
    assert apply_exact_search_replace(CODE, consumed).code == \
        CODE.replace("a = 1\n    b = 2", "a = 3\n    b = 4")


def test_what_is_refused():
    cases = {
        block("import math", "import os"): "outside the regions",
        block("", "x = 1"): "is empty",
        block("return 3", "return 3\n# EVOLVE-BLOCK-END"): "marker",
        block("return 3", "return 3"): "unchanged",
        "no blocks here": "no SEARCH/REPLACE block",
        "<<<<<<< SEARCH\nreturn 3\n": "divider",
    }
    for edit, why in cases.items():
        got = apply_exact_search_replace(CODE, edit)
        assert got.code is None and why in got.error, (edit, got.error)
    assert "no EVOLVE-BLOCK-START" in apply_exact_search_replace("x = 1\n", block("x", "y")).error
    # a text without markers edits its whole text when not confined (text artifacts)
    assert apply_exact_search_replace("Say {question}.\n", block("Say", "Answer"),
                                      confine=False).code == "Answer {question}.\n"
    crlf = CODE.replace("\n", "\r\n")
    assert apply_exact_search_replace(crlf, block("b = 2", "b = 5")).code == \
        crlf.replace("b = 2", "b = 5")
