"""Evaluation of text artifacts: the answering LLM as the scorer's instrument (issue 15).

A ``prompt_optimization`` child is a prompt template; its fitness is the accuracy of an
answering LLM on a QA set when the template is filled in (paper, appendix Table "LPO").
:class:`TextEvaluator` is the engine's evaluator for such tasks (the counterpart of
:class:`~basevolve.engine.evaluator.SandboxEvaluator`): nothing is executed; it asks
the answering LLM and lets the task score the replies in this process.

* **Concurrency**: the answers for one template are asked together, at most
  ``max_in_flight`` at once (the answering endpoint's limit), on the engine's loop, so
  they overlap with mutation calls in flight.
* **Cache**: a reply is cached under sha256 of (messages, model, temperature, top-p,
  max tokens, seed); re-scoring a template (a child that copies its parent, a resumed
  run: the cache is refilled from the store's ``eval_calls``) costs nothing, and two
  evaluations asking the same request at once share one call.  Cached rows are stored
  with ``cache_hit = 1`` and zero cost.  With temperature 0 (the default) a cached
  reply is what the model would answer again.
* **Cost**: every request's tokens, FLOPs (``2 * P_active`` of the *answering* model per
  uncached token, :func:`basevolve.llm.flops.call_flops`), latency and attempts are
  recorded per call (``eval_calls``) and summed per program (``eval_flops``,
  ``eval_tokens``).  They are not calls of C; ``--count-eval-calls`` charges them
  (:mod:`basevolve.engine.budget`).
* **Failures**: a failing answer call is retried by the LLM layer's policy
  (:class:`~basevolve.llm.settings.LLMSettings`: retries, attempt timeout, call
  deadline); if it still fails, that question counts as wrong and the failure is
  recorded.  The evaluation always returns, so the run never hangs on the answering
  endpoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from basevolve.llm.flops import call_flops
from basevolve.records import Evaluation, ExecResult, ExecStatus, Isolation, Trust
from basevolve.tasks.text import AnswerCall, Messages, TextTask, answered_by_llm


def cache_key(messages: Messages, settings: Mapping[str, Any]) -> str:
    """sha256 of a request and everything that shapes its reply (stable across runs)."""
    payload = json.dumps({"messages": messages, **settings}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class TextEvaluator:
    """Scores a :class:`~basevolve.tasks.text.TextTask`'s artifacts with an answering LLM.

    ``client`` is an :class:`~basevolve.llm.base.LLMClient`; ``own_client`` says whether
    :meth:`aclose` closes it (a client shared with the run's mutation calls is not).
    """

    trust = Trust.NOT_RUN  # nothing is executed

    def __init__(self, task: TextTask, client: Any, *, own_client: bool = False,
                 max_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, max_in_flight: int = 16, no_usage: Any = None) -> None:
        self.task = task
        self.client = client
        self.own_client = own_client
        self.active_params = float(client.model_spec.active_params)
        self.max_in_flight = max_in_flight
        self.no_usage = no_usage
        self.sampling = {"model": client.model_spec.served_id, "temperature": temperature,
                         "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
        self.cache: dict[str, str] = {}
        self._inflight: dict[str, asyncio.Future[AnswerCall]] = {}
        self._sem: asyncio.Semaphore | None = None
        self.sent = 0  # answering requests that went to the server (cache misses)

    # ------------------------------------------------------------------ answers
    def preload(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Refill the cache from stored ``eval_calls`` rows (resume); returns how many."""
        n = 0
        for r in rows:
            if r["status"] == "ok" and r["reply"] is not None:
                self.cache[r["cache_key"]] = r["reply"]
                n += 1
        return n

    async def answer(self, requests: Sequence[Messages]) -> list[AnswerCall]:
        """One :class:`AnswerCall` per request, in order (the task's :class:`Answerer`)."""
        return list(await asyncio.gather(*(self._one(m) for m in requests)))

    async def _one(self, messages: Messages) -> AnswerCall:
        key = cache_key(messages, self.sampling)
        if key in self.cache:
            return AnswerCall(self.cache[key], True, key, cache_hit=True)
        pending = self._inflight.get(key)
        if pending is not None:  # the same request is being asked right now: share it
            first = await asyncio.shield(pending)
            return AnswerCall(first.text, first.ok, key, cache_hit=True, error=first.error)
        future: asyncio.Future[AnswerCall] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            call = await self._ask(messages, key)
            future.set_result(call)
            return call
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: sharers get it, nobody else must
            raise
        finally:
            del self._inflight[key]

    async def _ask(self, messages: Messages, key: str) -> AnswerCall:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.max_in_flight)
        s = self.sampling
        async with self._sem:
            self.sent += 1
            c = await self.client.complete(messages, temperature=s["temperature"],
                                           top_p=s["top_p"], max_tokens=s["max_tokens"],
                                           seed=s["seed"])
        kw = {} if self.no_usage is None else {"no_usage": self.no_usage}
        flops = call_flops(c, self.active_params, max_tokens=s["max_tokens"], **kw)
        error = None
        if not c.ok:
            error = c.attempts[-1].error if c.attempts else "the answer call failed"
        else:
            self.cache[key] = c.text
        return AnswerCall(c.text if c.ok else None, c.ok, key, prompt_tokens=c.usage.prompt_tokens,
                          cached_tokens=c.usage.cached_tokens,
                          completion_tokens=c.usage.completion_tokens, flops=flops,
                          latency_s=c.latency_s, attempts=len(c.attempts), error=error)

    # --------------------------------------------------------------- evaluator
    async def evaluate(self, code: str) -> Evaluation:
        """Score one artifact (the engine's evaluator interface)."""
        t0 = time.monotonic()
        ts = await self.task.evaluate_text(code, self)
        sent = [r for r in ts.rows if not r["cache_hit"]]
        return Evaluation(
            score=ts.score, valid=ts.valid, metrics=dict(ts.metrics), error=ts.error,
            strict_score=ts.score, strict_valid=ts.valid, isolation=Isolation.TEXT,
            trust=Trust.NOT_RUN, seconds=time.monotonic() - t0, stdout=ts.feedback, eval_calls=ts.rows,
            eval_flops=float(sum(r["flops"] for r in sent)),
            eval_tokens=int(sum(r["prompt_tokens"] + r["completion_tokens"] for r in sent)))

    async def execute(self, code: str) -> ExecResult:
        """A text artifact is never run; its 'value' is the text itself (no picture)."""
        return ExecResult(ExecStatus.OK, value=code, isolation=Isolation.TEXT)

    async def aclose(self) -> None:
        if self.own_client:
            await self.client.aclose()


