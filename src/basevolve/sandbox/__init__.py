"""Isolated execution of untrusted programs (issue 2, section 3).

Public surface::

    from basevolve.sandbox import SandboxPool, SandboxConfig
    with SandboxPool(SandboxConfig(workers=2)) as pool:      # SandboxPool() = defaults
        result = pool.run(code, "construct_packing", timeout_s=10.0)   # -> ExecResult
        result = await pool.arun(code, "construct_packing", timeout_s=10.0)
        pool.isolation                                        # Isolation.BWRAP / RLIMITS

What a program gets:

* it is exec'd as a module named ``program`` (an ``if __name__ == "__main__":`` block
  does not run) in a fresh ``fork()`` of a warm worker that pre-imported numpy, scipy and
  scipy.optimize; its entry function is called with no arguments;
* working directory ``/tmp/run`` (empty, private, on a ``tmpfs_mb`` tmpfs), run as an
  unprivileged uid (its slot's uid in a block leased per pool when it runs as root), no-new-privs,
  rlimits on address space, CPU seconds, open files, file size and processes;
* with bubblewrap: no network, its own pid/ipc/uts namespaces (hostname ``sandbox``),
  read-only ``/usr`` and Python installation only, a generated ``/etc/passwd`` listing
  just ``root`` and ``sandbox``, and an environment of locale/thread variables only
  (``OPENBLAS_NUM_THREADS=1`` etc.).

What comes back (:class:`basevolve.records.ExecResult`): ``ok`` with ``value`` rebuilt
in the parent from JSON and ``.npy`` bytes (nested lists/tuples/dicts with str keys,
numbers, str, None, numeric/bool ndarrays; never unpickled), or ``error`` (the program
raised, called ``sys.exit``, has no entry function, or left processes behind),
``timeout``, ``crashed`` (killed by a signal or exited without a value) and
``bad_output`` (not plain data), each with ``error`` stating why; stdout/stderr
truncated to ``output_limit_bytes``; the isolation level; the seconds it ran.

Known limit: rlimits are per process, so a program that forks up to ``max_processes``
children can use up to ``max_processes * memory_mb`` of address space in total (no
cgroup is used); lower ``max_processes`` where that matters.
"""

from __future__ import annotations

from basevolve.errors import SandboxError
from basevolve.sandbox.codec import decode_result, interpret
from basevolve.sandbox.config import IsolationMode, SandboxConfig
from basevolve.sandbox.pool import SandboxPool

__all__ = [
    "IsolationMode",
    "SandboxConfig",
    "SandboxError",
    "SandboxPool",
    "decode_result",
    "interpret",
]
