"""Island-protocol templates: the ones the paper prints are byte-for-byte its listings;
ours keep every placeholder filled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from basevolve.prompts import load_template
from basevolve.prompts.shinka import FULL_VARIANTS, format_instructions, judge_says_novel

PAPER = Path(__file__).resolve().parents[1] / "data/paper_prompts_appendix.tex"
VERBATIM = {
    "CodeEvolve: exploitation task template (no inspirations)": "codeevolve_exploit",
    "CodeEvolve: CP system block": "codeevolve_system_circle_packing",
    "CodeEvolve: MMD system block": "codeevolve_system_min_max_distance",
    "CodeEvolve: HT system block": "codeevolve_system_heilbronn_triangle",
    "ShinkaEvolve: full-rewrite format suffix": "shinka_full_default",
    "ShinkaEvolve: iteration message": "shinka_iteration",
    "ShinkaEvolve: CP system prompt": "shinka_system_circle_packing",
    "ShinkaEvolve: MMD system prompt": "shinka_system_min_max_distance",
    "ShinkaEvolve: HT system prompt": "shinka_system_heilbronn_triangle",
}


def listings() -> dict[str, str]:
    tex = PAPER.read_text(encoding="utf-8")
    pattern = r"\\begin\{tcblisting\}\{promptbox, title=(.*?)\}\n(.*?)\n\\end\{tcblisting\}"
    return dict(re.findall(pattern, tex, re.S))


@pytest.mark.parametrize("title", sorted(VERBATIM))
def test_template_is_the_paper_listing(title):
    assert load_template(VERBATIM[title]) == listings()[title]


def test_variants_keep_the_verbatim_format_suffix_after_their_first_line():
    default = format_instructions("full", "default", "python")
    assert default == load_template("shinka_full_default").replace("{language}", "python")
    tail = default.split("\n", 2)[1:]
    for v in FULL_VARIANTS[1:]:
        text = format_instructions("full", v, "python")
        assert text.endswith("\n".join(tail)) and text != default


@pytest.mark.parametrize("answer,novel", [
    ("NOVEL: a new algorithm", True), ("NOT NOVEL, same idea", False),
    ("The program is novel", False),  # only the start of the answer counts (issue 23)
    ("not novel", False), ("unsure", False),
])
def test_judge_verdict_is_the_answers_first_word(answer, novel):
    assert judge_says_novel(answer) is novel
