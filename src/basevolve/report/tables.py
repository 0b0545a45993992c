"""Markdown and LaTeX tables in the paper's layouts, from analysis result DataFrames.

Every table is first built as a grid of strings (a DataFrame whose index holds the
row labels) plus a same-shaped boolean "bold" mask, then rendered by one of the
:data:`RENDERERS` (``md``, ``tex``).  Cells are ``mean ± SE`` as in Tables 1, 6, 7;
the bold entry is the best mean of its block, like the paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

Grid = tuple[pd.DataFrame, pd.DataFrame]  # (strings, bold mask)


def _num(x: object, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "---"
    if isinstance(x, (bool,)):
        return "yes" if x else "no"
    if isinstance(x, (int,)) or (
        isinstance(x, float) and x.is_integer() and abs(x) < 1e6 and digits == 0
    ):
        return str(int(x))
    v = float(x)  # type: ignore[arg-type]
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:.{digits}f}"


def _p(x: object) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "---"
    v = float(x)  # type: ignore[arg-type]
    return "<1e-3" if v < 1e-3 else f"{v:.3f}"


def _signed(x: object) -> str:
    if x is None or not math.isfinite(float(x)):  # type: ignore[arg-type]
        return "---"
    return f"{float(x):+.4f}"  # type: ignore[arg-type]


def mean_se_grid(layout: pd.DataFrame) -> Grid:
    """Pivot a layout from :mod:`basevolve.analysis.grouped` into ``mean ± se`` cells."""
    if layout.empty:
        return pd.DataFrame(), pd.DataFrame()
    lay = layout.drop_duplicates(["row", "column"])
    text = lay.assign(
        cell=[f"{_num(m)} ± {_num(s)}" for m, s in zip(lay["mean"], lay["se"], strict=True)]
    )
    cols = list(dict.fromkeys(lay["column"]))
    rows = list(dict.fromkeys(lay["row"]))
    grid = (
        text.pivot(index="row", columns="column", values="cell")
        .reindex(index=rows, columns=cols)
        .fillna("---")
    )
    bold = text.pivot(index="row", columns="column", values="best").reindex(
        index=rows, columns=cols
    )
    return grid, bold.fillna(False).astype(bool)


def frame_grid(
    df: pd.DataFrame, index: list[str], formats: dict[str, Callable[[object], str]]
) -> Grid:
    """A plain table: ``index`` columns joined as the row label, others formatted."""
    if df.empty:
        return pd.DataFrame(), pd.DataFrame()
    labels = [" / ".join(str(v) for v in vals) for vals in df[index].itertuples(index=False)]
    body = {col: [fmt(v) for v in df[col]] for col, fmt in formats.items()}
    grid = pd.DataFrame(body, index=pd.Index(labels, name=" / ".join(index)))
    return grid, pd.DataFrame(False, index=grid.index, columns=grid.columns)


def bilinear_grid(bil: pd.DataFrame) -> Grid:
    """Tables 2/8 (coefficients, R^2, permutation p for c) with Table 5's nested R^2."""
    f = {k: _num for k in ("beta0", "a", "b", "c", "r2")}
    f.update(
        {
            "p_c": _p,
            "m0_r2": _num,
            "m2_r2": _num,
            "m3_r2": _num,
            "m4_r2": _num,
            "p_f_m2": _p,
            "p_f_m3": _p,
            "p_f_m4": _p,
            "n_cells": lambda v: _num(v, 0),
        }
    )
    return frame_grid(bil, ["task", "model"], f)


def gate_grid(gate: pd.DataFrame) -> Grid:
    """Table 4: V_{T=1}, V_max, penBoN and the permutation p per (model, task, C)."""
    return frame_grid(
        gate,
        ["model", "task", "budget"],
        {"v_t1": _num, "v_max": _num, "pen_bon": _signed, "p": _p},
    )


