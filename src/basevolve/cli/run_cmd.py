"""``basevolve run``: one fixed-budget evolution (paper Algorithms 1 and 2), or ``--resume``.

Flags and JSON fields are the ones issue 4/5 name.  Everything the user can get wrong
is validated (RunConfig, task/allocator/protocol names, endpoint probe, store guard)
before the store is written, so bad input leaves the store untouched.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from basevolve.allocators import ALLOCATORS
from basevolve.cli.objective_flags import OBJECTIVE_FLAGS, add_objective_flags, objective_fields
from basevolve.cli.openevolve_flags import add_file_flags, task_and_params
from basevolve.cli.summary_table import summary_table
from basevolve.config import (
    CHARGE_UNANSWERED,
    FEEDBACK_MODES,
    PULL_MODES,
    REWARDS,
    RunConfig,
    budget_fields,
)
from basevolve.llm.catalog import parse_params
from basevolve.llm.settings import LLMSettings
from basevolve.protocols import PROTOCOLS

DEFAULT_STORE = "basevolve.sqlite"


def register(sub: argparse._SubParsersAction) -> None:
    from basevolve.config import DEFAULT_CALL_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S

    p = sub.add_parser("run", help="run one fixed-budget evolution (or --resume one)",
                       description="Spend exactly --budget LLM calls evolving programs for a task.")
    p.add_argument("--task", help="task name (see `basevolve tasks`), a task file or an "
                   "OpenEvolve task directory")
    add_file_flags(p)  # an OpenEvolve task's files, named as its CLI does (issue 31)
    p.add_argument("--budget", type=int, help="C: total LLM calls")
    p.add_argument("--budget-flops", type=_amount("--budget-flops"), metavar="X",
                   help="instead of --budget: effective FLOPs to spend, e.g. 3e15 or 3P; "
                        "each call reserves its worst case first (see docs/running.md)")
    p.add_argument("--budget-tokens", type=_amount("--budget-tokens"), metavar="X",
                   help="instead of --budget: tokens to spend (prompt + completion), e.g. "
                        "200k")
    p.add_argument("--budget-usd", type=_amount("--budget-usd"), metavar="X",
                   help="instead of --budget: US dollars to spend at the models' prices "
                        "(catalog, or --model NAME,price=P/C/O); never exceeded")
    p.add_argument("--depth", type=int, help="T: generations; N = C/T (default: T = C, N = 1)")
    p.add_argument("--breadth", type=int,
                   help="N: children per generation, an alternative to --depth (T = C/N)")
    p.add_argument("--model", action="append", metavar="NAME[,key=value...]",
                   help="catalog name or served id (default: embedded; with --base-url: the "
                        "one model the server lists).  Repeat it for several models in one "
                        "run, each NAME,base_url=URL,params=P,max_in_flight=N,weight=W,"
                        "role=judge+meta_prompt,price=P/C/O,max_tokens=T (docs/models.md)")
    p.add_argument("--model-allocator", metavar="NAME",
                   help="with several --model: a bandit that chooses each call's model "
                        "(ucb, thompson, exp3p, ...; default: fixed weights)")
    p.add_argument("--model-reward", default="improvement",
                   choices=("improvement", "improvement_per_flop", "improvement_per_token",
                            "improvement_per_usd"),
                   help="the model bandit's reward (default: improvement)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--params", type=_params_arg,
                   help="active parameters of the model, for FLOPs, e.g. 8e9 or 8B")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the run (default: 0, or an OpenEvolve task's random_seed)")
    p.add_argument("--store", default=DEFAULT_STORE, help=f"run store file (default {DEFAULT_STORE})")
    p.add_argument("--run-id", default="", help="name of the run (default: generated)")
    p.add_argument("--max-in-flight", type=int, default=16, help="LLM calls outstanding (default 16)")
    p.add_argument("--deterministic", action="store_true",
                   help="tell results in the order the calls were issued, not as they arrive, "
                        "so a seeded server gives the same run at any --max-in-flight and "
                        "across --resume (see docs/running.md)")
    p.add_argument("--window", type=int, metavar="W",
                   help="with --deterministic: calls that may be decided and not yet told "
                        "(default: 24, or --max-in-flight + 8 if larger)")
    p.add_argument("--max-tokens", type=int,
                   help="completion token cap per call (default: the model's in `basevolve "
                        f"models`, 16000 for the Qwen3 models, else {LLMSettings().max_tokens})")
    p.add_argument("--request-timeout", type=float, metavar="SECONDS",
                   help="seconds one HTTP request may wait for its reply before it is "
                        "abandoned and retried (default: "
                        f"{DEFAULT_REQUEST_TIMEOUT_S:g} with --base-url; the embedded model: "
                        f"{LLMSettings().attempt_timeout_s:g}); raise it for long replies "
                        "(large --max-tokens, thinking models)")
    p.add_argument("--call-timeout", type=float, metavar="SECONDS",
                   help="seconds one LLM call may take, retries and waits included, before "
                        f"it fails (default: {DEFAULT_CALL_TIMEOUT_S:g} with --base-url; the "
                        f"embedded model: {LLMSettings().call_deadline_s:g}); a failed call "
                        "is asked again, charged per --count-failed-attempts")
    p.add_argument("--task-param", action="append", metavar="KEY=VALUE", default=None,
                   help="a declared parameter of the task (repeatable), e.g. "
                        "dataset=qa.jsonl limit=40 for prompt_optimization (`basevolve tasks "
                        "--show TASK` lists them)")
    p.add_argument("--count-eval-calls", action="store_true",
                   help="charge a text task's answering-LLM calls to the budget (default: "
                        "recorded as evaluation cost, not charged; see docs/tasks.md)")
    p.add_argument("--feedback", choices=FEEDBACK_MODES, default=None,
                   help="artifacts: show each parent's evaluator feedback (its error, the "
                        "evaluator's artifacts, its output; capped) in the next prompt built "
                        "from it (default: none, the paper's prompts; an OpenEvolve task: its "
                        "include_artifacts; see docs/running.md)")
    p.add_argument("--protocol", default="greedy", metavar="NAME",
                   help=f"parent-sampling protocol: {', '.join(PROTOCOLS.names())} "
                        "(default: %(default)s; see docs/protocols.md)")
    p.add_argument("--protocol-param", action="append", metavar="KEY=VALUE", default=None,
                   help="a declared parameter of the protocol (repeatable), e.g. "
                        "num_islands=4; an unknown key lists the known ones")
    p.add_argument("--allocator", default="single", metavar="NAME",
                   help=f"BaSE allocator across the --arms trajectories: "
                        f"{', '.join(ALLOCATORS.names())} (default: %(default)s)")
    p.add_argument("--arms", type=int, default=1, help="K trajectories (default 1)")
    p.add_argument("--pull", choices=PULL_MODES, default="call",
                   help="one allocator pull = one call or one generation of N calls")
    p.add_argument("--cap", type=int, help="max calls per trajectory")
    p.add_argument("--arm-in-flight", type=int, metavar="N",
                   help="max calls one trajectory may have in flight at once (default: no "
                        "cap beyond --max-in-flight; the bandit's pending-pull rule spreads "
                        "calls)")
    p.add_argument("--reward", choices=REWARDS, default="best",
                   help="allocator reward: trajectory best after the pull, or the improvement")
    add_objective_flags(p)  # several objectives (issue 36)
    p.add_argument("--count-failed-attempts", action="store_true",
                   help="every LLM attempt, failed or not, costs one unit of the budget")
    p.add_argument("--charge-unanswered", choices=CHARGE_UNANSWERED, default="worst",
                   help="FLOPs charged for an attempt that was sent but never answered "
                        "(timeout, dropped connection): worst = prompt + max tokens, none = 0; "
                        "attempts that never reached a server (refused, DNS, TLS) cost 0 "
                        "(default: %(default)s)")
    # what the sandbox gets of the host (issue 31, item 6; basevolve.passenv)
    p.add_argument("--env", action="append", metavar="NAME[=VALUE]", default=None,
                   help="pass a variable into the sandbox (value from your environment when "
                        "not given); stored with the run; repeatable")
    p.add_argument("--env-secret", action="append", metavar="NAME", default=None,
                   help="pass a variable whose name looks secret (KEY/TOKEN/SECRET/PASSWORD) "
                        "from your environment; its value is never stored (export it again "
                        "for --resume); repeatable")
    p.add_argument("--data", metavar="DIR",
                   help="mount DIR read-only in the sandbox at /data ($BASEVOLVE_DATA)")
    p.add_argument("--out", type=Path, help="output folder (default basevolve-out/RUN_ID)")
    p.add_argument("--resume", metavar="RUN_ID", help="continue a stored run to its budget")
    p.add_argument("--allow-task-change", action="store_true",
                   help="with --resume: continue although the task file changed since the "
                        "run started (recorded in the store)")
    p.add_argument("--json", action="store_true", help="print a JSON summary as the last line")
    p.set_defaults(func=run_command)
    p.set_defaults(_defaults={f: p.get_default(f) for f in RUN_DEFINING})


def _amount(flag: str) -> Any:
    """``--budget-flops 3P`` / ``--budget-tokens 200k``: a positive number, SI suffixes."""
    from basevolve.engine.budget import parse_amount

    def parse(text: str) -> float:
        try:
            return parse_amount(text, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _params_arg(text: str) -> float:
    """``--params 7B`` as ``llm-check`` takes it; the catalog's message on bad input."""
    try:
        return parse_params(text)
    except ValueError as exc:  # ConfigError is a ValueError
        raise argparse.ArgumentTypeError(str(exc)) from None


