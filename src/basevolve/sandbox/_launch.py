"""Start one sandbox worker: join its memory cgroup, detach if asked, report, exec.

Runs OUTSIDE the sandbox as ``python -I -S -B _launch.py CONFIG`` (standard library only,
no site: it must start fast and see nothing of the caller), with the clean environment
the worker gets.  Why a separate step before the worker or bubblewrap (issue 22):

* **memory per evaluation** (item 17): the process must be in its slot's cgroup before it
  starts anything, so every process of the worker's tree is counted; writing ``0`` to
  ``cgroup.procs`` moves the writer itself, which needs no pid and no race;
* **detached** (item 16, the rlimits fallback): the worker is forked once more and this
  process exits, so the worker's parent is init (or a subreaper), not basevolve: a program
  walking ``getppid()`` finds no process holding the caller's environment;
* the first frame on stdout (``{"launched": pid}``) tells the parent the host pid of the
  process that becomes the worker (or bubblewrap), which it needs to kill a detached tree.

CONFIG is JSON: ``{"argv": [...], "cgroup_procs": path or null, "detach": bool}``.
"""

import json
import os
import struct
import sys


def main() -> None:
    cfg = json.loads(sys.argv[1])
    target = cfg.get("cgroup_procs")
    if target:
        try:
            with open(target, "w") as fh:
                fh.write("0")
        except OSError as exc:
            sys.stderr.write(f"could not join the memory cgroup {target}: {exc}\n")
            os._exit(71)
    if cfg.get("detach") and os.fork() > 0:
        os._exit(0)  # the worker is re-parented to init (or the nearest subreaper)
    report = json.dumps({"launched": os.getpid()}).encode()
    os.write(1, struct.pack(">I", len(report)) + report)
    argv = cfg["argv"]
    try:
        os.execve(argv[0], argv, dict(os.environ))
    except OSError as exc:
        sys.stderr.write(f"could not start {argv[0]}: {exc}\n")
        os._exit(72)


if __name__ == "__main__":
    main()
