"""Isolated execution of untrusted programs (issue 2, section 3).

Public surface::

    from basevolve.sandbox import SandboxPool, SandboxConfig
    with SandboxPool(SandboxConfig(workers=2)) as pool:      # SandboxPool() = defaults
        result = pool.run(code, "construct_packing", timeout_s=10.0)   # -> ExecResult
        result = await pool.arun(code, "construct_packing", timeout_s=10.0)
        pool.isolation                                        # Isolation.BWRAP / RLIMITS

What a program gets (docs/running.md, "Threat model", says what each level holds):

* it is exec'd as a module named ``program`` (an ``if __name__ == "__main__":`` block
  does not run) in a fresh ``fork()`` of a warm worker that pre-imported numpy, scipy and
  scipy.optimize; its entry function is called with no arguments;
* working directory ``/tmp/run`` (empty, private, on a ``tmpfs_mb`` tmpfs), no-new-privs,
  rlimits on address space, CPU seconds, open files, file size and processes; as root an
  unprivileged uid of its own (its slot's uid in a block leased per pool);
* ``memory_mb`` for the whole evaluation, all its processes together: a memory cgroup
  per worker slot where one is writable (:mod:`~basevolve.sandbox.cgroups`), else the
  worker's process-tree watcher; an evaluation over it is ``crashed``, "out of memory";
* a seccomp filter (:mod:`~basevolve.sandbox.seccomp`): no namespaces, no mounts, no IP
  sockets, no tracing;
* with bubblewrap (as root, or unprivileged in a user namespace): no network, its own
  pid/ipc/uts namespaces (hostname ``sandbox``), read-only ``/usr`` and Python
  installation only, a generated ``/etc/passwd`` listing just ``root`` and ``sandbox``,
  and an environment of locale/thread variables only (``OPENBLAS_NUM_THREADS=1`` etc.);
* in the ``rlimits`` fallback (loudly warned): the same environment, a detached worker,
  Landlock where the kernel has it, and as root a private network namespace.

What comes back (:class:`basevolve.records.ExecResult`): ``ok`` with ``value`` rebuilt
in the parent from JSON and ``.npy`` bytes (nested lists/tuples/dicts with str keys,
numbers, str, None, numeric/bool ndarrays; never unpickled), or ``error`` (the program
raised, called ``sys.exit``, has no entry function, or left processes behind),
``timeout``, ``crashed`` (killed by a signal, out of memory, or exited without a value)
and ``bad_output`` (not plain data), each with ``error`` stating why; stdout/stderr
truncated to ``output_limit_bytes``; the isolation level; the seconds it ran.
:attr:`SandboxPool.protections` lists what protects the pool's programs.
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