def _config(args: argparse.Namespace) -> RunConfig:
    from basevolve.errors import ConfigError
    from basevolve.params import split_assignments

    task_spec, task_params = task_and_params(args.task, args, split_assignments(
        args.task_param, "--task-param", "limit=40"))
    if task_spec is None:
        raise ConfigError("missing --task (or use --resume RUN_ID)")
    budget = budget_fields(args.budget, args.budget_flops, args.budget_tokens, args.depth,
                           args.breadth, args.budget_usd)
    models, model = model_args(args.model)
    import dataclasses

    from basevolve.config import generate_run_id
    from basevolve.tasks import load_task
    from basevolve.tasks.identity import resolve_task_spec

    task = resolve_task_spec(task_spec)  # a task file is stored by its absolute path
    from basevolve.engine.run_checks import checked_run

    cfg = checked_run(RunConfig(  # checked before the task is imported or a server asked
        task=task, **budget, model=model or "embedded", models=models,
        model_allocator=args.model_allocator, model_reward=args.model_reward,
        base_url=args.base_url, params=args.params, seed=0 if args.seed is None else args.seed,
        run_id=args.run_id,
        max_in_flight=args.max_in_flight, max_tokens=args.max_tokens, protocol=args.protocol,
        request_timeout=args.request_timeout, call_timeout=args.call_timeout,
        allocator=args.allocator, arms=args.arms, pull=args.pull, cap=args.cap,
        reward=args.reward, count_failed_attempts=args.count_failed_attempts,
        **objective_fields(args),
        protocol_params=split_assignments(args.protocol_param),
        arm_in_flight=args.arm_in_flight, charge_unanswered=args.charge_unanswered,
        task_params=task_params,
        count_eval_calls=args.count_eval_calls, feedback=args.feedback or "none",
        deterministic=args.deterministic, window=args.window, **_passthrough(args)))
    ALLOCATORS.get(cfg.allocator)  # unknown names before a server is asked
    PROTOCOLS.get(cfg.protocol)
    changes: dict[str, Any] = {}
    task_obj = load_task(task, cfg.task_params)
    if not args.run_id:  # runs are named by the task's declared name, not its file name
        changes["run_id"] = generate_run_id(task_obj.name)
    from basevolve.engine.endpoints import run_model  # the API resolves it the same way

    model = run_model(model, cfg.base_url, cfg.params)  # the first --model's own, if given
    if model != cfg.model:
        changes["model"] = model
    cfg = dataclasses.replace(cfg, **changes) if changes else cfg
    from basevolve.cli.progress import say
    from basevolve.engine.task_config import configure_run

    # an OpenEvolve directory's run settings, where the user gave none (issue 31)
    given = {f for f in ("seed", "feedback") if getattr(args, f) is not None}
    return configure_run(cfg, given, say, task_obj)


