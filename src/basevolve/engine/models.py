"""Which model answers each call, and what that choice earned (issue 25, part 2).

The trajectory allocator (paper, Algorithm 2) decides *which trajectory* gets the next
call; with several models (:mod:`basevolve.llm.ensemble`) this router decides, for that
same call, *which model* answers it.  Three rules, in order:

1. **Roles.**  A purpose claimed by models' ``role=`` (a ShinkaEvolve judge, a CodeEvolve
   meta prompt on a cheaper endpoint) goes to those models (by their weights, default 1).
2. **A model bandit** (``--model-allocator``, any allocator of the registry that can choose
   per call: ucb, thompson, exp3p, random, ...) for the calls whose reply is a program.
   It is asked per call next to the trajectory allocator; an arm is a model, eligible
   while under its own ``max_in_flight`` (all are, when none is).  Its reward is told
   when the call's child has been scored (``--model-reward``, :data:`MODEL_REWARDS`):
   the gain the child made, credited once (issue 34: over the trajectory's mark, so
   concurrent calls do not count one rise twice), for ``improvement``; divided by the
   call's actual effective FLOPs, tokens or dollars, normalised by a reference call, for
   ``improvement_per_flop``, ``improvement_per_token`` and ``improvement_per_usd``
   (:mod:`basevolve.engine.model_credit`).

   Every decision and reward is stored (``model_events``) before it acts, as the
   trajectory allocator's are (``allocations``), so ``replay`` and the analysis can
   study them and a resume rebuilds the bandit by replaying them.  A call that never
   gets a child (dropped at the end of the budget) is cancelled.  Text calls without a
   role model use the fixed weights: they have no child to reward.
3. **Fixed weights** (the anchors' ensembles; equal unless ``weight=`` is given).  The
   draw is a seeded function of the run seed and the call's place in the issue order,
   so it needs no stored state and a resume repeats it.

A re-issued call (failed, or lost in a crash) keeps the model of the call it replaces:
the decision was made once.  Every call stores its model (``calls.model``); FLOPs use
that model's own parameter count.  A single-model run has one entry and stores nothing
beyond ``calls.model``.

Each model has its own ``max_tokens`` (issue 34, item 3: ``--model NAME,max_tokens=N``,
else ``--max-tokens``, else the catalog's value for that model, else 4,096): it is sent in
that model's requests, bounds its worst case in a cost budget's reservation and its
FLOPs when a reply reports no usage.  A Qwen3 thinking model listed after a Llama model
is no longer cut at the Llama model's 4,096 tokens.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from basevolve.engine.ledger import usd_of
from basevolve.engine.model_credit import (
    MODEL_REWARDS,
    CallCost,
    ModelCredit,
    Reference,
    cost_factor,
)
from basevolve.errors import StoreError
from basevolve.llm.call_order import CALL_ORDER, order_value
from basevolve.llm.ensemble import model_entries, model_max_tokens
from basevolve.llm.sending import sending, waiting

_WEIGHT_STREAM = 0x6D6F64  # "mod": the fixed-weight draw's own seed stream


@dataclass(slots=True)
class Served:
    """One model of the run with its client, parameter count, price, completion cap and
    slot bound."""

    name: str
    client: Any
    active_params: float
    entry: Any  # llm.ensemble.ModelEntry
    max_tokens: int = 4096  # its own completion cap (module docstring)
    price: Any = None  # llm.prices.Price or None
    slots: asyncio.Semaphore | None = None
    own: bool = False  # built here (closed here); the primary client is the caller's

    async def complete(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> Any:
        if self.slots is None:
            return await self.client.complete(messages, **kw)
        waiting()  # not sent while it waits for a slot (llm/sending.py, issue 37)
        async with self.slots:  # --model NAME,max_in_flight=N
            sending()
            return await self.client.complete(messages, **kw)


class ModelRouter:
    """The per-call model decision of one run (module docstring)."""

    def __init__(self, cfg: Any, client: Any, settings: Any, *, store: Any,
                 run_id: str) -> None:
        from basevolve.llm.factory import make_client

        self.cfg, self.store, self.run_id = cfg, store, run_id
        self.no_usage = settings.no_usage
        self.entries = model_entries(cfg)
        self.models: list[Served] = []
        for i, e in enumerate(self.entries):
            cap = model_max_tokens(cfg, e, first=settings.max_tokens if i == 0 else None)
            c = client if i == 0 else make_client(
                e.name, e.base_url or cfg.base_url, params=e.params,
                settings=replace(settings, max_tokens=cap))
            limit = e.max_in_flight
            self.models.append(Served(e.name, c, float(c.model_spec.active_params), e, cap,
                                      _price(e, c.model_spec.name), None if limit is None else
                                      asyncio.Semaphore(limit), own=i > 0))
        self.bandit = None
        if cfg.model_allocator is not None and len(self.models) > 1:
            from basevolve.allocators import ALLOCATORS

            self.bandit = ALLOCATORS.get(cfg.model_allocator)(
                n_arms=len(self.models), rng=np.random.default_rng([cfg.seed, _WEIGHT_STREAM]),
                horizon=cfg.budget, reward_mode="improvement")
        self.reference = Reference.of([(m.active_params, m.max_tokens, m.price)
                                       for m in self.models])
        self.credit = ModelCredit()
        self.in_flight = [0] * len(self.models)
        #: per model, the keys of its calls in issue order (a call's place, issue 34)
        self.keys: list[list[int]] = [[] for _ in self.models]
        self._tag: str | None = None
        #: per open bandit pull (the call's key: a re-issue keeps it): model, the
        #: trajectory's best when asked, its trajectory, the reply's cost
        self.open: dict[int, list[Any]] = {}
        #: the models whose worst case fits a cost budget, for the next choice only
        #: (None: no narrowing; set by :meth:`worst_case`)
        self.fitting: list[bool] | None = None

    @property
    def several(self) -> bool:
        return len(self.models) > 1

    # ------------------------------------------------------------------ choosing
    def _claimed(self, purpose: str) -> list[bool]:
        return [bool(m.entry.roles) and purpose in m.entry.roles for m in self.models]

    def _weights(self, purpose: str) -> list[float]:
        claimed = self._claimed(purpose)
        if any(claimed):  # among its role models by weight (0 or none: 1, the role holds)
            return [(m.entry.weight or 1.0) if c else 0.0
                    for m, c in zip(self.models, claimed, strict=True)]
        return [m.entry.pool_weight for m in self.models]

    def _mask(self, weights: Sequence[float]) -> list[bool]:
        """Models a bandit may choose: a positive weight and, unless ``--deterministic``
        (whose decisions may not depend on timing), a free slot of their own."""
        open_ = [w > 0 for w in weights]
        if self.cfg.deterministic:
            return open_
        free = [o and (m.entry.max_in_flight is None or n < m.entry.max_in_flight)
                for o, m, n in zip(open_, self.models, self.in_flight, strict=True)]
        return free if any(free) else open_

    def choose(self, proposal: Any, *, key: int, call_index: int, best: float,
               replay: Any = None, trajectory: int = 0) -> int:
        """The model of a new call (a re-issue keeps its call's).  ``replay``: the stored
        call row when a resume replays the decision (it must come out the same)."""
        if not self.several:
            return 0
        from basevolve.llm.ensemble import weighted_choice

        weights = self._weights(proposal.purpose)
        if self.fitting is not None and replay is None:  # a cost budget's last calls
            weights = [w if f else 0.0 for w, f in zip(weights, self.fitting, strict=True)]
        self.fitting = None
        asked = (self.bandit is not None and not any(self._claimed(proposal.purpose))
                 and not proposal.is_text)
        if asked:
            assert self.bandit is not None
            if replay is None:
                mask = self._mask(weights)
            else:
                mask = self._stored_mask(replay["call_index"])
            arm = self.bandit.ask(mask, ticket=key)
            if replay is None:
                self.store.insert_model_event(
                    self.run_id, seq=self.store.next_seq(self.run_id), kind="ask",
                    call_index=call_index, model=self.models[arm].name, arm=arm,
                    eligible=mask, summary=self.bandit.summary())
        elif replay is not None:  # a seeded draw, stateless: the stored model stands
            arm = self.index_of(replay["model"])  # (a cost budget may have narrowed it)
        else:
            u = np.random.default_rng([self.cfg.seed, _WEIGHT_STREAM, key]).random()
            arm = weighted_choice(weights, float(u))
        if replay is not None and self.models[arm].name != replay["model"]:
            raise StoreError(f"resume diverged at call {call_index}: stored model "
                             f"{replay['model']!r}, the router chose {self.models[arm].name!r} "
                             "(same models, weights and seed?)")
        if asked:  # only a bandit pull is rewarded later
            self.open[key] = [arm, best, trajectory, None]
        return arm

    def _stored_mask(self, call_index: int) -> list[bool]:
        import json

        rows = self.store.query("SELECT eligible_json FROM model_events WHERE run_id=? AND "
                                "call_index=? AND kind='ask'", (self.run_id, call_index))
        if not rows or rows[0]["eligible_json"] is None:
            raise StoreError(f"call {call_index} has no stored model decision; the store is "
                             "inconsistent")
        return [bool(b) for b in json.loads(rows[0]["eligible_json"])]

    def index_of(self, name: str | None) -> int:
        """The index of a stored model name (None: an old row, the run's one model)."""
        if name is None:
            return 0
        for i, m in enumerate(self.models):
            if m.name == name:
                return i
        raise StoreError(f"a stored call names model {name!r}, which this run does not have")

    def sent(self, arm: int) -> None:
        self.in_flight[arm] += 1

    def place(self, arm: int, key: int) -> int:
        """The call's position among its model's calls in issue order (a call sent again
        keeps its key, so its place); replayed calls are placed on resume too."""
        keys = self.keys[arm]
        i = bisect.bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            keys.insert(i, key)
        return i

    @contextmanager
    def placed(self, arm: int, key: int) -> Iterator[None]:
        """Around the creation of a call's request: its place in the run goes with it
        (``X-Basevolve-Call``, :mod:`basevolve.llm.call_order`; issue 34, item 4)."""
        if self._tag is None:  # the run's id and creation time: a resume keeps it
            row = self.store.get_run(self.run_id)
            self._tag = f"{self.run_id}@{row['created_at'] if row else ''}"
        token = CALL_ORDER.set(order_value(self._tag, self.place(arm, key)))
        try:
            yield
        finally:
            CALL_ORDER.reset(token)

    def answered(self, key: int, arm: int, cost: CallCost) -> None:
        """A reply arrived: the model's slot is free again; its cost, for the reward."""
        self.in_flight[arm] = max(0, self.in_flight[arm] - 1)
        self.costs(key, cost)

    def costs(self, key: int, cost: CallCost) -> None:
        """A reply's cost (live, or a stored one on resume), for a per-cost reward."""
        if key in self.open:
            self.open[key][3] = cost

    # ------------------------------------------------------------------ rewards
    def seen(self, trajectory: int, score: float | None) -> None:
        """A child was told to ``trajectory`` (live or replayed): it raises the mark a
        later child must beat to earn a gain (issue 34, item 1)."""
        self.credit.seen(trajectory, score)

    def reward(self, key: int, score: float | None, best_now: float | None = None) -> float | None:
        """The bandit's reward for a call's child (None: the call was not a bandit pull);
        ``best_now``: its trajectory's best before the child is told."""
        if key not in self.open:
            return None
        _, best, trajectory, cost = self.open[key]
        bests = (float(best),) if best_now is None else (float(best), float(best_now))
        gain = self.credit.gain(trajectory, score, *bests)
        return gain * cost_factor(self.cfg.model_reward, cost, self.reference)

    def tell(self, key: int, call_index: int, reward: float | None, *, live: bool) -> None:
        """Tell the bandit a call's reward (stored first when ``live``)."""
        arm, _, trajectory, _ = self.open.pop(key, (0, 0.0, None, None))
        if trajectory is None or self.bandit is None or reward is None:
            return
        if live:
            self.store.insert_model_event(
                self.run_id, seq=self.store.next_seq(self.run_id), kind="tell",
                call_index=call_index, model=self.models[arm].name, arm=arm, reward=reward)
        self.bandit.tell(arm, reward, ticket=key)

    def cancel(self, key: int, call_index: int, *, live: bool) -> None:
        """A bandit pull that will never get a child (stored first when ``live``)."""
        arm, _, trajectory, _ = self.open.pop(key, (0, 0.0, None, None))
        if trajectory is None or self.bandit is None:
            return
        if live:
            self.store.insert_model_event(
                self.run_id, seq=self.store.next_seq(self.run_id), kind="cancel",
                call_index=call_index, model=self.models[arm].name, arm=arm)
        self.bandit.cancel(arm, ticket=key)

    def worst_case(self, ledger: Any, proposal: Any, model: int | None = None) -> float:
        """A cost budget's worst case for a call before its model is chosen
        (:func:`basevolve.engine.budget.afford`): that of the dearest model it may go to,
        so the reservation made once the model is chosen is no larger.  When that does
        not fit but a cheaper model's does, the next choice is limited to the models
        that fit (:attr:`fitting`), so a budget too small for the dearest model is still
        spent on the others.  ``model``: a re-issued call's own model."""
        if model is not None:
            m = self.models[model]
            return ledger.worst_case(proposal.messages, m.active_params, m.price, m.max_tokens)
        weights = self._weights(proposal.purpose) if self.several else [1.0]
        worst = [ledger.worst_case(proposal.messages, m.active_params, m.price, m.max_tokens)
                 if w > 0
                 else None for m, w in zip(self.models, weights, strict=True)]
        extra = ledger.eval_worst if not proposal.is_text else 0.0
        fits = [w is not None and ledger.fits(w + extra) for w in worst]
        if not any(fits):  # none fits: the cheapest is the call that did not fit
            self.fitting = None
            return min(w for w in worst if w is not None)
        some = any(w is not None and not f for w, f in zip(worst, fits, strict=True))
        self.fitting = fits if some else None
        return max(w for w, f in zip(worst, fits, strict=True) if f)

    def cost_usd(self, arm: int, completion: Any) -> float | None:
        """A call's dollars at its model's price (None: the model has no price)."""
        price = self.models[arm].price
        if price is None:
            return None
        return usd_of(completion, price, self.models[arm].max_tokens, self.no_usage)

    def params_of(self) -> dict[str | None, float]:
        """Active parameters by stored model name (None: rows of an older run)."""
        return {None: self.models[0].active_params} | {
            m.name: m.active_params for m in self.models}

    def max_tokens_of(self) -> dict[str | None, int]:
        """Each model's completion cap by stored model name (None: an older run's one)."""
        return {None: self.models[0].max_tokens} | {m.name: m.max_tokens for m in self.models}

    def summary(self) -> dict[str, Any] | None:
        return None if self.bandit is None else self.bandit.summary()

    async def aclose(self) -> None:
        for m in self.models:
            if m.own:
                await m.client.aclose()


def model_costs(cfg: Any) -> list[tuple[float, Any, int]]:
    """Each model's (active parameters, price, max_tokens) from the catalog and
    ``--model`` keys, no I/O: a cost budget's first-call check covers the dearest
    (engine/budget.py)."""
    from basevolve.llm.catalog import resolve_model

    out = []
    for e in model_entries(cfg):
        spec = resolve_model(e.name, e.params)
        out.append((float(spec.active_params), _price(e, spec.name), model_max_tokens(cfg, e)))
    return out


def check_models(cfg: Any) -> None:
    """Everything about a run's models that can fail, before its store is written (issue
    25): names known to the catalog (or given ``params``), each endpoint reachable, and
    for ``--budget-usd`` a price for every model."""
    from basevolve.engine.endpoints import probe_endpoint
    from basevolve.errors import ConfigError
    from basevolve.llm.ensemble import check_catalog

    entries = model_entries(cfg)
    check_catalog(entries, cfg.base_url)
    for e in entries:
        if e.base_url is not None and e.base_url != cfg.base_url:
            from basevolve.llm.openai_backend import validate_base_url

            probe_endpoint(validate_base_url(e.base_url), what=f"endpoint of --model {e.name}")
    name = unpriced_model(cfg)
    if name is not None:
        raise ConfigError(f"--budget-usd needs a price for every model; {name!r} has none in "
                          f"the catalog: give --model {name},price=P/C/O (USD per million "
                          "prompt/cached/completion tokens)")
    if cfg.model_allocator is not None and cfg.model_reward == "improvement_per_usd":
        for e, (_, price, _) in zip(entries, model_costs(cfg), strict=True):
            if price is None:
                raise ConfigError(f"--model-reward improvement_per_usd needs a price for every "
                                  f"model; {e.name!r} has none in the catalog: give --model "
                                  f"{e.name},price=P/C/O (USD per million prompt/cached/"
                                  "completion tokens)")


def unpriced_model(cfg: Any) -> str | None:
    """Under ``--budget-usd``, the first model without a price (None: all priced, or
    another budget); the CLI and a sweep file word the refusal each their own way."""
    if cfg.budget_kind != "usd":
        return None
    for e, (_, price, _) in zip(model_entries(cfg), model_costs(cfg), strict=True):
        if price is None:
            return str(e.name)
    return None


def _price(entry: Any, catalog_name: str) -> Any:
    """The model's price: ``price=`` on ``--model``, else the catalog's (None: unpriced)."""
    from basevolve.llm.catalog import price_of
    from basevolve.llm.prices import parse_price

    override = None if entry.price is None else parse_price(entry.price)
    return price_of(catalog_name, override)


__all__ = ["MODEL_REWARDS", "CallCost", "ModelRouter", "Served", "check_models",
           "model_costs", "model_max_tokens", "unpriced_model"]  # model_max_tokens: llm.ensemble