def thresholds_grid(thr: pd.DataFrame, budget: int | None = None) -> Grid:
    """Table 3: rows (model, task, C, tau), per method ``Gen.``, ``Call`` and ``FLOPs``.

    ``Gen.`` is the generation index at the hitting step (the paper's column; "n/a" when
    the input has no generation index), ``Call`` the call index next to it.  Like the
    paper, the minimum generation (the call index when there is none) and the minimum
    FLOPs of each row are bold, and only one budget is shown: ``budget`` or the largest.
    """
    if thr.empty:
        return pd.DataFrame(), pd.DataFrame()
    t = thr[thr["budget"] == (int(thr["budget"].max()) if budget is None else int(budget))].copy()
    t["row"] = (
        t["model"]
        + " / "
        + t["task"]
        + " / C="
        + t["budget"].astype(str)
        + " / τ="
        + t["tau"].map("{:g}".format)
    )
    gen_col = t["generation"] if "generation" in t else pd.Series(float("nan"), index=t.index)
    gens = pd.to_numeric(gen_col, errors="coerce")
    steps = pd.to_numeric(t["step"], errors="coerce")
    flops = pd.to_numeric(t["flops"], errors="coerce")
    reached = t["reached"].astype(bool)
    t["gen"] = [
        ("n/a" if pd.isna(g) else _num(g, 0)) if r else "---"
        for g, r in zip(gens, reached, strict=True)
    ]
    t["call"] = [_num(s, 0) if r else "---" for s, r in zip(steps, reached, strict=True)]
    t["fl"] = [_num(f) if r else "---" for f, r in zip(flops, reached, strict=True)]
    order = gens.where(gens.notna(), steps)
    t["bold_gen"] = order == order.groupby(t["row"]).transform("min")
    t["bold_fl"] = flops == flops.groupby(t["row"]).transform("min")
    rows = list(dict.fromkeys(t["row"]))
    methods = list(dict.fromkeys(t["method"]))

    def wide(col: str) -> pd.DataFrame:
        return t.pivot(index="row", columns="method", values=col).reindex(
            index=rows, columns=methods
        )

    kinds = ("Gen.", "Call", "FLOPs")
    grid = (
        pd.concat(dict(zip(kinds, (wide("gen"), wide("call"), wide("fl")), strict=True)), axis=1)
        .swaplevel(axis=1)[methods]
        .fillna("---")
    )
    grid.columns = [f"{m}: {k}" for m, k in grid.columns]
    bold = dict(zip(kinds, (wide("bold_gen"), wide("bold_gen"), wide("bold_fl")), strict=True))
    mask = pd.concat(bold, axis=1).swaplevel(axis=1)[methods].fillna(False).astype(bool)
    mask.columns = grid.columns
    return grid, mask


def _md_escape(s: str) -> str:
    """A Markdown table cell: ``|`` would split it, a line break would end the row."""
    return "".join(" " if ord(ch) < 32 or ord(ch) == 127 else ch for ch in s).replace("|", "\\|")


def to_markdown(grid: Grid, caption: str) -> str:
    text, bold = grid
    if text.empty:
        return f"**{caption}**\n\n(no rows for this input)\n"
    head = [text.index.name or "", *map(str, text.columns)]
    lines = [
        f"**{caption}**",
        "",
        "| " + " | ".join(map(_md_escape, head)) + " |",
        "|" + "---|" * len(head),
    ]
    for label, row in text.iterrows():
        cells = [
            f"**{v}**" if bold.loc[label, c] and v != "---" else str(v) for c, v in row.items()
        ]
        lines.append("| " + " | ".join(map(_md_escape, [str(label), *cells])) + " |")
    return "\n".join(lines) + "\n"


#: LaTeX's special characters, each written as text (issue 22, item 13).  Why all of
#: them: table cells hold model ids, task names and other text from outside; with only
#: ``_ % & #`` escaped, a model id ``\input{/etc/passwd}`` reached tables.tex as a command.
#: ``str.translate`` maps each character once, so the backslashes written here are never
#: escaped again.  The last entries typeset the symbols the tables use.
_TEX = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\{",
        "}": r"\}",
        "$": r"\$",
        "&": r"\&",
        "%": r"\%",
        "#": r"\#",
        "_": r"\_",
        "^": r"\textasciicircum{}",
        "~": r"\textasciitilde{}",
        "|": r"\textbar{}",
        "<": r"\textless{}",
        ">": r"\textgreater{}",
        "±": r"$\pm$",
        "τ": r"$\tau$",
        "β": r"$\beta$",
        "²": r"$^2$",
        "≥": r"$\geq$",
        "×": r"$\times$",
        # a line break or other control character would end the row or the cell
        **{chr(c): " " for c in (*range(32), 127)},
    }
)


def tex_escape(text: str) -> str:
    """``text`` as literal LaTeX text: no character of it is read as markup."""
    return text.translate(_TEX)


def to_latex(grid: Grid, caption: str) -> str:
    text, bold = grid
    if text.empty:
        return f"% {caption}: no rows for this input\n"
    cols = "l" + "c" * len(text.columns)
    head = " & ".join(map(tex_escape, [text.index.name or "", *map(str, text.columns)]))
    lines = [
        r"\begin{table}[t]",
        r"\centering\small",
        f"\\caption{{{tex_escape(caption)}}}",
        f"\\begin{{tabular}}{{{cols}}}",
        r"\toprule",
        head + r" \\",
        r"\midrule",
    ]
    for label, row in text.iterrows():
        cells = [
            f"\\textbf{{{tex_escape(str(v))}}}"
            if bold.loc[label, c] and v != "---"
            else tex_escape(str(v))
            for c, v in row.items()
        ]
        lines.append(" & ".join([tex_escape(str(label)), *cells]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


#: Output formats: name -> (file suffix, renderer).
RENDERERS: dict[str, tuple[str, Callable[[Grid, str], str]]] = {
    "md": (".md", to_markdown),
    "tex": (".tex", to_latex),
}

__all__ = [
    "RENDERERS",
    "bilinear_grid",
    "frame_grid",
    "gate_grid",
    "mean_se_grid",
    "tex_escape",
    "thresholds_grid",
    "to_latex",
    "to_markdown",
]
