"""Do two ``allocation_quality.py --deterministic`` invocations agree? (issue 23, part 2)

    python benchmarks/allocation_quality.py --quick --deterministic --out A --json A.json > A.txt
    python benchmarks/allocation_quality.py --quick --deterministic --out B --json B.json > B.txt
    python benchmarks/deterministic_compare.py A B

Compares the printed tables (everything from the first ``==`` line), the JSON results and
the two stores, run by run.  Store ids (``call_id``, ``program_id``) are autoincrement
counters shared by the sweep's concurrent runs, so they interleave differently in each
invocation: rows are compared in each run's event order (``seq``) with every id replaced
by its rank within its run (also where a program id is quoted in ``meta_json`` or an
error text).  Times are left aside, and so are the server-reported cached tokens and the
FLOPs computed from them, reported apart.  Before issue 34 the simulator emulated one
prefix cache per endpoint, shared by every run on it, so what it reported as cached
depended on the order in which the runs' requests arrived; since then each run has its own
cache filled in its logical call order (basevolve.testing.prefix_cache), so the usage part
is expected to match too, and a mismatch there is a finding.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

TIMES = {"created_at", "completed_at", "latency_s", "seconds"}
USAGE = {"cached_tokens", "flops"}
ID_KEYS = {"context", "inspirations", "similar_to", "program_id", "parent_id"}


def printed_tables(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== "))
    return lines[start:]


def digest(db: Path) -> dict[str, tuple[int, str, str]]:
    """Per table: (rows, hash of everything but times and usage, hash of the usage)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        calls = {cid: (rid, rank) for rid, cid, rank in con.execute(
            "SELECT run_id, call_id, row_number() OVER (PARTITION BY run_id ORDER BY seq) "
            "FROM calls")}
        progs = {pid: (rid, rank) for rid, pid, rank in con.execute(
            "SELECT run_id, program_id, row_number() OVER (PARTITION BY run_id "
            "ORDER BY is_initial DESC, seq) FROM programs")}

        def rank(value: Any, run: str) -> Any:
            r = progs.get(value) if isinstance(value, int) else None
            return f"#p{r[1]}" if r is not None and r[0] == run else value

        def quoted_ids(text: str, run: str, column: str) -> str:
            if column == "error":
                return re.sub(r"program (\d+)", lambda m: f"program {rank(int(m[1]), run)}", text)
            meta = json.loads(text)
            if isinstance(meta, dict):
                for k in ID_KEYS & set(meta):
                    v = meta[k]
                    meta[k] = [rank(x, run) for x in v] if isinstance(v, list) else rank(v, run)
            return json.dumps(meta, sort_keys=True)

        specs = {
            "calls": ("SELECT * FROM calls ORDER BY run_id, seq",
                      {"call_id": calls, "reissue_of": calls, "parent_id": progs}),
            "attempts": ("SELECT c.run_id, a.* FROM attempts a JOIN calls c USING (call_id) "
                         "ORDER BY c.run_id, c.seq, a.attempt_index", {"call_id": calls}),
            "programs": ("SELECT * FROM programs ORDER BY run_id, is_initial DESC, seq",
                         {"program_id": progs, "call_id": calls, "parent_id": progs}),
            "allocations": ("SELECT * FROM allocations ORDER BY run_id, seq", {}),
        }
        out = {}
        for table, (sql, ids) in specs.items():
            cur = con.execute(sql)
            names = [d[0] for d in cur.description]
            main, usage, n = hashlib.sha256(), hashlib.sha256(), 0
            for row in cur:
                run = row[names.index("run_id")]
                for name, value in zip(names, row, strict=True):
                    if name in TIMES:
                        continue
                    if name in ids and value is not None:
                        value = ids[name].get(value)
                    if name in ("meta_json", "error") and isinstance(value, str):
                        value = quoted_ids(value, run, name)
                    (usage if name in USAGE else main).update(repr((name, value)).encode())
                n += 1
            out[table] = (n, main.hexdigest(), usage.hexdigest())
        return out
    finally:
        con.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    a, b = (Path(x) for x in argv)
    same = printed_tables(Path(f"{a}.txt")) == printed_tables(Path(f"{b}.txt"))
    print(f"printed tables identical: {same}")
    ja, jb = (json.loads(Path(f"{x}.json").read_text(encoding="utf-8")) for x in (a, b))
    for key in ("cells", "decomposition", "pairwise"):
        print(f"JSON {key} identical: {ja.get(key) == jb.get(key)} "
              f"({len(ja.get(key) or [])} entries)")
        same &= ja.get(key) == jb.get(key)
    da, db = (digest(x / "allocation-quality.sqlite") for x in (a, b))
    for table in da:
        equal = da[table][:2] == db[table][:2]
        same &= equal
        print(f"store {table}: {da[table][0]} vs {db[table][0]} rows, equal times and usage "
              f"aside: {equal}; server-reported cached tokens and FLOPs equal: "
              f"{da[table][2] == db[table][2]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
