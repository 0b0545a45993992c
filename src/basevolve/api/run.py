"""``basevolve.run`` / ``resume`` (and their async twins): the CLI's run, from Python.

Same guarantees as ``basevolve run`` because it is the same code path: the arguments
become a :class:`~basevolve.config.RunConfig` (validated once, same messages), the store
is checked before anything is written, and :func:`basevolve.engine.runner.start_run` /
``resume_run`` spend exactly C LLM calls (paper Section 3: C = T x N for greedy; Section
5, Algorithm 2: the K initial calls of BaSE count towards C), also across a resume.
Where the engine's loop runs (this thread or a worker): :mod:`basevolve.api.loop`.
Here are the four entry points and their documented arguments; the arguments' checks
are :mod:`basevolve.api.arguments`, the job each call runs :mod:`basevolve.api.jobs`.
"""

from __future__ import annotations

import os
from typing import Any

from basevolve.api.arguments import ProgressArg, TaskSpec
from basevolve.api.jobs import finish, resume_job, start_job
from basevolve.api.result import RunResult

#: Default store file, the CLI's ``--store`` default.
DEFAULT_STORE = "basevolve.sqlite"


def run(task: TaskSpec, budget: int, *, depth: int | None = None, breadth: int | None = None,
        allocator: str = "single", arms: int = 1, protocol: str = "greedy",
        model: str | None = None, base_url: str | None = None,
        store: str | os.PathLike[str] = DEFAULT_STORE, seed: int = 0, run_id: str = "",
        out: str | os.PathLike[str] | None = None, progress: ProgressArg = True,
        **options: Any) -> RunResult:
    """Run one fixed-budget evolution to exactly ``budget`` LLM calls; block until done.

    The Python form of ``basevolve run``: the same validation and messages, the same
    store, the same exact budget (paper Section 3, C = T x N; Section 5 for BaSE).

    Args:
        task: A built-in task name (``"circle_packing"``), the path of a ``.py`` task
            file or of an OpenEvolve task directory (docs/tasks.md), or a
            :class:`basevolve.Task` instance (or subclass) defined in code.
            Its scorer runs in this process; the programs it scores run in the sandbox.
        budget: C, the total number of LLM calls (retries and the K initial calls of
            BaSE included).
        depth: T, generations of the greedy protocol (N = C / T). Default T = C.
        breadth: N, children per generation, instead of ``depth`` (T = C / N).
        allocator: ``"single"`` (one trajectory) or a BaSE bandit (``"ucb"``,
            ``"exp3p"``, ``"thompson_plain"`` (the paper's Thompson sampling;
            ``"thompson"`` is our discounted variant), ``"random"``, ``"round_robin"``).
        arms: K, the trajectories the allocator chooses among.
        protocol: The within-trajectory protocol (``"greedy"``).
        model: Model name (FLOPs use its active parameter count).  Default: with
            ``base_url``, the one model the server lists (``GET /v1/models``), as
            ``basevolve run --base-url`` does; without, ``"embedded"`` (the offline model).
        base_url: An OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        store: The SQLite run store (created if missing).
        seed: Seed of the run (every call's seed derives from it); 0 lets an OpenEvolve
            task directory's random_seed apply.
        run_id: Name of the run; generated when empty.
        out: Folder for ``best_program.py`` and ``best.png``; nothing is written when None.
        progress: True prints a progress line on stderr; a callable receives a dict
            after every completed call (from the thread running the engine).
        **options: Any other :class:`~basevolve.config.RunConfig` field, by the CLI
            flag's name (``max_in_flight``, ``max_tokens``, ``pull``, ``cap``,
            ``reward``, ``params``, ``count_failed_attempts``, ``feedback``, ...);
            ``params`` takes the forms ``--params`` takes (``8e9``, ``"8B"``, ``"700M"``);
            ``feedback="artifacts"`` shows each parent's evaluator feedback in the next
            prompt (``--feedback artifacts``, docs/running.md); ``deterministic=True``
            tells results in the order the calls were issued, so a seeded server gives
            the same run at any ``max_in_flight`` and across :func:`resume`
            (``--deterministic``, docs/running.md); ``models=["weak,params=1.7e9",
            "strong,base_url=URL,weight=0.2"]`` (or dicts with the same keys) runs
            several models, ``model_allocator="ucb"`` chooses each call's model with a
            bandit (``--model`` repeated, docs/models.md);
            ``objectives={"accuracy": "max", "seconds": "min"}`` (and optionally
            ``reference_point=(0.0, 10.0)``, ``reward_front="run"``) searches a Pareto
            front, the reward its hypervolume (``--objectives``, docs/running.md).

    Returns:
        The finished run (:class:`RunResult`).

    Raises:
        ConfigError: A bad or inconsistent value (same message as the CLI).
        TaskError: The task cannot be loaded or does not meet the Task contract.
        StoreError: The store is foreign, or the run id exists already.
        LLMError: The endpoint does not answer.
        KeyboardInterrupt: The run was interrupted; it is stored as ``interrupted``
            and :func:`basevolve.resume` continues it (the exception's note says how).

    Inside a running event loop (Jupyter) the engine runs in a worker thread while this
    call blocks; see :func:`run_async` to await it instead.
    """
    job, store_path, rid = start_job(task, budget, depth, breadth, allocator, arms, protocol,
                                  model, base_url, store, seed, run_id, out, progress, options)
    return finish(job, store_path, rid, progress, blocking=True)


