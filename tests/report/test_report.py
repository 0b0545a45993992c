"""``basevolve report``: every figure and table file is written and non-trivial."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.analysis.synthetic import synthetic_study
from basevolve.report import TABLES, write_report
from basevolve.report.figures import FIGURES
from basevolve.report.tables import mean_se_grid, to_latex, to_markdown

CFG = AnalysisConfig(resamples=50, shuffles=50, gate_shuffles=50, thresholds=(0.5,))


def test_report_cli_writes_everything(tmp_path: Path) -> None:
    st = synthetic_study(np.random.default_rng(1), budgets=(8, 16), seeds=3)
    for key in ("runs", "trajectories", "children"):
        st[key].to_csv(tmp_path / f"{key}.csv", index=False)
    out = tmp_path / "rep"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "basevolve",
            "report",
            "--input",
            str(tmp_path / "runs.csv"),
            "--trajectories",
            str(tmp_path / "trajectories.csv"),
            "--children",
            str(tmp_path / "children.csv"),
            "--out",
            str(out),
            "--resamples",
            "50",
            "--shuffles",
            "50",
            "--gate-shuffles",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    # the synthetic trajectories carry no arm per step: no pulls-per-arm figure (a note)
    drawn = [s for s in FIGURES if s.name != "pulls_per_arm"]
    for spec in drawn:
        for ext in ("png", "pdf"):
            f = out / "figures" / f"{spec.name}.{ext}"
            assert f.stat().st_size > 5000, f
    html = (out / "index.html").read_text()
    assert all(f"figures/{s.name}.png" in html for s in drawn)
    assert not (out / "figures" / "pulls_per_arm.png").exists() and "skipped" in html
    md = (out / "tables.md").read_text()
    tex = (out / "tables.tex").read_text()
    assert md.count("**Table") >= 4 and tex.count(r"\begin{tabular}") == len(TABLES)
    assert "±" in md and r"$\pm$" in tex


def test_missing_children_skips_that_figure_with_a_note(tmp_path: Path) -> None:
    st = synthetic_study(np.random.default_rng(1), budgets=(8,), seeds=3)
    tables = load_tables(input=st["runs"])
    index = write_report(analyze(tables, CFG), tables, tmp_path, pdf=False)
    assert not (tmp_path / "figures" / "children_t1.png").exists()
    assert not (tmp_path / "figures" / "trajectories.png").exists()
    assert "skipped" in index.read_text()


def test_bold_marks_the_best_mean_in_markdown_and_latex() -> None:
    import pandas as pd

    lay = pd.DataFrame(
        {
            "row": ["m / t", "m / t"],
            "column": ["greedy", "ucb"],
            "mean": [0.5, 0.9],
            "se": [0.01, 0.02],
            "best": [False, True],
        }
    )
    grid = mean_se_grid(lay)
    assert "**0.9000 ± 0.0200**" in to_markdown(grid, "T")
    assert r"\textbf{0.9000 $\pm$ 0.0200}" in to_latex(grid, "T")
