"""Frozen, validated run configuration (docs/design.md, style rule 2).

Validated once at the boundary (the CLI or a library caller); the engine trusts it.
Budget semantics follow the paper: C LLM calls in total (Section 3, C = T * N for the
greedy protocol with T generations of N children); with BaSE (Section 5, Algorithm 2)
the K initial calls, one per trajectory, count towards C.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from basevolve.errors import ConfigError
from basevolve.passenv import check_data, check_env
from basevolve.vocab import FEEDBACK_MODES as FEEDBACK_MODES  # the CLI's --feedback choices
from basevolve.vocab import check_feedback

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


@dataclass(frozen=True, slots=True)
class RunConfig:
    """Everything that defines a run; stored verbatim (JSON) in the run's row.

    ``depth`` = T and ``breadth`` = N = C / T (greedy generation size; for BaSE the
    generation size of each trajectory).  ``pull`` = ``"call"`` gives a trajectory one
    call per allocator decision (Algorithm 2); ``"generation"`` gives it N calls, charged
    N (the variant in the paper's code).  ``cap`` bounds the calls one trajectory may
    receive (None = no cap).  ``arm_in_flight`` bounds the calls one trajectory may have
    in flight at once (None = no bound beyond ``max_in_flight``; see the engine docstring
    for why that is the default).  ``protocol_params`` are the protocol's declared
    ``--protocol-param`` values, typed by :meth:`Protocol.parse_params`; ``task_params``
    the task's ``--task-param`` values (e.g. ``prompt_optimization``'s dataset).
    ``count_eval_calls`` charges a text task's answering-LLM calls to the budget
    (:mod:`basevolve.engine.text_eval`); by default they are evaluation cost, recorded
    but not charged.  ``feedback`` = ``"artifacts"`` shows a parent's evaluator feedback
    (error, artifacts, output; capped) in the next prompt built from it; the default
    ``"none"`` sends the paper's prompts unchanged.  A stored config from before the field
    existed reads as ``"none"``.
    """

    task: str
    budget: int
    depth: int | None = None
    model: str = "embedded"
    base_url: str | None = None
    params: float | None = None
    seed: int = 0
    run_id: str = ""
    max_in_flight: int = 16
    max_tokens: int | None = None
    protocol: str = "greedy"
    allocator: str = "single"
    arms: int = 1
    pull: str = "call"
    cap: int | None = None
    reward: str = "best"
    temperature: float = 0.6
    top_p: float = 0.95
    count_failed_attempts: bool = False
    charge_unanswered: str = "worst"  # FLOPs of sent-but-unanswered attempts (llm/flops.py)
    request_timeout: float | None = None  # --request-timeout: s per HTTP request (attempt)
    call_timeout: float | None = None  # --call-timeout: s per call, retries included
    allocator_params: dict[str, Any] = field(default_factory=dict)
    protocol_params: dict[str, Any] = field(default_factory=dict)
    arm_in_flight: int | None = None
    budget_flops: float | None = None  # --budget-flops: the run's budget in effective FLOPs
    budget_tokens: int | None = None  # --budget-tokens: ... in tokens (prompt + completion)
    budget_usd: float | None = None  # --budget-usd: ... in US dollars (priced models, issue 25)
    horizon: int | None = None  # bandit decisions to plan for (cost budgets; see bandit_horizon)
    task_params: dict[str, Any] = field(default_factory=dict)  # --task-param (task.PARAMS)
    count_eval_calls: bool = False  # charge a text task's answering calls to the budget
    feedback: str = "none"  # --feedback: evaluator feedback in prompts (FEEDBACK_MODES)
    deterministic: bool = False  # --deterministic: tell in issue order (engine/ordering.py)
    window: int | None = None  # --window: calls decided and not yet told (deterministic)
    # several models (issue 25; llm/ensemble.py, engine/models.py): empty = the one model
    models: tuple[dict[str, Any], ...] = ()  # --model NAME,key=value (repeated)
    model_allocator: str | None = None  # --model-allocator: a bandit over models (None: weights)
    model_reward: str = "improvement"  # --model-reward (engine/models.py MODEL_REWARDS)
    # into the sandbox (issue 31, item 6; passenv.py): --env values, --env-secret names
    # (values never stored), --data folder
    env: dict[str, str] = field(default_factory=dict)
    env_secret: tuple[str, ...] = ()
    data: str | None = None

    def __post_init__(self) -> None:
        self._check_cost_budget()
        c = self.budget
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ConfigError(f"--budget must be an integer >= 1 (LLM calls), got {c!r}")
        if c > MAX_BUDGET:
            raise ConfigError(f"--budget must be <= {MAX_BUDGET:,} LLM calls, got {c:,}")
        depth = c if self.depth is None else self.depth
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ConfigError(f"--depth must be an integer >= 1, got {depth!r}")
        if c % depth:
            divisors = [d for d in range(1, c + 1) if c % d == 0]
            shown = ", ".join(map(str, divisors[:12])) + (", ..." if len(divisors) > 12 else "")
            raise ConfigError(
                f"--depth {depth} does not divide --budget {c} (C = T x N); "
                f"choose a depth among {shown}"
            )
        object.__setattr__(self, "depth", depth)
        if not 1 <= self.arms <= c:
            raise ConfigError(
                f"--arms must be between 1 and the budget {c} (each trajectory needs one "
                f"initial call), got {self.arms}"
            )
        if self.pull == "generation" and self.arms * self.breadth > c:
            raise ConfigError(
                f"--pull generation initialises each of the --arms {self.arms} trajectories "
                f"with one generation of N = {self.breadth} calls: {self.arms * self.breadth} "
                f"calls exceed the budget {c}; lower --arms or N, or use --pull call"
            )
        if self.max_in_flight < 1:
            raise ConfigError(f"--max-in-flight must be >= 1, got {self.max_in_flight}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"--max-tokens must be >= 1, got {self.max_tokens}")
        if self.pull not in PULL_MODES:
            raise ConfigError(f"--pull must be one of {', '.join(PULL_MODES)}, got {self.pull!r}")
        if self.charge_unanswered not in CHARGE_UNANSWERED:
            raise ConfigError(f"--charge-unanswered must be one of "
                              f"{', '.join(CHARGE_UNANSWERED)}, got {self.charge_unanswered!r}")
        self._check_timeouts()
        if self.reward not in REWARDS:
            raise ConfigError(f"--reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        check_feedback(self.feedback)
        if self.cap is not None and self.cap < 1:
            raise ConfigError(f"--cap must be >= 1 calls per trajectory, got {self.cap}")
        if self.cap is not None and self.cap * self.arms < c:
            raise ConfigError(
                f"--cap {self.cap} x --arms {self.arms} = {self.cap * self.arms} calls cannot "
                f"absorb the budget {c}; raise --cap or --arms"
            )
        if self.allocator == "single" and self.arms != 1:
            raise ConfigError(
                f"allocator 'single' runs one trajectory, got --arms {self.arms}; "
                "pick a bandit (e.g. --allocator ucb) or --arms 1"
            )
        if self.arm_in_flight is not None and (
                isinstance(self.arm_in_flight, bool) or not isinstance(self.arm_in_flight, int)
                or self.arm_in_flight < 1):
            raise ConfigError(
                f"--arm-in-flight must be an integer >= 1 (calls per trajectory in flight), "
                f"got {self.arm_in_flight!r}")
        self._check_deterministic()
        check_env(self.env, self.env_secret)
        object.__setattr__(self, "env_secret", tuple(self.env_secret))
        check_data(self.data)
        if not self.run_id:
            object.__setattr__(self, "run_id", generate_run_id(self.task))
        check_run_id(self.run_id)
        if not 0 <= self.seed <= MAX_SEED:  # stored as an SQLite INTEGER (64-bit signed)
            raise ConfigError(f"--seed must be between 0 and {MAX_SEED}, got {self.seed}")

    def _check_deterministic(self) -> None:
        """``--deterministic`` / ``--window`` (issue 23, part 2; engine/ordering.py)."""
        if not isinstance(self.deterministic, bool):
            raise ConfigError(f"deterministic must be true or false, got {self.deterministic!r}")
        if self.deterministic and (self.budget_kind != "calls" or self.count_eval_calls):
            what = "--count-eval-calls" if self.budget_kind == "calls" else \
                f"a {self.budget_kind} budget"
            raise ConfigError(f"--deterministic needs a budget of C calls, not {what}: such a "
                              "budget is settled by each reply's usage as it arrives, so its "
                              "decisions depend on timing; drop one of the two")
        w = self.window
        if w is None:
            return
        if not self.deterministic:
            raise ConfigError(f"--window {w!r} applies to --deterministic runs only; add "
                              "--deterministic or drop --window")
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WINDOW:
            raise ConfigError(f"--window must be an integer between 1 and {MAX_WINDOW} (calls "
                              f"decided and not yet told), got {w!r}")
        if w < self.max_in_flight:
            raise ConfigError(f"--window {w} is below --max-in-flight {self.max_in_flight}: at "
                              f"most {w} calls could ever be in flight; raise --window or lower "
                              "--max-in-flight")

    @property
    def decision_window(self) -> int:
        """With ``--deterministic``: how many calls may be decided and not yet told when
        the next one is decided (``--window``; default ``max(24, --max-in-flight + 8)``,
        so every ``--max-in-flight`` up to 16 gives the same run).  Unused otherwise."""
        if self.window is not None:
            return self.window
        return max(DEFAULT_WINDOW, self.max_in_flight + WINDOW_MARGIN)

    def _check_timeouts(self) -> None:
        for flag, value in (("--request-timeout", self.request_timeout),
                            ("--call-timeout", self.call_timeout)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not 0 < value <= MAX_TIMEOUT_S):
                raise ConfigError(f"{flag} must be a number of seconds > 0 and at most "
                                  f"{MAX_TIMEOUT_S:g} (a week), got {value!r}")

    def llm_timeouts(self, http: bool | None = None) -> dict[str, float]:
        """``LLMSettings`` fields for the run's timeouts: ``attempt_timeout_s`` (one HTTP
        request, ``--request-timeout``) and ``call_deadline_s`` (the whole call with its
        retries and backoff, ``--call-timeout``).

        ``http``: whether the client talks to an endpoint (default: the run's own,
        ``base_url`` given).  An endpoint gets :data:`DEFAULT_REQUEST_TIMEOUT_S` /
        :data:`DEFAULT_CALL_TIMEOUT_S` unless set; the embedded model only what was set.
        """
        http = self.base_url is not None if http is None else http
        request = self.request_timeout or (DEFAULT_REQUEST_TIMEOUT_S if http else None)
        call = self.call_timeout or (DEFAULT_CALL_TIMEOUT_S if http else None)
        out = {"attempt_timeout_s": request, "call_deadline_s": call}
        return {k: float(v) for k, v in out.items() if v is not None}

    def _check_cost_budget(self) -> None:
        given = [v for v in (self.budget_flops, self.budget_tokens, self.budget_usd)
                 if v is not None]
        if len(given) > 1:
            raise ConfigError("give one budget: --budget C, --budget-flops X, --budget-tokens X "
                              "or --budget-usd X")
        for name, value in (("--budget-flops", self.budget_flops),
                            ("--budget-tokens", self.budget_tokens),
                            ("--budget-usd", self.budget_usd)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not 0 < value < float("inf")):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        if self.budget_kind != "calls" and not (
                isinstance(self.depth, int) and self.depth >= 1 and isinstance(self.budget, int)
                and self.budget % self.depth == 0
                and self.budget == cost_call_cap(self.budget // self.depth)):
            raise ConfigError(f"a run with a {self.budget_kind} budget has no call budget C; "
                              "give --breadth N (children per generation), not --budget/--depth")
        if self.horizon is not None and (isinstance(self.horizon, bool)
                                         or not isinstance(self.horizon, int) or self.horizon < 1):
            raise ConfigError(f"horizon must be an integer >= 1, got {self.horizon!r}")

    @property
    def budget_kind(self) -> str:
        """``calls`` (the paper's C), ``flops`` or ``tokens`` (:mod:`basevolve.engine.budget`)."""
        if self.budget_flops is not None:
            return "flops"
        if self.budget_usd is not None:
            return "usd"
        return "tokens" if self.budget_tokens is not None else "calls"

    @property
    def budget_limit(self) -> float:
        """The budget in its own unit: C, FLOPs or tokens."""
        if self.budget_flops is not None:
            return float(self.budget_flops)
        if self.budget_usd is not None:
            return float(self.budget_usd)
        return float(self.budget_tokens if self.budget_tokens is not None else self.budget)

    @property
    def breadth(self) -> int:
        """N = C / T."""
        assert self.depth is not None
        return self.budget // self.depth

    @property
    def bandit_horizon(self) -> int:
        """Pulls the allocator decides (EXP3.P's T): those after the K initial ones.

        Why not simply C - K: with ``pull="generation"`` every pull, the K initial ones
        included, charges N calls, so the bandit makes ceil((C - K N) / N) decisions (the
        last pull is cut short when N does not divide what is left).  Under a FLOPs or
        token budget the number of calls is not known in advance: ``horizon`` is set when
        the run starts to the decisions left if every call cost its worst case (a lower
        bound; :func:`basevolve.engine.budget.plan_cost_budget`).
        """
        if self.horizon is not None:
            return self.horizon
        if self.pull == "generation":
            n = self.breadth
            return -(-(self.budget - self.arms * n) // n)
        return self.budget - self.arms

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["breadth"] = self.breadth
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        """A config as stored.  The run keeps the id it is stored under, unchecked: a
        store written before run ids were checked may hold ids --resume must still find
        (where such an id would become a path, the caller checks it)."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        stored_id = known.pop("run_id", "")
        cfg = cls(**known)
        if stored_id:
            object.__setattr__(cfg, "run_id", stored_id)
        return cfg

    def with_(self, **changes: Any) -> RunConfig:
        return replace(self, **changes)
