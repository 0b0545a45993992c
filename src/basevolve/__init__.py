"""basevolve: fixed-budget LLM-guided evolutionary program search.

Implements "Compute Allocation for Self-Evolving LLMs: From Depth-Breadth to
Multi-Armed Bandits": the greedy T x N protocol (Section 3), BaSE bandit allocation
across K trajectories (Section 5, Algorithm 2), effective-FLOPs accounting
(Appendix A) and the paper's analysis.  See docs/design.md for the map.
"""

from __future__ import annotations

__version__ = "0.1.0"

from basevolve.errors import (
    BasevolveError,
    BudgetError,
    ConfigError,
    LLMError,
    SandboxError,
    StoreError,
    TaskError,
)
from basevolve.registry import Registry

__all__ = [
    "BasevolveError",
    "BudgetError",
    "ConfigError",
    "LLMError",
    "Registry",
    "SandboxError",
    "StoreError",
    "TaskError",
    "__version__",
]
