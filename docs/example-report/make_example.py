"""Regenerate the example report from a real sweep against the simulated LLM.

    python docs/example-report/make_example.py [--store PATH] [--resume]

SIMULATED DATA: the "models" are ``basevolve simulate-server`` processes (the simulated
mutation LLM of docs/simulator.md) at two capability levels; everything else is the real
stack.  Steps:

1. start the six simulators of ``sweep.toml`` (3 tasks x capability 0.5 / 1.0, latency 0)
   on free ports (``basevolve.testing.sim.grid.simulators``);
2. write a copy of ``sweep.toml`` next to the store with their URLs in place of the
   ``http://127.0.0.1:81xx/v1`` placeholders (run ids do not depend on ``base_url``);
3. ``basevolve sweep COPY --store STORE`` (the CLI, in a subprocess);
4. the report into this folder by the pipeline of ``basevolve report --store STORE
   --thresholds 0.5,0.7,0.8,0.9,0.95,0.99`` (``load_tables`` + ``analyze`` +
   ``write_report``), without the PDFs and ``analysis.json`` the CLI also writes and at
   80 dpi instead of its 110, to keep the folder small;
5. a "simulated data" banner at the top of ``index.html``, ``tables.md`` and
   ``tables.tex`` (``basevolve report`` has no option for a note).

The store (default ``$TMPDIR/basevolve-example-report/sweep.sqlite``) is started afresh
unless ``--resume`` is given (then an interrupted sweep is finished: same run ids).  It is
not committed.  Measured wall time and load: README.md.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.report import write_report
from basevolve.sweep.config import load_sweep
from basevolve.testing.sim.grid import simulators

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "sweep.toml"
# Placeholder URL in sweep.toml -> the simulate-server it stands for (task, capability).
SERVERS: dict[str, tuple[str, float]] = {
    "http://127.0.0.1:8101/v1": ("circle_packing", 0.5),
    "http://127.0.0.1:8102/v1": ("min_max_distance", 0.5),
    "http://127.0.0.1:8103/v1": ("heilbronn_triangle", 0.5),
    "http://127.0.0.1:8104/v1": ("circle_packing", 1.0),
    "http://127.0.0.1:8105/v1": ("min_max_distance", 1.0),
    "http://127.0.0.1:8106/v1": ("heilbronn_triangle", 1.0),
}
# Union of the paper's Table 3 thresholds (CP 0.95/0.99, MMD 0.80/0.90/0.95, HT 0.50/0.70):
# `basevolve report --thresholds` takes one list for every task.
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
NOTE = (
    "Simulated data. Every run of this report is a real basevolve run (engine, sandbox, "
    "scorer, store, allocators) whose mutation LLM is the simulator of docs/simulator.md "
    "(basevolve simulate-server) at capability 0.5 (sim-weak, 1.7e9 parameters assumed "
    "for FLOPs) and 1.0 (sim-strong, 8e9). The numbers describe the simulator, not real "
    "LLMs; see docs/example-report/README.md for the grid and how to regenerate it."
)


def check_placeholders() -> None:
    """sweep.toml and SERVERS name the same six endpoints (one is edited without the other)."""
    used = {r.config.base_url for r in load_sweep(CONFIG).runs}
    if used != set(SERVERS):
        raise SystemExit(f"sweep.toml endpoints {sorted(used)} != SERVERS {sorted(SERVERS)}")


def filled_config(urls: dict[str, str], out: Path) -> Path:
    text = CONFIG.read_text(encoding="utf-8")
    for placeholder, url in urls.items():
        text = text.replace(f'"{placeholder}"', f'"{url}"')
    out.write_text(text, encoding="utf-8")
    return out


def add_banner(root: Path) -> None:
    index = root / "index.html"
    page = index.read_text(encoding="utf-8")
    banner = (
        "<p style='border:2px solid #b00;padding:6px;background:#fff4f4'><b>"
        + NOTE.replace(". ", ".</b> ", 1) + "</p>"
    )
    page, n = re.subn(r"(<h1>[^<]*</h1>)", lambda m: m.group(1) + banner, page, count=1)
    if n != 1:
        raise SystemExit("index.html has no <h1> to put the simulated-data banner under")
    index.write_text(page, encoding="utf-8")
    md = root / "tables.md"
    lines = md.read_text(encoding="utf-8").split("\n", 1)
    md.write_text(f"{lines[0]}\n\n> **{NOTE.split('. ', 1)[0]}.** {NOTE.split('. ', 1)[1]}\n"
                  + (lines[1] if len(lines) > 1 else ""), encoding="utf-8")
    tex = root / "tables.tex"
    tex.write_text(f"% {NOTE}\n" + tex.read_text(encoding="utf-8"), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path,
                    default=Path(tempfile.gettempdir()) / "basevolve-example-report" / "sweep.sqlite")
    ap.add_argument("--resume", action="store_true",
                    help="finish the sweep already in --store instead of starting afresh")
    args = ap.parse_args()
    check_placeholders()
    store: Path = args.store
    store.parent.mkdir(parents=True, exist_ok=True)
    if not args.resume:
        for p in store.parent.glob(store.name + "*"):  # the store and its -wal/-shm files
            p.unlink()
    t0 = time.perf_counter()
    with simulators(list(SERVERS.values())) as urls:
        config = filled_config(dict(zip(SERVERS, urls, strict=True)), store.with_suffix(".toml"))
        done = subprocess.run([sys.executable, "-m", "basevolve", "sweep", str(config),
                               "--store", str(store)])
    sweep_s = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"basevolve sweep exited {done.returncode}; rerun with --resume")
    print(f"sweep: {sweep_s:.0f} s wall", flush=True)
    tables = load_tables(store=store)
    result = analyze(tables, AnalysisConfig(thresholds=THRESHOLDS))
    for old in (HERE / "figures").glob("*.png"):
        old.unlink()  # a figure the report no longer draws must not linger
    write_report(result, tables, HERE, pdf=False, dpi=80, include_json=False)
    add_banner(HERE)
    print(f"report: {time.perf_counter() - t0 - sweep_s:.0f} s; written to {HERE}", flush=True)


if __name__ == "__main__":
    main()
