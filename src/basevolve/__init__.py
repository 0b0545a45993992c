"""basevolve: fixed-budget LLM-guided evolutionary program search.

Implements "Compute Allocation for Self-Evolving LLMs: From Depth-Breadth to
Multi-Armed Bandits": the greedy T x N protocol (Section 3), BaSE bandit allocation
across K trajectories (Section 5, Algorithm 2), effective-FLOPs accounting
(Appendix A) and the paper's analysis.  The names in ``__all__`` are the stable
Python API (docs/api.md); docs/design.md maps the modules.

    import basevolve
    result = basevolve.run(task="circle_packing", budget=8, depth=2,
                           model="qwen3-8b", base_url="http://127.0.0.1:8000/v1")
    result.best_score, result.trajectories()

The API names are imported on first use (PEP 562): ``import basevolve`` stays cheap
for the CLI and for every sandbox worker, which import this package too.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from basevolve.analysis.pipeline import AnalysisResult
    from basevolve.api.analysis import analyze, report
    from basevolve.api.result import RunResult
    from basevolve.api.run import resume, resume_async, run, run_async
    from basevolve.api.sweeps import sweep
    from basevolve.records import CallResult
    from basevolve.tasks.base import ScoreResult, Task
    from basevolve.tasks.function import FunctionTask

#: Public name -> module defining it, imported when first used.
_LAZY: dict[str, str] = {
    "AnalysisResult": "basevolve.analysis.pipeline",
    "CallResult": "basevolve.records",
    "FunctionTask": "basevolve.tasks.function",
    "RunResult": "basevolve.api.result",
    "ScoreResult": "basevolve.tasks.base",
    "Task": "basevolve.tasks.base",
    "analyze": "basevolve.api.analysis",
    "report": "basevolve.api.analysis",
    "resume": "basevolve.api.run",
    "resume_async": "basevolve.api.run",
    "run": "basevolve.api.run",
    "run_async": "basevolve.api.run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'basevolve' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(__all__))


def _pinned(module: str, name: str) -> property:
    """An attribute of the package that stays the API function ``module.name``.

    Why: ``basevolve.report`` and ``basevolve.sweep`` are also the names of packages,
    and importing a submodule sets the parent's attribute to it -- so the first ``from
    basevolve.report import write_report`` (the CLI, the analysis) would turn
    ``basevolve.report(...)`` into "'module' object is not callable".  This data
    descriptor keeps the attribute the function; the packages stay importable (``from
    basevolve.report import write_report``, ``sys.modules["basevolve.report"]``).
    """

    def get(_: types.ModuleType) -> Any:
        return getattr(importlib.import_module(module), name)

    def put(_: types.ModuleType, value: Any) -> None:
        if not isinstance(value, types.ModuleType):  # the import system's setattr: ignored
            raise AttributeError(f"basevolve.{name} is the API function; it cannot be replaced")

    return property(get, put)


class _Package(types.ModuleType):
    """The ``basevolve`` module object, with API functions named like subpackages pinned."""

    report = _pinned("basevolve.api.analysis", "report")
    sweep = _pinned("basevolve.api.sweeps", "sweep")


sys.modules[__name__].__class__ = _Package


__all__ = [
    "AnalysisResult",
    "BasevolveError",
    "BudgetError",
    "CallResult",
    "ConfigError",
    "FunctionTask",
    "LLMError",
    "Registry",
    "RunResult",
    "SandboxError",
    "ScoreResult",
    "StoreError",
    "Task",
    "TaskError",
    "__version__",
    "analyze",
    "report",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "sweep",
]
