"""Several models in one run: how each is named, reached, weighted and priced (issue 25).

The paper allocates a budget across trajectories of *one* model.  OpenEvolve, CodeEvolve
and ShinkaEvolve sample each call's model from a weighted ensemble, and ShinkaEvolve adds
a UCB bandit over models; none of them spends an exact budget across models or counts a
call's FLOPs at the parameter count of the model that answered it.  Here a run may name
several models, each with its own endpoint, parameter count (FLOPs, paper Appendix
"Effective FLOPs": ``2 * P_active`` per uncached token), in-flight limit, weight, roles
and price; :mod:`basevolve.engine.models` chooses one per call.

The user's form (CLI ``--model``, repeated; the sweep TOML's ``models`` list; the API's
``models=``) is ``NAME[,key=value...]`` or a mapping with the same keys:

* ``base_url`` (``url``): the model's endpoint; default: the run's ``--base-url``, so one
  server serving several models (vLLM, ``basevolve simulate-server --model``) needs it once;
* ``params``: active parameter count, for a model not in the catalog;
* ``max_in_flight`` (``in_flight``): calls to this model at once (default: no bound but
  the run's ``--max-in-flight``);
* ``weight``: its share under fixed weights (default 1; 0 keeps it for its roles only);
* ``role`` (``roles``): purposes it serves *instead of* the weighted pool, joined by ``+``
  (e.g. ``role=judge+meta_prompt``: ShinkaEvolve's judge or CodeEvolve's meta prompts on a
  cheaper endpoint); a model with roles serves only them unless it also has a weight;
* ``price``: USD per million prompt/cached/completion tokens, ``P/C/O`` or ``P/O``
  (:func:`basevolve.llm.prices.parse_price`), overriding the catalog's;
* ``max_tokens``: the model's completion cap (issue 34, item 3), sent in its requests and
  used in its worst case; default: ``--max-tokens``, else the catalog's value for that
  model (a Qwen3 thinking model: 16,000), else 4,096.

A single ``--model NAME`` (with ``--base-url``/``--params``) is exactly the run of old:
``RunConfig.models`` is then empty.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from basevolve.errors import ConfigError
from basevolve.vocab import PURPOSES  # a model's role is a call's purpose

ALIASES = {"url": "base_url", "in_flight": "max_in_flight", "roles": "role"}
KEYS = ("base_url", "params", "max_in_flight", "weight", "role", "price", "max_tokens")
MAX_MODELS = 16
#: ``--model-reward`` values (engine/model_credit.py says what each pays; issue 34): here,
#: at the bottom, so that checking a run's models needs nothing from the engine
MODEL_REWARDS: tuple[str, ...] = ("improvement", "improvement_per_flop", "improvement_per_token",
                                  "improvement_per_usd")


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One model of a run, validated (see the module docstring for each field)."""

    name: str
    base_url: str | None = None
    params: float | None = None
    max_in_flight: int | None = None
    weight: float | None = None
    roles: tuple[str, ...] = ()
    price: str | None = None
    max_tokens: int | None = None

    @property
    def pool_weight(self) -> float:
        """Its weight in the pool of calls no role claims: 1 by default, 0 for a model
        given roles and no weight (it serves only its roles)."""
        if self.weight is not None:
            return self.weight
        return 0.0 if self.roles else 1.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["roles"] = list(self.roles)
        return {k: v for k, v in d.items() if v not in (None, [])}


def _count(name: str, key: str, f: dict[str, Any]) -> int | None:
    """``f[key]`` as a whole number >= 1 (None when not given): one rule and message for
    ``max_in_flight`` and ``max_tokens``."""
    if f.get(key) is None:
        return None
    value = _number(name, key, f[key], integer=True)
    if value != int(value) or value < 1:
        raise ConfigError(f"--model {name}: {key} must be an integer >= 1, got {f[key]!r}")
    return int(value)


def _number(name: str, key: str, value: Any, *, integer: bool = False) -> Any:
    what = f"--model {name}: {key}={value!r}"
    try:
        number = int(value) if integer and not isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} is not a number; give e.g. {key}="
                          f"{'8' if integer else '8e9' if key == 'params' else '0.5'}") from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise ConfigError(f"{what} must be a finite number")
    return number


