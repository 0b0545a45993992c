"""docs/tasks.md's "Try it offline" block runs as written (issue 24, item 17).

The block is taken from the page, not copied here, so the page cannot drift from what
works: it is run by bash (``set -e``) in a scratch folder holding a link to the
repository's ``examples/``, with two free ports in place of the page's 8765 and 8766.
Then the store must hold the two runs the page describes.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tasks.md"


def _block() -> str:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Try it offline", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"^```bash\n(.*?)^```$", section, flags=re.S | re.M)
    assert m, "no bash block in the section"
    return m.group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_offline_commands_of_docs_tasks_run(tmp_path: Path) -> None:
    script = _block()
    assert "8765" in script and "8766" in script and "BASEVOLVE_TEST_CANDIDATES" in script
    for port in ("8765", "8766"):
        script = script.replace(port, str(_free_port()))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    con = sqlite3.connect(tmp_path / "offline.sqlite")
    try:
        runs = con.execute("SELECT run_id, status, protocol, budget FROM runs "
                           "ORDER BY created_at").fetchall()
        assert [(r[1], r[2], r[3]) for r in runs] == [("finished", "greedy", 4),
                                                       ("finished", "openevolve", 6)]
        first, second = (r[0] for r in runs)
        best, valid, children = con.execute(
            "SELECT max(score), sum(valid), count(*) FROM programs WHERE run_id = ? "
            "AND is_initial = 0", (first,)).fetchone()
        assert best == 1.0 and (valid, children) == (2, 4)  # every other reply: no program
        for run_id, calls in ((first, 4), (second, 6)):
            n = con.execute("SELECT count(*) FROM calls WHERE run_id = ? AND counted = 1",
                            (run_id,)).fetchone()[0]
            assert n == calls
    finally:
        con.close()
    assert (tmp_path / "offline" / "replies" / "best_program.py").is_file()
    assert "finished" in done.stdout  # basevolve runs --store offline.sqlite
