"""The run-option checks that need a registry, the model catalog or a task (issue 33).

:class:`~basevolve.config.RunConfig` is data: it checks the shape and range of each
option and imports nothing above itself.  What it cannot know without the layers above
it is checked here, once, and every way into a run passes through :func:`checked_run`:
``basevolve run`` (before the task is imported or a server asked), :func:`basevolve.run`
(its :func:`~basevolve.api.run.build_config`), each run of a sweep file (when the grid
is expanded), and the engine's own entry points (:func:`~basevolve.engine.runner.
start_run`, its resume, and their async forms), so a config built by hand or read back
from a store is checked exactly as before.  Each message is written once, here or in
the module that owns the idea.

What it does, in the order the frozen config did it:

* ``models`` / ``model_allocator`` / ``model_reward`` (issue 25;
  :func:`basevolve.llm.ensemble.check_run_models`): the models stored as plain dicts,
  the first model the run's ``model``; the first model's own ``base_url`` and ``params``
  become the run's;
* ``protocol_params``: typed by the protocol's declared ``PARAMS`` (an unknown protocol
  is refused with the registry's message);
* ``task_params``: typed by the task's ``PARAMS`` (:func:`basevolve.tasks.user_task.
  task_params_of`).

The result is a new config with the checked values filled in, as the frozen config
filled them in before; checking a checked config gives the same config.
"""

from __future__ import annotations

import copy
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import ConfigError
from basevolve.llm.ensemble import check_run_models
from basevolve.protocols.base import PROTOCOLS
from basevolve.tasks.user_task import task_params_of


def checked_run(cfg: RunConfig) -> RunConfig:
    """``cfg`` with its models, protocol parameters and task parameters checked and
    typed; a :class:`~basevolve.errors.ConfigError` names the first bad value."""
    changes: dict[str, Any] = {"models": check_run_models(
        cfg.models, cfg.model, cfg.model_allocator, cfg.model_reward)}
    if changes["models"]:  # the first model's own endpoint and size are the run's
        first = changes["models"][0]
        for key in ("base_url", "params"):
            mine, its = getattr(cfg, key), first.get(key)
            if its is not None and mine is not None and its != mine:
                raise ConfigError(f"--{key.replace('_', '-')} {mine!r} and --model "
                                  f"{first['name']},{key}={its!r} disagree; give one")
            if its is not None:
                changes[key] = its
    changes["protocol_params"] = PROTOCOLS.get(cfg.protocol).parse_params(cfg.protocol_params)
    if cfg.task_params:
        changes["task_params"] = task_params_of(cfg.task, cfg.task_params)
    checked = copy.copy(cfg)  # not replace(): a stored run id stays as stored (from_dict)
    for key, value in changes.items():
        object.__setattr__(checked, key, value)
    return checked


__all__ = ["checked_run"]
