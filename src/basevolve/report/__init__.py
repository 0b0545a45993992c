"""Reports: the paper's tables (Markdown + LaTeX) and figures (PNG + PDF) in one folder.

:func:`write_report` lays out::

    OUT/index.html        every table and figure on one page
    OUT/tables.md         all tables, Markdown
    OUT/tables.tex        all tables, LaTeX (booktabs)
    OUT/analysis.json     the full analysis (as ``basevolve analyze --json``)
    OUT/figures/NAME.png  (+ NAME.pdf unless ``pdf=False``)

Figures with nothing to draw (e.g. no children table) are skipped with a note in
``index.html`` and ``tables.md``.  Runs that declared objectives add the front tables and
figures (:mod:`.front_tables`, :mod:`.front_figures`; issue 36); other reports are
unchanged.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from basevolve.analysis.envelope import BUDGET_KEYS
from basevolve.analysis.pipeline import AnalysisResult, to_jsonable
from basevolve.analysis.tables import Tables
from basevolve.report import tables as tab
from basevolve.report.front_tables import FRONT_TABLES


@dataclass(frozen=True)
class TableSpec:
    """A named table of the report: caption and grid builder."""

    name: str
    caption: str
    build: Callable[[AnalysisResult], tab.Grid]


def _num_fmt(digits: int = 4) -> Callable[[object], str]:
    return lambda v: tab._num(v, digits)


def _of_result(name: str, caption: str, grid: Callable[[pd.DataFrame], tab.Grid]) -> TableSpec:
    """The report table ``name``: ``grid`` applied to the result table of the same name.

    Every report table shows exactly one result table; naming the key once keeps a
    table and the result it shows from drifting apart.
    """
    return TableSpec(name, caption, lambda r: grid(r[name]))


TABLES: tuple[TableSpec, ...] = (
    _of_result(
        "table1",
        "Table 1 layout: fitness (mean ± bootstrap SE) per method at the largest budget",
        tab.mean_se_grid,
    ),
    _of_result(
        "table6",
        "Table 6 layout: baseline vs BaSE allocators per protocol variant",
        tab.mean_se_grid,
    ),
    _of_result("table7", "Table 7 layout: BaSE fitness vs arm-pool size K", tab.mean_se_grid),
    _of_result(
        "thresholds",
        "Table 3 layout (largest budget): earliest step and cumulative FLOPs where ≥ 90% "
        "of bootstrap samples of the mean running best reach τ (--- = never)",
        tab.thresholds_grid,
    ),
    _of_result(
        "bilinear",
        "Tables 2/5/8: bilinear fit log(1-V) = β0 + a log T + b log N + c log T log N on "
        "sub-ceiling cells, nested-model R² and F-test p-values vs M1",
        tab.bilinear_grid,
    ),
    _of_result(
        "gate",
        "Table 4: capability gate (best-of-N, best over depths, penBoN, permutation p)",
        tab.gate_grid,
    ),
    _of_result(
        "envelope",
        "Fitness-compute envelope per budget (Section 4.1)",
        lambda df: tab.frame_grid(
            df,
            BUDGET_KEYS,
            {
                "v_max": _num_fmt(),
                "t_star": _num_fmt(0),
                "v_t1": _num_fmt(),
                "gap": _num_fmt(),
                "flops": _num_fmt(),
            },
        ),
    ),
    _of_result(
        "collapse",
        "Cross-model collapse: one pooled line V_max ~ log10 FLOPs per task",
        lambda df: tab.frame_grid(
            df,
            ["task"],
            {"models": str, "n_points": _num_fmt(0), "slope": _num_fmt(), "r2": _num_fmt()},
        ),
    ),
    _of_result(
        "optimal_depth",
        "Compute-optimal depth: empirical T*(C), fitted T*(C) on [1, C] (interior or a corner) "
        "and plateau half-width (log T units)",
        lambda df: tab.frame_grid(
            df,
            BUDGET_KEYS,
            {
                "t_star_emp": _num_fmt(0),
                "v_max": _num_fmt(),
                "t_star_fit": _num_fmt(2),
                "location": str,
                "half_width": _num_fmt(3),
            },
        ),
    ),
)


#: Report tables shown only when the analysis has their result table: ``models`` exists
#: only for runs with several models (issue 25), so single-model reports are unchanged.
OPTIONAL_TABLES: tuple[TableSpec, ...] = (
    _of_result(
        "models",
        "Per model, runs with several models (issue 25): calls, share of calls, tokens, "
        "effective FLOPs, USD (--- = unpriced), improvements, gain and gain per 1e15 FLOPs, "
        "summed over the runs of each configuration",
        lambda df: tab.frame_grid(
            df,
            ["task", "ensemble", "budget", "method", "model"],
            {
                "runs": _num_fmt(0),
                "calls": _num_fmt(0),
                "calls_share": _num_fmt(3),
                "prompt_tokens": _num_fmt(0),
                "cached_tokens": _num_fmt(0),
                "completion_tokens": _num_fmt(0),
                "flops": _num_fmt(),
                "cost_usd": _num_fmt(),
                "improvements": _num_fmt(0),
                "gain": _num_fmt(),
                "gain_per_1e15_flops": _num_fmt(),
            },
        ),
    ),
    # several objectives (issue 36): fronts, hypervolume, depth-breadth on hypervolume
    *(TableSpec(name, caption, build) for name, caption, build in FRONT_TABLES),
)


def _figure_block(name: str, caption: str, made: bool) -> str:
    if not made:
        return f"<figure><p><em>{html.escape(caption)} -- skipped: the input has no data for it.</em></p></figure>"
    return (
        f'<figure><img src="figures/{name}.png" alt="{html.escape(caption)}" style="max-width:100%">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def _md_to_html_table(md: str) -> str:
    lines = [ln for ln in md.strip().splitlines() if ln.startswith("|")]
    if not lines:
        return "<p><em>no rows for this input</em></p>"

    def cells(ln: str) -> list[str]:
        return [c.strip() for c in ln.strip().strip("|").split(" | ")]

    out = [
        "<table>",
        "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cells(lines[0])) + "</tr>",
    ]
    for ln in lines[2:]:
        row = []
        for c in cells(ln):
            bold = c.startswith("**") and c.endswith("**") and len(c) > 4
            text = html.escape(c[2:-2] if bold else c)
            row.append(f"<td><b>{text}</b></td>" if bold else f"<td>{text}</td>")
        out.append("<tr>" + "".join(row) + "</tr>")
    return "\n".join([*out, "</table>"])


def write_report(
    result: AnalysisResult,
    tables: Tables,
    out: str | Path,
    *,
    pdf: bool = True,
    dpi: int = 110,
    include_json: bool = True,
) -> Path:
    """Write the whole report into ``out`` (created) and return the ``index.html`` path.

    ``pdf=False`` / ``include_json=False`` keep small reports small (docs/example-report).
    """
    from basevolve.report.figures import FIGURES, close
    from basevolve.report.front_figures import FRONT_FIGURES, has_fronts

    root = Path(out)
    (root / "figures").mkdir(parents=True, exist_ok=True)
    md_parts, tex_parts, html_parts = ["# basevolve analysis report\n"], [], []
    for spec in (*TABLES, *(s for s in OPTIONAL_TABLES if s.name in result.tables)):
        grid = spec.build(result)
        md = tab.to_markdown(grid, spec.caption)
        md_parts.append(md)
        tex_parts.append(tab.to_latex(grid, spec.caption))
        html_parts.append(f"<h2>{html.escape(spec.caption)}</h2>\n{_md_to_html_table(md)}")
    fig_parts = []
    for spec in (*FIGURES, *(FRONT_FIGURES if has_fronts(result) else ())):
        fig = spec.build(result, tables)
        if fig is not None:
            fig.savefig(root / "figures" / f"{spec.name}.png", dpi=dpi)
            if pdf:
                fig.savefig(root / "figures" / f"{spec.name}.pdf")
            close(fig)
            md_parts.append(f"![{spec.caption}](figures/{spec.name}.png)\n\n*{spec.caption}*\n")
        else:
            md_parts.append(f"*{spec.caption} -- skipped: the input has no data for it.*\n")
        fig_parts.append(_figure_block(spec.name, spec.caption, fig is not None))
    (root / "tables.md").write_text("\n".join(md_parts), encoding="utf-8")
    (root / "tables.tex").write_text("\n".join(tex_parts), encoding="utf-8")
    if include_json:
        (root / "analysis.json").write_text(
            json.dumps(to_jsonable(result), allow_nan=False), encoding="utf-8"
        )
    style = (
        "body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;"
        "font-size:12px;margin-bottom:1em}td,th{border:1px solid #ccc;padding:2px 6px}"
        "figure{margin:1em 0}figcaption{font-size:13px;color:#333}"
    )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>basevolve report</title>"
        f"<style>{style}</style></head><body><h1>basevolve analysis report</h1>"
        "<p>Tables also in <a href='tables.md'>tables.md</a> and <a href='tables.tex'>tables.tex</a>"
        + ("; raw numbers in <a href='analysis.json'>analysis.json</a>" if include_json else "")
        + ".</p><h2>Figures</h2>"
        + "\n".join(fig_parts)
        + "\n"
        + "\n".join(html_parts)
        + "</body></html>"
    )
    index = root / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


__all__ = ["OPTIONAL_TABLES", "TABLES", "TableSpec", "write_report"]
