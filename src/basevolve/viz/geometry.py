"""PNG pictures of geometric solutions (issue 4, part 5).

* circle packing: the circles in the unit square;
* MinMaxDist: the points, the closest pair joined in red, the farthest pair dashed blue;
* Heilbronn: the points in the triangle with the smallest triangle shaded.

The title carries the score (or the reason the solution is invalid).  Figures are drawn
with matplotlib's object API on an Agg canvas, never through ``pyplot``, so no global
backend is switched and nothing needs a display.  Input is what the task parsed from
the value the entry function returned (its ``draw`` runs the scorer's trusted parsing
and raises :class:`~basevolve.errors.TaskError` for a value that cannot be parsed):
viz sits below tasks in the layers (issue 33) and reads only plain arrays.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Polygon

from basevolve.geometry import SQRT3

if TYPE_CHECKING:  # only annotated: viz sits below tasks (issue 33)
    from basevolve.tasks.base import ScoreResult

_SIZE_IN = 6.0
_DPI = 120


def _title(task: str, score: ScoreResult, detail: str) -> str:
    if score.valid:
        return f"{task}: fitness {score.score:.4f}\n{detail}"
    reason = textwrap.shorten(score.error or "invalid", width=150, placeholder=" ...")
    return f"{task}: INVALID (score 0)\n" + "\n".join(textwrap.wrap(reason, width=75))


def _new_figure() -> tuple[Figure, Any]:
    fig = Figure(figsize=(_SIZE_IN, _SIZE_IN), dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_aspect("equal")
    ax.grid(True, color="0.9", linewidth=0.6, zorder=0)
    return fig, ax


def _save(fig: Figure, path: str | Path | BinaryIO) -> None:
    """Write the PNG to a file path, or into a binary buffer (the dashboard serves
    pictures from memory and writes no file)."""
    fig.tight_layout()
    if not isinstance(path, str | Path):
        fig.savefig(path, format="png")
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")


def _label_points(ax: Any, pts: np.ndarray) -> None:
    """Index labels; points at the same place share one label ("0,1,2") instead of a smear."""
    groups: dict[tuple[float, float], list[int]] = {}
    for k, (x, y) in enumerate(pts.tolist()):
        groups.setdefault((x, y), []).append(k)
    for (x, y), ks in groups.items():
        text = ",".join(map(str, ks)) if len(ks) <= 6 else f"{ks[0]}..{ks[-1]} ({len(ks)} points)"
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)


def _dots(ax: Any, pts: np.ndarray, *, zorder: int) -> None:
    """Every point as a black dot (both point tasks draw them the same way)."""
    ax.scatter(pts[:, 0], pts[:, 1], s=40, color="black", zorder=zorder)


def _rings(ax: Any, pts: np.ndarray, idx: tuple[int, ...], *, color: str, zorder: int) -> None:
    """Hollow rings around the points that decide the score, visible even when tiny."""
    ax.scatter(
        pts[list(idx), 0],
        pts[list(idx), 1],
        s=160,
        facecolors="none",
        edgecolors=color,
        linewidths=1.8,
        zorder=zorder,
    )


def _join_pair(
    ax: Any, pts: np.ndarray, pair: tuple[int, int], what: str, fmt: str, **style: Any
) -> None:
    """A segment joining two points, labelled ``"<what> pair (i,j)"`` in the legend."""
    i, j = pair
    ax.plot(pts[[i, j], 0], pts[[i, j], 1], fmt, **style, label=f"{what} pair ({i},{j})")


def draw_circle_packing(centers: np.ndarray, radii: np.ndarray, path: str | Path | BinaryIO,
                        *, score: ScoreResult) -> None:
    """Circles in the unit square (parsed by the task), coloured by radius."""
    fig, ax = _new_figure()
    ax.add_patch(
        Polygon([(0, 0), (1, 0), (1, 1), (0, 1)], closed=True, fill=False, lw=1.5, color="black")
    )
    cmap = matplotlib.colormaps["viridis"]
    rmax = float(radii.max()) if radii.max() > 0 else 1.0
    for k, ((x, y), r) in enumerate(zip(centers, radii, strict=True)):
        r_draw = max(float(r), 0.0)
        ax.add_patch(
            Circle(
                (x, y),
                r_draw,
                facecolor=cmap(0.25 + 0.6 * r_draw / rmax),
                alpha=0.75,
                edgecolor="black",
                lw=0.8,
                zorder=2,
            )
        )
        if r_draw > 0.03:
            ax.text(x, y, str(k), ha="center", va="center", fontsize=7, zorder=3)
        else:
            ax.plot([x], [y], marker=".", color="black", ms=3, zorder=3)
    r_pos = np.maximum(radii, 0.0)[:, None]
    lo = np.minimum((centers - r_pos).min(axis=0), 0.0) - 0.02
    hi = np.maximum((centers + r_pos).max(axis=0), 1.0) + 0.02
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_title(
        _title("Circle packing, n=26", score, f"sum of radii {float(radii.sum()):.5f}"), fontsize=11
    )
    _save(fig, path)


def draw_min_max_distance(pts: np.ndarray, pairs: tuple[tuple[int, int], tuple[int, int]],
                          path: str | Path | BinaryIO, *, score: ScoreResult) -> None:
    """Points; closest pair solid red, farthest pair dashed blue (``pairs``: the task's
    (closest, farthest))."""
    closest, farthest = pairs
    fig, ax = _new_figure()
    _join_pair(ax, pts, farthest, "farthest", "--", color="tab:blue", lw=1.6, zorder=2)
    _join_pair(ax, pts, closest, "closest", "-", color="red", lw=2.4, zorder=3)
    _dots(ax, pts, zorder=4)
    # Rings make the closest pair visible even when it is tiny at this scale.
    _rings(ax, pts, closest, color="red", zorder=5)
    _label_points(ax, pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    pad = 0.08 * float(max(hi - lo)) or 1.0
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.legend(loc="best", fontsize=8)
    ratio = score.metrics.get("min_max_ratio", float("nan"))
    ax.set_title(_title("MinMaxDist, n=16", score, f"d_min/d_max = {ratio:.5f}"), fontsize=11)
    _save(fig, path)


def draw_heilbronn_triangle(pts: np.ndarray, smallest: tuple[float, tuple[int, int, int]],
                            path: str | Path | BinaryIO, *, score: ScoreResult) -> None:
    """Points in the triangle with the smallest triangle (the task's (area, triple))
    shaded."""
    area, triple = smallest
    fig, ax = _new_figure()
    ax.add_patch(
        Polygon(
            [(0, 0), (1, 0), (0.5, SQRT3 / 2)],
            closed=True,
            fill=False,
            lw=1.5,
            color="black",
            zorder=1,
        )
    )
    ax.add_patch(
        Polygon(
            pts[list(triple)],
            closed=True,
            facecolor="orange",
            alpha=0.6,
            edgecolor="darkorange",
            lw=2.5,
            zorder=2,
            label=f"smallest triangle {triple}",
        )
    )
    _dots(ax, pts, zorder=3)
    # Rings mark the smallest triangle's corners, which may be nearly collinear.
    _rings(ax, pts, triple, color="darkorange", zorder=4)
    _label_points(ax, pts)
    lo = np.minimum(pts.min(axis=0), [0.0, 0.0])
    hi = np.maximum(pts.max(axis=0), [1.0, SQRT3 / 2])
    ax.set_xlim(lo[0] - 0.04, hi[0] + 0.04)
    ax.set_ylim(lo[1] - 0.04, hi[1] + 0.04)
    ax.legend(loc="upper right", fontsize=8)
    norm = score.metrics.get("min_area_normalized", area / (SQRT3 / 4))
    ax.set_title(
        _title("Heilbronn triangle, n=11", score, f"min area / triangle area = {norm:.6f}"),
        fontsize=11,
    )
    _save(fig, path)
