"""``basevolve models`` and ``basevolve llm-check`` (issue 3, parts 5 and 8)."""

from __future__ import annotations

import json

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer


def test_models_json_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"qwen3-8b", "llama-3.1-8b", "embedded", "embedded-small"} <= names
    assert all(
        {"served_id", "active_params", "total_params", "context_length"} <= r.keys() for r in rows
    )


def test_models_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("NAME") and "Qwen/Qwen3-14B" in out
    assert "MAX TOKENS" in out.splitlines()[0]  # per model (issue 23): Qwen3 thinks
    assert "16000" in next(line for line in out.splitlines() if "Qwen/Qwen3-8B" in line)
    assert "4096" in next(line for line in out.splitlines() if "Llama-3.1-8B" in line)


def test_llm_check_json_against_the_test_server(capsys: pytest.CaptureFixture[str]) -> None:
    with LLMTestServer(
        replies=["ready"], prompt_tokens=20, cached_tokens=5, completion_tokens=2
    ) as srv:
        rc = main(
            [
                "llm-check",
                "--model",
                "org/m",
                "--params",
                "2B",
                "--base-url",
                srv.base_url,
                "--json",
            ]
        )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["prompt_tokens"], out["cached_tokens"], out["completion_tokens"]) == (20, 5, 2)
    assert out["flops"] == 2 * 2e9 * (20 - 5 + 2)
    assert out["ok"] and out["text"] == "ready" and out["latency_s"] > 0


def test_llm_check_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    with LLMTestServer(replies=["ready"]) as srv:
        assert main(["llm-check", "--model", "qwen3-8b", "--base-url", srv.base_url]) == 0
    out = capsys.readouterr().out
    for label in ("latency", "tokens", "cached", "flops"):
        assert label in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["llm-check", "--model", "who/knows", "--base-url", "http://127.0.0.1:9/v1"], "--params"),
        (["llm-check", "--model", "qwen3-8b", "--base-url", "not a url"], "malformed base URL"),
        (["llm-check", "--model", "x", "--params", "lots", "--base-url", "http://h/v1"], "'lots'"),
        (["llm-check", "--base-url", "http://127.0.0.1:9/v1"], "cannot reach the LLM endpoint"),
        (["llm-check", "--model", "qwen3-8b"], "--base-url"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_llm_check_without_model_uses_the_one_served_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 37, item 7: `llm-check --base-url URL` picks the served model as `run` does
    (GET /models, the catalog's parameter count) instead of refusing without --model."""
    with LLMTestServer(replies=["ready"], model_ids=["Qwen/Qwen3-8B"]) as srv:
        assert main(["llm-check", "--base-url", srv.base_url, "--json"]) == 0
        assert [r["model"] for r in srv.requests] == ["Qwen/Qwen3-8B"]
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["served_id"] == "Qwen/Qwen3-8B" and out["model"] == "qwen3-8b"


@pytest.mark.parametrize(("ids", "needle"), [
    (("a/One", "b/Two"), "serves 2 models (a/One, b/Two); pick one with --model"),
    ((), "does not list its models"),
    (("my-org/Custom-7B",), "--params"),
])
def test_llm_check_without_model_refuses_like_run(
    ids: tuple[str, ...], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with LLMTestServer(replies=["ready"], model_ids=ids) as srv:
        assert main(["llm-check", "--base-url", srv.base_url]) == 2
        assert srv.requests == []  # refused before any call
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_closed_stdout_pipe_is_not_a_traceback() -> None:
    """Regression: ``basevolve models --json | head -c 100`` printed a BrokenPipeError
    traceback once the reader went away; a vanished reader is not an error of ours."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "basevolve", "models", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert code == 141  # 128 + SIGPIPE, what a shell reports for a killed writer


def test_api_key_is_in_no_store_output_or_export_of_a_real_run(
    tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 3: the key is sent to the server, but a whole `basevolve run` (with failed,
    retried attempts recorded) leaves it in no byte of the store, its export, the run's
    output folder, or what the command printed."""
    sentinel = "sk-SENTINEL-run-3c1d"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    store, out = tmp_path / "s.sqlite", tmp_path / "out"
    with LLMTestServer(latency_s=0.0) as srv:
        srv.inject("http_500")
        srv.inject("garbage")
        code = main(
            [
                "run",
                "--task",
                "min_max_distance",
                "--budget",
                "3",
                "--depth",
                "3",
                "--model",
                "qwen3-1.7b",
                "--base-url",
                srv.base_url,
                "--store",
                str(store),
                "--out",
                str(out),
                "--json",
            ]
        )
        assert code == 0
        assert any(sentinel in a for a in srv.authorizations)  # the key was really used
    assert (
        main(["export", "--store", str(store), "--format", "csv", "--out", str(tmp_path / "x")])
        == 0
    )
    printed = capsys.readouterr()
    assert sentinel not in printed.out + printed.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert store in files and any(p.suffix == ".csv" for p in files)
    leaked = [str(p) for p in files if sentinel.encode() in p.read_bytes()]
    assert leaked == []
