"""``basevolve simulate-server``: the simulated mutation LLM over the OpenAI protocol.

Why: a dry run of a whole study (or a benchmark of the allocators) needs an LLM that
behaves like the ones in the paper -- anchoring on algorithmic families, broad child
fitness, broken replies -- but answers in milliseconds on a CPU (issue 13).  The model
is documented in :mod:`basevolve.testing.sim.model`.  Prints the base URL on its first
line, then serves until interrupted; point ``basevolve run --base-url URL`` at it.

``--model NAME=CAPABILITY[:PARAMS[:DECODE_TPS]]`` (repeatable; issue 25, part 4) serves
several named models of different capability and assumed size on the one port; each
request's ``model`` picks one (:mod:`basevolve.testing.sim.router`).

Any other task (a registered name, a ``.py`` task file, an OpenEvolve directory; issue
37, item 6) is served by seeded edits of the parent's own EVOLVE block
(:mod:`basevolve.testing.sim.block_edits`): a plumbing check, not a model of search.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from basevolve.errors import ConfigError
from basevolve.terminal import clean


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "simulate-server",
        help="serve a simulated mutation LLM for a task (OpenAI protocol)",
        description="Serve a simulated LLM: for circle_packing, min_max_distance and "
                    "heilbronn_triangle, replies are real programs from the task's "
                    "algorithmic families (paper, Appendix 'Case Studies'); for any other "
                    "task, seeded edits of the parent's EVOLVE block (constants nudged, "
                    "operators or lines swapped, some broken on purpose) -- a plumbing "
                    "check, not a model of search quality.",
    )
    p.add_argument("--task", required=True,
                   help="circle_packing, min_max_distance or heilbronn_triangle (family "
                        "simulator), or any other task name, .py task file or OpenEvolve "
                        "directory (EVOLVE-block edits)")
    p.add_argument("--capability", type=float, default=None,
                   help="scales how often the good families are written (1 = default, "
                        "0.5 = a weak model, 2 = a strong one)")
    p.add_argument("--model", action="append", default=None, dest="models",
                   metavar="NAME=CAPABILITY[:PARAMS[:DECODE_TPS]]",
                   help="serve a named model (repeatable, e.g. --model weak=0.5:1.7e9 "
                        "--model strong=2:14.8e9); each request's 'model' picks one. PARAMS "
                        "(the assumed size) is listed by GET /models as basevolve_params; "
                        "DECODE_TPS replaces --decode-tps for that model under --latency "
                        "tokens. Replaces --capability")
    p.add_argument("--broken-rate", type=float, default=0.08,
                   help="fraction of replies that are broken (prose, syntax error, wrong "
                        "entry function); default 0.08")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = a free one)")
    p.add_argument("--latency", default="0", metavar="SECONDS|tokens",
                   help="seconds per reply (fixed), or 'tokens' for the prefill/decode "
                        "model set by --prefill-tps, --decode-tps and --slots")
    p.add_argument("--prefill-tps", type=float, default=5000.0,
                   help="prompt tokens per second (uncached part), with --latency tokens")
    p.add_argument("--decode-tps", type=float, default=50.0,
                   help="generated tokens per second per request, with --latency tokens")
    p.add_argument("--slots", type=int, default=8,
                   help="requests served at once, with --latency tokens (others queue)")
    p.set_defaults(func=cmd_simulate_server)


def _latency(args: argparse.Namespace) -> tuple[float, Any]:
    from basevolve.testing.sim import TokenRateLatency

    if args.latency == "tokens":
        return 0.0, TokenRateLatency(args.prefill_tps, args.decode_tps, args.slots)
    try:
        seconds = float(args.latency)
    except ValueError:
        raise ConfigError(f"--latency must be a number of seconds or 'tokens', got "
                          f"{args.latency!r}") from None
    if not 0 <= seconds <= 3600:
        raise ConfigError(f"--latency must be between 0 and 3600 seconds, got {seconds}")
    return seconds, None


def _models(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``--model`` specs by name, or None for the single-model server."""
    from basevolve.testing.sim.served import parse_model_spec

    if args.models is None:
        return None
    if args.capability is not None:
        raise ConfigError("--capability and --model do not go together: give each --model "
                          "its capability (NAME=CAPABILITY)")
    out: dict[str, Any] = {}
    for text in args.models:
        name, spec = parse_model_spec(text)
        if name in out:
            raise ConfigError(f"--model {name!r} is given twice; each served model needs "
                              "its own name")
        if spec.decode_tps is not None and args.latency != "tokens":
            raise ConfigError(f"--model {text!r} sets a decode rate, which only applies "
                              "with --latency tokens; add it or drop the rate")
        out[name] = spec
    return out


def cmd_simulate_server(args: argparse.Namespace) -> int:
    from basevolve.testing.sim import MODELS, simulated_server
    from basevolve.testing.sim.block_edits import block_edit_server

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {args.port}")
    models = _models(args)
    latency_s, model = _latency(args)
    edits = args.task not in MODELS  # no family simulator: edits of the EVOLVE block
    if edits and (models is not None or args.capability is not None):
        raise ConfigError(f"--capability and --model apply to the family simulator "
                          f"({', '.join(sorted(MODELS))}); --task {args.task!r} is served "
                          "by EVOLVE-block edits: drop them")
    try:
        srv = (block_edit_server(args.task, broken_rate=args.broken_rate,
                                 latency_s=latency_s, latency_model=model, port=args.port)
               if edits else
               simulated_server(args.task, capability=args.capability,
                                broken_rate=args.broken_rate, latency_s=latency_s,
                                latency_model=model, port=args.port, models=models))
    except OSError as exc:
        raise ConfigError(f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc}); "
                          "pick another --port or 0") from None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(srv.base_url, flush=True)
    served = ("seeded EVOLVE-block edits, a plumbing check" if edits else
              f"capability {1.0 if args.capability is None else args.capability}"
              if models is None else
              "models " + ", ".join(f"{n} (capability {m.capability})" for n, m in models.items()))
    print(f"simulated {clean(args.task)} LLM ({served}); Ctrl-C to stop", file=sys.stderr,
          flush=True)
    try:
        srv.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        srv.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m basevolve.cli.simulate_cmd ...``: the same command without importing
    every other command module (benchmarks start several servers; on a loaded box the
    full CLI's imports took tens of seconds per server)."""
    from basevolve.cli import main as cli_main

    return cli_main(["simulate-server", *(sys.argv[1:] if argv is None else argv)],
                    modules=("basevolve.cli.simulate_cmd",))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