def _passthrough(args: argparse.Namespace) -> dict[str, Any]:
    """``--env`` / ``--env-secret`` / ``--data`` as RunConfig fields (basevolve.passenv)."""
    from basevolve.passenv import data_dir, parse_env

    env, secrets = parse_env(args.env, args.env_secret)
    return {"env": env, "env_secret": secrets,
            "data": None if args.data is None else data_dir(args.data)}


def model_args(given: list[str] | None) -> tuple[tuple[str, ...], str | None]:
    """``--model`` as given: one bare name is the single-model run of old (no ``models``);
    several, or one with ``key=value`` options, are the run's models (issue 25), the
    first of which is the run's ``model``."""
    if not given:
        return (), None
    if len(given) == 1 and "," not in given[0]:
        return (), given[0]
    from basevolve.llm.ensemble import parse_model

    return tuple(given), parse_model(given[0]).name


#: Flags that define a run; with --resume they come from the stored config instead.
RUN_DEFINING = ("task", "budget", "budget_flops", "budget_tokens", "budget_usd", "depth",
                "breadth", "model", "model_allocator", "model_reward", "base_url", "params",
                "seed",
                "run_id", "max_in_flight", "max_tokens", "request_timeout", "call_timeout",
                "protocol", "allocator", "arms",
                "pull", "cap", "reward", "count_failed_attempts", "protocol_param",
                "arm_in_flight", "charge_unanswered", "task_param", "count_eval_calls",
                "feedback", "deterministic", "window", "program", "evaluator", "config",
                "env", "env_secret", "data", *OBJECTIVE_FLAGS)


