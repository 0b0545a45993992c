"""Frozen, validated run configuration (docs/design.md, style rule 2).

Validated once at the boundary (the CLI or a library caller); the engine trusts it.
Budget semantics follow the paper: C LLM calls in total (Section 3, C = T * N for the
greedy protocol with T generations of N children); with BaSE (Section 5, Algorithm 2)
the K initial calls, one per trajectory, count towards C.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from basevolve.errors import ConfigError

PULL_MODES = ("call", "generation")
#: Largest accepted budget C.  Why a bound at all: C sizes per-call bookkeeping and the
#: divisor hint below, and a typo such as 10**20 must be one clear error, not a hang or
#: an SQLite integer overflow after the run row was written.  The paper uses C = 512.
MAX_BUDGET = 1_000_000
MAX_SEED = 2**63 - 1
REWARDS = ("best", "improvement")
CHARGE_UNANSWERED = ("worst", "none")  # keys of basevolve.llm.flops.CHARGE_UNANSWERED


def generate_run_id(task: str) -> str:
    """A readable unique id: task, UTC timestamp and 4 random hex digits."""
    return f"{task}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


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
    ``--protocol-param`` values, typed by :meth:`Protocol.parse_params`.
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
    allocator_params: dict[str, Any] = field(default_factory=dict)
    protocol_params: dict[str, Any] = field(default_factory=dict)
    arm_in_flight: int | None = None

    def __post_init__(self) -> None:
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
        if self.reward not in REWARDS:
            raise ConfigError(f"--reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
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
        from basevolve.protocols import PROTOCOLS  # late: protocols import tasks, not config

        params = PROTOCOLS.get(self.protocol).parse_params(self.protocol_params)
        object.__setattr__(self, "protocol_params", params)
        if not self.run_id:
            object.__setattr__(self, "run_id", generate_run_id(self.task))
        if not 0 <= self.seed <= MAX_SEED:  # stored as an SQLite INTEGER (64-bit signed)
            raise ConfigError(f"--seed must be between 0 and {MAX_SEED}, got {self.seed}")

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
        last pull is cut short when N does not divide what is left).
        """
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
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def with_(self, **changes: Any) -> RunConfig:
        return replace(self, **changes)
