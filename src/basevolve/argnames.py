"""How a caller writes an option: a CLI flag, a Python keyword or a sweep-file key.

Why a module: the same value reaches a run from three places -- ``basevolve run
--params 8B``, ``basevolve.run(params="8B")`` and ``params = "8B"`` in a sweep file --
and a message about it must name the argument the way *that* caller wrote it (issue 24,
item 2: the API's error named ``--params`` to a Python caller, and a sweep file's error
named a CLI flag inside a TOML context).  Functions that check such a value take the
argument's spelling (``arg``) and render examples with :func:`spelled`.

Spellings (the convention every caller follows):

* ``"--params"``: a CLI flag -> ``--params 8e9``;
* ``"--task-param answer_params="``: a flag's ``KEY=`` -> ``--task-param answer_params=8e9``;
* ``"params="``: a Python keyword -> ``params=8e9``;
* ``"params"``: a sweep-file (TOML) key -> ``params = 8e9``.
"""

from __future__ import annotations

#: The run options' names on the command line / in Python (``base_url``, ``model``,
#: ``params``), in the order :func:`basevolve.engine.endpoints.model_for_endpoint` takes.
CLI_NAMES: tuple[str, str, str] = ("--base-url", "--model", "--params")
PYTHON_NAMES: tuple[str, str, str] = ("base_url=", "model=", "params=")
TOML_NAMES: tuple[str, str, str] = ("base_url", "model", "params")


def is_flag(arg: str) -> bool:
    """Whether ``arg`` is a command-line spelling (values are written unquoted there)."""
    return arg.startswith("--")


def spelled(arg: str, value: str) -> str:
    """``value`` given to ``arg`` as the caller writes it (see the module docstring)."""
    if arg.endswith("="):
        return f"{arg}{value}"
    if is_flag(arg):
        return f"{arg} {value}"
    return f"{arg} = {value}"


def quoted(arg: str, text: str) -> str:
    """A string value as the caller writes it: bare on a command line, else in quotes
    (``8B`` for ``--params``, ``"8B"`` for the keyword ``params=`` or a TOML key)."""
    return text if is_flag(arg) else f'"{text}"'


__all__ = ["CLI_NAMES", "PYTHON_NAMES", "TOML_NAMES", "is_flag", "quoted", "spelled"]
