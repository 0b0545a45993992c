"""Driving a prepared run: the engine's loop, the lost calls' charge, the summary.

The run entry points (:mod:`basevolve.engine.runner`) check, create or reopen the run
and hand it here; this module runs :class:`~basevolve.engine.core.Engine` to exactly C
counted calls, in a loop of its own (:func:`execute`) or in the caller's running loop
(:func:`execute_async`, for sweeps and notebooks), and stores the summary.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.core import Engine
from basevolve.engine.lost_calls import charge_lost_calls
from basevolve.engine.prepare import Notify, Progress, llm_settings, make_evaluator, quiet
from basevolve.engine.summary import build_summary, write_outputs
from basevolve.engine.text_eval import AnswerSetup, answer_setup
from basevolve.llm.settings import LLMSettings
from basevolve.records import ExecStatus
from basevolve.store import RunStore


async def drive(cfg: RunConfig, store: RunStore, task: Any, client: Any,
                settings: LLMSettings, evaluator: Any, *, resume: bool,
                progress: Progress | None, initial: Any = None) -> dict[str, Any]:
    """Run the engine inside the caller's event loop; the summary as computed from the store.
    ``initial``: the initial program's evaluation when the start check made it (issue 36)."""
    engine = Engine(cfg, task=task, client=client, evaluator=evaluator, store=store,
                    settings=settings, progress=progress, initial=initial)
    # calls sent and never answered are charged per --charge-unanswered (issue 24, item 3):
    # those a killed process left pending, and those in flight when this run stops
    if resume:
        charge_lost_calls(store, cfg, engine.active_params, engine.max_tokens,
                          engine.models.params_of(), engine.models.max_tokens_of())
    try:
        await engine.run(resume=resume)
    except BaseException:  # calls still waiting for their turn were never sent (issue 37)
        charge_lost_calls(store, cfg, engine.active_params, engine.max_tokens,
                          engine.models.params_of(), engine.models.max_tokens_of(),
                          unsent=engine.unsent)
        raise
    finally:
        await engine.models.aclose()  # the clients of the second and later models
    return build_summary(store, cfg, engine)


def execute(cfg: RunConfig, store: RunStore, task: Any, client: Any, settings: LLMSettings,
            *, resume: bool, progress: Progress | None, out_dir: Path | None,
            pool: Any | None, notify: Notify = quiet,
            answers: AnswerSetup | None = None, initial: Any = None) -> dict[str, Any]:
    """Drive the run in a loop of its own; write its outputs and its stored summary."""
    evaluator = make_evaluator(task, cfg, pool, answers, store, resume=resume, notify=notify)

    async def go() -> dict[str, Any]:
        try:
            return await drive(cfg, store, task, client, settings, evaluator, resume=resume,
                               progress=progress, initial=initial)
        finally:
            await client.aclose()

    try:
        summary = asyncio.run(go())
        summary.update(write_outputs(summary, store, task, evaluator, out_dir))
        store.write_summary(cfg.run_id, summary)
        return summary
    finally:
        asyncio.run(evaluator.aclose())


async def execute_async(cfg: RunConfig, store: RunStore, *, resume: bool, task: Any | None,
                        client: Any | None, pool: Any | None,
                        progress: Progress | None,
                        answers: AnswerSetup | None = None,
                        initial: Any = None) -> dict[str, Any]:
    """The async core of :func:`~basevolve.engine.runner.start_run_async` /
    :func:`~basevolve.engine.runner.resume_run_async`.

    A ``client`` or ``pool`` passed in is shared with other runs and stays open; what is
    created here is closed here.  No output files: ``write_outputs`` re-runs the best
    program with its own loop, which a caller's running loop cannot host.
    """
    from basevolve.tasks import load_task

    task = task if task is not None else load_task(cfg.task, cfg.task_params)
    settings = llm_settings(cfg)
    own_client = client is None
    if own_client:
        from basevolve.llm import make_client

        client = make_client(cfg.model, cfg.base_url, params=cfg.params, settings=settings)
    if answers is None:
        answers = answer_setup(task, cfg, client, probe=False)
    evaluator = make_evaluator(task, cfg, pool, answers, store, resume=resume)
    try:
        summary = await drive(cfg, store, task, client, settings, evaluator, resume=resume,
                              progress=progress, initial=initial)
        summary.update({"best_program": None, "picture": None})
        await keep_solution(summary, store, evaluator)
        store.write_summary(cfg.run_id, summary)
        return summary
    finally:
        if own_client:
            await client.aclose()
        await evaluator.aclose()


async def keep_solution(summary: dict[str, Any], store: RunStore, evaluator: Any) -> None:
    """Store the best program's value (as ``write_outputs`` does) so readers such as the
    dashboard can draw it without running code; a failure only loses the picture.  A
    text artifact has no value to draw."""
    code = summary.get("best_code")
    task = evaluator.task
    if code is None or getattr(task, "artifact", "program") == "text" or getattr(
            task, "evaluation", "entry") != "entry":
        return
    try:
        ex = await evaluator.execute(code)
        if ex.status is ExecStatus.OK:
            store.save_solution(summary["run_id"], summary["best_program_id"], ex.value)
    except Exception as exc:  # a missing picture must not lose a finished run
        summary["picture_error"] = f"{type(exc).__name__}: {exc}"


__all__ = ["drive", "execute", "execute_async", "keep_solution"]
