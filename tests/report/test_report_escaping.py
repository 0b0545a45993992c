"""Text from outside in a report is text, not markup (issue 22, item 13).

A model id or task name is whatever a server or a user wrote.  tables.tex escaped only
``_ % & #``, so a model id ``\\input{/etc/passwd}`` reached the LaTeX file as a command
that includes a file when the paper is compiled.  These tests read the written files.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.analysis.synthetic import synthetic_study
from basevolve.report import write_report
from basevolve.report.tables import tex_escape

CFG = AnalysisConfig(resamples=20, shuffles=20, gate_shuffles=20, thresholds=(0.5,))
HOSTILE_MODEL = r"\input{/etc/passwd}$x^2$~#%&_|<>"
HOSTILE_TASK = "cp\\def\\x{1}\n\n\\end{tabular}"

#: What tex_escape may write: each escape sequence and the math symbols it typesets.
ESCAPES = (r"\textbackslash{}", r"\textasciicircum{}", r"\textasciitilde{}", r"\textbar{}",
           r"\textless{}", r"\textgreater{}", r"\{", r"\}", r"\$", r"\&", r"\%", r"\#",
           r"\_", r"$\pm$", r"$\tau$", r"$\beta$", r"$^2$", r"$\geq$", r"$\times$")
SPECIAL = set("\\{}$&%#_^~")


def _unescape(tex: str) -> str:
    """The text a reader of the typeset table sees (the inverse of tex_escape)."""
    back = {r"\textbackslash{}": "\\", r"\textasciicircum{}": "^", r"\textasciitilde{}": "~",
            r"\textbar{}": "|", r"\textless{}": "<", r"\textgreater{}": ">", r"$\pm$": "±",
            r"$\tau$": "τ", r"$\beta$": "β", r"$^2$": "²", r"$\geq$": "≥",
            r"$\times$": "×"}
    pattern = "|".join(re.escape(e) for e in sorted(ESCAPES, key=len, reverse=True))
    return re.sub(pattern, lambda m: back.get(m.group(), m.group()[1:]), tex)


def _bare_specials(tex: str) -> set[str]:
    """Special characters left once every allowed escape is removed (must be none)."""
    for e in sorted(ESCAPES, key=len, reverse=True):
        tex = tex.replace(e, "")
    return SPECIAL & set(tex)


@pytest.mark.parametrize("text", [
    HOSTILE_MODEL, HOSTILE_TASK, "\\", "{}", "a\\\\b", "\\textbackslash{}", "$\\pm$",
    "".join(map(chr, range(128))), "± τ β ² ≥ × plain",
])
def test_tex_escape_leaves_no_markup_and_keeps_the_text(text: str) -> None:
    out = tex_escape(text)
    assert _bare_specials(out) == set(), out
    assert "\n" not in out  # a blank line would end the tabular row
    visible = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in text)
    assert _unescape(out) == visible


def test_report_with_a_hostile_model_id_writes_it_as_text(tmp_path: Path) -> None:
    st = synthetic_study(np.random.default_rng(1), budgets=(8,), seeds=3)
    runs = st["runs"].copy()
    runs["model"] = runs["model"].map({"qwen3-8b": HOSTILE_MODEL, "qwen3-14b": "qwen3-14b"})
    runs["task"] = runs["task"].map({"circle_packing": HOSTILE_TASK,
                                     "min_max_distance": "min_max_distance"})
    tables = load_tables(input=runs)
    write_report(analyze(tables, CFG), tables, tmp_path, pdf=False)
    tex = (tmp_path / "tables.tex").read_text(encoding="utf-8")
    assert r"\input" not in tex and r"\def" not in tex
    assert r"\textbackslash{}input\{/etc/passwd\}\$x\textasciicircum{}2\$" in tex
    assert tex.count(r"\end{tabular}") == tex.count(r"\begin{tabular}") > 0
    # every line between \midrule and \bottomrule is one whole row
    for block in re.findall(r"\\midrule\n(.*?)\\bottomrule", tex, flags=re.S):
        for row in block.strip().splitlines():
            assert row.endswith(r" \\"), row
            for cell in row.removesuffix(r" \\").split(" & "):
                if cell.startswith(r"\textbf{"):  # the renderer's own markup: best mean
                    cell = cell.removeprefix(r"\textbf{").removesuffix("}")
                assert _bare_specials(cell) == set(), cell
    md = (tmp_path / "tables.md").read_text(encoding="utf-8")
    rows = [ln for ln in md.splitlines() if ln.startswith("| cp")]
    assert rows and all(ln.endswith(" |") for ln in rows)  # the task's line breaks are gone
