"""Error tree of basevolve.

Every error raised on purpose derives from :class:`BasevolveError`; each subclass also
inherits the matching built-in (docs/design.md, style rule 7) so callers that only know
``ValueError`` still catch configuration mistakes.  Messages name the bad value, why it
is bad and what to do.  The CLI turns any ``BasevolveError`` into one line on stderr and
exit code 2 (user mistake) without a traceback.
"""

from __future__ import annotations


class BasevolveError(Exception):
    """Root of all deliberate basevolve errors."""

    exit_code: int = 2


class ConfigError(BasevolveError, ValueError):
    """A configuration value is invalid (bad flag, inconsistent budget, unknown name)."""


class TaskError(BasevolveError, ValueError):
    """A task definition or task file is invalid."""


class SandboxError(BasevolveError, RuntimeError):
    """The sandbox itself failed (not the program inside it)."""

    exit_code = 1


class LLMError(BasevolveError, RuntimeError):
    """An LLM backend could not be reached or configured."""


class BudgetError(BasevolveError, RuntimeError):
    """The LLM-call budget would be exceeded or is inconsistent."""


class StoreError(BasevolveError, RuntimeError):
    """The run store is missing, foreign, corrupt, or inconsistent with the request."""


__all__ = [
    "BasevolveError",
    "BudgetError",
    "ConfigError",
    "LLMError",
    "SandboxError",
    "StoreError",
    "TaskError",
]