def _check_resume_flags(args: argparse.Namespace, parser_defaults: dict[str, Any]) -> None:
    """Refuse run-defining flags next to --resume.

    Why: a resumed run continues with its *stored* config (same budget, seeds, allocator),
    so a ``--task``/``--budget``/... given with --resume would be silently ignored and
    the user would believe it took effect.
    """
    from basevolve.errors import ConfigError

    given = [f"--{f.replace('_', '-')}" for f in RUN_DEFINING
             if getattr(args, f) != parser_defaults.get(f)]
    if given:
        raise ConfigError(
            f"--resume continues run {args.resume!r} with its stored config; drop "
            f"{', '.join(given)} (only --store, --out, --json and --allow-task-change go with --resume)")


def check_out_dir(out: Path) -> None:
    """Refuse an output folder that cannot be created, before any call is spent.

    Why: the best program and picture are written after the run; an unwritable --out
    found only then would end a finished run with a traceback instead of its summary.
    """
    import os

    from basevolve.errors import ConfigError

    probe = out
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(f"--out {str(out)!r}: {str(probe)!r} is not a folder")
    if probe.exists() and not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {str(out)!r}: cannot write in {str(probe)!r}")


def _default_out(run_id: str) -> Path:
    """``basevolve-out/RUN_ID`` for a resumed run, only if the id is a safe folder name.

    Why: a store written before run ids were checked (issue 22, item 10) may hold an id
    such as ``../../x``; --resume must still find it, but not write outside
    ``basevolve-out/``, so such a run needs an explicit --out.
    """
    from basevolve.config import check_run_id
    from basevolve.errors import ConfigError

    try:
        check_run_id(run_id, "--resume")
    except ConfigError as exc:
        raise ConfigError(f"{exc}; give --out DIR to resume a run stored under it") from None
    return Path("basevolve-out") / run_id


def run_command(args: argparse.Namespace) -> int:
    from basevolve.cli.progress import make_progress, say
    from basevolve.engine import resume_run, start_run
    from basevolve.store.schema import inspect_file

    inspect_file(Path(args.store))  # refuse a foreign store before any other work
    if args.resume:
        _check_resume_flags(args, getattr(args, "_defaults", {}))
        run_id = args.resume
        out = args.out or _default_out(args.resume)
        check_out_dir(out)
    else:
        if args.allow_task_change:
            from basevolve.errors import ConfigError

            raise ConfigError("--allow-task-change goes with --resume RUN_ID (a new run "
                              "records the task it starts with)")
        cfg = _config(args)
        run_id = cfg.run_id
        out = args.out or Path("basevolve-out") / cfg.run_id
        check_out_dir(out)
    progress = None
    try:
        progress = make_progress()
        if args.resume:
            summary = resume_run(args.resume, args.store, progress=progress, out_dir=out,
                                 allow_task_change=args.allow_task_change, notify=say)
        else:
            summary = start_run(cfg, args.store, progress=progress, out_dir=out, notify=say)
    except KeyboardInterrupt:
        if progress is not None:
            progress.done()
        return _interrupted(run_id, args.store)
    finally:
        if progress is not None:
            progress.done()
    summary.pop("best_code", None)
    print(summary_table(summary))
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


def _interrupted(run_id: str, store: str) -> int:
    """Ctrl-C: say how to continue (issue 12, item 8), exit 130 like a shell does.

    Every answered call is already in the store, so the run continues where it stopped;
    a Ctrl-C before the run row was written has nothing to continue.
    """
    from basevolve.store import RunStore

    exists, lost = False, None
    if Path(store).exists():
        try:
            with RunStore(store, create=False) as s:
                row = s.get_run(run_id)
                exists = row is not None
                if row is not None:  # calls in flight are charged as documented (issue 24)
                    from basevolve.engine.lost_calls import lost_words

                    policy = json.loads(row["config_json"]).get("charge_unanswered", "worst")
                    lost = lost_words(s.totals(run_id), policy)
        except Exception:  # an interrupted first write must not hide the message
            exists = False
    if lost:
        print(f"basevolve: {lost}", file=sys.stderr)
    if exists:
        print(f"interrupted — continue with `basevolve run --resume {run_id} --store {store}`",
              file=sys.stderr)
    else:
        print(f"interrupted before run {run_id} was stored; nothing to resume",
              file=sys.stderr)
    return 130
