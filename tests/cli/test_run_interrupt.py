"""Issue 12, items 6 and 8: `basevolve run` says at once what it does, and Ctrl-C (SIGINT
to a real subprocess) ends with the command that continues the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from run_support import wait_for

from basevolve.testing import LLMTestServer

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_sigint_prints_resume_command_and_resume_finishes(tmp_path, sigint_handled):
    store = tmp_path / "s.sqlite"
    env = dict(os.environ, PYTHONPATH=SRC)
    err_path = tmp_path / "err.txt"
    with LLMTestServer(latency_s=30.0) as srv:  # calls stay in flight until Ctrl-C
        cmd = [sys.executable, "-m", "basevolve", "run", "--task", "min_max_distance",
               "--budget", "4", "--depth", "2", "--base-url", srv.base_url, "--params", "1.5e9", "--store",
               str(store), "--run-id", "ctrlc", "--out", str(tmp_path / "o")]
        with err_path.open("w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
            try:
                text = wait_for(err_path, "in flight 2", 60.0)  # both calls of generation 1 sent
                assert "run ctrlc started: 4 LLM calls (T=2 x N=2)" in text
                assert f"store {store}" in text
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        err_text = err_path.read_text()
        assert proc.returncode == 130, err_text
        assert (f"interrupted — continue with `basevolve run --resume ctrlc --store {store}`"
                in err_text)
        assert "Traceback" not in err_text

        srv.latency_s = 0.0  # the printed command continues the run to exactly C calls
        done = subprocess.run([sys.executable, "-m", "basevolve", "run", "--resume", "ctrlc",
                               "--store", str(store), "--out", str(tmp_path / "o"), "--json"],
                              capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["calls_completed"] == 4 and summary["status"] == "finished"
    assert "run ctrlc resumed: 0 of 4 LLM calls already done" in done.stderr