def parse_model(spec: str | Mapping[str, Any]) -> ModelEntry:
    """One model from ``NAME[,key=value...]`` or a mapping with ``name`` and the keys."""
    if isinstance(spec, str):
        name, *pairs = [p.strip() for p in spec.split(",")]
        raw: dict[str, Any] = {}
        for pair in pairs:
            key, eq, value = pair.partition("=")
            if not eq or not key.strip():
                raise ConfigError(f"--model {spec!r}: {pair!r} is not key=value; the form is "
                                  f"NAME[,{'=...,'.join(KEYS)}=...]")
            raw[key.strip()] = value.strip()
    elif isinstance(spec, Mapping):
        raw = {str(k): v for k, v in spec.items()}
        name = str(raw.pop("name", "") or "")
    else:
        raise ConfigError(f"a model must be NAME[,key=value...] or a table with a name, got "
                          f"{type(spec).__name__}")
    if not name:
        raise ConfigError(f"--model {spec!r} has no model name; the form is NAME[,key=value...]")
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        key = ALIASES.get(key, key)
        if key not in KEYS:
            raise ConfigError(f"--model {name}: unknown key {key!r}; use {', '.join(KEYS)}")
        fields[key] = value
    return _entry(name, fields)


def _entry(name: str, f: dict[str, Any]) -> ModelEntry:
    params = None
    if f.get("params") is not None:  # the forms --params takes: 8e9, "8B", "700M"
        from basevolve.llm.catalog import parse_params

        if isinstance(f["params"], bool):
            raise ConfigError(f"--model {name}: params must be a number, got {f['params']!r}")
        try:
            params = parse_params(f["params"], f"--model {name},params=")
        except ConfigError as exc:
            raise ConfigError(f"{exc} (params must be > 0, active parameters)") from None
    limit = _count(name, "max_in_flight", f)
    cap = _count(name, "max_tokens", f)
    weight = None if f.get("weight") is None else _number(name, "weight", f["weight"])
    if weight is not None and weight < 0:
        raise ConfigError(f"--model {name}: weight must be >= 0, got {weight}")
    role = f.get("role") or ()
    roles = tuple(r.strip() for r in role.split("+")) if isinstance(role, str) else tuple(role)
    for r in roles:
        if r not in PURPOSES:
            raise ConfigError(f"--model {name}: unknown role {r!r}; a role is a call purpose: "
                              f"{', '.join(PURPOSES)}")
    price = f.get("price")
    if price is not None:
        from basevolve.llm.prices import parse_price

        # refused here, naming the value, before anything is stored
        parse_price(str(price), arg=f"--model {name}: price")
        price = str(price)
    base_url = f.get("base_url") or None
    return ModelEntry(name, None if base_url is None else str(base_url), params, limit, weight,
                      roles, price, cap)


def parse_models(specs: Iterable[str | Mapping[str, Any] | ModelEntry]) -> tuple[ModelEntry, ...]:
    """Every model of a run, checked together: distinct names, at most one embedded
    model, a positive total weight for the calls no role claims (when any call may
    fall to the pool)."""
    entries = tuple(s if isinstance(s, ModelEntry) else parse_model(s) for s in specs)
    if len(entries) > MAX_MODELS:
        raise ConfigError(f"at most {MAX_MODELS} models in one run, got {len(entries)}")
    names = [e.name for e in entries]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"--model {dup[0]} is given twice; name each model once")
    if entries and sum(e.pool_weight for e in entries) <= 0:
        shown = ", ".join(f"{e.name} weight={e.pool_weight:g}" for e in entries)
        raise ConfigError(f"the model weights must sum to a positive value ({shown}); give "
                          "at least one model a weight > 0 (or no role)")
    return entries


