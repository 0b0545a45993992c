"""Model catalog: name -> served id, parameter counts, context length (issue 3, part 5).

FLOPs need the active parameter count of the model that served a call (paper, Appendix
"Effective FLOPs": ``2 * P_active`` per uncached token).  The paper's models (Qwen3
1.7B/4B/8B/14B, Llama-3.1-8B) are dense, so ``active_params == total_params``; the field
is kept separate for MoE models.  Counts are the totals published on the model cards.

A served model that is not in the catalog is accepted when the user states its
parameter count (``--params``); otherwise :func:`resolve_model` raises a
:class:`~basevolve.errors.ConfigError` naming the fix.

``max_tokens``: the model's default completion cap when ``--max-tokens`` is not given
(issue 23, item 8).  The Qwen3 models are the paper's, run in thinking mode (Section 4:
"thinking mode enabled"), where the reasoning alone often exceeds the generic 4,096
tokens; the paper's code asks for 16,000, so they default to that (their 32,768-token
context leaves room for the prompt; the paper served 40,960).  None: the generic
default (:attr:`basevolve.llm.settings.LLMSettings.max_tokens`).

``price``: USD per million prompt, cached and completion tokens (issue 25, part 3;
:mod:`basevolve.llm.prices`), stated only where a public source gives it.  The paper's
models run on the user's own vLLM server, where no list price applies, so they carry
None (unpriced: a run states its own price as an override).  The embedded models run
in-process on the user's machine: no per-token charge, price 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from basevolve.errors import ConfigError
from basevolve.llm.prices import Price
from basevolve.registry import Registry


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model: ``name`` (catalog key), ``served_id`` (what the server calls it).

    ``backend`` is the backend used when no base URL is given: ``"embedded"`` for the
    offline models shipped as weight packages, ``"openai"`` (needs ``--base-url``)
    otherwise.  ``weights`` names the embedded weight set (see ``basevolve.llm.weights``).
    """

    name: str
    served_id: str
    active_params: float
    total_params: float
    context_length: int
    backend: str = "openai"
    weights: str | None = None
    description: str = ""
    max_tokens: int | None = None  # default completion cap (module docstring)
    price: Price | None = None  # USD per million tokens; None: unpriced (module docstring)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "served_id": self.served_id,
            "active_params": self.active_params,
            "total_params": self.total_params,
            "context_length": self.context_length,
            "backend": self.backend,
            "description": self.description,
            "max_tokens": self.max_tokens,
            "price": None if self.price is None else self.price.to_dict(),
        }


MODELS: Registry[ModelSpec] = Registry("model")


def _add(spec: ModelSpec) -> None:
    MODELS.register(spec.name, spec)


#: the paper's code's completion cap for its thinking-mode Qwen3 models
THINKING_MAX_TOKENS = 16_000

# The paper's sweep (Section "Experimental setup"): dense models served by vLLM.
for _name, _served, _params in (("qwen3-1.7b", "Qwen/Qwen3-1.7B", 1.72e9),
                                ("qwen3-4b", "Qwen/Qwen3-4B", 4.02e9),
                                ("qwen3-8b", "Qwen/Qwen3-8B", 8.19e9),
                                ("qwen3-14b", "Qwen/Qwen3-14B", 14.8e9)):
    _add(ModelSpec(_name, _served, _params, _params, 32768, description="paper",
                   max_tokens=THINKING_MAX_TOKENS))
