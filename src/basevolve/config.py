"""Frozen, validated run configuration (docs/design.md, style rule 2).

Validated once at the boundary (the CLI or a library caller); the engine trusts it.
The options are data (issue 33): their shape and range are checked here, by the
functions of :mod:`basevolve.config_checks`; what needs a registry, the model catalog
or a task (a protocol's params, the models, a task's params) is checked once above, by
:func:`basevolve.engine.run_checks.checked_run`.
Budget semantics follow the paper: C LLM calls in total (Section 3, C = T * N for the
greedy protocol with T generations of N children); with BaSE (Section 5, Algorithm 2)
the K initial calls, one per trajectory, count towards C.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

# the checks of each option (and the constants they check against) live beside the
# options; re-exported here, where the CLI, the API and the tests import them
from basevolve.config_checks import CHARGE_UNANSWERED as CHARGE_UNANSWERED
from basevolve.config_checks import DEFAULT_CALL_TIMEOUT_S as DEFAULT_CALL_TIMEOUT_S
from basevolve.config_checks import DEFAULT_REQUEST_TIMEOUT_S as DEFAULT_REQUEST_TIMEOUT_S
from basevolve.config_checks import (
    DEFAULT_WINDOW,
    WINDOW_MARGIN,
    check_calls,
    check_cost_budget,
    check_deterministic,
    check_objectives,
    check_options,
    check_run_id,
    generate_run_id,
)
from basevolve.config_checks import MAX_BUDGET as MAX_BUDGET
from basevolve.config_checks import MAX_RUN_ID as MAX_RUN_ID
from basevolve.config_checks import MAX_SEED as MAX_SEED
from basevolve.config_checks import MAX_TIMEOUT_S as MAX_TIMEOUT_S
from basevolve.config_checks import MAX_WINDOW as MAX_WINDOW
from basevolve.config_checks import PULL_MODES as PULL_MODES
from basevolve.config_checks import REWARD_FRONTS as REWARD_FRONTS
from basevolve.config_checks import REWARDS as REWARDS
from basevolve.config_checks import RUN_ID_PATTERN as RUN_ID_PATTERN
from basevolve.config_checks import budget_fields as budget_fields
from basevolve.config_checks import cost_call_cap as cost_call_cap
from basevolve.config_checks import depth_from_breadth as depth_from_breadth
from basevolve.errors import ConfigError
from basevolve.passenv import check_data, check_env
from basevolve.vocab import FEEDBACK_MODES as FEEDBACK_MODES  # the CLI's --feedback choices
from basevolve.vocab import check_feedback as check_feedback


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
    # several objectives (issue 36; objectives.py): {name: "max"|"min"} (empty = one
    # score), kept in NAME order (the store sorts a config's keys; a declared reference
    # point is reordered with them), and the reference point of their hypervolume
    # (declared, or derived from the initial program's vector and stored at the start)
    objectives: dict[str, str] = field(default_factory=dict)
    reference_point: tuple[float, ...] = ()
    reward_front: str = "trajectory"  # --reward-front (REWARD_FRONTS)

    def __post_init__(self) -> None:
        objectives, point = check_objectives(self)
        object.__setattr__(self, "objectives", objectives)
        object.__setattr__(self, "reference_point", point)
        check_cost_budget(self)
        object.__setattr__(self, "depth", check_calls(self))
        check_options(self)
        check_deterministic(self)
        check_env(self.env, self.env_secret)
        object.__setattr__(self, "env_secret", tuple(self.env_secret))
        check_data(self.data)
        if not self.run_id:
            object.__setattr__(self, "run_id", generate_run_id(self.task))
        check_run_id(self.run_id)
        if not 0 <= self.seed <= MAX_SEED:  # stored as an SQLite INTEGER (64-bit signed)
            raise ConfigError(f"--seed must be between 0 and {MAX_SEED}, got {self.seed}")

    @property
    def decision_window(self) -> int:
        """With ``--deterministic``: how many calls may be decided and not yet told when
        the next one is decided (``--window``; default ``max(24, --max-in-flight + 8)``,
        so every ``--max-in-flight`` up to 16 gives the same run).  Unused otherwise."""
        if self.window is not None:
            return self.window
        return max(DEFAULT_WINDOW, self.max_in_flight + WINDOW_MARGIN)

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
        if not self.objectives:  # a single-objective run's stored config is unchanged
            for key in ("objectives", "reference_point", "reward_front"):
                d.pop(key)
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
