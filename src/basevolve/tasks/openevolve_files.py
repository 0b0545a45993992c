"""Which files of an OpenEvolve task are its program, evaluator and config (issue 31, item 1).

OpenEvolve's command line names them (``openevolve-run.py PROGRAM EVALUATOR --config
CONFIG``), so its examples do not all use one layout: sldbench's program is
``init_program.py`` and its configs live under ``configs/``, lm_eval's evaluator is
``evaluator_stub.py`` beside a ``config.yml``, circle_packing has one config per phase.
basevolve takes the same three names:

* ``--program FILE``, ``--evaluator FILE``, ``--config FILE`` beside ``--task DIR``: a
  relative name is looked up in DIR first, then in the current folder;
* the three alone (no ``--task``): the task directory is the evaluator's folder (what
  OpenEvolve puts on ``sys.path``);
* unnamed: ``initial_program.py``, ``evaluator.py`` and ``config.yaml`` (else
  ``config.yml``; else no config) inside DIR.

The evaluator must lie inside the task directory: the directory is what each
evaluation's sandbox receives, and the evaluator imports its neighbours from there.  The
program and the config may lie anywhere (they are read here, as text).  The names travel
as the run's ``task_params`` (keys :data:`NAMING_KEYS`, absolute paths), so the CLI, the
Python API (``basevolve.run(DIR, ..., task_params={"program": ...})``) and ``--resume``
load a task one way.  A missing file is one line: which file was looked for, and how to
name yours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError, TaskError
from basevolve.tasks.program_language import initial_file

DEFAULT_PROGRAM = "initial_program.py"
DEFAULT_EVALUATOR = "evaluator.py"
DEFAULT_CONFIGS = ("config.yaml", "config.yml")
NAMING_KEYS = ("program", "evaluator", "config")
FLAGS = {"program": "--program", "evaluator": "--evaluator", "config": "--config"}


@dataclass(frozen=True, slots=True)
class TaskFiles:
    """The three files of a task directory, as found (absolute paths)."""

    directory: Path
    program: Path
    evaluator: Path
    config: Path | None

    def relative(self, path: Path | None) -> str | None:
        """``path`` relative to the directory (POSIX), or None when it lies outside."""
        if path is None:
            return None
        try:
            return path.relative_to(self.directory).as_posix()
        except ValueError:
            return None

    @property
    def evaluator_name(self) -> str:
        """The evaluator's path inside the directory (what the sandbox imports)."""
        rel = self.relative(self.evaluator)
        assert rel is not None  # checked by find_files
        return rel

    def label(self, path: Path | None) -> str:
        """How messages name a file: relative inside the directory, else absolute."""
        return "" if path is None else (self.relative(path) or str(path))

    @property
    def config_name(self) -> str:
        return self.label(self.config) or DEFAULT_CONFIGS[0]

    def names(self) -> tuple[str, str, str]:
        """For the run's identity: which files play which part."""
        return (self.label(self.program), self.evaluator_name, self.label(self.config))


def _fail(directory: Path, problem: str) -> TaskError:
    return TaskError(f"task directory {str(directory)!r}: {problem}")


def locate(directory: Path, given: str | Path) -> Path:
    """A named file: absolute as given; relative, in ``directory`` first, then here."""
    path = Path(given).expanduser()
    if path.is_absolute():
        return path.resolve()
    inside = directory / path
    return inside.resolve() if inside.exists() else path.resolve()


def _candidates(directory: Path, suffix: str, exclude: set[str]) -> list[str]:
    """Top-level files that may be what the user meant (for the refusal's hint)."""
    try:
        found = sorted(p.name for p in directory.iterdir()
                       if p.is_file() and p.suffix == suffix and p.name not in exclude)
    except OSError:
        return []
    return found[:5]


def _hint(names: list[str], flag: str) -> str:
    if not names:
        return ""
    return f" (found {', '.join(names)}: e.g. {flag} {names[0]})"


def _named(directory: Path, key: str, given: str | Path, folder_ok: bool = False) -> Path:
    path = locate(directory, given)
    if not path.exists():
        raise _fail(directory, f"{FLAGS[key]} {str(given)!r} does not exist (looked in the "
                    "task directory, then in the current folder)")
    if path.is_dir() and not folder_ok:
        raise _fail(directory, f"{FLAGS[key]} {str(given)!r} is a folder; name a file")
    if path.is_dir() and not path.is_relative_to(directory.resolve()):
        raise _fail(directory, f"{FLAGS[key]} {str(given)!r} is a folder outside the task "
                    "directory; a program of several files must lie inside it (each "
                    "evaluation's sandbox gets the task directory)")
    return path


