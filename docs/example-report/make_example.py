"""Regenerate this example report from synthetic data (ground truth in ``truth.md``).

    python docs/example-report/make_example.py

Synthetic study: 2 tasks x 2 models x budgets 8..64 x all depths x 5 seeds, plus
OpenEvolve-style and BaSE (UCB, Thompson; K = 5, 10) runs at C = 64.  PDFs and the JSON
dump are left out to keep the folder small; ``basevolve report`` writes them by default.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.analysis.synthetic import synthetic_study
from basevolve.report import write_report

HERE = Path(__file__).resolve().parent


def main() -> None:
    study = synthetic_study(np.random.default_rng(2026), budgets=(8, 16, 32, 64), seeds=5)
    tables = load_tables(
        input=study["runs"], trajectories=study["trajectories"], children=study["children"]
    )
    result = analyze(tables, AnalysisConfig(thresholds=(0.7, 0.8, 0.85)))
    write_report(result, tables, HERE, pdf=False, dpi=80, include_json=False)
    truth = study["truth"].drop(columns=["active_params"]).round(3)
    lines = [
        "# Ground truth of the synthetic example",
        "",
        "Eq. 2 coefficients the runs were drawn from (compare with the bilinear table in tables.md):",
        "",
        "| task | model | beta0 | a | b | c |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.task} | {r.model} | {r.beta0} | {r.a} | {r.b} | {r.c} |" for r in truth.itertuples()
    ]
    (HERE / "truth.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
