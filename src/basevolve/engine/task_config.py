"""An OpenEvolve task directory's config, applied to the run it starts (issue 31, item 5).

Some of OpenEvolve's settings are run settings in basevolve: the config's
``random_seed`` is the run's ``--seed``, ``prompt.include_artifacts`` and
``evaluator.enable_artifacts`` are ``--feedback artifacts``, ``diff_based_evolution`` is
the protocol's ``mode`` (``--protocol-param mode=diff``; greedy and openevolve have one).
A flag the user gives wins over the config, and the run says so.  The changed values are
stored with the run (its config), so ``--resume`` continues with them.

One code path for the command line and the Python API: both call
:func:`apply_task_config` with the names of the settings the user gave, and print or
pass on the lines it returns (the warning naming the config's unapplied keys first).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any

from basevolve.config import RunConfig
from basevolve.protocols import PROTOCOLS
from basevolve.tasks.openevolve_keys import ConfigOptions


def apply_task_config(cfg: RunConfig, task: Any, given: Collection[str]
                      ) -> tuple[RunConfig, list[str]]:
    """``cfg`` with the task directory's run settings, and the lines to show the user.

    ``given``: the RunConfig fields (and ``mode`` for ``--protocol-param mode=``) the
    user set explicitly; those are never changed.  Any other task: ``cfg`` unchanged.
    """
    options = getattr(task, "options", None)
    if not isinstance(options, ConfigOptions):
        return cfg, []
    name = options.config_name
    lines = [line for line in (options.warning(),) if line]
    lines += list(getattr(getattr(task, "settings", None), "notes", ()))
    changes: dict[str, Any] = {}
    seed = options.random_seed
    if seed is not None and "seed" in given and cfg.seed != seed:
        lines.append(f"--seed {cfg.seed} wins over {name} random_seed {seed}")
    elif seed is not None and "seed" not in given:
        changes["seed"] = seed
        lines.append(f"seed {seed} from {name} random_seed (--seed overrides it)")
    feedback = "artifacts" if options.include_artifacts else "none"
    if "feedback" not in given:
        changes["feedback"] = feedback
    elif cfg.feedback != feedback:
        lines.append(f"--feedback {cfg.feedback} wins over {name} include_artifacts/"
                     f"enable_artifacts ({feedback})")
    mode = "diff" if options.diff_based_evolution else "full"
    declared = {p.name: p for p in PROTOCOLS.get(cfg.protocol).PARAMS}
    if "mode" in declared and mode in (declared["mode"].choices or ()):
        if "mode" not in cfg.protocol_params and "mode" not in given:
            changes["protocol_params"] = {**cfg.protocol_params, "mode": mode}
        elif cfg.protocol_params.get("mode") != mode:
            lines.append(f"--protocol-param mode={cfg.protocol_params.get('mode')} wins over "
                         f"{name} diff_based_evolution ({mode})")
    else:
        lines.append(f"{name} diff_based_evolution ({mode}) is not applied: protocol "
                     f"{cfg.protocol!r} has its own reply format (greedy and openevolve "
                     "follow it)")
    return (dataclasses.replace(cfg, **changes) if changes else cfg), lines


def configure_run(cfg: RunConfig, given: Collection[str], notify: Callable[[str], None],
                  task: Any | None = None) -> RunConfig:
    """:func:`apply_task_config` for ``cfg.task`` (loaded unless ``task`` is given), its
    lines passed to ``notify``; ``mode`` counts as given when the protocol params set it."""
    if task is None:
        from basevolve.tasks import load_task

        task = load_task(cfg.task, cfg.task_params)
    cfg, lines = apply_task_config(cfg, task, {*given, *({"mode"} & set(cfg.protocol_params))})
    for line in lines:
        notify(line)
    return cfg


__all__ = ["apply_task_config", "configure_run"]
