"""What a run needs before its store row is written: settings, task, client, pool, evaluator.

Order matters for "bad input leaves the store untouched" (issue 4): the config is
validated, the task loaded and the endpoint probed *before* the store file is opened
(:mod:`basevolve.engine.runner` writes the run row only after :func:`prepared`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from basevolve.config import DEFAULT_CALL_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S, RunConfig
from basevolve.engine.endpoints import load_model, probe_endpoint
from basevolve.engine.evaluator import needs_own_pool, start_pool
from basevolve.engine.evaluators import evaluator_for
from basevolve.engine.models import check_models, model_max_tokens
from basevolve.engine.text_eval import AnswerSetup, answer_setup, text_evaluator
from basevolve.llm.ensemble import model_entries
from basevolve.llm.settings import LLMSettings
from basevolve.store import RunStore

Progress = Callable[[dict[str, Any]], None]
Notify = Callable[[str], None]


def quiet(message: str) -> None:
    """The default ``notify``: library callers get no output."""


def llm_settings(cfg: RunConfig) -> LLMSettings:
    """Settings for this run; with counted failed attempts the engine does the retrying.

    Why: when every attempt costs one unit of C, a client retrying internally could
    spend C+1; with ``max_retries=0`` each call is one attempt and the engine re-issues
    a failed call only while budget remains.
    """
    from basevolve.llm.flops import CHARGE_UNANSWERED

    # --max-tokens, else the model's default in the catalog (Qwen3 thinks: issue 23)
    # (the first model's own max_tokens= key first: each model has its own, issue 34)
    max_tokens = model_max_tokens(cfg, model_entries(cfg)[0])
    timeouts = cfg.llm_timeouts()  # --request-timeout / --call-timeout
    if cfg.base_url is not None:
        # The default request timeout is 4,096 tokens at ~14 tokens/s; a larger cap (a
        # thinking model's 16,000) gets the same rate, and a call three such attempts.
        if cfg.request_timeout is None:
            timeouts["attempt_timeout_s"] = max(
                DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_REQUEST_TIMEOUT_S * max_tokens / 4096)
        if cfg.call_timeout is None:
            timeouts["call_deadline_s"] = max(DEFAULT_CALL_TIMEOUT_S,
                                              3 * float(timeouts["attempt_timeout_s"]))
    s = LLMSettings(count_failed_attempts=cfg.count_failed_attempts,
                    no_usage=CHARGE_UNANSWERED[cfg.charge_unanswered], max_tokens=max_tokens,
                    **timeouts)
    if cfg.count_failed_attempts or cfg.budget_kind != "calls":
        # cost budgets too: each attempt is its own reserved call (engine/budget.py)
        s = dataclasses.replace(s, max_retries=0)
    return s


class Prepared(NamedTuple):
    """What a run needs before its store row is written (all checked, nothing stored)."""

    task: Any
    client: Any
    settings: LLMSettings
    answers: AnswerSetup | None  # a text task's answering client
    pool: Any | None  # the sandbox pool the run evaluates on (None for a text task)


@contextmanager
def prepared(cfg: RunConfig, notify: Notify = quiet, task: Any | None = None,
             shared_pool: Any | None = None) -> Iterator[Prepared]:
    """Load and check everything a run needs; the pool is ``shared_pool`` (left open) or
    one started here in the background (:func:`start_pool`) and closed on leaving."""
    from basevolve.allocators import ALLOCATORS
    from basevolve.llm import make_client
    from basevolve.protocols import PROTOCOLS
    from basevolve.tasks import load_task

    task = load_task(cfg.task, cfg.task_params) if task is None else task
    ALLOCATORS.get(cfg.allocator)
    PROTOCOLS.get(cfg.protocol)
    if shared_pool is not None and needs_own_pool(task, cfg):
        shared_pool = None  # toolchains, --env or --data: a pool of the run's own (issue 31)
    own = start_pool(task, cfg) if shared_pool is None else None
    try:
        settings = llm_settings(cfg)
        client = make_client(cfg.model, cfg.base_url, params=cfg.params, settings=settings)
        check_models(cfg)  # several models (issue 25): names, endpoints, prices
        if cfg.base_url is not None:
            probe_endpoint(cfg.base_url)
        else:
            load_model(client, notify)
        answers = answer_setup(task, cfg, client, notify=notify)  # text tasks (issue 15)
        yield Prepared(task, client, settings, answers, own or shared_pool)
    finally:
        if own is not None:
            own.close()


def make_evaluator(task: Any, cfg: RunConfig, pool: Any | None, answers: AnswerSetup | None,
                   store: RunStore | None = None, *, resume: bool = False,
                   notify: Notify | None = None) -> Any:
    """The run's evaluator: the sandbox for programs, the answering LLM for text.

    On resume a text task's answer cache is refilled from the run's stored evaluation
    calls, so templates scored before the crash cost nothing when met again.
    """
    if answers is None:
        log = None if store is None else Path(f"{store.path}.scorer-errors.log")
        return evaluator_for(task, pool, scorer_log=log, notify=notify, seed=cfg.seed)
    from basevolve.llm.flops import CHARGE_UNANSWERED

    evaluator = text_evaluator(task, answers, CHARGE_UNANSWERED[cfg.charge_unanswered])
    if resume and store is not None:
        evaluator.preload(store.query(
            "SELECT status, reply, cache_key FROM eval_calls WHERE run_id=?", (cfg.run_id,)))
    return evaluator


def answer_params(answers: AnswerSetup | None) -> float | None:
    """Active parameters of a text task's answering model (its FLOPs are charged at that
    size under ``--count-eval-calls``); None for program tasks."""
    return None if answers is None else float(answers.client.model_spec.active_params)


def active_params(cfg: RunConfig, client: Any | None) -> float:
    """Active parameters of the run's (first) model: the client's, else the catalog's."""
    if client is not None:
        return float(client.model_spec.active_params)
    from basevolve.llm import resolve_model

    return float(resolve_model(cfg.model, cfg.params).active_params)


__all__ = ["Notify", "Prepared", "Progress", "active_params", "answer_params", "llm_settings",
           "make_evaluator", "prepared", "quiet"]
