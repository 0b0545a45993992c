"""The sandbox's fallback warning reaches a CLI user once, clean (it is logged, and the
CLI's log handler prints it; Python's warning display printed it a second time, raw)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_fallback_warning_is_printed_once(tmp_path: Path) -> None:
    program = tmp_path / "p.py"
    program.write_text("import random\ndef spread_points():\n"
                       "    return [[i / 11, (i % 3) / 2] for i in range(12)]\n")
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on PATH: the fallback is used
    done = subprocess.run([sys.executable, "-m", "basevolve", "evaluate", "--task",
                           str(ROOT / "examples" / "spread_points.py"), str(program)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "rlimits" in done.stdout  # the evaluation ran at the fallback level
    assert done.stderr.count("falling back") == 1, done.stderr
    assert "RuntimeWarning" not in done.stderr