async def run_async(task: TaskSpec, budget: int, *, depth: int | None = None,
                    breadth: int | None = None, allocator: str = "single", arms: int = 1,
                    protocol: str = "greedy", model: str | None = None,
                    base_url: str | None = None, store: str | os.PathLike[str] = DEFAULT_STORE,
                    seed: int = 0, run_id: str = "", out: str | os.PathLike[str] | None = None,
                    progress: ProgressArg = False, **options: Any) -> RunResult:
    """:func:`run` as a coroutine: the engine runs in a worker thread, the caller's loop
    stays free (``await basevolve.run_async(...)`` in a notebook cell).

    Arguments, result and errors are those of :func:`run` (``progress`` defaults to
    False here).  Cancelling the awaiting task stops the run after its next completed
    call, records it as ``interrupted`` (resumable) and raises
    :class:`asyncio.CancelledError`.
    """
    job, store_path, rid = start_job(task, budget, depth, breadth, allocator, arms, protocol,
                                  model, base_url, store, seed, run_id, out, progress, options)
    return await finish(job, store_path, rid, progress, blocking=False)


def resume(run_id: str, store: str | os.PathLike[str] = DEFAULT_STORE, *,
           task: TaskSpec | None = None, out: str | os.PathLike[str] | None = None,
           allow_task_change: bool = False, progress: ProgressArg = True) -> RunResult:
    """Continue a stored run (killed, failed or interrupted) to exactly its budget.

    The Python form of ``basevolve run --resume RUN_ID``: calls that were in flight
    are re-issued once, the allocator and protocol state is replayed from the store, and
    the run ends with exactly C charged calls.  A finished run is returned as it is,
    with nothing spent.

    Args:
        run_id: The run's name (``RunResult.run_id``, or ``basevolve runs --store F``).
        store: The store holding the run.
        task: Only for a run started with a task object: the same task again (the store
            keeps the task's name, not its code).
        out: Folder for ``best_program.py`` and ``best.png``; nothing is written when None.
        allow_task_change: Continue although the task changed since the run started
            (``--allow-task-change``; the change is recorded in the store).
        progress: As for :func:`run`.

    Returns:
        The finished run; ``resumed`` is True when calls were spent now.

    Raises:
        ConfigError: The run is not in the store (the message lists the known ones).
        StoreError: The store does not exist, is foreign, or another process drives the run.
        TaskError: The run was made with a task object and ``task`` was not given.
    """
    job, store_path = resume_job(run_id, store, task, out, allow_task_change, progress)
    return finish(job, store_path, run_id, progress, blocking=True)


async def resume_async(run_id: str, store: str | os.PathLike[str] = DEFAULT_STORE, *,
                       task: TaskSpec | None = None, out: str | os.PathLike[str] | None = None,
                       allow_task_change: bool = False,
                       progress: ProgressArg = False) -> RunResult:
    """:func:`resume` as a coroutine (the engine runs in a worker thread); see :func:`run_async`."""
    job, store_path = resume_job(run_id, store, task, out, allow_task_change, progress)
    return await finish(job, store_path, run_id, progress, blocking=False)
