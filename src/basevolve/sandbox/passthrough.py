"""What a sandbox may see of the host beyond Python: toolchains, variables, a data folder.

Issue 31, items 2 and 6.  An OpenEvolve evaluator of a Rust, C++ or R program (Python
itself) compiles and runs the program with the host's tools, inside the sandbox:

* **toolchains** (``SandboxConfig.toolchains``): every directory on basevolve's ``PATH``
  is bound read-only at the same path and put on the sandbox's ``PATH`` (after the
  system directories), with what such a directory needs: a ``bin`` folder whose parent
  holds ``lib`` (an installation prefix such as ``/opt/R/4.4``) brings the prefix; a
  directory holding ``rustup`` brings ``RUSTUP_HOME`` (the toolchains it dispatches
  to); Debian's ``/etc/alternatives`` links (``cc``, ``c++``) and R's ``/etc/R`` come
  along.  Never bound: ``/``, ``/etc``, ``/proc``, ``/sys``, ``/dev``, ``/tmp``, a home
  directory or a folder above one (a ``PATH`` entry like ``~`` would show its secrets),
  and relative entries.  Nothing of it is writable: ``cargo`` writes to ``CARGO_HOME``
  and its target folder, which ``_prepare.py`` puts in the evaluation's own directory;
  there is no network, and ``CARGO_NET_OFFLINE=true`` makes a crate download fail at
  once ("no matching package named ...") rather than after DNS retries.
* **variables** (``SandboxConfig.env``): ``--env`` names and values, added to every
  evaluation's environment (they travel in the request on the worker's pipe, never on
  a command line the host's other users could read with ``ps``).
* **data** (``SandboxConfig.data_dir``): ``--data DIR`` is bound read-only at
  :data:`DATA_MOUNT` (``/data``) under bubblewrap; ``BASEVOLVE_DATA`` holds the path the
  program should use in every mode (the host path in the rlimits fallback, where it is a
  Landlock read rule instead).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

from basevolve.records import Isolation
from basevolve.sandbox.config import SandboxConfig

DATA_MOUNT = "/data"
DATA_ENV = "BASEVOLVE_DATA"
# /etc folders toolchains under /usr read (no secrets in them): Debian's links for cc,
# c++, java, ...; R's configuration (/usr/lib/R/etc is a link to /etc/R)
TOOLCHAIN_ETC = ("/etc/alternatives", "/etc/R")
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")  # launch.minimal_env's PATH
_COVERED = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_NEVER = ("/", "/etc", "/proc", "/sys", "/dev", "/tmp", "/var", "/run", "/home", "/root")


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _homes() -> set[str]:
    homes = {os.path.realpath(os.path.expanduser("~"))}
    if os.environ.get("HOME"):
        homes.add(os.path.realpath(os.environ["HOME"]))
    return homes


def _allowed(real: str) -> bool:
    """A directory that may be bound read-only (see the module docstring)."""
    if real in _NEVER or any(_under(h, real) for h in _homes()):
        return False  # a home directory, or a folder above one
    return not any(_under(real, top) for top in ("/proc", "/sys", "/dev", "/etc"))


@functools.lru_cache(maxsize=8)
def _toolchains(path: str, rustup_home: str | None) -> tuple[tuple[tuple[str, str], ...],
                                                             tuple[str, ...], dict[str, str]]:
    binds: dict[str, str] = {}  # where it shows in the sandbox -> the host directory
    entries: list[str] = []
    env: dict[str, str] = {}
    for entry in path.split(":"):
        if not entry or not os.path.isabs(entry):
            continue
        entry = os.path.normpath(entry)
        real = os.path.realpath(entry)
        if not os.path.isdir(real) or not _allowed(real) or not _allowed(entry):
            continue
        if entry not in entries and entry not in SYSTEM_PATH:
            entries.append(entry)
        if any(_under(real, top) for top in _COVERED):
            continue  # already visible (the system directories are bound whole)
        binds[entry] = real
        parent = os.path.dirname(real)
        if (os.path.basename(real) == "bin" and os.path.isdir(os.path.join(parent, "lib"))
                and _allowed(parent) and parent != "/"):
            binds[parent] = parent  # an installation prefix: its lib/ and share/ too
        if os.path.exists(os.path.join(real, "rustup")):
            home = os.path.realpath(rustup_home or os.path.expanduser("~/.rustup"))
            if os.path.isdir(home) and _allowed(home):
                binds[home] = home
                env["RUSTUP_HOME"] = home
    if entries or binds:
        env["CARGO_NET_OFFLINE"] = "true"  # no network: a crate download fails at once
    env["PATH"] = ":".join([*SYSTEM_PATH, *entries])
    return tuple(sorted(binds.items())), tuple(entries), env


def toolchain_binds() -> tuple[tuple[str, str], ...]:
    """(sandbox path, host path) of each toolchain directory bound read-only."""
    return _toolchains(os.environ.get("PATH", ""), os.environ.get("RUSTUP_HOME"))[0]


def toolchain_env() -> dict[str, str]:
    """``PATH`` (system directories first, then the host's) and ``RUSTUP_HOME``."""
    return dict(_toolchains(os.environ.get("PATH", ""), os.environ.get("RUSTUP_HOME"))[2])


def read_binds(cfg: SandboxConfig) -> Iterator[tuple[str, str]]:
    """Every extra read-only bind of ``cfg`` (bubblewrap): toolchains, then the data."""
    if cfg.toolchains:
        for etc in TOOLCHAIN_ETC:
            if os.path.isdir(etc):
                yield etc, etc  # e.g. /usr/bin/cc -> /etc/alternatives/cc -> gcc
        yield from toolchain_binds()
    if cfg.data_dir is not None:
        yield DATA_MOUNT, cfg.data_dir


def read_paths(cfg: SandboxConfig) -> list[str]:
    """The host directories a fallback program may read (Landlock rules)."""
    return [host for _, host in read_binds(cfg)]


def request_env(cfg: SandboxConfig, isolation: Isolation | None) -> dict[str, str]:
    """The variables every evaluation of a pool with ``cfg`` gets (``_prepare.py``)."""
    env: dict[str, str] = toolchain_env() if cfg.toolchains else {}
    env.update(dict(cfg.env))
    if cfg.data_dir is not None:
        env[DATA_ENV] = DATA_MOUNT if isolation is Isolation.BWRAP else cfg.data_dir
    return env


__all__ = ["DATA_ENV", "DATA_MOUNT", "read_binds", "read_paths", "request_env",
           "toolchain_binds", "toolchain_env"]
