"""The LLM layer: one async protocol over an OpenAI-compatible endpoint or an embedded
offline model, a model catalog, and effective-FLOPs accounting (issue 3).

>>> client = make_client("qwen3-8b", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
>>> completion = await client.complete(messages, seed=1)                    # doctest: +SKIP
>>> call_flops(completion, client.model_spec.active_params, max_tokens=4096)  # doctest: +SKIP
"""

from __future__ import annotations

from basevolve.llm.base import LLMClient, strip_think
from basevolve.llm.catalog import MODELS, ModelSpec, resolve_model
from basevolve.llm.factory import BACKENDS, make_client
from basevolve.llm.flops import NoUsagePolicy, attempt_flops, call_flops
from basevolve.llm.settings import CallPolicy, LLMSettings

__all__ = [
    "BACKENDS",
    "MODELS",
    "CallPolicy",
    "LLMClient",
    "LLMSettings",
    "ModelSpec",
    "NoUsagePolicy",
    "attempt_flops",
    "call_flops",
    "make_client",
    "resolve_model",
    "strip_think",
]
