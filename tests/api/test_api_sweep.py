"""basevolve.sweep: a small grid to exact budgets, outside and inside a running loop;
a second call finds everything finished and spends nothing; bad input as the CLI."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

import basevolve
from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

GRID = """\
[sweep]
name = "api"

[defaults]
task = "circle_packing"
model = "test-model"
params = 1e9
base_url = "{url}"
seeds = 1

[[grid]]
budget = 2
depth = "powers-of-2"

[[grid]]
budget = 2
allocator = "ucb"
arms = 2
"""


def _counted(store) -> dict[str, int]:
    con = sqlite3.connect(store)
    try:
        return dict(con.execute("SELECT r.run_id, (SELECT sum(counted) FROM calls c WHERE "
                                "c.run_id = r.run_id) FROM runs r WHERE r.status = 'finished'"))
    finally:
        con.close()


def test_sweep_outside_then_inside_a_loop(tmp_path):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = tmp_path / "grid.toml"
        cfg.write_text(GRID.format(url=srv.base_url))
        result = basevolve.sweep(cfg, store=store, progress=False)
        assert result.failed == [] and len(result.outcomes) == 3  # T = 1, 2 and BaSE
        assert set(_counted(store).values()) == {2} and len(srv.requests) == 6

        async def cell():
            return basevolve.sweep(str(cfg), store=store, progress=False)

        again = asyncio.run(cell())  # nothing left to do: every run is skipped
        assert all(o.get("skipped") for o in again.outcomes.values())
        assert len(srv.requests) == 6
    runs = basevolve.analyze(store=store, resamples=20, shuffles=20, gate_shuffles=20)
    assert runs["summary"]["n"].sum() == 3


def test_sweep_bad_input(tmp_path, capsys):
    cfg = tmp_path / "grid.toml"
    cfg.write_text(GRID.format(url="http://127.0.0.1:9/v1"))
    assert main(["sweep", str(cfg), "--store", str(tmp_path / "s.sqlite"),
                 "--executor", "nope"]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("basevolve: error: ")
    with pytest.raises(basevolve.ConfigError) as info:
        basevolve.sweep(cfg, store=tmp_path / "s.sqlite", executor="nope")
    assert str(info.value) == cli
    with pytest.raises(basevolve.ConfigError, match="config must be the path"):
        basevolve.sweep(42)  # type: ignore[arg-type]
    missing = tmp_path / "none.toml"
    assert main(["sweep", str(missing), "--store", str(tmp_path / "s.sqlite")]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("basevolve: error: ")
    with pytest.raises(basevolve.ConfigError) as info:
        basevolve.sweep(missing, store=tmp_path / "s.sqlite")
    assert str(info.value) == cli
    assert not (tmp_path / "s.sqlite").exists()