def check_catalog(entries: Sequence[ModelEntry], base_url: str | None) -> None:
    """Each model is known (catalog or ``params``) and reachable in principle: a served
    model needs an endpoint, of its own or the run's.  No I/O.  ``entries`` as
    :func:`model_entries` gives them (the run's ``params``
    already on the first)."""
    from basevolve.llm.catalog import resolve_model

    embedded = 0
    for e in entries:
        try:
            spec = resolve_model(e.name, e.params, params_arg="params=")
        except ConfigError:
            raise ConfigError(f"--model {e.name}: unknown model (not in `basevolve models`); "
                              f"give its active parameter count, e.g. --model "
                              f"{e.name},params=8e9") from None
        url = e.base_url or base_url
        if url is None and spec.backend != "embedded":
            raise ConfigError(f"--model {e.name} is served over HTTP; give its endpoint with "
                              f"--model {e.name},base_url=URL (or --base-url for all models)")
        embedded += int(url is None)
    if embedded > 1:
        raise ConfigError("at most one embedded (offline) model per run: each would load "
                          "its own weights; serve the others over HTTP")


def check_run_models(models: Any, model: str, allocator: str | None,
                     reward: str) -> tuple[dict[str, Any], ...]:
    """A run's ``models``, ``model_allocator`` and ``model_reward`` checked together
    (:func:`basevolve.engine.run_checks.checked_run`); the models as plain dicts (stored
    JSON)."""
    if not models:
        if allocator is not None:
            raise ConfigError("--model-allocator chooses among several models; give --model "
                              "at least twice")
        return ()
    if isinstance(models, str | bytes) or not isinstance(models, list | tuple):
        raise ConfigError(f"models must be a list of models, got {type(models).__name__}")
    entries = parse_models(models)
    if allocator is not None and len(entries) < 2:
        raise ConfigError(f"--model-allocator chooses among several models; give --model at "
                          f"least twice (got only {entries[0].name!r})")
    if model != entries[0].name:
        raise ConfigError(f"the run's model {model!r} is not the first of --model "
                          f"({entries[0].name!r}); name it first")
    if allocator is not None:
        from basevolve.allocators import ALLOCATORS

        ALLOCATORS.get(allocator)
        if allocator in ("single", "successive_halving", "successive_rejects"):
            raise ConfigError(f"--model-allocator {allocator} cannot choose a model per call; "
                              "use ucb, thompson, exp3p, random, ...")
    if reward not in MODEL_REWARDS:
        raise ConfigError(f"--model-reward must be one of {', '.join(MODEL_REWARDS)}, got "
                          f"{reward!r}")
    return tuple(e.to_dict() for e in entries)


def model_entries(cfg: Any) -> tuple[ModelEntry, ...]:
    """A run's models as :class:`ModelEntry` (one for a single-model run: ``model`` /
    ``base_url`` / ``params``); the first carries the run's ``params`` when it gives none
    of its own.  ``cfg``: a :class:`~basevolve.config.RunConfig` (a function here, not a
    method there, so the run options need nothing of the LLM layer; issue 33)."""
    if not cfg.models:
        return (ModelEntry(cfg.model, cfg.base_url, cfg.params),)
    first, *rest = parse_models(cfg.models)
    if first.params is None and cfg.params is not None:  # --params names the first
        first = replace(first, params=cfg.params)
    return (first, *rest)


def model_max_tokens(cfg: Any, entry: Any, first: int | None = None) -> int:
    """A model's completion cap: its ``max_tokens=`` key, else ``--max-tokens``, else
    (``first``: the run's first model's, as the run's settings have it) the catalog's
    value for that model, else the generic default (module docstring)."""
    if entry.max_tokens is not None:
        return int(entry.max_tokens)
    if cfg.max_tokens is not None:
        return int(cfg.max_tokens)
    if first is not None:
        return int(first)
    from basevolve.llm.settings import default_max_tokens

    return default_max_tokens(entry.name)


def weighted_choice(weights: Sequence[float], u: float) -> int:
    """The index whose cumulative weight covers ``u`` in [0, 1) (weights sum > 0)."""
    total = float(sum(weights))
    acc = 0.0
    for i, w in enumerate(weights):
        acc += w / total
        if u < acc and w > 0:
            return i
    return max(i for i, w in enumerate(weights) if w > 0)


__all__ = ["KEYS", "MAX_MODELS", "MODEL_REWARDS", "ModelEntry", "check_catalog",
           "check_run_models", "model_entries", "model_max_tokens", "parse_model", "parse_models",
           "weighted_choice"]