del _name, _served, _params
_add(
    ModelSpec(
        "llama-3.1-8b",
        "meta-llama/Llama-3.1-8B-Instruct",
        8.03e9,
        8.03e9,
        131072,
        description="paper",
    )
)
# Offline models run in-process by xllamacpp (GGUF Q4_K_M); the FLOPs convention still
# counts the full-precision parameter count, so results stay comparable across backends.
# Their price is 0: they run locally, with no per-token charge.
LOCAL_PRICE = Price(prompt=0.0, completion=0.0)
_add(
    ModelSpec(
        "embedded",
        "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M",
        1.54e9,
        1.54e9,
        32768,
        backend="embedded",
        weights="qwen2.5-coder-1.5b",
        description="offline default; pip install 'basevolve[local]'",
        price=LOCAL_PRICE,
    )
)
_add(
    ModelSpec(
        "embedded-small",
        "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M",
        0.494e9,
        0.494e9,
        32768,
        backend="embedded",
        weights="qwen2.5-coder-0.5b",
        description="offline, faster; pip install 'basevolve[local-small]'",
        price=LOCAL_PRICE,
    )
)


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_params(text: str | float, arg: str = "--params") -> float:
    """``"8e9"``, ``"8B"``, ``"700M"``, ``1.5e9`` -> a positive parameter count.

    The same forms are accepted wherever a parameter count is given (issue 24, item 2):
    ``--params 8B``, ``basevolve.run(params="8B")``, ``params = "8B"`` in a sweep file.
    ``arg`` is the argument as the caller spelled it (:mod:`basevolve.argnames`), named
    in the message.
    """
    from basevolve.argnames import quoted

    if isinstance(text, str):
        raw = text.strip()
        scale = _SUFFIX.get(raw[-1:].lower(), 1.0) if raw else 1.0
        number = raw[:-1] if scale != 1.0 else raw
        try:
            return _check_params(float(number) * scale, arg)
        except ValueError:
            raise ConfigError(
                f"{arg} must be a parameter count such as 8e9 or {quoted(arg, '8B')}, "
                f"got {text!r}") from None
    return _check_params(text, arg)


def _check_params(params: float, arg: str = "--params") -> float:
    if isinstance(params, bool):  # True is no parameter count
        raise ConfigError(f"{arg} must be a number of parameters, got {params!r}")
    try:
        value = float(params)
    except (TypeError, ValueError):
        raise ConfigError(f"{arg} must be a number of parameters, got {params!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{arg} must be a positive parameter count (e.g. 8e9), got {params!r}")
    return value


def resolve_model(name: str, params: float | None = None, *,
                  params_arg: str = "--params") -> ModelSpec:
    """Find ``name`` by catalog name (case-insensitive) or served id.

    ``params`` overrides the active parameter count of a known model and is required for an
    unknown one (which is then served under ``name`` itself).  ``params_arg`` is how the
    caller spells that argument (:mod:`basevolve.argnames`), named in the messages.
    """
    from basevolve.argnames import spelled

    if not name or not isinstance(name, str):
        raise ConfigError(f"model name must be a non-empty string, got {name!r}")
    spec = _lookup(name)
    if spec is None:
        if params is None:
            raise ConfigError(
                f"unknown model {name!r}; known: {', '.join(MODELS.names())}. "
                "For another served model pass its parameter count, e.g. "
                f"{spelled(params_arg, '8e9')}"
            )
        value = _check_params(params, params_arg)
        return ModelSpec(name, name, value, value, 0, description="user-declared")
    if params is not None:
        value = _check_params(params, params_arg)
        spec = replace(spec, active_params=value)
    return spec


def catalog_max_tokens(name: str | None) -> int | None:
    """The catalog's default completion cap of model ``name`` (catalog name or served
    id); None for a model without one or not in the catalog."""
    spec = _lookup(name) if isinstance(name, str) and name else None
    return None if spec is None else spec.max_tokens


def catalog_price(name: str | None) -> Price | None:
    """The catalog's price of model ``name`` (catalog name or served id); None for a
    model without one or not in the catalog (issue 25, part 3)."""
    spec = _lookup(name) if isinstance(name, str) and name else None
    return None if spec is None else spec.price


def price_of(model_name: str, override: Price | None) -> Price | None:
    """The price a run charges model ``model_name`` with: ``override`` when given, else
    the catalog's price (looked up by catalog name or served id), else None (unpriced)."""
    return override if override is not None else catalog_price(model_name)


def _lookup(name: str) -> ModelSpec | None:
    key = name.strip()
    for _, spec in MODELS.items():
        if key.lower() == spec.name.lower() or key == spec.served_id:
            return spec
    return None


__all__ = ["LOCAL_PRICE", "MODELS", "THINKING_MAX_TOKENS", "ModelSpec", "catalog_max_tokens",
           "catalog_price", "parse_params", "price_of", "resolve_model"]
