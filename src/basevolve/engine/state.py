"""Small engine records: pulls, call jobs, seeds (paper Section 5, Algorithm 2).

A *pull* is one allocator decision: Algorithm 2's K initial calls are ``assign`` pulls
(one per trajectory, fixed by the algorithm), the C - K later ones ``ask`` pulls.  With
``pull="call"`` a pull is one LLM call; with ``pull="generation"`` it is the N calls of
one greedy generation, charged N.  The allocator is told once per pull, when all its
calls have been evaluated, with the reward of the trajectory's best after the pull.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from basevolve.llm.flops import NoUsagePolicy, attempt_flops
from basevolve.protocols import Child, Proposal
from basevolve.records import Completion, Evaluation


def call_seed(run_seed: int, call_index: int) -> int:
    """Deterministic per-call sampling seed from the run seed and the call index.

    A hash (not ``run_seed + call_index``) so neighbouring runs' seeds never overlap.
    """
    digest = hashlib.sha256(f"basevolve:{run_seed}:{call_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(slots=True)
class Pull:
    """An open allocator decision and how many of its calls are still to do."""

    pull_id: int  # the ``seq`` of its allocation event
    trajectory: int
    units: int  # calls this pull consists of
    best_before: float
    to_issue: int  # calls not yet asked of the protocol
    told: int = 0  # calls whose child has been told
    #: follow-ups its sent calls declared (``meta['followups']``, e.g. CodeEvolve's code
    #: call after a meta prompt) and that are not yet told: reserved budget
    owed: int = 0

    @property
    def done(self) -> bool:
        return self.told >= self.units


@dataclass(slots=True)
class CallJob:
    """One LLM call the engine has recorded (and maybe sent)."""

    call_id: int
    call_index: int
    proposal: Proposal
    pull: Pull
    seed: int
    #: Its place in the run's issue order: how many calls were decided before it.  A
    #: re-issue of a failed or lost call keeps the key of the call it replaces
    #: (``--deterministic`` tells results in this order and seeds each call by it,
    #: :mod:`basevolve.engine.ordering`); without re-issues it equals ``call_index``.
    key: int
    #: the index of the model that answers it (issue 25, :mod:`basevolve.engine.models`)
    model: int = 0


def attempt_rows(c: Completion, active_params: float, max_tokens: int,
                 no_usage: NoUsagePolicy) -> list[dict[str, Any]]:
    """The ``attempts`` rows of one completed call, each with its FLOPs (paper, Appendix
    "Effective FLOPs"; a usage-less attempt sized by the call's reported prompt)."""
    hint = max((a.usage.prompt_tokens for a in c.attempts if a.usage), default=0)
    return [{
        "attempt_index": a.index, "status": a.status.value, "latency_s": a.latency_s,
        "prompt_tokens": a.usage.prompt_tokens if a.usage else None,
        "cached_tokens": a.usage.cached_tokens if a.usage else None,
        "completion_tokens": a.usage.completion_tokens if a.usage else None,
        "flops": attempt_flops(a, active_params, max_tokens=max_tokens, no_usage=no_usage,
                               prompt_tokens_hint=hint),
        "error": a.error, "http_status": a.http_status,
    } for a in c.attempts]


def program_output(stdout: str, stderr: str) -> str | None:
    """A program's stdout and stderr as one text for the protocol (``None`` if silent)."""
    parts = [f"{name}:\n{text.strip()}" for name, text in (("stdout", stdout), ("stderr", stderr))
             if text and text.strip()]
    return "\n".join(parts) or None


OUTPUT_KEEP = 4000  # characters of program stdout/stderr kept in the store


def child_of(pid: int, code: str | None, ev: Evaluation) -> Child:
    """What the protocol is told about an evaluated program (metrics and output
    included: OpenEvolve-style feature dimensions and artifacts read them)."""
    return Child(pid, code, ev.score, ev.valid, ev.error, metrics=dict(ev.metrics) or None,
                 output=program_output(ev.stdout[:OUTPUT_KEEP], ev.stderr[:OUTPUT_KEEP]),
                 artifacts=dict(ev.artifacts) or None)


def program_fields(ev: Evaluation) -> dict[str, Any]:
    """The ``programs`` row of an evaluation (besides code, generation and links)."""
    return {"score": ev.score, "valid": ev.valid, "strict_score": ev.strict_score,
            "strict_valid": int(ev.strict_valid), "metrics": ev.metrics, "error": ev.error,
            "isolation": str(ev.isolation), "seconds": ev.seconds,
            "stdout": ev.stdout[:OUTPUT_KEEP], "stderr": ev.stderr[:OUTPUT_KEEP],
            "eval_flops": ev.eval_flops, "eval_tokens": ev.eval_tokens,
            "eval_calls": ev.eval_calls, "trust": str(ev.trust),
            "artifacts_json": json.dumps(ev.artifacts, sort_keys=True) if ev.artifacts
            else None}


def child_from_row(r: Any) -> Child:
    """The :class:`Child` a stored ``programs`` row tells (initial program and resume)."""
    metrics = json.loads(r["metrics_json"]) if r["metrics_json"] else None
    artifacts = r["artifacts_json"]
    return Child(r["program_id"], r["code"], r["score"], bool(r["valid"]), r["error"],
                 metrics=metrics, output=program_output(r["stdout"] or "", r["stderr"] or ""),
                 artifacts=json.loads(artifacts) if artifacts else None)
