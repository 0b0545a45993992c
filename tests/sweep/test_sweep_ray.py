"""The same grid through the Ray executor on a local cluster (``ray.init(num_cpus=2)``).

Test-server replies are a function of each request's seed (``seeded_packing_reply``)
and a call's seed is a function of the run seed and call index, so a run's results do
not depend on timing: the Ray executor must give every run the same results as the
local executor, import each into the one store with exactly C calls, and keep the
endpoint's cluster-wide limit.
"""

from __future__ import annotations

import pytest
from _sweep_helpers import RUNS, ledger

from basevolve.store import RunStore
from basevolve.store.transfer import export_run
from basevolve.sweep import load_sweep, run_sweep
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_executor_matches_local(tmp_path, cluster, grid_file):
    results = {}
    for executor in ("local", "ray"):
        db = tmp_path / f"{executor}.sqlite"
        with LLMTestServer(seeded_packing_reply, latency_s=0.3) as srv:
            cfg = grid_file(srv.base_url)
            res = run_sweep(cfg, db, executor=executor, live=False,
                            scratch_dir=tmp_path / "scratch")
            assert res.failed == []
            assert srv.peak_in_flight == 16
            assert res.endpoints[srv.base_url.rstrip("/")]["peak"] == 16
            assert len(srv.requests) == sum(r.config.budget for r in res.sweep.runs)
        results[executor] = ledger(db)
    local, remote = results["local"], results["ray"]
    assert len(remote) == RUNS and sorted(remote) == sorted(local)
    for rid, want in local.items():
        got = remote[rid]
        assert got["status"] == "finished" and got["counted"] == want["budget"]
        assert got["best"] == want["best"] and got["scores"] == want["scores"]
        assert got["solutions"] == want["solutions"] == 1  # every table travels
    assert not list((tmp_path / "scratch").glob("*.sqlite"))  # merged, then dropped
    # the imported run is a whole ledger: same rows as one run of the local store
    some = next(iter(local))
    with RunStore(tmp_path / "local.sqlite") as a, RunStore(tmp_path / "ray.sqlite") as b:
        ra, rb = export_run(a, some), export_run(b, some)
    for table in ("calls", "programs", "allocations", "attempts"):
        assert len(ra[table]) == len(rb[table]), table


def test_killed_driver_resumes_from_node_scratch(tmp_path, cluster, grid_file):
    """A run left in a node's scratch store (driver gone) is resumed there, not redone."""
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = grid_file(srv.base_url)
        sweep = load_sweep(cfg)
        scratch = tmp_path / "scratch"
        first = sweep.runs[0]
        # A node's scratch store holding a *finished* run the driver never imported
        # (the driver died between the run's end and the import).
        one = tmp_path / "one.sqlite"
        run_sweep(cfg, one, executor="local", live=False)
        scratch.mkdir()
        (scratch / f"{first.run_id}.sqlite").write_bytes(one.read_bytes())
        sent_before = len(srv.requests)
        db = tmp_path / "sweep.sqlite"
        res = run_sweep(cfg, db, executor="ray", live=False, scratch_dir=scratch)
        assert res.failed == []
        sent = len(srv.requests) - sent_before
    total = sum(r.config.budget for r in sweep.runs)
    assert sent == total - first.config.budget  # the scratch run cost no new call
    got = ledger(db)
    assert sorted(got) == sorted(r.run_id for r in sweep.runs)
    assert all(got[r.run_id]["counted"] == r.config.budget for r in sweep.runs)
