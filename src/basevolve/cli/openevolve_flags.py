"""``--program``, ``--evaluator``, ``--config``: the files of an OpenEvolve task (issue 31).

Shared by ``basevolve run``, ``tasks --show`` and ``evaluate``: the three names go
beside ``--task DIR``, or alone (then the evaluator's folder is the task directory), and
become the directory's ``task_params`` (:mod:`basevolve.tasks.openevolve_files`), so a
run stores them and ``--resume`` loads the same files.
"""

from __future__ import annotations

import argparse
from typing import Any

from basevolve.errors import ConfigError
from basevolve.tasks.openevolve_files import task_spec

FILE_FLAGS = ("program", "evaluator", "config")


def add_file_flags(parser: argparse.ArgumentParser) -> None:
    """The three flags, named as OpenEvolve's command line names the files."""
    parser.add_argument("--program", metavar="FILE",
                        help="OpenEvolve task: the initial program (default "
                             "initial_program.py in --task DIR)")
    parser.add_argument("--evaluator", metavar="FILE",
                        help="OpenEvolve task: the evaluator (default evaluator.py in --task "
                             "DIR; without --task its folder is the task directory)")
    parser.add_argument("--config", metavar="FILE",
                        help="OpenEvolve task: the config (default config.yaml or config.yml "
                             "in --task DIR)")


def task_and_params(task: str | None, args: argparse.Namespace,
                    params: dict[str, Any] | None = None) -> tuple[str | None, dict[str, Any]]:
    """``--task`` and the file flags as (task spec, task_params with the file names)."""
    spec, named = task_spec(task, getattr(args, "program", None),
                            getattr(args, "evaluator", None), getattr(args, "config", None))
    params = dict(params or {})
    twice = sorted(set(params) & set(named))
    if twice:
        raise ConfigError(f"--{twice[0]} and --task-param {twice[0]}= name the same file; "
                          "give one")
    return spec, {**params, **named}


__all__ = ["FILE_FLAGS", "add_file_flags", "task_and_params"]
