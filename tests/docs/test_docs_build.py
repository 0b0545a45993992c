"""The documentation site builds with `mkdocs build --strict` (broken links, missing
references and pages missing from the nav fail it), and the API reference renders an
entry for every public name.  Needs the `docs` extra (scripts/test.sh installs it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import basevolve

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    api = (site / "api" / "index.html").read_text()
    documented = re.findall(r"^::: ([\w.]+)\s*$", (ROOT / "docs" / "api.md").read_text(),
                            flags=re.M)
    rendered = set(re.findall(r'id="(basevolve\.[\w.]+)"', api))
    assert set(documented) <= rendered  # every directive rendered (an entry with its id)
    assert set(basevolve.__all__) == {p.rpartition(".")[2] for p in documented}
    assert "write_report" not in api  # basevolve.report shows the function, not the package
    assert ":func:" not in api and ":class:" not in api  # roles rendered as code
    index = (site / "index.html").read_text()
    assert "scripts/main.sh" in index and "scripts/test.sh" in index  # the two commands
    assert (site / "example-report" / "index.html").is_file()
    for page in ("running", "python", "allocators", "analysis", "design", "benchmarks"):
        assert (site / page / "index.html").is_file(), page
