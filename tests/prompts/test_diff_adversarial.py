"""The strict SEARCH/REPLACE applier and reply-format parsers on adversarial replies.

Every failure must come back as ``code=None`` with a reason naming what went wrong
(the engine turns it into a child with score 0 and that reason), never a silent no-op.
"""

from __future__ import annotations

import pytest

from basevolve.prompts import (
    apply_search_replace,
    evolve_block_text,
    parse_diff_reply,
    parse_edits,
    parse_tagged_reply,
    splice_evolve_blocks,
)

PROGRAM = """import numpy as np

# EVOLVE-BLOCK-START
def run():
    x = 1
    if x:
        y = 2
    return x + y
# EVOLVE-BLOCK-END

def main():
    x = 1
    return run()
"""


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def apply(reply: str, code: str = PROGRAM):
    return apply_search_replace(code, reply, require_in_evolve_block=True)


def test_missing_markers_and_malformed_blocks_give_reasons():
    assert "no SEARCH/REPLACE block" in apply("I would change x to 2.").error
    unclosed = "<<<<<<< SEARCH\n    x = 1\n=======\n    x = 2\n"
    assert "not closed" in apply(unclosed).error
    no_divider = "<<<<<<< SEARCH\n    x = 1\n>>>>>>> REPLACE\n"
    assert "divider" in apply(no_divider).error
    stray = "=======\n    x = 2\n>>>>>>> REPLACE\n"
    assert "without" in apply(stray).error


def test_search_text_absent_names_closest_line():
    res = apply(sr("    x = 100\n", "    x = 2\n"))
    assert res.code is None and res.applied == 0
    assert "SEARCH block 1 not found" in res.error and "closest program line: 'x = 1'" in res.error


def test_edit_outside_evolve_block_rejected_even_if_text_exists_only_there():
    res = apply(sr("def main():\n", "def main2():\n"))
    assert res.code is None and "outside the EVOLVE-BLOCK-START" in res.error
    # unconfined (OpenEvolve diff mode) the same edit applies
    assert apply_search_replace(PROGRAM, sr("def main():\n", "def main2():\n")).code


def test_first_occurrence_inside_block_wins_over_earlier_outside_text():
    code = "x = 1\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    res = apply(sr("x = 1\n", "x = 5\n"), code)
    assert res.code == "x = 1\n# EVOLVE-BLOCK-START\nx = 5\n# EVOLVE-BLOCK-END\n"


def test_marker_edits_and_programs_without_blocks_rejected():
    assert "marker" in apply(sr("# EVOLVE-BLOCK-END\n", "")).error
    assert "no EVOLVE-BLOCK-START" in apply(sr("x = 1\n", "x = 2\n"), "x = 1\n").error


def test_several_blocks_are_sequential_and_all_or_nothing():
    two = sr("    x = 1\n", "    x = 3\n") + "and then\n" + sr("    x = 3\n", "    x = 4\n")
    res = apply(two)
    assert res.applied == 2 and "    x = 4\n" in res.code and res.code.count("x = 1") == 1
    bad = sr("    x = 1\n", "    x = 3\n") + sr("    nope\n", "")
    res = apply(bad)
    assert res.code is None and res.applied == 0 and "SEARCH block 2 not found" in res.error


def test_crlf_reply_and_crlf_program():
    reply = sr("    x = 1\n", "    x = 9\n").replace("\n", "\r\n")
    res = apply(reply)
    assert res.code is not None and "    x = 9\n" in res.code and "\r" not in res.code
    crlf_prog = PROGRAM.replace("\n", "\r\n")
    res = apply(sr("    x = 1\n", "    x = 9\n"), crlf_prog)
    assert res.code == PROGRAM.replace("    x = 1\n    if", "    x = 9\n    if").replace("\n", "\r\n")


def test_tabs_in_search_match_spaces_in_program():
    res = apply(sr("\tx = 1\n\tif x:\n", "\tx = 7\n\tif x:\n"))
    assert res.code is not None and res.methods == ("tabs",)
    assert "\tx = 7" in res.code


def test_indentation_shifted_search_is_reindented():
    # SEARCH copied without the function's indentation
    res = apply(sr("if x:\n    y = 2\n", "if x:\n    y = 3\n    y += 1\n"))
    assert res.methods == ("indent",)
    assert "    if x:\n        y = 3\n        y += 1\n    return" in res.code


