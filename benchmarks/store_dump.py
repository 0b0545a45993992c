"""Is a single-objective run's store unchanged by a branch? (issue 36, item 1)

    PYTHONPATH=BASE/src  python benchmarks/store_dump.py run base.json
    PYTHONPATH=OTHER/src python benchmarks/store_dump.py run other.json
    python benchmarks/store_dump.py compare base.json other.json

``run`` makes two ``--deterministic`` single-objective runs (UCB over K = 3 with
``--reward improvement``, and greedy T = 6 x N = 4; MinMaxDist, C = 24, 4 calls in
flight) with the basevolve found on PYTHONPATH, against the repo's test server answering
each request by a hash of its messages and seed, and dumps every table of the store.
``compare`` says which tables differ, each table compared as a multiset of rows: times,
the store's path and the server's port aside (``attempts`` rows are written in arrival
order, which differs between two runs of the same code).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

TIMES = {"created_at", "completed_at", "latency_s", "seconds", "updated_at", "wall_s"}


def reply(body: dict[str, Any], index: int) -> str:
    d = hashlib.sha256((json.dumps(body["messages"]) + str(body.get("seed"))).encode())
    pts = np.random.default_rng(int.from_bytes(d.digest()[:8], "big")).uniform(0, 1, (16, 2))
    return ("Here it is.\n```python\nimport numpy as np\n\n\ndef min_max_dist_dim2_16():\n"
            f"    return np.array({pts.tolist()!r})\n```\n")


def _clean(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("{"):
        try:
            d = json.loads(value)
        except ValueError:
            return value
        return {k: v for k, v in d.items() if k not in TIMES | {"base_url", "store"}}
    return value


def run(out: Path) -> None:
    from basevolve.config import RunConfig
    from basevolve.engine import start_run
    from basevolve.testing import LLMTestServer

    store = Path(tempfile.mkdtemp()) / "s.sqlite"
    with LLMTestServer(reply, latency_s=0.02, latency_jitter=0.9, jitter_seed=1,
                       cached_tokens=0) as srv:
        for rid, kw in (("ucb", {"allocator": "ucb", "arms": 3, "reward": "improvement"}),
                        ("greedy", {"depth": 6})):
            start_run(RunConfig(task="min_max_distance", budget=24, model="test-model",
                                params=1e9, base_url=srv.base_url, seed=7, run_id=rid,
                                deterministic=True, max_in_flight=4, **kw), store)
    con = sqlite3.connect(store)
    dump: dict[str, list[str]] = {}
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                                "name NOT LIKE 'sqlite_%'"):
        cur = con.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        dump[table] = sorted(json.dumps({k: _clean(v) for k, v in zip(names, r, strict=True)
                                         if k not in TIMES | {"base_url"}}, sort_keys=True)
                             for r in cur)
    out.write_text(json.dumps(dump, sort_keys=True))


def compare(a: Path, b: Path) -> int:
    da, db = json.loads(a.read_text()), json.loads(b.read_text())
    differ = [t for t in sorted(set(da) | set(db)) if da.get(t) != db.get(t)]
    rows = sum(len(v) for v in da.values())
    print(f"{len(da)} tables, {rows} rows; differ: {', '.join(differ) or 'none'}")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(Path(sys.argv[2]))
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
