"""``basevolve sweep``: run a grid of runs to completion, show its status, or write a preset.

    basevolve sweep init --preset depth-breadth|base-vs-protocols|arm-pool [--out FILE]
    basevolve sweep CONFIG --store FILE [--executor local|ray] [--address auto|HOST:PORT]
    basevolve sweep CONFIG --store FILE --status [--json]

Rerunning the same command skips finished runs and resumes interrupted ones (issue 11).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from basevolve.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid of runs (resumable), show its --status, or `init` a preset",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="CONFIG", help="sweep file (TOML), or `init`")
    p.add_argument("--store", metavar="FILE", help="run store (SQLite) shared by all runs")
    p.add_argument("--executor", default="local", help="local (default) or ray")
    p.add_argument("--address", help="Ray cluster: auto or HOST:PORT (with --executor ray)")
    p.add_argument("--status", action="store_true",
                   help="print where the sweep stands (read-only; works while it runs)")
    p.add_argument("--json", action="store_true", help="print one JSON document as the last line")
    p.add_argument("--preset", help="with `init`: depth-breadth, base-vs-protocols or arm-pool")
    p.add_argument("--out", metavar="FILE", help="with `init`: where to write (default PRESET.toml)")
    p.add_argument("--force", action="store_true", help="with `init`: overwrite --out")
    p.set_defaults(func=sweep_command)


def sweep_command(args: argparse.Namespace) -> int:
    if args.config == "init":
        return _init(args)
    for flag in ("preset", "out"):
        if getattr(args, flag):
            raise ConfigError(f"--{flag} goes with `basevolve sweep init`, not with a CONFIG")
    if not args.store:
        raise ConfigError("missing --store FILE (the run store all runs of the sweep share)")
    if args.status:
        return _status(args)
    if args.address and args.executor != "ray":
        raise ConfigError("--address names a Ray cluster; use it with --executor ray")
    return _run(args)


def _init(args: argparse.Namespace) -> int:
    from basevolve.sweep.presets import PRESETS, write_preset

    if not args.preset:
        raise ConfigError(f"`basevolve sweep init` needs --preset ({', '.join(PRESETS)})")
    path = write_preset(args.preset, args.out, force=args.force)
    print(f"wrote {path} (the paper's {args.preset} grid); edit the endpoints, then run:\n"
          f"  basevolve sweep {path} --store {path.with_suffix('.sqlite')}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from basevolve.sweep.config import load_sweep
    from basevolve.sweep.status import render_status, sweep_status

    doc = sweep_status(load_sweep(args.config), args.store, every_run=args.json)
    if args.json:
        print(json.dumps(doc, sort_keys=True))
    else:
        print(render_status(doc))
    return 0


def _run(args: argparse.Namespace) -> int:
    from basevolve.sweep.execute import run_sweep
    from basevolve.sweep.reliability import reliability, render_reliability

    started = time.time()
    try:
        result = run_sweep(args.config, args.store, executor=args.executor,
                           address=args.address)
    except KeyboardInterrupt:
        return _interrupted(args, started)
    rows = reliability(result.sweep, args.store)
    print(render_reliability(rows, args.store))
    failed = {rid: o for rid, o in result.outcomes.items() if o["status"] != "finished"}
    if failed:
        from basevolve.terminal import clean  # a run's error quotes a server or a program

        shown = "; ".join(f"{rid}: {clean(o.get('error'))}"
                          for rid, o in list(failed.items())[:5])
        print(f"basevolve: {len(failed)} run(s) did not finish ({shown}); rerun the same "
              "command to resume them", file=sys.stderr)
    if args.json:
        doc: dict[str, Any] = {
            "sweep": result.sweep.name, "store": args.store,
            "runs_total": len(result.sweep.runs),
            "finished": sum(o["status"] == "finished" for o in result.outcomes.values()),
            "failed": sorted(failed), "endpoints": result.endpoints, "cells": rows,
        }
        print(json.dumps(doc, sort_keys=True))
    return 1 if failed else 0


def _interrupted(args: argparse.Namespace, started: float) -> int:
    """Ctrl-C or SIGTERM (issue 37, item 8): what the interrupt charged and the command
    that continues the sweep, as `basevolve run` says; exit 130 like a shell does."""
    from basevolve.sweep.status import interrupted_words

    command = f"basevolve sweep {args.config} --store {args.store}"
    if args.executor == "ray":
        command += " --executor ray" + (f" --address {args.address}" if args.address else "")
    for line in interrupted_words(args.store, command, started):
        print(line, file=sys.stderr)
    return 130
