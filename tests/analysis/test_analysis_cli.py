"""``basevolve analyze`` end to end in a real subprocess: JSON keys, exit 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from basevolve.analysis.synthetic import synthetic_study
from basevolve.cli import main

FAST = ["--resamples", "50", "--shuffles", "50", "--gate-shuffles", "50"]


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The same CLI entry point in-process (fast); the subprocess tests cover the real binary."""
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "basevolve", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("analyze")
    st = synthetic_study(np.random.default_rng(2), budgets=(8, 16, 32), seeds=4)
    out = {}
    for key in ("runs", "trajectories", "children"):
        out[key] = root / f"{key}.csv"
        st[key].to_csv(out[key], index=False)
    return out


def test_json_document_has_the_contract_keys(files) -> None:
    proc = cli(
        "analyze",
        "--input",
        str(files["runs"]),
        "--trajectories",
        str(files["trajectories"]),
        "--json",
        "--thresholds",
        "0.5,0.9",
        *FAST,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {"summary", "envelope", "bilinear", "gate", "thresholds"} <= set(doc)
    assert {"task", "model", "method", "mean", "se", "ci_low", "ci_high", "iqm", "n"} <= set(
        doc["summary"][0]
    )
    assert {
        "task",
        "model",
        "n_cells",
        "beta0",
        "a",
        "b",
        "c",
        "r2",
        "p_c",
        "m0_r2",
        "m2_r2",
        "m3_r2",
        "m4_r2",
        "p_f_m2",
        "p_f_m3",
        "p_f_m4",
    } <= set(doc["bilinear"][0])
    assert {"task", "model", "budget", "v_t1", "v_max", "pen_bon", "p"} <= set(doc["gate"][0])
    assert {r["tau"] for r in doc["thresholds"]} == {0.5, 0.9}
    # NaN -> null: the 0.9 threshold is never reached by some method
    assert any(r["step"] is None for r in doc["thresholds"])
    assert "NaN" not in proc.stdout


def test_same_seed_same_numbers_and_tables_print(files, capsys) -> None:
    a = run_main(capsys, "analyze", "--input", str(files["runs"]), "--json", "--seed", "4", *FAST)
    b = run_main(capsys, "analyze", "--input", str(files["runs"]), "--json", "--seed", "4", *FAST)
    assert a[0] == 0 and a[1] == b[1]
    code, text, _ = run_main(capsys, "analyze", "--input", str(files["runs"]), *FAST)
    assert code == 0 and "Capability gate" in text and "Bilinear fit" in text


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda df: df.drop(columns=["budget"]), "missing column(s) budget"),
        (lambda df: df.assign(fitness=["x"] * len(df)), "'fitness' must be numeric"),
        (lambda df: df.iloc[0:0], "empty"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    files, tmp_path: Path, capsys, mutate, message: str
) -> None:
    import pandas as pd

    bad = tmp_path / "bad.csv"
    mutate(pd.read_csv(files["runs"])).to_csv(bad, index=False)
    code, _, err = run_main(capsys, "analyze", "--input", str(bad), *FAST)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("task,model\ncp,m\n")
    proc = cli("analyze", "--input", str(bad))
    assert proc.returncode == 2 and "missing column(s)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_missing_file_and_missing_store_exit_2(tmp_path: Path, capsys) -> None:
    code, _, err = run_main(capsys, "analyze", "--input", str(tmp_path / "none.csv"))
    assert code == 2 and "does not exist" in err
    code, _, err = run_main(
        capsys, "report", "--store", str(tmp_path / "none.sqlite"), "--out", str(tmp_path)
    )
    assert code == 2 and "does not exist" in err
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--input", str(tmp_path / "x.csv"), "--thresholds", "a,b"])
    assert exc.value.code == 2 and "--thresholds" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--seed", "-1"], "seed must be a non-negative integer"),
        (["--resamples", "0"], "resamples must be >= 1"),
        (["--ceiling", "nan"], "ceiling must be in (0, 1]"),
    ],
)
def test_bad_option_values_exit_2_with_one_line(files, capsys, option, message) -> None:
    """Regression (--seed -1): numpy's SeedSequence raised a ValueError traceback."""
    code, _, err = run_main(capsys, "analyze", "--input", str(files["runs"]), *FAST, *option)
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_undefined_fits_are_explained_in_the_printed_tables(tmp_path: Path, capsys) -> None:
    """One budget, equal fitness: the fits are NaN and the text output says why (the
    JSON document keeps null)."""
    rows = ["task,model,protocol,allocator,arms,budget,depth,breadth,seed,fitness,flops"]
    rows += [
        f"cp,m,greedy,single,1,8,{d},{8 // d},{s},0.5,1e12" for d in (1, 2, 4, 8) for s in (0, 1)
    ]
    runs = tmp_path / "one_budget.csv"
    runs.write_text("\n".join(rows) + "\n")
    code, out, err = run_main(capsys, "analyze", "--input", str(runs), *FAST)
    assert code == 0 and "Traceback" not in err
    assert "note: NaN = Eq. 2 cannot be fitted" in out
    assert "note: NaN = the pooled line needs" in out