def worst_case_eval_units(task: TextTask) -> int:
    """Answer calls one evaluation may send (every question uncached)."""
    return len(getattr(task, "items", ())) or 1




@dataclass(frozen=True, slots=True)
class AnswerSetup:
    """The answering client of a text-task run; ``own``: built for it (closed after)."""

    client: Any
    own: bool


def answer_setup(task: Any, cfg: Any, run_client: Any, *, probe: bool = True,
                 notify: Any = None) -> AnswerSetup | None:
    """The answering LLM of a text task, resolved and checked before anything is stored.

    Rules (``--task-param``): neither ``answer_model`` nor ``answer_base_url`` -> the
    run's own client (the mutation model answers, sharing its endpoint); only
    ``answer_base_url`` -> the one model that endpoint lists (``GET /models``); only
    ``answer_model`` -> an embedded catalog model offline, else the run's ``--base-url``.
    A separate endpoint is probed (``probe``) so an unreachable one is one clear error
    (exit 2, store untouched); an embedded answering model is loaded now, saying so.
    None for a program task.
    """
    if not answered_by_llm(task):  # a program, or a prompt its evaluator.py scores
        return None
    from basevolve.errors import ConfigError
    from basevolve.llm import make_client
    from basevolve.llm.catalog import parse_params, resolve_model

    a = task.answer_settings()
    model, base_url = a.get("model"), a.get("base_url")
    params = parse_params(a["params"], "--task-param answer_params") if a.get("params") else None
    if model is None and base_url is None:
        return AnswerSetup(run_client, False)
    if base_url is None:
        spec = resolve_model(model, params)
        if spec.backend != "embedded":
            if cfg.base_url is None:
                raise ConfigError(f"--task-param answer_model={model} is served over HTTP: "
                                  "give its endpoint as --task-param answer_base_url=URL")
            base_url = cfg.base_url
    elif model is None:
        from basevolve.engine.endpoints import model_for_endpoint, probe_endpoint

        if probe:  # before GET /models, so an unreachable endpoint is named as such
            probe_endpoint(base_url, what="answering endpoint (--task-param answer_base_url)")

        model = model_for_endpoint(base_url, params, (
            "--task-param answer_base_url=", "--task-param answer_model=",
            "--task-param answer_params="))
    if model == cfg.model and base_url == cfg.base_url and params in (None, cfg.params):
        return AnswerSetup(run_client, False)
    from basevolve.llm.settings import LLMSettings

    # the run's --request-timeout / --call-timeout hold for an answering endpoint too
    client = make_client(model, base_url, params=params,
                         settings=LLMSettings(**cfg.llm_timeouts(http=base_url is not None)))
    if base_url is not None:
        if probe:
            from basevolve.engine.endpoints import probe_endpoint

            probe_endpoint(base_url, what="answering endpoint (--task-param answer_base_url)")
    elif notify is not None:
        from basevolve.engine.endpoints import load_model

        load_model(client, notify)
    return AnswerSetup(client, True)


def text_evaluator(task: Any, setup: AnswerSetup, no_usage: Any = None) -> TextEvaluator:
    """The evaluator of a text-task run, with the task's answer settings."""
    a = task.answer_settings()
    return TextEvaluator(task, setup.client, own_client=setup.own,
                         max_tokens=int(a.get("max_tokens", 256)),
                         temperature=float(a.get("temperature", 0.0)),
                         max_in_flight=int(a.get("max_in_flight", 16)), no_usage=no_usage)


__all__ = ["AnswerSetup", "TextEvaluator", "answer_setup", "answered_by_llm", "cache_key",
           "text_evaluator", "worst_case_eval_units"]
