"""The end-of-run table ``basevolve run`` prints (and :class:`basevolve.RunResult` shows).

Why a module of its own: the run command's parser and flow stay small, and the table
grows with what a run reports -- evaluation cost (issue 15), truncated replies (issue 23),
lost calls (issue 24), models and spend (issue 25).  Every value from outside (model
ids, task names) goes through :func:`basevolve.terminal.clean`.
"""

from __future__ import annotations

import math
from typing import Any


def summary_table(s: dict[str, Any]) -> str:
    rows = [
        ("run", s["run_id"]), ("status", s.get("status")), ("task", s["task"]),
        ("model", s["model"]),
        _budget_row(s),
        ("allocator / arms", f"{s['allocator']} / {s['arms']}"),
        ("calls completed (lost)", f"{s['calls_completed']} ({s['calls_lost']})"),
        *([("replies cut at max_tokens", f"{s['calls_truncated']} of {s['calls_completed']} "
            "(finish_reason = length; raise --max-tokens)")] if s.get("calls_truncated") else []),
        _score_row(s),
        *_front_rows(s),
        ("valid children", "-" if s["valid_rate"] is None else f"{100 * s['valid_rate']:.1f}%"),
        *([("scored by (trust)", s["trust"])] if s.get("trust") else []),
        *([("evaluator feedback in prompts", s["feedback"])]
          if s.get("feedback", "none") != "none" else []),
        ("pulls per arm", " ".join(map(str, s["pulls_per_arm"]))),
        ("decisions with a choice", "-" if s.get("decisions_with_choice") is None
         else f"{100 * s['decisions_with_choice']:.1f}% of {s['bandit_decisions']}"),
        ("tokens prompt / cached / completion",
         f"{s['prompt_tokens']} / {s['cached_tokens']} / {s['completion_tokens']}"),
        ("effective FLOPs", f"{s['flops']:.4g}"),
        ("  of which unmeasured", f"{s.get('flops_unmeasured', 0.0):.4g}"),
        *([("  of which lost calls", f"{s.get('flops_lost', 0.0):.4g} ("
            f"{s.get('calls_lost_charged', 0)} of {s['calls_lost']} charged their worst case, "
            f"--charge-unanswered {s.get('charge_unanswered', 'worst')})")]
          if s.get("calls_lost") else []),
        *([("  attempts with impossible usage", str(s["usage_impossible"]))]
          if s.get("usage_impossible") else []),
        *_eval_rows(s),
        *_model_rows(s),
        ("best program", s.get("best_program") or "-"), ("picture", s.get("picture") or "-"),
        ("store", s["store"]),
    ]
    width = max(len(k) for k, _ in rows)
    from basevolve.terminal import clean  # model ids, task names: text from outside

    return "\n".join(f"{k:<{width}}  {clean(v)}" for k, v in rows)


def _front_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Several objectives (issue 36): the run's Pareto front and its hypervolume."""
    front = s.get("front")
    if not front:
        return []
    names = ", ".join(f"{n} {d}" for n, d in front["objectives"].items())
    point = ", ".join(score_text(v, 4) for v in front["reference_point"])
    return [("Pareto front", f"{front['size']} programs ({names})"),
            ("  hypervolume (reference point)",
             f"{score_text(front['hypervolume'])} ({point})")]


def score_text(value: float | None, digits: int = 6) -> str:
    """A score a person can read: ``digits`` decimals in the usual range, scientific
    notation outside it (issue 32: a forged 1e308 printed as 309 digits), ``-`` for none."""
    if value is None:
        return "-"
    if not math.isfinite(value) or (value != 0 and not 1e-4 <= abs(value) < 1e6):
        return f"{value:.{digits}g}"
    return f"{value:.{digits}f}"


def _score_row(s: dict[str, Any]) -> tuple[str, str]:
    """``start -> best`` (issue 37, item 3): the initial program's score beside the best,
    so a run that found nothing better says so.  Summaries stored before the start
    score was recorded show the best alone."""
    best, start = s["best_score"], s.get("start_score")
    if start is None or best is None:
        return ("best score", score_text(best))
    gain = best - start
    change = (f"+{score_text(gain)}" if gain > 0 and math.isfinite(gain)
              else "improved" if gain > 0 else "not improved")
    return ("start -> best score", f"{score_text(start)} -> {score_text(best)} ({change})")


def _eval_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Evaluation cost of a text task (issue 15): answering calls, their FLOPs/tokens."""
    if not s.get("eval_calls") and not s.get("eval_cache_hits"):
        return []
    charged = "charged" if s.get("count_eval_calls") else "not charged"
    return [("evaluation calls (cache hits)",
             f"{s['eval_calls']} ({s['eval_cache_hits']}), {charged} to the budget"),
            ("evaluation FLOPs / tokens", f"{s['eval_flops']:.4g} / {s['eval_tokens']}")]


def counted(n: int, noun: str) -> str:
    """``1 improvement``, ``2 improvements`` (issue 37, item 8: "1 improvements")."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _model_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """Calls, tokens, FLOPs, dollars and improvements per model (issue 25), and spend."""
    models = s.get("models") or []
    rows = []
    if len(models) > 1:
        how = s.get("model_allocator") or "fixed weights"
        rows.append(("models chosen by", how + (f" (reward {s['model_reward']})"
                                                 if s.get("model_reward") else "")))
        for m in models:
            usd = "" if m["cost_usd"] is None else f", ${m['cost_usd']:.4g}"
            tokens = m["prompt_tokens"] + m["completion_tokens"]
            rows.append((f"  {m['model']}", f"{counted(m['calls'], 'call')}, "
                         f"{counted(tokens, 'token')}, {m['flops']:.4g} FLOPs{usd}, "
                         f"{counted(m['improvements'], 'improvement')}"))
    if s.get("cost_usd") is not None:
        rows.append(("spend (USD)", f"{s['cost_usd']:.6g}"))
    return rows


def _budget_row(s: dict[str, Any]) -> tuple[str, str]:
    if s.get("budget_kind", "calls") == "calls":
        return ("budget C / depth T / breadth N", f"{s['budget']} / {s['depth']} / {s['breadth']}")
    unit = {"flops": "FLOPs", "usd": "USD"}.get(s["budget_kind"], "tokens")
    limit = s[f"budget_{s['budget_kind']}"]
    return (f"budget {unit} (spent) / breadth N",
            f"{limit:.4g} ({s['budget_spent']:.4g}) / {s['breadth']}")


__all__ = ["score_text", "summary_table"]