def find_files(directory: Path, *, program: str | Path | None = None,
               evaluator: str | Path | None = None, config: str | Path | None = None,
               folder_ok: bool = False) -> TaskFiles:
    """The program, evaluator and config of ``directory`` (see the module docstring);
    ``folder_ok``: the program may be a folder inside it (a program of several files)."""
    if config is not None:
        config_path: Path | None = _named(directory, "config", config)
    else:
        config_path = next((directory / n for n in DEFAULT_CONFIGS
                            if (directory / n).exists()), None)
    evaluator_path = (directory / DEFAULT_EVALUATOR if evaluator is None
                      else _named(directory, "evaluator", evaluator))
    if program is not None:
        program_path = _named(directory, "program", program, folder_ok)
    else:
        # initial_program<file_suffix> of the config, else the one initial_program.*
        # (issue 31, item 2: programs in other languages)
        default = initial_file(directory, config_path)
        program_path = directory / default
        if not program_path.is_file():
            found = [n for n in _candidates(directory, Path(default).suffix,
                                            {evaluator_path.name})
                     if "prog" in n.lower() or "init" in n.lower()]
            raise _fail(directory, f"no initial program: looked for {default}; name "
                        f"yours with --program FILE{_hint(found, '--program')}")
    if evaluator is not None:
        try:
            evaluator_path.relative_to(directory)
        except ValueError:
            raise _fail(directory, f"--evaluator {str(evaluator)!r} lies outside the task "
                        "directory; each evaluation's sandbox gets the task directory only, "
                        "so give --task the folder that holds the evaluator (or leave "
                        "--task out: then the evaluator's folder is the task)") from None
    elif not evaluator_path.is_file():
        found = _candidates(directory, ".py", {program_path.name})
        found = [n for n in found if "eval" in n.lower()] or found
        raise _fail(directory, f"no evaluator: looked for {DEFAULT_EVALUATOR}; name "
                    f"yours with --evaluator FILE{_hint(found, '--evaluator')}")
    return TaskFiles(directory, program_path, evaluator_path, config_path)


def naming(directory: Path, params: Mapping[str, Any] | None) -> dict[str, str]:
    """The file names among a task directory's ``task_params``; refuse any other key."""
    params = dict(params or {})
    unknown = sorted(k for k in params if k not in NAMING_KEYS)
    if unknown:
        raise ConfigError(f"task directory {str(directory)!r} takes no --task-param "
                          f"{', '.join(unknown)}; name its files with --program, "
                          "--evaluator and --config")
    bad = [k for k, v in params.items() if not isinstance(v, str | Path) or not str(v)]
    if bad:
        raise ConfigError(f"task directory {str(directory)!r}: {FLAGS[bad[0]]} must be a "
                          f"file path, got {params[bad[0]]!r}")
    return {k: str(v) for k, v in params.items() if v is not None}


def absolute_naming(directory: Path, params: Mapping[str, Any] | None) -> dict[str, str]:
    """:func:`naming` with every path made absolute (stored with the run, so
    ``--resume`` from another folder loads the same files)."""
    return {k: str(_named(directory, k, v, folder_ok=k == "program"))
            for k, v in naming(directory, params).items()}


def task_spec(task: str | None, program: str | None, evaluator: str | None,
              config: str | None) -> tuple[str | None, dict[str, str]]:
    """``--task`` and the three file flags as (task spec, task_params).

    Without ``--task``, the evaluator's folder is the task directory (OpenEvolve's
    ``PROGRAM EVALUATOR`` form), so --program and --evaluator are both needed then.
    """
    given = {k: v for k, v in zip(NAMING_KEYS, (program, evaluator, config), strict=True)
             if v is not None}
    if task is None and given:
        missing = [FLAGS[k] for k in ("program", "evaluator") if k not in given]
        if missing:
            raise ConfigError(f"without --task, name the program and the evaluator: missing "
                              f"{' and '.join(missing)} (or give --task DIR)")
        evaluator_path = Path(given["evaluator"]).expanduser().resolve()
        if not evaluator_path.is_file():
            raise TaskError(f"--evaluator {given['evaluator']!r} does not exist or is not a "
                            "file")
        task = str(evaluator_path.parent)
    if given and task is not None and not Path(task).expanduser().is_dir():
        raise ConfigError(f"--program, --evaluator and --config name the files of an "
                          f"OpenEvolve task directory; --task {task!r} is not a directory")
    if task is None:
        return None, {}
    directory = Path(task).expanduser().resolve()
    return task, absolute_naming(directory, given) if given else {}


__all__ = ["DEFAULT_CONFIGS", "DEFAULT_EVALUATOR", "DEFAULT_PROGRAM", "NAMING_KEYS",
           "TaskFiles", "absolute_naming", "find_files", "locate", "naming", "task_spec"]
