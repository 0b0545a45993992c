"""``report`` of runs with several objectives (issue 36, item 5).

The front tables and figures (fronts per objective pair, attainment surfaces across seeds,
hypervolume against calls and FLOPs) appear for multi-objective runs only; the attainment
surface is checked against one worked by hand; an objective name that is HTML, LaTeX and
mathtext at once stays text in every file.
"""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.analysis.pipeline import AnalysisConfig, analyze
from basevolve.analysis.tables import load_tables
from basevolve.report import write_report
from basevolve.report.front_figures import attainment_surface
from basevolve.testing.front_runs import Child, FrontRun, rename_objective, write_store

OBJS = {"acc": "max", "sec": "min"}
CFG = AnalysisConfig(resamples=20, shuffles=20, gate_shuffles=20, thresholds=(0.5,))
FRONT_FIGURES = {"front.png", "front_attainment.png", "hv_calls.png", "hv_flops.png"}


def _runs(seeds: int) -> list[FrontRun]:
    rng = np.random.default_rng(7)
    return [FrontRun(f"mo-T{t}-s{s}", {"acc": 0.2, "sec": 5.0},
                     [Child({"acc": float(rng.uniform(0.2, 0.9)),
                             "sec": float(rng.uniform(1, 6))}) for _ in range(4)],
                     objectives=OBJS, reference_point=(0.0, 10.0), depth=t, seed=s)
            for t in (1, 4) for s in range(seeds)]


def _report(path, out):
    result = analyze(load_tables(store=path), CFG)
    write_report(result, load_tables(store=path), out, pdf=False)
    return {p.name for p in (out / "figures").iterdir()}


def test_attainment_surfaces_by_hand():
    # run 1: (0.5, 2), (0.8, 3); run 2: (0.6, 1); acc max, sec min
    pts = np.array([[0.5, 2.0], [0.8, 3.0], [0.6, 1.0]])
    sets = np.array([1, 1, 2])
    one = attainment_surface(pts, sets, 50.0, (True, False))  # by at least one run
    assert sorted(map(tuple, one.tolist())) == [(0.6, 1.0), (0.8, 3.0)]
    both = attainment_surface(pts, sets, 100.0, (True, False))  # by both runs
    assert sorted(map(tuple, both.tolist())) == [(0.5, 2.0), (0.6, 3.0)]


def test_report_has_front_tables_and_figures(tmp_path):
    path = write_store(tmp_path / "s.sqlite", _runs(seeds=2))
    figures = _report(path, tmp_path / "rep")
    assert FRONT_FIGURES <= figures
    page = (tmp_path / "rep" / "index.html").read_text()
    for caption in ("Final Pareto front of each run", "Final hypervolume per configuration",
                    "Depth-breadth with hypervolume as the fitness"):
        assert caption in page
    one = write_store(tmp_path / "one.sqlite", _runs(seeds=1))  # one seed: no attainment
    figures = _report(one, tmp_path / "rep1")
    assert "front.png" in figures and "front_attainment.png" not in figures
    assert "Attainment surfaces across seeds" in (tmp_path / "rep1" / "index.html").read_text()


def test_a_single_objective_report_is_unchanged(tmp_path):
    runs = [FrontRun(f"one-T{t}-s{s}", {"score": 0.1},
                     [Child({"score": 0.3}, score=0.3)] * 4, depth=t, seed=s)
            for t in (1, 4) for s in (0, 1)]
    path = write_store(tmp_path / "s.sqlite", runs)
    figures = _report(path, tmp_path / "rep")
    assert not FRONT_FIGURES & figures
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "hypervolume" not in page.lower() and "Pareto" not in page


@pytest.mark.parametrize("evil", ["<img src=x onerror=alert(1)>", r"\input{/etc/passwd}$\frac{$x$"])
def test_a_hostile_objective_name_is_text_in_every_file(tmp_path, evil):
    path = write_store(tmp_path / "s.sqlite", _runs(seeds=2))
    rename_objective(path, "acc", evil)
    figures = _report(path, tmp_path / "rep")  # mathtext never parses the name
    assert FRONT_FIGURES <= figures
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<img src=x" not in page
    if evil.startswith("<"):  # the name is on the page, escaped
        assert "&lt;img src=x onerror=alert(1)&gt;" in page
    tex = (tmp_path / "rep" / "tables.tex").read_text()
    assert "\\input{" not in tex and "<img" not in tex.replace("\\textless{}img", "")
    assert evil.replace("|", "\\|") in (tmp_path / "rep" / "tables.md").read_text()