def test_trailing_whitespace_level():
    res = apply(sr("    x = 1   \n    if x:  \n", "    x = 2\n    if x:\n"))
    assert res.methods == ("rstrip",) and "    x = 2\n" in res.code


def test_empty_search_inserts_before_block_end_without_breaking_marker():
    res = apply(sr("", "def helper():\n    return 0\n"))
    assert res.methods == ("insert",)
    assert "    return x + y\ndef helper():\n    return 0\n# EVOLVE-BLOCK-END\n" in res.code
    assert res.code.count("# EVOLVE-BLOCK-END\n") == 1


def test_noop_edit_is_an_error():
    res = apply(sr("    x = 1\n", "    x = 1\n"))
    assert res.code is None and "unchanged" in res.error


def test_unclosed_fences_and_prose_around_code():
    reply = ("Sure! Here is my change.\n```diff\n" + sr("    x = 1\n", "    x = 2\n")
             + "\nThis should help.\n```python\n")  # a dangling fence at the end
    res = apply(reply)
    assert res.code is not None and "    x = 2\n" in res.code
    fenced_sides = "<<<<<<< SEARCH\n```python\n    x = 1\n```\n=======\n```\n    x = 2\n```\n>>>>>>> REPLACE"
    assert len(parse_edits(fenced_sides).edits) == 1
    assert apply(fenced_sides).code is not None


def test_diff_reply_parser_wraps_failures_as_child_reasons():
    ok = parse_diff_reply(PROGRAM, "<think>SEARCH nonsense</think>" + sr("    x = 1\n", "    x = 2\n"))
    assert ok.code is not None and ok.method == "diff:exact"
    bad = parse_diff_reply(PROGRAM, "no edits, sorry")
    assert bad.code is None and bad.error.startswith("diff not applied: no SEARCH/REPLACE")


FULL = """<NAME>
Better Run
</NAME>
<DESCRIPTION>Raise x.</DESCRIPTION>
<CODE>
```python
import numpy as np

# EVOLVE-BLOCK-START
def run():
    return 42
# EVOLVE-BLOCK-END

def main():
    return 0  # the model touched code outside the block
```
</CODE>"""


def test_tagged_full_rewrite_spliced_into_evolve_block():
    r = parse_tagged_reply(PROGRAM, FULL)
    assert r.name == "better_run" and r.description == "Raise x."
    code = r.parsed.code
    assert "    return 42\n" in code and "def main():\n    x = 1\n    return run()\n" in code
    assert "return 0" not in code  # outside code never changes


def test_tagged_reply_without_markers_spliced_and_missing_sections():
    bare = "<NAME>x</NAME><CODE>\n```python\ndef run():\n    return 5\n```\n</CODE>"
    r = parse_tagged_reply(PROGRAM, bare)
    assert r.parsed.code is not None and "def run():\n    return 5\n# EVOLVE-BLOCK-END" in r.parsed.code
    miss = parse_tagged_reply(PROGRAM, "```python\ndef run():\n    return 5\n```")
    assert miss.parsed.code is None and "no <CODE> section" in miss.parsed.error
    empty = parse_tagged_reply(PROGRAM, "<CODE>Nothing here</CODE>")
    assert empty.parsed.code is None and "no usable program" in empty.parsed.error
    diff = parse_tagged_reply(PROGRAM, "<NAME>a</NAME><DIFF>\n" + sr("    x = 1\n", "    x = 3\n")
                              + "</DIFF>", body="DIFF")
    assert diff.parsed.code is not None and "    x = 3\n" in diff.parsed.code
    cut = parse_tagged_reply(PROGRAM, "<DIFF>\n" + sr("    x = 1\n", "    x = 3\n"), body="DIFF")
    assert cut.parsed.code is not None  # unclosed last section runs to the end


def test_splice_rejects_changed_marker_count():
    two = "# EVOLVE-BLOCK-START\na = 1\n# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\nb = 1\n# EVOLVE-BLOCK-END\n"
    code, err = splice_evolve_blocks(PROGRAM, two)
    assert code is None and "2 EVOLVE-BLOCK region(s)" in err
    assert evolve_block_text(PROGRAM).startswith("def run():")


@pytest.mark.parametrize("reply", ["", "   ", "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"])
def test_degenerate_replies_never_raise(reply):
    res = apply(reply)
    assert res.code is None and res.error
