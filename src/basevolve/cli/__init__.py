"""The ``basevolve`` command line.

Each sub-command lives in its own module under :mod:`basevolve.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (a callable taking the
parsed namespace and returning an exit code).  ``main`` turns every
:class:`~basevolve.errors.BasevolveError` into one line on stderr and a non-zero exit
(2 for user mistakes) without a traceback; argparse usage errors also exit 2.  So does
a store SQLite cannot read or write (damaged, disk full, locked:
:mod:`basevolve.store.failures`) and a disk that filled up while writing any file.

Only the named command's module is imported (issue 24, item 8): ``--version``, the
top-level ``--help`` and a mistyped command import none of them (the analysis commands
pull in statsmodels, pandas and scipy: ~1.5 s of CPU each start).  :data:`COMMANDS`
lists every command's one-line help so the top-level help needs no import; a test
checks it against what each module registers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sqlite3
import sys
import warnings
from collections.abc import Sequence

from basevolve.cli.signals import sigterm_as_interrupt
from basevolve.cli.suggest import suggestion
from basevolve.errors import BasevolveError
from basevolve.terminal import clean, install_clean_logging

# Sub-command modules, in the order they appear in --help.  A module that fails to
# import (e.g. an optional dependency is missing) is skipped with a note in --help
# rather than breaking every other command.
COMMAND_MODULES: tuple[str, ...] = (
    "basevolve.cli.run_cmd",
    "basevolve.cli.tasks_cmd",
    "basevolve.cli.models_cmd",
    "basevolve.cli.store_cmd",
    "basevolve.cli.replay_cmd",
    "basevolve.cli.analyze_cmd",
    "basevolve.cli.simulate_cmd",
    "basevolve.cli.sweep_cmd",
    "basevolve.cli.dashboard_cmd",
    "basevolve.cli.advise_cmd",
)


#: command -> (module that registers it, its one-line help), in --help order.  The help
#: must equal the module's own (tests/cli/test_cli_startup.py checks it).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("basevolve.cli.run_cmd", "run one fixed-budget evolution (or --resume one)"),
    "tasks": ("basevolve.cli.tasks_cmd", "list the built-in tasks, or --show one"),
    "evaluate": ("basevolve.cli.tasks_cmd", "score program files on a task in the sandbox"),
    "models": ("basevolve.cli.models_cmd", "list the model catalog"),
    "llm-check": ("basevolve.cli.models_cmd",
                  "send one short prompt and print latency, tokens and FLOPs"),
    "runs": ("basevolve.cli.store_cmd", "list the runs in a store"),
    "export": ("basevolve.cli.store_cmd", "write a store's tables as CSV or Parquet"),
    "replay": ("basevolve.cli.replay_cmd", "offline BaSE: bandits over logged greedy N=1 runs"),
    "analyze": ("basevolve.cli.analyze_cmd", "statistics of the paper from a store or runs table"),
    "report": ("basevolve.cli.analyze_cmd", "Markdown/LaTeX tables and figures into a folder"),
    "simulate-server": ("basevolve.cli.simulate_cmd",
                        "serve a simulated mutation LLM for a task (OpenAI protocol)"),
    "sweep": ("basevolve.cli.sweep_cmd",
              "run a grid of runs (resumable), show its --status, or `init` a preset"),
    "dashboard": ("basevolve.cli.dashboard_cmd", "serve a live, read-only web view of a run store"),
    "advise": ("basevolve.cli.advise_cmd",
               "recommend depth/breadth (and K, allocator) for a budget C"),
}


class _Parser(argparse.ArgumentParser):
    #: the command line being parsed (set by :func:`main`): where a suggestion looks
    argv: Sequence[str] = ()

    def error(self, message: str) -> None:  # one line, exit 2
        hint = suggestion(message, self, _Parser.argv)  # "did you mean" (issue 37)
        self.exit(2, f"basevolve: error: {message}{hint} (see `{self.prog} --help`)\n")


def build_parser(modules: Sequence[str] = COMMAND_MODULES, *,
                 lazy_for: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser with the sub-commands of ``modules`` (default: all of them).

    With ``lazy_for`` (the command line), only the module of the command it names is
    imported; every other command is a placeholder with its :data:`COMMANDS` help, so
    ``--help`` lists it and an unknown command is refused with the full list.
    """
    from basevolve import __version__

    parser = _Parser(
        prog="basevolve",
        description="Fixed-budget LLM-guided evolutionary program search.",
    )
    parser.add_argument("--version", action="version", version=f"basevolve {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    wanted = None if lazy_for is None else _named_module(lazy_for)
    for name in modules:
        if lazy_for is not None and name != wanted:
            for command, (module_name, text) in COMMANDS.items():
                if module_name == name:
                    sub.add_parser(command, help=text, add_help=False)
            continue
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # not written yet
            raise
        module.register(sub)
    return parser


def _named_module(argv: Sequence[str]) -> str | None:
    """The module of the command ``argv`` names: its first word not an option (the
    top-level parser has only -h/--help and --version, which take no value)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return COMMANDS[first][0] if first in COMMANDS else None


def main(argv: Sequence[str] | None = None, *,
         modules: Sequence[str] = COMMAND_MODULES) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(modules, lazy_for=argv)
    _Parser.argv = argv
    args = parser.parse_args(argv)
    install_clean_logging()  # a logged LLM retry quotes the server: printed clean
    # The sandbox's fallback warning is also logged, and the logger prints it (clean);
    # Python's own warning display would print it a second time, raw.
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"basevolve\.")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    with sigterm_as_interrupt():
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # inside the try: a closed pipe must surface here, not at exit
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except BasevolveError as exc:  # messages quote outside text: printed clean
        print(f"basevolve: error: {clean(exc)}", file=sys.stderr)
        return exc.exit_code
    except (sqlite3.Error, OSError) as exc:
        from basevolve.store.failures import NO_SPACE, kind_of, store_failure

        if (isinstance(exc, OSError) and exc.errno not in NO_SPACE) or kind_of(exc) == "other":
            raise  # only a damaged file, a full disk, a lock... is explained; a bug shows
        error = store_failure(exc, getattr(args, "store", None))
        print(f"basevolve: error: {clean(error)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("basevolve: interrupted", file=sys.stderr)
        return 130


def _reader_went_away() -> int:
    """stdout's reader closed the pipe (``basevolve models --json | head``).

    Why not a traceback: the user asked for less output, nothing failed.  stdout is
    pointed at /dev/null so the interpreter's final flush cannot raise again, and the
    exit status is the shell's for a writer killed by SIGPIPE (128 + 13).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout replaced by a non-file object
        pass
    return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
