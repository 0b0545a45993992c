"""Several models per run in a sweep file (issue 25: "the Python API and the sweep TOML take
the same structure").

A block's ``models`` key is the run's ``--model`` list, as strings or tables::

    models = ["weak,params=1.7e9", "strong,params=14.8e9,weight=0.2"]
    models = [{name = "weak", params = 1.7e9}, {name = "strong", params = 14.8e9}]

A list of such lists is an axis (one run per model set), like any other list of the grid::

    models = [["weak,params=1.7e9"], ["weak,params=1.7e9", "strong,params=14.8e9"]]

Why an axis is a list of *lists* (and a flat list one value): a flat list already means
"these models together" on the CLI and in :class:`~basevolve.config.RunConfig`, so the
one-set form must read the same; the extra level is what says "one run per set".

The run's ``model`` is the first model's name unless the block gives it (then it must be
that name, as for the CLI).  What a run *is* leaves out where each model is served: a
model's ``base_url`` is not part of its run id, as the run's own ``base_url`` is not.
The checks here run before the store is touched: every name known (the catalog, or
``params``), every model served over HTTP given an endpoint, every ``base_url`` well
formed, a price for every model under ``budget_usd``; :func:`model_endpoints` lists each
model's own endpoint for the sweep's probe.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from basevolve.errors import ConfigError
from basevolve.llm.ensemble import model_entries


def model_lists(value: Any, where: str, source: str) -> list[list[dict[str, Any]]]:
    """The values of a block's ``models`` key: one model set, or an axis of sets, each
    checked together (:func:`~basevolve.llm.ensemble.parse_models`) and given as plain
    dicts in a canonical form (a string and a table with the same keys are one run)."""
    from basevolve.llm.ensemble import parse_models

    if not isinstance(value, list):
        raise ConfigError(f"{source}: {where}.models must be a list of models, e.g. "
                          f'["weak,params=1.7e9", "strong,params=14.8e9"], got {value!r}')
    if not value:
        raise ConfigError(f"{source}: {where}.models is an empty list; give at least one "
                          'model, e.g. ["weak,params=1.7e9"] (or use model = NAME)')
    nested = [isinstance(v, list) for v in value]
    if any(nested) and not all(nested):
        raise ConfigError(f"{source}: {where}.models mixes models and lists of models; give "
                          "one list of models (one set), or a list of lists (an axis of sets)")
    sets = value if all(nested) else [value]
    out = []
    for i, models in enumerate(sets):
        at = f"{where}.models[{i}]" if all(nested) else f"{where}.models"
        if not models:
            raise ConfigError(f"{source}: {at} is an empty list of models; give at least one")
        try:
            entries = parse_models(models)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {at}: {exc}") from None
        out.append([e.to_dict() for e in entries])
    return out


def primary(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` with the run's ``model`` set to its first model's when the block gives
    ``models`` and no ``model``."""
    models = given.get("models")
    if models and "model" not in given:
        return {**given, "model": models[0]["name"]}
    return given


def identity(models: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A model set as it enters a run's id: each model without its ``base_url``."""
    return [{k: v for k, v in m.items() if k != "base_url"} for m in models]


def readable(models: list[dict[str, Any]]) -> str:
    """The model part of a run id: ``weak+strong``."""
    return "+".join(str(m["name"]) for m in models)


def show(models: Any) -> str:
    """A model set in a cell label: every model with the keys that make it what it is
    (``weak[params=1.7e9,weight=0.8]+strong[...]``), its endpoint left out."""
    parts = []
    for m in models:
        keys = ",".join(f"{k}={_short(v)}" for k, v in m.items()
                        if k not in ("name", "base_url"))
        parts.append(f"{m['name']}[{keys}]" if keys else str(m["name"]))
    return "+".join(parts)


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return "+".join(map(str, v))
    return str(v)


def check_run_models(cfg: Any) -> None:
    """One run's models, no I/O: known, reachable in principle, well-formed endpoints,
    priced under ``budget_usd``; messages name the sweep file's keys, not the CLI's."""
    from basevolve.engine.models import unpriced_model
    from basevolve.llm.catalog import resolve_model
    from basevolve.llm.ensemble import check_catalog
    from basevolve.llm.openai_backend import validate_base_url

    if not cfg.models:
        return
    entries = model_entries(cfg)
    for e in entries:
        try:
            spec = resolve_model(e.name, e.params)
        except ConfigError:
            raise ConfigError(f"model {e.name!r} is unknown (not in `basevolve models`); give "
                              f'its active parameter count, e.g. "{e.name},params=8e9" or '
                              f'{{name = "{e.name}", params = 8e9}}') from None
        if e.base_url is not None:
            try:
                validate_base_url(e.base_url)
            except ConfigError as exc:
                raise ConfigError(f"model {e.name!r}: {exc}") from None
        elif cfg.base_url is None and spec.backend != "embedded":
            raise ConfigError(f"model {e.name!r} is served over HTTP; give its endpoint as "
                              f'"{e.name},base_url=http://HOST:PORT/v1", or base_url = ... '
                              "for every model (in [defaults] or the block)")
    check_catalog(entries, cfg.base_url)  # e.g. two embedded models
    name = unpriced_model(cfg)
    if name is not None:
        raise ConfigError(f"budget_usd needs a price for every model; {name!r} has none in the "
                          f'catalog: give "{name},price=P/C/O" (USD per million '
                          "prompt/cached/completion tokens)")


def model_endpoints(cfg: Any) -> Iterator[tuple[str, str]]:
    """(model name, endpoint) of each model of the run served at an endpoint of its own."""
    for e in model_entries(cfg) if cfg.models else ():
        if e.base_url is not None and e.base_url.rstrip("/") != (cfg.base_url or "").rstrip("/"):
            yield e.name, e.base_url


__all__ = ["check_run_models", "identity", "model_endpoints", "model_lists", "primary",
           "readable", "show"]
