"""Frozen, validated configuration of the sandbox pool (docs/design.md, style rule 2).

Defaults follow issue 2, section 3: one warm worker per core, 2 GiB address space, a
64 MiB private tmpfs, rlimits on CPU seconds, open files, file size and processes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from enum import StrEnum

from basevolve.errors import ConfigError


class IsolationMode(StrEnum):
    """What the caller asks for; the level achieved is ``basevolve.records.Isolation``."""

    AUTO = "auto"  # bubblewrap when it starts (root or a user namespace), else rlimits (warned)
    BWRAP = "bwrap"  # bubblewrap or SandboxError
    RLIMITS = "rlimits"  # fork server without namespaces


DEFAULT_PRELOAD = ("numpy", "scipy", "scipy.optimize")
# Longest wall-clock limit one evaluation may have (a week).  Why a cap: select() and
# time arithmetic overflow near 1e10 s, and an overflow in the worker killed it, so the
# next, unrelated program was reported as crashed.  Longer limits are refused up front.
MAX_TIMEOUT_S = 7 * 24 * 3600.0


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """Limits and shape of a :class:`~basevolve.sandbox.SandboxPool`.

    ``memory_mb`` bounds one evaluation, all its processes together (a memory cgroup of
    ``memory_mb`` on top of the warm worker, else the worker's watcher; issue 22, item
    17) and each process's address space (``RLIMIT_AS``).
    ``cpu_seconds=None`` derives the CPU limit from each call's wall-clock timeout
    (``ceil(timeout_s) + 1``) so the wall clock, not the CPU limit, normally fires first.
    ``uid_base``: when running as root, each pool leases an exclusive block of uids at
    or above ``uid_base`` (:mod:`basevolve.sandbox.uids`) and worker slot ``i`` runs
    programs as the block's ``i``-th uid/gid; a distinct uid per slot, and per pool, keeps
    RLIMIT_NPROC (counted per uid by the kernel) and the leftover-process clean-up from
    touching other slots' or other pools' evaluations.
    """

    workers: int | None = None
    memory_mb: int = 2048
    cpu_seconds: int | None = None
    max_open_files: int = 256
    max_file_mb: int = 16
    max_processes: int = 64
    tmpfs_mb: int = 64
    max_evals_per_worker: int = 200
    output_limit_bytes: int = 64_000
    max_result_bytes: int = 64 * 1024 * 1024
    isolation: str = "auto"
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    startup_timeout_s: float = 120.0
    uid_base: int = 910_000
    # issue 31 (passthrough.py): the host's PATH toolchains read-only, variables, a data dir
    toolchains: bool = False
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold secrets
    data_dir: str | None = None

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ConfigError(
                f"SandboxConfig.workers={self.workers!r} must be >= 1 or None (= os.cpu_count())"
            )
        positive = {
            "memory_mb": self.memory_mb,
            "max_open_files": self.max_open_files,
            "max_file_mb": self.max_file_mb,
            "max_processes": self.max_processes,
            "tmpfs_mb": self.tmpfs_mb,
            "max_evals_per_worker": self.max_evals_per_worker,
            "output_limit_bytes": self.output_limit_bytes,
            "max_result_bytes": self.max_result_bytes,
        }
        if self.cpu_seconds is not None:
            positive["cpu_seconds"] = self.cpu_seconds
        for name, value in positive.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"SandboxConfig.{name}={value!r} must be a positive integer")
        if self.memory_mb < 256:
            raise ConfigError(
                f"SandboxConfig.memory_mb={self.memory_mb} is too small to run numpy/scipy; use >= 256"
            )
        if self.isolation not in {m.value for m in IsolationMode}:
            choices = ", ".join(m.value for m in IsolationMode)
            raise ConfigError(
                f"SandboxConfig.isolation={self.isolation!r} is unknown; choose one of {choices}"
            )
        for name, value in self.env:
            if not (isinstance(name, str) and name and "=" not in name and "\0" not in name
                    and isinstance(value, str) and "\0" not in value):
                raise ConfigError(f"SandboxConfig.env entry {name!r} must be a NAME (no '=')"
                                  " and a text value")
        if self.data_dir is not None and not (
                os.path.isabs(self.data_dir) and os.path.isdir(self.data_dir)):
            raise ConfigError(f"SandboxConfig.data_dir={self.data_dir!r} must be the absolute"
                              " path of an existing directory")
        if not (math.isfinite(self.startup_timeout_s) and self.startup_timeout_s > 0):
            raise ConfigError(
                f"SandboxConfig.startup_timeout_s={self.startup_timeout_s!r} must be > 0"
            )

    @property
    def n_workers(self) -> int:
        return self.workers if self.workers is not None else (os.cpu_count() or 1)

    def rlimits(self, timeout_s: float) -> dict[str, int]:
        """The per-evaluation rlimits, by ``resource`` constant name (applied in the child)."""
        cpu = self.cpu_seconds if self.cpu_seconds is not None else math.ceil(timeout_s) + 1
        mib = 1024 * 1024
        return {
            "RLIMIT_AS": self.memory_mb * mib,
            "RLIMIT_CPU": int(cpu),
            "RLIMIT_NOFILE": self.max_open_files,
            "RLIMIT_FSIZE": self.max_file_mb * mib,
            "RLIMIT_NPROC": self.max_processes,
            "RLIMIT_CORE": 0,
        }
