"""The setup steps of scripts/main.sh and scripts/test.sh (issue 24, items 10 and 11).

scripts/installed.py decides whether pip must run (a rerun of main.sh printed 71
"Requirement already satisfied" lines); scripts/system_deps.sh installs bubblewrap and
chromium with apt-get when they are missing (test.sh did not install chromium, so the
dashboard's real-browser tests skipped silently on a fresh machine).  Both run for real
here: the checker against this venv and scratch pyproject files, the shell script with a
recording apt-get first on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import installed  # noqa: E402  (scripts/installed.py, not a package)


def test_this_venv_has_basevolve_and_the_dev_extra() -> None:
    assert installed.missing(["dev"]) is None


def _tree(tmp_path: Path, edit) -> Path:
    """A scratch checkout: its own pyproject.toml, src/ the real one (a symlink)."""
    root = tmp_path / "tree"
    root.mkdir(parents=True)
    (root / "src").symlink_to(ROOT / "src")
    text = (ROOT / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(edit(text))
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"]
    return root


def _with_extra(body: str):
    return lambda text: text.replace("[project.optional-dependencies]\n",
                                     f"[project.optional-dependencies]\nprobe = [{body}]\n")


@pytest.mark.parametrize("body, expected", [
    ('"definitely-not-installed-xyz>=1"', "definitely-not-installed-xyz is not installed"),
    ('"pytest<1"', "'pytest<1' is required"),
    ('"definitely-not-installed-xyz; python_version < \'3\'"', None),  # marker: not needed
    ('"pytest>=1"', None),
])
def test_requirements_of_an_extra(tmp_path, body, expected) -> None:
    root = _tree(tmp_path, _with_extra(body))
    why = installed.missing(["probe"], root)
    assert why == expected if expected is None else expected in why, why


def test_another_version_an_unknown_extra_and_another_tree(tmp_path) -> None:
    root = _tree(tmp_path, lambda t: t.replace('version = "0.1.0"', 'version = "9.9.9"', 1))
    assert "this tree is 9.9.9" in installed.missing([], root)
    assert "no extra 'nope'" in installed.missing(["nope"], _tree(tmp_path / "b", str))
    elsewhere = tmp_path / "c"
    elsewhere.mkdir()
    shutil.copy(ROOT / "pyproject.toml", elsewhere / "pyproject.toml")
    assert "not from this tree" in installed.missing([], elsewhere)
    renamed = _tree(tmp_path / "d", lambda t: t.replace('basevolve = "basevolve.cli:main"',
                                                        'basevolve = "basevolve.cli:other"'))
    assert "'basevolve' command" in installed.missing([], renamed)


def test_the_command_line_is_one_line_and_an_exit_status() -> None:
    ok = subprocess.run([sys.executable, str(ROOT / "scripts" / "installed.py"), "dev"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout == "" and ok.stderr == ""
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "installed.py"), "nope"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and bad.stdout == "pyproject.toml has no extra 'nope'\n"


# ------------------------------------------------------------------ system_deps.sh
def _fake_apt(tmp_path: Path) -> tuple[Path, Path]:
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    apt = bin_dir / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    apt.chmod(0o755)
    log.touch()
    log.chmod(0o666)
    return bin_dir, log


def _deps(bin_dir: Path, *pairs: str, user: list[str] | None = None):
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run([*(user or []), "bash", str(ROOT / "scripts" / "system_deps.sh"),
                           *pairs], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(os.geteuid() != 0, reason="the apt-get path is taken as root only")
def test_missing_commands_are_installed_with_one_update(tmp_path) -> None:
    bin_dir, log = _fake_apt(tmp_path)
    done = _deps(bin_dir, "sh:dash", "no-such-cmd-1:pkg-a", "no-such-cmd-2:pkg-b")
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq pkg-a pkg-b"]
    assert "installing pkg-a pkg-b" in done.stderr


def test_nothing_happens_when_everything_is_there(tmp_path) -> None:
    bin_dir, log = _fake_apt(tmp_path)
    done = _deps(bin_dir, "sh:dash", "bash:bash")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert log.read_text() == ""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to run the script as another user")
def test_not_root_says_what_is_missing_and_installs_nothing(tmp_path) -> None:
    bin_dir, log = _fake_apt(tmp_path)
    tmp_path.chmod(0o755)
    done = _deps(bin_dir, "no-such-cmd-1:chromium",
                 user=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
    assert done.returncode == 0, done.stderr
    assert "chromium missing (not root with apt-get)" in done.stderr
    assert log.read_text() == ""


def test_the_scripts_use_it_for_bubblewrap_and_chromium() -> None:
    """test.sh installs chromium as .ci/run does; main.sh needs bubblewrap only."""
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    main_sh = (ROOT / "scripts" / "main.sh").read_text()
    assert "bash scripts/system_deps.sh bwrap:bubblewrap chromium:chromium" in test_sh
    assert "bash scripts/system_deps.sh bwrap:bubblewrap" in main_sh
    assert "scripts/installed.py" in test_sh and "scripts/installed.py" in main_sh


def test_readme_names_every_extra_test_sh_installs():
    """Issue 37, item 8: the README said test.sh installs dev, docs, local and
    local-small, and left out ray."""
    root = Path(__file__).resolve().parents[1]
    script = (root / "scripts" / "test.sh").read_text()
    extras = re.search(r"pip install -q -e '\.\[([^\]]+)\]'", script).group(1).split(",")
    readme = (root / "README.md").read_text()
    said = readme[readme.index("Set up and run the tests"):readme.index("bash scripts/test.sh")]
    assert extras and all(f"`{e}`" in said for e in extras), (extras, said)
