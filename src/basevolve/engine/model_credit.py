"""What a model bandit's pull earned: the gain, credited once, per unit of cost (issue 34).

**The gain, credited once** (item 1).  The model bandit used to be told
``max(0, child score - the trajectory's best when the call was asked)``.  With calls in
flight that counts one rise of the best several times: two calls asked at 0.50 that
return 0.60 and 0.65 earned 0.10 + 0.15 = 0.25 while the best rose by 0.15, and a child
at 0.55 told after the best reached 0.65 still earned 0.05.  Here the model bandit uses
the trajectory allocator's rule (:mod:`basevolve.engine.credit`): a gain is credited once,
to the call whose child made the new best.  A call's gain is its child's score over the
trajectory's *mark*: the highest of the trajectory's best when the call was asked, its
best now, and every child told to the trajectory so far (:meth:`ModelCredit.seen`).  The
mark then rises to the child's score, so over a trajectory the gains add up to the rise
of its mark (0.10 + 0.05 = 0.15 above; the 0.55 earns 0).  The one difference from the
trajectory allocator's credit: a model's reward is told when its child is scored, so a
greedy generation's children are credited in the order they are told (0.60 then 0.65
earn 0.10 and 0.05, where the trajectory allocator, told when the generation closes,
credits the 0.15 to the 0.65's pull); the total is the same.

**Per unit of cost** (item 2).  ``--model-reward`` divides the gain by what the call
actually cost, normalised by a *reference call* so that rewards stay in ``[0, gain]``
(the bandits' confidence bounds assume a fixed reward range)::

    reward = gain * min(1, reference / cost)

* ``improvement_per_flop``: cost = the call's effective FLOPs (``calls.flops``: ``2 P
  (prompt - cached + completion)``, over all attempts); reference = ``2 P_min T_ref``;
* ``improvement_per_token``: cost = the call's tokens (prompt + completion, over all
  attempts, as ``--budget-tokens`` counts them); reference = ``T_ref``;
* ``improvement_per_usd``: cost = the call's dollars (``calls.cost_usd``); reference =
  ``T_ref`` completion tokens at the cheapest model's completion price (every model
  needs a price);

where ``P_min`` is the smallest model's active parameter count and ``T_ref`` the smallest
``max_tokens`` of the run's models: one full reply of the cheapest model.  A call at or
below the reference earns its whole gain, a call twice as costly half of it.  The old
``improvement_per_flop`` (gain times ``P_min / P_model``) was the same for a call of 300
tokens and one of 16,000; the old ``improvement_per_token`` (gain times ``prompt /
(prompt + completion)``) was no cost at all.  docs/models.md works an example of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from basevolve.llm.ensemble import MODEL_REWARDS


@dataclass(frozen=True, slots=True)
class CallCost:
    """What one call cost: effective FLOPs, tokens (prompt + completion), dollars."""

    flops: float = 0.0
    tokens: float = 0.0
    usd: float | None = None


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference call of a run (module docstring): what a reward's cost is
    measured against."""

    flops: float
    tokens: float
    usd: float | None

    @classmethod
    def of(cls, models: list[tuple[float, int, object]]) -> Reference:
        """From each model's (active parameters, max_tokens, price or None)."""
        t_ref = float(min(m[1] for m in models))
        p_min = min(m[0] for m in models)
        prices = [m[2] for m in models]
        usd = None if any(p is None for p in prices) else \
            min(t_ref * float(p.completion) / 1e6 for p in prices)  # type: ignore[attr-defined]
        return cls(2.0 * p_min * t_ref, t_ref, usd)


def cost_factor(mode: str, cost: CallCost | None, ref: Reference) -> float:
    """``min(1, reference / cost)`` for ``mode`` (1 for plain ``improvement``); a call
    of no cost (a free model) earns its whole gain."""
    if mode == "improvement":
        return 1.0
    if cost is None:
        return 0.0  # no reply was measured: no per-cost reward can be claimed
    spent, reference = {"improvement_per_flop": (cost.flops, ref.flops),
                        "improvement_per_token": (cost.tokens, ref.tokens),
                        "improvement_per_usd": (cost.usd, ref.usd)}[mode]
    if spent is None or reference is None or not math.isfinite(spent):
        return 0.0
    if spent <= reference:
        return 1.0
    return reference / spent


class ModelCredit:
    """The per-trajectory marks of one run's model bandit (module docstring)."""

    def __init__(self) -> None:
        self.mark: dict[int, float] = {}

    def seen(self, trajectory: int, score: float | None) -> None:
        """A child was told to ``trajectory`` (live, or replayed on resume)."""
        if score is not None and math.isfinite(score):
            self.mark[trajectory] = max(self.mark.get(trajectory, -math.inf), float(score))

    def gain(self, trajectory: int, score: float | None, *asked_and_now: float) -> float:
        """The gain a child of ``score`` credits: over the trajectory's mark and the
        bests given (when its call was asked, now); 0 for no usable child."""
        if score is None or not math.isfinite(score):
            return 0.0
        bar = max([self.mark.get(trajectory, -math.inf),
                   *(b for b in asked_and_now if math.isfinite(b))])
        return max(0.0, float(score) - bar) if math.isfinite(bar) else 0.0


__all__ = ["MODEL_REWARDS", "CallCost", "ModelCredit", "Reference", "cost_factor"]
