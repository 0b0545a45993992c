"""The :class:`Allocator` base class: which trajectory gets the next LLM call (BaSE).

Paper, Section 5, Algorithm 2 (BaSE): K trajectories are each initialised with one LLM
call (those K calls count towards the budget C); the remaining C - K calls are handed out
one at a time by a multi-armed bandit whose arms are the trajectories and whose reward
for a pull is the pulled trajectory's best fitness after the pull ("historical fitness
scores").

Design (docs/design.md, style rule 1 -- nevergrad's template method): the public
``ask/tell/cancel`` here validate their inputs and keep all bookkeeping (per-arm pulls,
pending pulls, reward statistics, the audit log ``events``); a policy subclass only
implements ``_ask`` (choose an arm among the eligible ones) and ``_tell`` (learn from a
reward), and optionally ``_cancel`` / ``_summary``.

Concurrency: the engine may ``ask`` again before earlier pulls are told (up to
``max_in_flight`` calls outstanding).  ``pending[i]`` counts asked-but-not-told pulls of
arm i; each policy documents how it treats them (UCB/Thompson: provisional observations at
the arm's current estimate; EXP3.P: importance weighting with the probability recorded at
ask time, see ``prob`` in :class:`AllocEvent`).  Every ask/assign opens a *ticket* that
holds what the policy needs at the tell (the choice probability, whether it was sampled).
A caller whose pulls can return in any order names each pull (``ticket=`` on ask/assign,
the same id on tell/cancel; the engine uses the pull id), so a reward is always weighted
by the probability of the ask that made *that* pull (issue 23, item 3: popping the arm's
oldest ticket weighted an out-of-order reward by another ask's probability).  Without a
``ticket`` a tell or cancel takes the arm's oldest pending pull (FIFO), which is right
for a caller that tells each arm in ask order (sequential runs, the offline replay).

Determinism: every random decision draws from the explicit ``rng``; the same seed and the
same sequence of ``ask``/``assign``/``tell``/``cancel`` calls (incl. eligible masks) gives
the same decisions, so a resumed run rebuilds its allocator with :meth:`Allocator.replay`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from basevolve.errors import ConfigError
from basevolve.registry import Registry

REWARD_MODES: tuple[str, ...] = ("best", "improvement")

#: name -> Allocator subclass; each policy module registers itself on import.
ALLOCATORS: Registry[type[Allocator]] = Registry("allocator")


class EventKind(StrEnum):
    ASK = "ask"  # the policy chose ``arm`` (a pending pull starts)
    ASSIGN = "assign"  # the algorithm fixed ``arm`` (Algorithm 2's K initial calls)
    TELL = "tell"  # a pending pull of ``arm`` returned ``reward``
    CANCEL = "cancel"  # a pending pull of ``arm`` will never be told


@dataclass(frozen=True, slots=True)
class AllocEvent:
    """One entry of the audit log ``Allocator.events`` (JSON-able via :meth:`as_dict`).

    ``index`` is the 0-based position in the log.  ``prob`` is the probability with
    which the policy chose ``arm`` at ask time when it is known (1.0 for deterministic
    choices; None for Thompson sampling, whose choice probability has no closed form);
    ``eligible`` is the mask passed to ``ask`` (None = all arms); ``ticket`` is the
    caller's id of the pull (None: not named, tells are FIFO per arm).
    """

    index: int
    kind: EventKind
    arm: int
    reward: float | None = None
    prob: float | None = None
    eligible: tuple[bool, ...] | None = None
    ticket: int | None = None  # the pull's id when the caller named it (module docstring)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["kind"] = str(self.kind)
        d["eligible"] = None if self.eligible is None else list(self.eligible)
        return d


def pull_reward(best_before: float, best_after: float, mode: str = "best") -> float:
    """Reward of one pull from the trajectory's best fitness before and after it.

    ``"best"`` (paper, Algorithm 2: the trajectory's historical best fitness) returns
    ``best_after``; ``"improvement"`` returns ``max(0, best_after - best_before)``
    (a running best never decreases; the clamp guards against a non-finite/None start).
    """
    if mode not in REWARD_MODES:
        raise ConfigError(f"unknown reward_mode {mode!r}; use one of {', '.join(REWARD_MODES)}")
    if mode == "best":
        return float(best_after)
    return max(0.0, float(best_after) - float(best_before))


def unit_reward(reward: float, reward_max: float) -> float:
    """Map a reward onto [0, 1]: ``clip(reward, 0, reward_max) / reward_max``.

    Why a fixed clip rather than a running-max normaliser: fitness is already normalised
    so that 1.0 is the best published construction (paper, Section "Tasks"), so a bound
    slightly above 1 (default 1.05) covers records without rescaling; a fixed map keeps
    the reward of a given fitness the same over the whole run (a running max would
    silently re-scale every past observation, breaking EXP3.P's importance-weighted sums
    and the Beta posterior counts).  Rewards above ``reward_max`` saturate at 1.
    """
    return min(max(float(reward), 0.0), reward_max) / reward_max


class Allocator:
    """Ask/tell multi-armed bandit over K trajectories (paper, Section 5, Algorithm 2).

    Construct with ``ALLOCATORS.get(name)(n_arms=K, rng=np.random.default_rng(seed),
    horizon=C - K, reward_mode="best", **params)``.  ``horizon`` is the number of
    bandit-allocated pulls (EXP3.P derives its parameters from it); ``reward_mode`` is
    stored so the engine and summaries agree on what ``tell`` receives (see
    :meth:`reward_of`).
    """

    name: ClassVar[str] = "base"
    min_arms: ClassVar[int] = 1
    max_arms: ClassVar[int | None] = None

    def __init__(
        self,
        n_arms: int,
        rng: np.random.Generator | int | None = None,
        horizon: int | None = None,
        reward_mode: str = "best",
    ) -> None:
        if isinstance(n_arms, bool) or not isinstance(n_arms, int | np.integer):
            raise ConfigError(f"n_arms must be an integer >= 1, got {n_arms!r}")
        n_arms = int(n_arms)
        if n_arms < self.min_arms or (self.max_arms is not None and n_arms > self.max_arms):
            hi = "" if self.max_arms is None else f" and <= {self.max_arms}"
            raise ConfigError(
                f"allocator {self.name!r} needs n_arms (K) >= {self.min_arms}{hi}, got {n_arms}"
            )
        if horizon is not None and (isinstance(horizon, bool) or int(horizon) < 0):
            raise ConfigError(f"horizon must be an integer >= 0 (C - K), got {horizon!r}")
        if reward_mode not in REWARD_MODES:
            raise ConfigError(
                f"unknown reward_mode {reward_mode!r}; use one of {', '.join(REWARD_MODES)}"
            )
        if rng is None or isinstance(rng, int | np.integer):
            rng = np.random.default_rng(rng)
        if not isinstance(rng, np.random.Generator):
            raise ConfigError(f"rng must be a numpy Generator or an int seed, got {rng!r}")
        self.n_arms = n_arms
        self.rng = rng
        self.horizon = None if horizon is None else int(horizon)
        self.reward_mode = reward_mode
        self.pulls = np.zeros(n_arms, dtype=np.int64)  # told pulls per arm
        self.pending = np.zeros(n_arms, dtype=np.int64)  # asked/assigned, not yet told
        self.reward_sum = np.zeros(n_arms, dtype=np.float64)
        self.reward_max = np.full(n_arms, -np.inf, dtype=np.float64)
        self.last_reward = np.full(n_arms, np.nan, dtype=np.float64)
        self.events: list[AllocEvent] = []
        # per arm, its pending pulls in ask order: (ticket, prob, sampled)
        self._tickets: list[deque[tuple[int | None, float | None, bool]]] = [
            deque() for _ in range(n_arms)]

    # ----------------------------------------------------------------- public API
    def ask(self, eligible: Sequence[bool] | np.ndarray | None = None, *,
            ticket: int | None = None) -> int:
        """Choose the arm that receives the next call; marks one pending pull on it.

        ``eligible[i]`` says whether arm i can take a call now (None = all).  The policy
        only ever returns an eligible arm.  ``ticket``: the caller's id for this pull,
        given again to :meth:`tell` / :meth:`cancel` (module docstring).
        """
        mask = self._mask(eligible)
        ticket = self._new_ticket(ticket)
        arm, prob = self._ask(mask)
        arm = int(arm)
        if not mask[arm]:  # a policy bug, not a user mistake
            raise RuntimeError(f"{self.name}: policy chose ineligible arm {arm}")
        self.pending[arm] += 1
        self._tickets[arm].append((ticket, prob, True))
        self._log(EventKind.ASK, arm, prob=prob,
                  eligible=None if eligible is None else tuple(bool(b) for b in mask),
                  ticket=ticket)
        return arm

    def assign(self, arm: int, *, ticket: int | None = None) -> int:
        """Start a pull on a fixed ``arm`` without consulting the policy.

        Algorithm 2's K initial calls (one per trajectory) are fixed by the algorithm,
        not chosen by the bandit; their tells still update the policy's statistics
        (EXP3.P only records them: a pull it did not sample has no importance weight).
        """
        arm = self._arm(arm)
        ticket = self._new_ticket(ticket)
        self.pending[arm] += 1
        self._tickets[arm].append((ticket, 1.0, False))
        self._log(EventKind.ASSIGN, arm, prob=1.0, ticket=ticket)
        return arm

    def tell(self, arm: int, reward: float, *, ticket: int | None = None) -> None:
        """Report the reward of the pending pull ``ticket`` of ``arm`` (without a ticket:
        the arm's oldest pending pull)."""
        arm = self._arm(arm)
        try:
            reward = float(reward)
        except (TypeError, ValueError):
            raise ConfigError(f"reward must be a finite number, got {reward!r}") from None
        if not math.isfinite(reward):
            raise ConfigError(f"reward must be a finite number, got {reward!r}")
        ticket, prob, sampled = self._take(arm, ticket, "tell")
        self.pending[arm] -= 1
        self.pulls[arm] += 1
        self.reward_sum[arm] += reward
        self.reward_max[arm] = max(self.reward_max[arm], reward)
        self.last_reward[arm] = reward
        self._log(EventKind.TELL, arm, reward=reward, prob=prob, ticket=ticket)
        self._tell(arm, reward, prob, sampled)

    def cancel(self, arm: int, *, ticket: int | None = None) -> None:
        """Drop the pending pull ``ticket`` of ``arm`` (default: its oldest) that will
        never be told (e.g. lost on crash)."""
        arm = self._arm(arm)
        ticket, prob, sampled = self._take(arm, ticket, "cancel")
        self.pending[arm] -= 1
        self._log(EventKind.CANCEL, arm, prob=prob, ticket=ticket)
        self._cancel(arm, prob, sampled)

    def reward_of(self, best_before: float, best_after: float) -> float:
        """The reward to ``tell`` under this allocator's ``reward_mode``."""
        return pull_reward(best_before, best_after, self.reward_mode)

    @property
    def best_arm(self) -> int | None:
        """Arm with the highest reward told so far (lowest index on ties); None if none."""
        if not self.pulls.any():
            return None
        return int(np.argmax(np.where(self.pulls > 0, self.reward_max, -np.inf)))

    def summary(self) -> dict[str, Any]:
        """JSON-able state (stored with each allocation event)."""
        told = self.pulls > 0
        mean = np.where(told, self.reward_sum / np.maximum(self.pulls, 1), np.nan)
        out: dict[str, Any] = {
            "allocator": self.name,
            "arms": self.n_arms,
            "reward_mode": self.reward_mode,
            "pulls": self.pulls.tolist(),
            "pending": self.pending.tolist(),
            "mean_reward": [None if math.isnan(m) else float(m) for m in mean],
            "best_reward": [float(r) if t else None for r, t in zip(self.reward_max, told, strict=True)],
            "best_arm": self.best_arm,
        }
        out.update(self._summary())
        return out

    def replay(self, events: Iterable[AllocEvent | dict[str, Any]]) -> None:
        """Re-apply a stored event log (resume); checks that every ask chooses the same arm.

        Must be called on a fresh allocator built with the same seed and parameters.
        """
        for ev in events:
            e = ev if isinstance(ev, AllocEvent) else AllocEvent(
                index=int(ev["index"]), kind=EventKind(ev["kind"]), arm=int(ev["arm"]),
                reward=ev.get("reward"), prob=ev.get("prob"),
                eligible=None if ev.get("eligible") is None else tuple(ev["eligible"]),
                ticket=ev.get("ticket"),
            )
            if e.kind is EventKind.ASK:
                got = self.ask(e.eligible, ticket=e.ticket)
                if got != e.arm:
                    raise ConfigError(
                        f"replay diverged at event {e.index}: stored arm {e.arm}, got {got}; "
                        "rebuild the allocator with the run's seed and parameters"
                    )
            elif e.kind is EventKind.ASSIGN:
                self.assign(e.arm, ticket=e.ticket)
            elif e.kind is EventKind.TELL:
                self.tell(e.arm, float(e.reward), ticket=e.ticket)  # type: ignore[arg-type]
            else:
                self.cancel(e.arm, ticket=e.ticket)

    # --------------------------------------------------------------- policy hooks
    def _ask(self, eligible: np.ndarray) -> tuple[int, float | None]:
        """Return (arm, probability of that choice or None); ``eligible`` has >= 1 True."""
        raise NotImplementedError

    def _tell(self, arm: int, reward: float, prob: float | None, sampled: bool) -> None:
        """Learn from ``reward``; ``prob``/``sampled`` come from the matching ask/assign."""

    def _cancel(self, arm: int, prob: float | None, sampled: bool) -> None:
        """Undo whatever ``_ask`` provisionally recorded (default: nothing)."""

    def _summary(self) -> dict[str, Any]:
        return {}

    # ------------------------------------------------------------------ helpers
    def _mask(self, eligible: Sequence[bool] | np.ndarray | None) -> np.ndarray:
        if eligible is None:
            return np.ones(self.n_arms, dtype=bool)
        try:
            mask = np.asarray(eligible)
        except Exception:
            raise ConfigError(f"eligible must be a sequence of booleans, got {eligible!r}") from None
        if mask.ndim != 1 or mask.shape[0] != self.n_arms:
            raise ConfigError(
                f"eligible must have one entry per arm (length {self.n_arms}), "
                f"got shape {mask.shape}"
            )
        if mask.dtype != bool:
            if not np.isin(mask, (0, 1)).all():
                raise ConfigError(f"eligible must hold booleans, got {list(mask)!r}")
            mask = mask.astype(bool)
        if not mask.any():
            raise ConfigError("eligible has no True entry: at least one arm must be able to take a call")
        return mask

    def _arm(self, arm: int) -> int:
        if isinstance(arm, bool) or not isinstance(arm, int | np.integer):
            raise ConfigError(f"arm must be an integer in [0, {self.n_arms - 1}], got {arm!r}")
        if not 0 <= int(arm) < self.n_arms:
            raise ConfigError(f"arm {arm} out of range [0, {self.n_arms - 1}]")
        return int(arm)

    def _new_ticket(self, ticket: int | None) -> int | None:
        if ticket is None:
            return None
        if isinstance(ticket, bool) or not isinstance(ticket, int | np.integer):
            raise ConfigError(f"ticket must be an integer (the caller's pull id), got {ticket!r}")
        ticket = int(ticket)
        if any(t[0] == ticket for q in self._tickets for t in q):
            raise ConfigError(f"ticket {ticket} is already pending; name each pull once")
        return ticket

    def _take(self, arm: int, ticket: int | None, what: str
              ) -> tuple[int | None, float | None, bool]:
        """Remove and return the pending pull ``ticket`` of ``arm`` (None: the oldest)."""
        queue = self._tickets[arm]
        if not queue:
            raise ConfigError(f"{what}({arm}) without a pending ask/assign on arm {arm}")
        if ticket is None:
            return queue.popleft()
        for i, entry in enumerate(queue):
            if entry[0] == ticket:
                del queue[i]
                return entry
        raise ConfigError(f"{what}({arm}, ticket={ticket!r}): no pending pull with that "
                          f"ticket on arm {arm}; pass the ticket given to its ask/assign")

    def _log(self, kind: EventKind, arm: int, *, reward: float | None = None,
             prob: float | None = None, eligible: tuple[bool, ...] | None = None,
             ticket: int | None = None) -> None:
        self.events.append(AllocEvent(len(self.events), kind, arm, reward,
                                      None if prob is None else float(prob), eligible, ticket))
