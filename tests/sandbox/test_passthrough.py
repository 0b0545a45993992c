"""What a sandbox sees of the host beyond Python (issue 31, items 2 and 6).

Unit checks of the bind plan (never a home directory or ``/``), and real sandboxes: a
toolchain directory and the data folder are readable and not writable, variables arrive.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from basevolve.records import Isolation
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.sandbox.passthrough import _toolchains, request_env

PROBE = '''import os, subprocess


def main():
    out = {}
    for name in ("data", "tool"):
        path = os.environ["PROBE_" + name.upper()]
        out[name + "_read"] = sorted(os.listdir(path))
        try:
            open(os.path.join(path, "written.txt"), "w").write("x")
            out[name + "_write"] = "written"
        except OSError as exc:
            out[name + "_write"] = type(exc).__name__
    out["tool_run"] = subprocess.run(["probe-tool-31"], capture_output=True,
                                     text=True).stdout.strip()
    out["tmp"] = os.environ["TMPDIR"] == os.getcwd()
    return out
'''


def test_bind_plan_skips_homes_roots_and_relative_entries(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    prefix = tmp_path / "opt" / "tool"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    monkeypatch.setenv("HOME", str(home))
    path = ":".join(["relative/bin", "/", str(home), str(tmp_path), "/usr/bin",
                     str(prefix / "bin"), str(home / "bin")])
    binds, entries, env = _toolchains(path, None)
    shown = dict(binds)
    assert str(home) not in shown and str(tmp_path) not in shown and "/" not in shown
    assert str(prefix / "bin") in shown and str(prefix) in shown  # a prefix with its lib/
    assert str(home / "bin") in shown  # a folder inside the home is fine, the home is not
    assert "/usr/bin" not in shown  # already visible
    assert env["PATH"].startswith("/usr/local/bin:/usr/bin:/bin:")
    assert "relative/bin" not in entries and env["CARGO_NET_OFFLINE"] == "true"


def test_request_env_names_the_data_path_per_isolation(tmp_path):
    cfg = SandboxConfig(env=(("A", "1"),), data_dir=str(tmp_path))
    assert request_env(cfg, Isolation.BWRAP) == {"A": "1", "BASEVOLVE_DATA": "/data"}
    assert request_env(cfg, Isolation.RLIMITS)["BASEVOLVE_DATA"] == str(tmp_path)
    assert "PATH" not in request_env(SandboxConfig(), Isolation.BWRAP)  # no toolchains asked


@pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap not installed")
def test_toolchain_and_data_are_read_only_in_the_sandbox(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.csv").write_text("1,2\n")
    tool = tmp_path / "tools" / "bin"
    tool.mkdir(parents=True)
    script = tool / "probe-tool-31"
    script.write_text("#!/bin/sh\necho tool-ran\n")
    script.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{tool}")
    cfg = SandboxConfig(workers=1, memory_mb=768, isolation="bwrap", toolchains=True,
                        data_dir=str(data), env=(("PROBE_DATA", "/data"),
                                                 ("PROBE_TOOL", str(tool))))
    with SandboxPool(cfg) as pool:
        result = pool.run(PROBE, "main", timeout_s=60)
    assert result.status.value == "ok", (result.error, result.stderr)
    got = result.value
    assert got["data_read"] == ["rows.csv"] and got["data_write"] in ("OSError", "PermissionError")
    assert got["tool_read"] == ["probe-tool-31"] and got["tool_write"] != "written"
    assert got["tool_run"] == "tool-ran" and got["tmp"] is True
    assert not (data / "written.txt").exists() and not (tool / "written.txt").exists()
    assert Path(script).read_text().startswith("#!/bin/sh")
