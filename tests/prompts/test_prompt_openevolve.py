"""OpenEvolve user-message template (paper, Appendix "Prompts"): verbatim + filled."""

from __future__ import annotations

from pathlib import Path

import pytest

from basevolve.errors import ConfigError
from basevolve.prompts import (
    HistoryEntry,
    build_openevolve_messages,
    fill,
    format_artifacts,
    format_evolution_history,
    load_template,
    placeholders,
)

# Typed in from the paper's appendix listing "OpenEvolve: user-message template".
PAPER_LINES = """\
# Current Program Information
- Fitness: {fitness_score}
- Feature coordinates: {feature_coords}
- Focus areas: {improvement_areas}

{artifacts}

# Program Evolution History
{evolution_history}

# Current Program
```{language}
{current_program}
```

# Task
Rewrite the program to improve its FITNESS SCORE.
The system maintains diversity across these dimensions: {feature_dimensions}
Different solutions with similar fitness but different features are valuable.
Provide the complete new program code.

IMPORTANT: Make sure your rewritten program maintains the same inputs and
outputs as the original program, but with improved internal implementation.

```{language}
# Your rewritten program here
```"""

STATIC_LINES = [ln for ln in PAPER_LINES.splitlines() if ln and "{" not in ln]

CODE = 'def f():\n    d = {"a": 1}\n    return f"{d}"\n'


def test_template_file_is_the_paper_text():
    assert load_template("openevolve_user") == PAPER_LINES
    assert placeholders(PAPER_LINES) == [
        "fitness_score", "feature_coords", "improvement_areas", "artifacts",
        "evolution_history", "language", "current_program", "feature_dimensions",
    ]  # fmt: skip


# The paper's "Prompts" appendix, copied verbatim from its LaTeX source into the repository.
PAPER = Path(__file__).resolve().parents[1] / "data/paper_prompts_appendix.tex"


def test_template_matches_the_paper_source():
    tex = PAPER.read_text(encoding="utf-8")
    listing = tex.split("title=OpenEvolve: user-message template}\n", 1)[1]
    listing = listing.split("\\end{tcblisting}", 1)[0].rstrip("\n")
    assert load_template("openevolve_user") == listing


def test_rendered_message_keeps_every_verbatim_line():
    msgs = build_openevolve_messages(
        system_message="SYS", current_program=CODE, fitness_score=0.364212,
        feature_coords="none", improvement_areas="focus", artifacts="",
        evolution_history="HIST", feature_dimensions="dims",
    )  # fmt: skip
    assert [m["role"] for m in msgs] == ["system", "user"] and msgs[0]["content"] == "SYS"
    user = msgs[1]["content"]
    lines = user.splitlines()
    for ln in STATIC_LINES:
        assert ln in lines, ln
    assert "- Fitness: 0.3642" in lines
    assert "The system maintains diversity across these dimensions: dims" in lines
    assert "```python\n" + CODE + "```" in user  # code braces untouched, not re-filled
    assert "{" not in user.replace(CODE, "")


def test_fill_rejects_missing_or_extra_fields():
    with pytest.raises(ConfigError, match="missing"):
        fill("a {x} {y}", {"x": "1"})
    with pytest.raises(ConfigError, match="unexpected"):
        fill("a {x}", {"x": "1", "z": "2"})
    assert fill("{x}{y}", {"x": "{y}", "y": "2"}) == "{y}2"  # one pass, no re-expansion


def test_unknown_template_is_a_clear_error():
    with pytest.raises(ConfigError, match="openevolve_user"):
        load_template("nope")


def test_history_and_artifacts_blocks():
    top = [HistoryEntry("x = 1", 0.9, label="generation 2")]
    div = [HistoryEntry("x = 2", 0.0, valid=False, error="SyntaxError")]
    text = format_evolution_history(top, div)
    assert "### Program 1 (Fitness: 0.9000, generation 2)\n```python\nx = 1\n```" in text
    assert "### Diverse Program 1 (Fitness: 0.0000 (invalid))\nError: SyntaxError" in text
    assert format_evolution_history([], []) == "No previous programs yet."
    assert format_artifacts(None) == ""
    art = format_artifacts("Traceback\n" + "x" * 5000)
    assert art.startswith("## Last Execution Output") and "characters omitted" in art
    assert len(art) < 2000
