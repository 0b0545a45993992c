"""``--env`` / ``--env-secret`` / ``--data``: what a run passes into its sandbox (issue 31, item 6).

OpenEvolve evaluators read environment variables (``RICH_FEEDBACK``, ``DATA_ROOT``, ...)
and data folders; basevolve's sandbox clears the environment and shows no host files,
so a run names what it passes:

* ``--env NAME=VALUE`` or ``--env NAME`` (the value from basevolve's own environment):
  name and value are stored in the run's config (``RunConfig.env``), so ``--resume``
  passes them again by itself;
* a name that looks secret (it contains ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD``,
  in any case) is refused by ``--env``; ``--env-secret NAME`` passes it, with its value
  read from the environment at the start **and at every resume**.  Only the name is
  stored (``RunConfig.env_secret``); a resume without it exported stops with one line;
* ``--data DIR``: the folder is bound read-only at ``/data`` in the sandbox
  (``BASEVOLVE_DATA`` holds the path to use); its absolute path is stored and must
  still exist on resume.  The task directory's own size cap stays: data goes here.

This module only checks and resolves (config is data); the sandbox side is
:mod:`basevolve.sandbox.passthrough`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from basevolve.errors import ConfigError

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# set by the sandbox itself (sandbox/_prepare.py, sandbox/passthrough.py)
RESERVED = frozenset({"PATH", "HOME", "TMPDIR", "CARGO_HOME", "RUSTUP_HOME",
                      "CARGO_NET_OFFLINE", "BASEVOLVE_DATA", "PYTHONHASHSEED"})
MAX_VALUE_CHARS = 32_768
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def looks_secret(name: str) -> bool:
    """``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, case-insensitive."""
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def _check_name(name: Any, flag: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{flag} {name!r}: a variable name is letters, digits and _ "
                          "(not starting with a digit), e.g. --env DATA_ROOT=/data")
    if name in RESERVED:
        raise ConfigError(f"{flag} {name}: the sandbox sets {name} itself; pass another name")
    return name


def parse_env(given: Sequence[str] | None, secret: Sequence[str] | None,
              environ: Mapping[str, str] | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
    """``--env`` and ``--env-secret`` as given: (name -> value stored, secret names)."""
    environ = os.environ if environ is None else environ
    secrets = tuple(dict.fromkeys(_check_name(n, "--env-secret") for n in secret or ()))
    env: dict[str, str] = {}
    for item in given or ():
        name, has_value, value = item.partition("=")
        _check_name(name, "--env")
        if name in secrets:
            if has_value:
                raise ConfigError(f"--env {name}=...: a secret's value is read from your "
                                  f"environment, never from the command line: export {name} "
                                  f"and pass --env-secret {name} alone")
            continue  # --env NAME --env-secret NAME: the secret
        if looks_secret(name):
            raise ConfigError(f"--env {name}: the name looks secret (it contains "
                              f"{'/'.join(SECRET_WORDS)}) and --env values are stored with "
                              f"the run; pass --env-secret {name} to send it without storing "
                              "its value")
        if not has_value:
            if name not in environ:
                raise ConfigError(f"--env {name}: {name} is not set in your environment; "
                                  f"export it or give --env {name}=VALUE")
            value = environ[name]
        env[name] = value
    for name in secrets:
        if name not in environ:
            raise ConfigError(f"--env-secret {name}: {name} is not set in your environment; "
                              "export it first (its value is never stored)")
    check_env(env, secrets)
    return env, secrets


def check_env(env: Any, secrets: Any) -> None:
    """The stored shape of ``RunConfig.env`` / ``env_secret`` (also from a store)."""
    if not isinstance(env, dict):
        raise ConfigError(f"env must be a mapping of NAME to VALUE, got {env!r}")
    for name, value in env.items():
        _check_name(name, "--env")
        if looks_secret(name):
            raise ConfigError(f"--env {name}: the name looks secret; use --env-secret {name}")
        if not isinstance(value, str) or "\0" in value or len(value) > MAX_VALUE_CHARS:
            raise ConfigError(f"--env {name}: the value must be text without NUL bytes, at "
                              f"most {MAX_VALUE_CHARS} characters")
    if not isinstance(secrets, tuple | list):
        raise ConfigError(f"env_secret must be a list of names, got {secrets!r}")
    for name in secrets:
        _check_name(name, "--env-secret")
        if name in env:
            raise ConfigError(f"{name} is given both by --env and --env-secret; keep one")


def check_data(data: Any) -> None:
    """``RunConfig.data``: None or an absolute path (existence is checked at start)."""
    if data is not None and not (isinstance(data, str) and os.path.isabs(data)
                                 and "\0" not in data):
        raise ConfigError(f"--data {data!r} must be the absolute path of a folder")


def data_dir(given: str) -> str:
    """``--data DIR`` as stored: the absolute, resolved path of an existing folder."""
    path = os.path.realpath(os.path.expanduser(given))
    if not os.path.isdir(path):
        raise ConfigError(f"--data {given!r} is not a folder; give the folder the evaluator "
                          "reads (it is mounted read-only at /data in the sandbox)")
    return path


def resolve(env: Mapping[str, str], secrets: Sequence[str], data: str | None, run_id: str,
            environ: Mapping[str, str] | None = None
            ) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """What the sandbox gets, at the start or a resume: (name, value) pairs and the data
    folder.  A secret not exported, or a data folder gone, is one ConfigError line."""
    environ = os.environ if environ is None else environ
    pairs = list(env.items())
    for name in secrets:
        if name not in environ:
            raise ConfigError(f"run {run_id!r} passes the secret variable {name} into its "
                              f"sandbox (--env-secret {name}), whose value is never stored: "
                              f"export {name} and run again")
        pairs.append((name, environ[name]))
    if data is not None and not os.path.isdir(data):
        raise ConfigError(f"run {run_id!r} mounts the data folder {data!r} (--data), which "
                          "no longer exists; put it back at that path and run again")
    return tuple(pairs), data


__all__ = ["RESERVED", "SECRET_WORDS", "check_data", "check_env", "data_dir", "looks_secret",
           "parse_env", "resolve"]
