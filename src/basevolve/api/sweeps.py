"""``basevolve.sweep``: the ``basevolve sweep CONFIG --store FILE`` command from Python.

A sweep is the paper's grid (budgets C x depths T x seeds, BaSE rows; Sections 4 and 5)
as deterministically named runs in one store; :func:`basevolve.sweep.run_sweep` runs
every run that is not finished, so calling this again after an interruption resumes the
grid.  Like :func:`basevolve.run`, it runs in the calling thread, or in one worker
thread when the caller is inside a running event loop (Jupyter; :mod:`.loop`).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from basevolve.api.checks import check_type
from basevolve.api.loop import Progress, call_blocking
from basevolve.api.run import DEFAULT_STORE
from basevolve.errors import ConfigError
from basevolve.sweep import SweepConfig, SweepResult


def sweep(config: str | os.PathLike[str] | SweepConfig,
          store: str | os.PathLike[str] = DEFAULT_STORE, *, executor: str = "local",
          address: str | None = None, progress: bool = True) -> SweepResult:
    """Run every unfinished run of a sweep (a TOML grid) to its exact budget.

    Args:
        config: Path of the sweep's TOML file, or a parsed
            ``basevolve.sweep.SweepConfig``.
        store: The run store; runs already finished there are skipped, interrupted
            ones resumed.
        executor: ``"local"`` (one asyncio loop sharing each endpoint's in-flight limit
            and one sandbox pool) or ``"ray"`` (a Ray cluster, needs the ``ray`` extra).
        address: The Ray cluster for ``executor="ray"`` (``"auto"``, ``HOST:PORT``, or
            None for a Ray already initialised in this process).
        progress: True shows the sweep's progress table on stderr.

    Returns:
        A ``basevolve.sweep.SweepResult``: ``outcomes`` maps every run id to its status
        (and summary or error); ``failed`` lists the runs that did not finish.

    Raises:
        ConfigError: A bad grid, name or value (the messages of ``basevolve sweep``).
        StoreError: The store is foreign.
        LLMError: An endpoint does not answer.
        KeyboardInterrupt: Interrupted; its runs are stored as ``interrupted`` and the
            same call continues the grid.
    """
    from basevolve.sweep import load_sweep, run_sweep
    from basevolve.sweep.progress import SweepProgress

    if not isinstance(config, str | os.PathLike | SweepConfig):
        raise ConfigError(f"config must be the path of a sweep TOML file or a SweepConfig, "
                          f"got {type(config).__name__}")
    if not isinstance(store, str | os.PathLike):
        raise ConfigError(f"store= must be a file path (str or Path), got {store!r}")
    check_type("executor", executor, str)
    check_type("address", address, str | None)
    check_type("progress", progress, bool)
    grid = config if isinstance(config, SweepConfig) else load_sweep(Path(config))

    class Stoppable(SweepProgress):
        """The sweep's display, which also carries the caller's stop request."""

        def __init__(self, hook: Progress) -> None:
            quiet = None if progress else io.StringIO()
            super().__init__(grid, stream=quiet, live=None if progress else False)
            self.hook = hook

        def update(self, snap: dict[str, Any]) -> None:
            self.hook(snap)  # raises in the engine when the caller asked to stop
            super().update(snap)

    def job(hook: Progress) -> SweepResult:
        return run_sweep(grid, Path(store), executor=executor, address=address,
                         progress=Stoppable(hook))

    return call_blocking(job, None)
