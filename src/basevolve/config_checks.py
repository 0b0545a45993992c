"""The checks of the run options: shape and range, each with its one message (issue 33).

:class:`~basevolve.config.RunConfig` (the options themselves) calls these when it is
built; the CLI and :func:`basevolve.run` call :func:`budget_fields` and
:func:`depth_from_breadth` on what a user gave, so both refuse alike.  Nothing here
needs a registry, the model catalog or a task: those checks run above, once, in
:func:`basevolve.engine.run_checks.checked_run`.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from basevolve.errors import ConfigError
from basevolve.objectives import Objectives, parse_objectives, parse_reference_point
from basevolve.vocab import check_feedback

if TYPE_CHECKING:
    from basevolve.config import RunConfig

PULL_MODES = ("call", "generation")
#: Largest accepted budget C.  Why a bound at all: C sizes per-call bookkeeping and the
#: divisor hint below, and a typo such as 10**20 must be one clear error, not a hang or
#: an SQLite integer overflow after the run row was written.  The paper uses C = 512.
MAX_BUDGET = 1_000_000
MAX_SEED = 2**63 - 1
#: ``--request-timeout`` / ``--call-timeout`` defaults for an OpenAI-compatible endpoint
#: (issue 22, item 18).  Why these: a vLLM server streams nothing until a reply is done,
#: so a request's wait is its whole generation; 300 s covers the default 4,096-token cap
#: at 14 tokens/s per request under load (a stalled server was held 600 s per attempt
#: before), and 900 s lets a call retry a timed-out request twice (it was 1,800 s).  The
#: embedded model keeps the client's own, longer limits (a CPU model can take minutes
#: per reply).
DEFAULT_REQUEST_TIMEOUT_S = 300.0
DEFAULT_CALL_TIMEOUT_S = 900.0
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: any longer is a typo, not a timeout
#: ``--deterministic``'s default window and its margin over ``--max-in-flight`` (issue 23:
#: 8 calls may wait, answered, for an earlier one; measured in benchmarks/README.md)
DEFAULT_WINDOW, WINDOW_MARGIN, MAX_WINDOW = 24, 8, 100_000
REWARDS = ("best", "improvement")
#: ``--reward-front``: the front whose hypervolume a multi-objective run's reward reads
#: (issue 36; engine/front_credit.py)
REWARD_FRONTS = ("trajectory", "run")
CHARGE_UNANSWERED = ("worst", "none")  # keys of basevolve.llm.flops.CHARGE_UNANSWERED


#: Longest run id.  Why: a run id names the folder ``basevolve-out/RUN_ID`` and a Ray
#: node's scratch store ``RUN_ID.sqlite``; file names stop at 255 bytes.
MAX_RUN_ID = 200
#: A run id is one safe file name: letters, digits and ``. _ + -``, starting with a letter
#: or digit (so never ``..``, a hidden file or something a shell reads as an option).
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def check_run_id(run_id: str, flag: str = "--run-id") -> str:
    """``run_id`` if it is a safe file name (issue 22, item 10), else :class:`ConfigError`.

    Why: the id becomes a path (``basevolve-out/RUN_ID/best_program.py``, a Ray node's
    ``RUN_ID.sqlite``); ``../../tmp/x`` wrote outside ``basevolve-out/``.  The message
    shows the value with ``!r``, so control characters in it cannot reach the terminal.
    """
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id) \
            or len(run_id) > MAX_RUN_ID:
        shown = repr(run_id) if len(repr(run_id)) <= 80 else repr(run_id)[:77] + "..."
        raise ConfigError(
            f"{flag} {shown} is not a safe run id: use 1 to {MAX_RUN_ID} letters, digits, "
            "'.', '_', '+' or '-', starting with a letter or digit (it names a folder)")
    return run_id


def generate_run_id(task: str) -> str:
    """A readable unique id: task, UTC timestamp and 4 random hex digits.

    The task part is made a safe file name (a task file's path or an odd declared name
    would otherwise put ``/`` into a folder name) and shortened to keep the id under
    :data:`MAX_RUN_ID`.
    """
    name = _UNSAFE.sub("_", task).strip("._+-")[:MAX_RUN_ID - 30] or "run"
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def cost_call_cap(breadth: int) -> int:
    """The call cap of a run with a FLOPs or token budget: the largest multiple of N up to
    :data:`MAX_BUDGET`.  Why a cap at all: C sizes the engine's bookkeeping and must keep
    C = T x N; the cost budget ends such a run long before (the run's ``budget`` is
    reported as null, its ``budget_kind`` and limit instead)."""
    return breadth * (MAX_BUDGET // breadth)


def budget_fields(budget: int | None, budget_flops: float | None, budget_tokens: float | None,
                  depth: int | None, breadth: int | None,
                  budget_usd: float | None = None) -> dict[str, Any]:
    """``budget``/``depth``/``budget_flops``/``budget_tokens`` for :class:`RunConfig` from
    what a user gave (CLI and :func:`basevolve.run` share it, so both refuse alike).

    Exactly one of the three budgets.  With a FLOPs or token budget the number of
    generations follows from the budget, so ``--depth`` is refused and ``--breadth N``
    (default 1) sets the generation size.
    """
    given = [n for n, v in (("--budget", budget), ("--budget-flops", budget_flops),
                            ("--budget-tokens", budget_tokens), ("--budget-usd", budget_usd))
             if v is not None]
    if len(given) > 1:
        raise ConfigError(f"give one budget, not {' and '.join(given)}: --budget C (LLM "
                          "calls), --budget-flops X, --budget-tokens X or --budget-usd X")
    if not given:
        raise ConfigError("missing --budget (LLM calls; or --budget-flops / --budget-tokens / "
                          "--budget-usd)")
    if budget is not None:
        return {"budget": budget, "depth": depth_from_breadth(budget, depth, breadth)}
    if depth is not None:
        raise ConfigError(f"{given[0]} sets no number of generations: drop --depth and give "
                          "--breadth N (children per generation; default 1)")
    n = 1 if breadth is None else breadth
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"--breadth must be an integer >= 1, got {breadth!r}")
    cap = cost_call_cap(n)
    if budget_tokens is not None:
        if float(budget_tokens) != int(budget_tokens):
            raise ConfigError(f"--budget-tokens must be a whole number, got {budget_tokens!r}")
        return {"budget": cap, "depth": cap // n, "budget_tokens": int(budget_tokens)}
    if budget_usd is not None:
        return {"budget": cap, "depth": cap // n, "budget_usd": float(budget_usd)}
    return {"budget": cap, "depth": cap // n, "budget_flops": float(budget_flops)}  # type: ignore[arg-type]


def depth_from_breadth(budget: int, depth: int | None, breadth: int | None) -> int | None:
    """T from ``--depth`` or ``--breadth`` (C = T x N); one of them at most.

    Shared by the CLI and :func:`basevolve.run` so both refuse the same input with the
    same message.  ``None`` (neither given) means the default T = C.
    """
    if breadth is None:
        return depth
    if depth is not None:
        raise ConfigError("give --depth or --breadth, not both (C = T x N)")
    if (isinstance(breadth, bool) or not isinstance(breadth, int) or breadth < 1
            or not isinstance(budget, int) or budget < 1 or budget % breadth):
        raise ConfigError(f"--breadth {breadth!r} must be >= 1 and divide --budget "
                          f"{budget!r} (C = T x N)")
    return budget // breadth


def check_calls(cfg: RunConfig) -> int:
    """The call budget C and the depth T (C = T x N): T, the default T = C filled in."""
    c = cfg.budget
    if isinstance(c, bool) or not isinstance(c, int) or c < 1:
        raise ConfigError(f"--budget must be an integer >= 1 (LLM calls), got {c!r}")
    if c > MAX_BUDGET:
        raise ConfigError(f"--budget must be <= {MAX_BUDGET:,} LLM calls, got {c:,}")
    depth = c if cfg.depth is None else cfg.depth
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"--depth must be an integer >= 1, got {depth!r}")
    if c % depth:
        divisors = [d for d in range(1, c + 1) if c % d == 0]
        shown = ", ".join(map(str, divisors[:12])) + (", ..." if len(divisors) > 12 else "")
        raise ConfigError(
            f"--depth {depth} does not divide --budget {c} (C = T x N); "
            f"choose a depth among {shown}"
        )
    return depth


def check_objectives(cfg: RunConfig) -> tuple[dict[str, str], tuple[float, ...]]:
    """Shape only (issue 36): names, directions, a finite point of the same length.

    Returns the objectives in NAME order with the point reordered alike: the store writes
    a config with sorted keys, so the order a run reads back (resume, reports) is this one.
    Without objectives a point is still shape-checked: the task may declare them
    (engine/objective_start.py checks the pair).
    """
    if cfg.reward_front not in REWARD_FRONTS:
        raise ConfigError(f"--reward-front must be one of {', '.join(REWARD_FRONTS)}, "
                          f"got {str(cfg.reward_front)[:40]!r}")
    objs = parse_objectives(cfg.objectives or None, what="--objectives")
    point: tuple[float, ...] = ()
    if cfg.reference_point:
        spec = cfg.reference_point
        items = spec.split(",") if isinstance(spec, str) else list(spec)
        point = parse_reference_point(items, objs or Objectives(
            tuple(f"value {i + 1}" for i in range(len(items))), ("min",) * len(items)))
    if objs is None:
        return {}, point
    order = sorted(range(len(objs.names)), key=lambda i: objs.names[i])
    return ({objs.names[i]: objs.directions[i] for i in order},
            tuple(point[i] for i in order) if point else ())


def check_options(cfg: RunConfig) -> None:
    """Trajectories, pulls, in-flight limits, rewards and timeouts, each in its range."""
    c = cfg.budget
    if not 1 <= cfg.arms <= c:
        raise ConfigError(
            f"--arms must be between 1 and the budget {c} (each trajectory needs one "
            f"initial call), got {cfg.arms}"
        )
    if cfg.pull == "generation" and cfg.arms * cfg.breadth > c:
        raise ConfigError(
            f"--pull generation initialises each of the --arms {cfg.arms} trajectories "
            f"with one generation of N = {cfg.breadth} calls: {cfg.arms * cfg.breadth} "
            f"calls exceed the budget {c}; lower --arms or N, or use --pull call"
        )
    if cfg.max_in_flight < 1:
        raise ConfigError(f"--max-in-flight must be >= 1, got {cfg.max_in_flight}")
    if cfg.max_tokens is not None and cfg.max_tokens < 1:
        raise ConfigError(f"--max-tokens must be >= 1, got {cfg.max_tokens}")
    if cfg.pull not in PULL_MODES:
        raise ConfigError(f"--pull must be one of {', '.join(PULL_MODES)}, got {cfg.pull!r}")
    if cfg.charge_unanswered not in CHARGE_UNANSWERED:
        raise ConfigError(f"--charge-unanswered must be one of "
                          f"{', '.join(CHARGE_UNANSWERED)}, got {cfg.charge_unanswered!r}")
    check_timeouts(cfg)
    if cfg.reward not in REWARDS:
        raise ConfigError(f"--reward must be one of {', '.join(REWARDS)}, got {cfg.reward!r}")
    check_feedback(cfg.feedback)
    if cfg.cap is not None and cfg.cap < 1:
        raise ConfigError(f"--cap must be >= 1 calls per trajectory, got {cfg.cap}")
    if cfg.cap is not None and cfg.cap * cfg.arms < c:
        raise ConfigError(
            f"--cap {cfg.cap} x --arms {cfg.arms} = {cfg.cap * cfg.arms} calls cannot "
            f"absorb the budget {c}; raise --cap or --arms"
        )
    if cfg.allocator == "single" and cfg.arms != 1:
        raise ConfigError(
            f"allocator 'single' runs one trajectory, got --arms {cfg.arms}; "
            "pick a bandit (e.g. --allocator ucb) or --arms 1"
        )
    if cfg.arm_in_flight is not None and (
            isinstance(cfg.arm_in_flight, bool) or not isinstance(cfg.arm_in_flight, int)
            or cfg.arm_in_flight < 1):
        raise ConfigError(
            f"--arm-in-flight must be an integer >= 1 (calls per trajectory in flight), "
            f"got {cfg.arm_in_flight!r}")


def check_cost_budget(cfg: RunConfig) -> None:
    given = [v for v in (cfg.budget_flops, cfg.budget_tokens, cfg.budget_usd)
             if v is not None]
    if len(given) > 1:
        raise ConfigError("give one budget: --budget C, --budget-flops X, --budget-tokens X "
                          "or --budget-usd X")
    for name, value in (("--budget-flops", cfg.budget_flops),
                        ("--budget-tokens", cfg.budget_tokens),
                        ("--budget-usd", cfg.budget_usd)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 < value < float("inf")):
            raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
    if cfg.budget_kind != "calls" and not (
            isinstance(cfg.depth, int) and cfg.depth >= 1 and isinstance(cfg.budget, int)
            and cfg.budget % cfg.depth == 0
            and cfg.budget == cost_call_cap(cfg.budget // cfg.depth)):
        raise ConfigError(f"a run with a {cfg.budget_kind} budget has no call budget C; "
                          "give --breadth N (children per generation), not --budget/--depth")
    if cfg.horizon is not None and (isinstance(cfg.horizon, bool)
                                     or not isinstance(cfg.horizon, int) or cfg.horizon < 1):
        raise ConfigError(f"horizon must be an integer >= 1, got {cfg.horizon!r}")


def check_timeouts(cfg: RunConfig) -> None:
    for flag, value in (("--request-timeout", cfg.request_timeout),
                        ("--call-timeout", cfg.call_timeout)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 < value <= MAX_TIMEOUT_S):
            raise ConfigError(f"{flag} must be a number of seconds > 0 and at most "
                              f"{MAX_TIMEOUT_S:g} (a week), got {value!r}")


def check_deterministic(cfg: RunConfig) -> None:
    """``--deterministic`` / ``--window`` (issue 23, part 2; engine/ordering.py)."""
    if not isinstance(cfg.deterministic, bool):
        raise ConfigError(f"deterministic must be true or false, got {cfg.deterministic!r}")
    if cfg.deterministic and (cfg.budget_kind != "calls" or cfg.count_eval_calls):
        what = "--count-eval-calls" if cfg.budget_kind == "calls" else \
            f"a {cfg.budget_kind} budget"
        raise ConfigError(f"--deterministic needs a budget of C calls, not {what}: such a "
                          "budget is settled by each reply's usage as it arrives, so its "
                          "decisions depend on timing; drop one of the two")
    w = cfg.window
    if w is None:
        return
    if not cfg.deterministic:
        raise ConfigError(f"--window {w!r} applies to --deterministic runs only; add "
                          "--deterministic or drop --window")
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WINDOW:
        raise ConfigError(f"--window must be an integer between 1 and {MAX_WINDOW} (calls "
                          f"decided and not yet told), got {w!r}")
    if w < cfg.max_in_flight:
        raise ConfigError(f"--window {w} is below --max-in-flight {cfg.max_in_flight}: at "
                          f"most {w} calls could ever be in flight; raise --window or lower "
                          "--max-in-flight")
