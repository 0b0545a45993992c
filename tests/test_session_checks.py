"""Session checks of tests/conftest.py (issue 24, items 11 and 12).

Item 11: skipped browser or bubblewrap tests end the session with a loud line.

Item 12: tests leave the repository root as they found it.

Runs that the tests started without ``--out`` wrote ``basevolve-out/RUN_ID`` into the
repository root.  tests/conftest.py now starts every test in a temporary folder and
fails the session when the root gained files; both are checked here, the session check
on a copy of the conftest in a scratch project (a real pytest in a subprocess).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from basevolve.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_a_test_does_not_start_in_the_repository(tmp_path) -> None:
    cwd = Path.cwd().resolve()
    assert cwd != ROOT and ROOT not in cwd.parents
    assert cwd != tmp_path.resolve()  # its own folder, not the test's tmp_path


def test_a_default_export_lands_outside_the_repository(tmp_path) -> None:
    """The CLI default (``--out basevolve-export``) is relative to the working folder."""
    store = tmp_path / "s.sqlite"
    from basevolve.store.sqlite import RunStore

    RunStore(store).close()
    assert main(["export", "--store", str(store)]) == 0
    written = (Path.cwd() / "basevolve-export" / "calls.csv").resolve()
    assert written.is_file() and ROOT not in written.parents


def _scratch_project(tmp_path: Path, body: str) -> Path:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "conftest.py", project / "tests" / "conftest.py")
    (project / "tests" / "test_it.py").write_text(body)
    return project


def _pytest(project: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           str(project / "tests")], cwd=project, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})


def test_the_session_fails_when_a_test_writes_into_the_root(tmp_path) -> None:
    project = _scratch_project(tmp_path, (
        "from pathlib import Path\n"
        "ROOT = Path(__file__).resolve().parents[1]\n"
        "def test_writes():\n"
        "    (ROOT / 'basevolve-out' / 'r').mkdir(parents=True)\n"
        "    (ROOT / 'basevolve-out' / 'r' / 'best_program.py').write_text('x')\n"))
    done = _pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "TESTS WROTE INTO THE REPOSITORY ROOT" in done.stdout
    assert "basevolve-out" in done.stdout


def test_a_rewritten_old_output_counts_too(tmp_path) -> None:
    project = _scratch_project(tmp_path, (
        "import os\n"
        "from pathlib import Path\n"
        "ROOT = Path(__file__).resolve().parents[1]\n"
        "def test_rewrites():\n"
        "    f = ROOT / 'basevolve-out' / 'r' / 'best_program.py'\n"
        "    f.write_text('y')\n"
        "    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))\n"))
    old = project / "basevolve-out" / "r"
    old.mkdir(parents=True)
    (old / "best_program.py").write_text("x")
    done = _pytest(project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "basevolve-out/r/best_program.py" in done.stdout


def test_the_session_passes_when_tests_write_into_tmp_path(tmp_path) -> None:
    project = _scratch_project(tmp_path, (
        "from pathlib import Path\n"
        "def test_writes(tmp_path):\n"
        "    Path('basevolve-out').mkdir()\n"  # relative: the test's own folder
        "    (tmp_path / 'x').write_text('x')\n"))
    done = _pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "REPOSITORY ROOT" not in done.stdout
    assert not (project / "basevolve-out").exists()


SKIPPING = (
    "import pytest\n"
    "def test_browser():\n"
    "    pytest.skip(\"browser tests need Debian's chromium (apt-get install -y chromium); "
    "none found\")\n"
    "@pytest.mark.skipif(True, reason='needs bubblewrap and root')\n"
    "def test_bwrap_a():\n"
    "    pass\n"
    "@pytest.mark.skipif(True, reason='needs bubblewrap')\n"
    "def test_bwrap_b():\n"
    "    pass\n"
    "def test_other():\n"
    "    pytest.skip('no writable memory cgroup here')\n"
    "def test_runs():\n"
    "    assert True\n"
)


def test_skipped_browser_and_bubblewrap_tests_are_said_loudly(tmp_path) -> None:
    project = _scratch_project(tmp_path, SKIPPING)
    done = _pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if "SKIPPED, not run" in line]
    assert len(lines) == 2, done.stdout
    assert "1 real-browser dashboard test(s) SKIPPED" in lines[0] and "chromium" in lines[0]
    assert "2 bubblewrap sandbox test(s) SKIPPED" in lines[1]
    assert "apt-get install -y bubblewrap" in lines[1]
    assert "cgroup" not in "\n".join(lines)  # other skips stay quiet


def test_no_loud_line_when_nothing_important_was_skipped(tmp_path) -> None:
    project = _scratch_project(tmp_path, "import pytest\n"
                                         "def test_other():\n"
                                         "    pytest.skip('no writable memory cgroup')\n")
    done = _pytest(project)
    assert done.returncode == 0 and "SKIPPED, not run" not in done.stdout, done.stdout
