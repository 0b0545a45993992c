"""CodeEvolve's exact SEARCH/REPLACE changes the first occurrence in its block only
(issue 35, item 3; prompts/exact_diff.py)."""

from __future__ import annotations

from basevolve.prompts.exact_diff import apply_exact_search_replace

TWICE = ("# EVOLVE-BLOCK-START\ndef f():\n    x = 0\n    x += 1\n    x += 1\n    return x\n"
         "# EVOLVE-BLOCK-END\n")


def test_only_the_first_occurrence_in_the_block_is_replaced():
    """Mutant: ``prompts/exact_diff.py`` applying an edit to every occurrence in its
    block (``body.replace(search, replace)`` without the count of 1)."""
    got = apply_exact_search_replace(
        TWICE, "<<<<<<< SEARCH\n    x += 1\n=======\n    x += 2\n>>>>>>> REPLACE\n")
    assert got.error is None and got.applied == 1
    assert got.code == TWICE.replace("x += 1", "x += 2", 1)
    assert got.code.count("x += 2") == 1 and got.code.count("x += 1") == 1
    # a second edit with the same SEARCH takes the occurrence the first one left
    both = apply_exact_search_replace(
        TWICE, "<<<<<<< SEARCH\nx += 1\n=======\nx += 2\n>>>>>>> REPLACE\n"
               "<<<<<<< SEARCH\nx += 1\n=======\nx += 3\n>>>>>>> REPLACE\n")
    assert both.code is not None and both.code.index("x += 2") < both.code.index("x += 3")
