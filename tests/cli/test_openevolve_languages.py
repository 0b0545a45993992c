"""OpenEvolve task directories in Rust and C++ (and R), end to end (issue 31, items 2 and 11).

Fixtures written for these tests (tests/data/openevolve/rust_distinct, cpp_distinct):
``initial_program.rs`` / ``.cpp`` with ``//`` EVOLVE-BLOCK markers, ``config.yaml`` with
``language`` and ``file_suffix``, and a Python ``evaluator.py`` that builds the candidate
with ``cargo`` (offline) or ``g++`` inside the sandbox.  Each run goes against the
repo's test server with exactly C calls.  Compiling is slow on a loaded 2-core box, so
the runs are few and their limits generous; a missing toolchain skips with its reason.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer

HERE = Path(__file__).resolve().parents[1] / "data" / "openevolve"
needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None,
                                 reason="cargo is not on PATH (install Rust with rustup)")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="g++ is not on PATH (apt-get install g++)")
needs_r = pytest.mark.skipif(shutil.which("Rscript") is None,
                             reason="Rscript is not on PATH (apt-get install r-base-core)")

RUST_ALL = textwrap.dedent("""\
    // EVOLVE-BLOCK-START
    fn choose() -> Vec<u32> {
        (1..=10).collect()
    }
    // EVOLVE-BLOCK-END

    fn main() {
        let picked: Vec<String> = choose().iter().map(|x| x.to_string()).collect();
        println!("{}", picked.join(" "));
    }
    """)
RUST_BROKEN = RUST_ALL.replace("(1..=10).collect()", "(1..=10).collect() +")
RUST_CRATE = "// cargo-deps: rand = \"0.8\"\n" + RUST_ALL
CPP_ALL = textwrap.dedent("""\
    #include <iostream>
    #include <vector>

    // EVOLVE-BLOCK-START
    std::vector<int> choose() {
        std::vector<int> v;
        for (int i = 1; i <= 10; ++i) v.push_back(i);
        return v;
    }
    // EVOLVE-BLOCK-END

    int main() {
        for (int x : choose()) std::cout << x << " ";
        std::cout << std::endl;
        return 0;
    }
    """)
CPP_HALF = CPP_ALL.replace("i <= 10", "i <= 5")


def reply(code: str, tag: str) -> str:
    return f"Here is the improved program.\n```{tag}\n{code}```\n"


def children(store: Path) -> list[dict]:
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(
            "SELECT code, score, valid, error, artifacts_json FROM programs "
            "WHERE call_id IS NOT NULL ORDER BY seq")]
    finally:
        con.close()


def run_dir(tmp_path: Path, task: str, replies: list[str]) -> tuple[dict, list[dict], list]:
    store, out = tmp_path / "s.sqlite", tmp_path / "out"
    with LLMTestServer(replies) as srv:
        code = main(["run", "--task", str(HERE / task), "--budget", str(len(replies)),
                     "--params", "1e9", "--base-url", srv.base_url, "--max-in-flight", "1",
                     "--store", str(store), "--run-id", "lang", "--out", str(out), "--json"])
        requests = list(srv.requests)
    assert code == 0
    return {"store": store, "out": out}, children(store), requests


@needs_cargo
def test_rust_directory_runs_end_to_end(tmp_path, capsys):
    paths, kids, requests = run_dir(tmp_path, "rust_distinct", [
        reply(RUST_ALL, "rust"), reply(RUST_BROKEN, "rust"), reply(RUST_CRATE, "rs")])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and len(requests) == 3  # exactly C
    assert summary["status"] == "finished" and summary["best_score"] == 1.0
    system, user = requests[0]["messages"][0]["content"], requests[0]["messages"][-1]["content"]
    assert "Rust program" in system and "```rust" in user  # the prompt names the language
    assert "// EVOLVE-BLOCK-START" in user
    best, broken, crate = kids
    assert best["score"] == 1.0 and best["code"].strip() == RUST_ALL.strip()
    assert broken["score"] == 0.0
    assert json.loads(broken["artifacts_json"])["metric.error"].startswith("error")
    crate_error = json.loads(crate["artifacts_json"])["metric.error"]  # offline: at once
    assert crate["score"] == 0.0 and "no matching package named `rand`" in crate_error
    best_file = paths["out"] / "best_program.rs"  # the evolved file keeps its suffix
    assert best_file.read_text().strip() == RUST_ALL.strip()


@needs_gxx
def test_cpp_directory_runs_end_to_end(tmp_path, capsys):
    paths, kids, requests = run_dir(tmp_path, "cpp_distinct", [
        reply(CPP_HALF, "c++"), reply(CPP_ALL, "cpp")])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 2 and len(requests) == 2
    assert "C++ program" in requests[0]["messages"][0]["content"]
    assert "```cpp" in requests[0]["messages"][-1]["content"]
    assert [k["score"] for k in kids] == [0.5, 1.0] and all(k["valid"] for k in kids)
    assert (paths["out"] / "best_program.cpp").read_text().strip() == CPP_ALL.strip()


R_PROGRAM = """# EVOLVE-BLOCK-START
choose <- function() {
  c(1, 2)
}
# EVOLVE-BLOCK-END
cat(choose(), "\\n")
"""
R_EVALUATOR = """import subprocess


def evaluate(program_path):
    run = subprocess.run(["Rscript", program_path], capture_output=True, text=True,
                         timeout=100)
    if run.returncode != 0:
        return {"combined_score": 0.0, "error": run.stderr.strip()[:300]}
    numbers = {int(float(x)) for x in run.stdout.split()}
    return {"combined_score": len(numbers & set(range(1, 11))) / 10}
"""


@needs_r
def test_r_directory_runs_end_to_end(tmp_path, capsys):
    task = tmp_path / "r_distinct"
    task.mkdir()
    (task / "initial_program.r").write_text(R_PROGRAM)
    (task / "evaluator.py").write_text(R_EVALUATOR)
    (task / "config.yaml").write_text('language: "r"\nfile_suffix: ".r"\n'
                                      "evaluator:\n  timeout: 120\n")
    better = R_PROGRAM.replace("c(1, 2)", "1:10")
    store = tmp_path / "r.sqlite"
    with LLMTestServer([reply(better, "r")]) as srv:
        assert main(["run", "--task", str(task), "--budget", "1", "--params", "1e9",
                     "--base-url", srv.base_url, "--store", str(store), "--json",
                     "--out", str(tmp_path / "out")]) == 0
        assert "```r" in srv.requests[0]["messages"][-1]["content"]
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 1 and summary["best_score"] == 1.0
    assert (tmp_path / "out" / "best_program.r").exists()
