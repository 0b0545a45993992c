"""``make_client``: model name + optional endpoint -> an :class:`LLMClient` (issue 3).

The backend is picked from a registry (docs/design.md, style rule 3): an explicit base URL
means the OpenAI-compatible backend; without one the catalog entry's own backend is
used, which is ``embedded`` for the offline models and refused (with the fix in the
message) for served models.
"""

from __future__ import annotations

from collections.abc import Callable

from basevolve.errors import ConfigError
from basevolve.llm.base import LLMClient
from basevolve.llm.catalog import ModelSpec, resolve_model
from basevolve.llm.settings import LLMSettings
from basevolve.registry import Registry

BackendFactory = Callable[[ModelSpec, "str | None", str, LLMSettings], LLMClient]
BACKENDS: Registry[BackendFactory] = Registry("LLM backend")


def _openai(
    spec: ModelSpec, base_url: str | None, key_env: str, settings: LLMSettings
) -> LLMClient:
    from basevolve.llm.openai_backend import OpenAIClient

    if base_url is None:
        raise ConfigError(
            f"model {spec.name!r} is served over HTTP; pass its endpoint with --base-url "
            "(e.g. http://127.0.0.1:8000/v1), or use --model embedded to run offline"
        )
    return OpenAIClient(spec, base_url, api_key_env=key_env, settings=settings)


def _embedded(
    spec: ModelSpec, base_url: str | None, key_env: str, settings: LLMSettings
) -> LLMClient:
    from basevolve.llm.embedded import EmbeddedClient

    return EmbeddedClient(spec, settings=settings)


BACKENDS.register("openai", _openai)
BACKENDS.register("embedded", _embedded)


def make_client(
    model: str = "embedded",
    base_url: str | None = None,
    *,
    params: float | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    settings: LLMSettings | None = None,
) -> LLMClient:
    """Build the client for ``model``; with ``base_url`` always the OpenAI backend.

    Construction is cheap and does no I/O: the embedded model loads on its first call.
    """
    spec = resolve_model(model, params)
    settings = settings or LLMSettings()
    if base_url is not None:
        from basevolve.llm.openai_backend import validate_base_url

        return BACKENDS.get("openai")(spec, validate_base_url(base_url), api_key_env, settings)
    return BACKENDS.get(spec.backend)(spec, None, api_key_env, settings)


__all__ = ["BACKENDS", "make_client"]
