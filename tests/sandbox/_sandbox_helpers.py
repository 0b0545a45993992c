"""Helpers shared by the sandbox tests (a uniquely named module, importable by pytest's rootdir-less layout)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxPool

HAVE_BWRAP = shutil.which("bwrap") is not None and os.geteuid() == 0
needs_bwrap = pytest.mark.skipif(not HAVE_BWRAP, reason="needs bubblewrap and root")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="uid drop and uid sweeps need root")


# A program whose grandchild leaves the session and tries to outlive the evaluation.
DAEMON_PROGRAM = (
    "import os, time\n"
    "def main():\n"
    "    if os.fork() == 0:\n"
    "        os.setsid()\n"
    "        if os.fork() == 0:\n"
    "            time.sleep(30)\n"
    "            open('/tmp/run/marker', 'w').write('alive')\n"
    "        os._exit(0)\n"
    "    time.sleep(0.2)\n"
    "    return 'done'\n"
)


def sandbox_uid_processes(uids: range | None) -> list[int]:
    """Host-side view: pids of live processes running as any sandbox slot uid."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        uid = int(fields.get("Uid", "0").split()[0])
        if uids is not None and uid in uids and fields.get("State", "").split()[0] != "Z":
            found.append(int(name))
    return found


def assert_healthy(pool: SandboxPool) -> None:
    """The pool still evaluates ordinary programs after a hostile one."""
    for _ in range(pool.workers):
        r = pool.run("def f():\n    return 41 + 1\n", "f", timeout_s=10)
        assert r.status is ExecStatus.OK, r
        assert r.value == 42
