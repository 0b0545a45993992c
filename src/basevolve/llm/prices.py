"""Prices per model in US dollars (issue 25, part 3: "an optional price per million
prompt, cached and completion tokens per model, in the catalog and overridable").

A :class:`Price` is three rates in USD per million tokens: uncached prompt tokens,
cached prompt tokens (a provider's discounted rate for a reused prefix) and completion
tokens.  The catalog (:mod:`basevolve.llm.catalog`) carries one per model where a public
source states it; a user overrides it (:func:`parse_price` reads the compact form
``0.2/0.05/0.8``), and :func:`basevolve.llm.catalog.price_of` picks the override, else
the catalog's price (it lives in the catalog, which imports :class:`Price` from here: this
module stays below the catalog and knows no model).

Token convention: the same as the FLOPs accounting (:func:`basevolve.llm.flops.usage_flops`):
``Usage.prompt_tokens`` *includes* the cached ones, so a call is charged
``prompt - cached`` tokens at ``prompt``, ``cached`` tokens at ``cached`` and its
completion tokens at ``completion``; the cached count is clamped to ``[0, prompt]``.

:func:`worst_case_usd` bounds a call's cost before it is sent -- every prompt token
uncached (at the dearer of the two prompt rates) and the full ``max_tokens`` of
completion -- which is what a dollar budget reserves so that it is never exceeded (the
reservation rule of the other cost budgets).

Pure functions: no I/O, hand-checkable (tests/llm/test_prices.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from basevolve.errors import ConfigError
from basevolve.records import Usage

#: prices are per this many tokens
PER_TOKENS = 1_000_000
#: the compact form, named in messages
PRICE_FORMS = "PROMPT/COMPLETION or PROMPT/CACHED/COMPLETION in USD per million tokens"


def _rate(value: object, what: str) -> float:
    """``value`` as a finite rate >= 0, or a ConfigError naming ``what`` and the fix."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(
            f"{what} must be a number of USD per million tokens (e.g. 0.2), got {value!r}")
    rate = float(value)
    if not math.isfinite(rate) or rate < 0:
        raise ConfigError(
            f"{what} must be a finite price >= 0 in USD per million tokens (e.g. 0.2), "
            f"got {value!r}")
    return rate


@dataclass(frozen=True, slots=True, kw_only=True)
class Price:
    """USD per million tokens: ``prompt`` (uncached prompt), ``cached`` (cached prompt;
    defaults to ``prompt`` when not given, i.e. no cache discount) and ``completion``.

    Keyword-only, since three bare numbers in a row are easy to swap.  Every rate is a
    finite number >= 0 (a negative price would let a budget grow with spending); after
    construction all three are floats.
    """

    prompt: float
    completion: float
    cached: float | None = None  # None -> the prompt rate

    def __post_init__(self) -> None:
        prompt = _rate(self.prompt, "price prompt")
        completion = _rate(self.completion, "price completion")
        cached = prompt if self.cached is None else _rate(self.cached, "price cached")
        object.__setattr__(self, "prompt", prompt)
        object.__setattr__(self, "completion", completion)
        object.__setattr__(self, "cached", cached)

    def to_dict(self) -> dict[str, float]:
        return {"prompt": self.prompt, "cached": float(self.cached or 0.0),
                "completion": self.completion}

    def __str__(self) -> str:
        """The compact form :func:`parse_price` reads back: ``prompt/cached/completion``."""
        return "/".join(_num(v) for v in (self.prompt, self.cached or 0.0, self.completion))


def _num(value: float) -> str:
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def call_cost_usd(usage: Usage, price: Price) -> float:
    """USD of one call (or attempt) from its usage: ``prompt - cached`` tokens at
    ``price.prompt``, ``cached`` at ``price.cached``, completion at ``price.completion``.

    Token counts below 0 count as 0 and cached is clamped to ``[0, prompt]`` (as in
    :func:`basevolve.llm.flops.usage_flops`), so a cost is never negative.
    """
    prompt = max(int(usage.prompt_tokens), 0)
    cached = min(max(int(usage.cached_tokens), 0), prompt)
    completion = max(int(usage.completion_tokens), 0)
    return _usd((prompt - cached, price.prompt), (cached, float(price.cached or 0.0)),
                (completion, price.completion))


def worst_case_usd(prompt_tokens: int, max_tokens: int, price: Price) -> float:
    """An upper bound on one call's USD before it is sent: all ``prompt_tokens`` charged
    at the dearer prompt rate (none cached) plus ``max_tokens`` of completion.

    For any usage with at most ``prompt_tokens`` prompt and ``max_tokens`` completion
    tokens, ``call_cost_usd(usage, price) <= worst_case_usd(...)`` (the reservation rule:
    a dollar budget is never exceeded).  Negative counts count as 0.
    """
    dearest_prompt = max(price.prompt, float(price.cached or 0.0))
    return _usd((max(int(prompt_tokens), 0), dearest_prompt),
                (max(int(max_tokens), 0), price.completion))


def _usd(*terms: tuple[int, float]) -> float:
    """``sum(tokens * rate) / 1e6``, computed exactly and rounded once.

    Why exact: in floats, ``(p - c) * r + c * r`` can round one ulp above ``p * r``, so a
    call's cost could exceed the worst case reserved for it.  The exact sum is monotone
    in the token counts and rates, and so is rounding it to the nearest float; hence
    :func:`call_cost_usd` ``<=`` :func:`worst_case_usd` holds to the last bit.
    """
    total = sum((Fraction(tokens) * Fraction(rate) for tokens, rate in terms), Fraction(0))
    return float(total / PER_TOKENS)


def parse_price(text: str, *, arg: str = "price") -> Price:
    """``"0.2/0.05/0.8"`` (prompt/cached/completion) or ``"0.2/0.8"`` (prompt/completion,
    cached = prompt) -> a :class:`Price`, in USD per million tokens.

    ``arg`` is the argument as the caller spells it (:mod:`basevolve.argnames`), named in
    the messages together with the text given.
    """
    if not isinstance(text, str):
        raise ConfigError(f"{arg} must be {PRICE_FORMS}, e.g. 0.2/0.05/0.8, got {text!r}")
    parts = [p.strip() for p in text.split("/")]
    if len(parts) not in (2, 3):
        raise ConfigError(f"{arg} must be {PRICE_FORMS}, e.g. 0.2/0.05/0.8 or 0.2/0.8, "
                          f"got {text!r}")
    names = ("prompt", "completion") if len(parts) == 2 else ("prompt", "cached", "completion")
    rates: dict[str, float] = {}
    for name, part in zip(names, parts, strict=True):
        try:
            value = float(part)
        except ValueError:
            raise ConfigError(
                f"{arg}: the {name} price {part!r} in {text!r} is not a number; "
                f"write {PRICE_FORMS}, e.g. 0.2/0.05/0.8") from None
        if not math.isfinite(value) or value < 0:
            raise ConfigError(
                f"{arg}: the {name} price {part!r} in {text!r} must be a finite number >= 0 "
                "(USD per million tokens), e.g. 0.2/0.05/0.8")
        rates[name] = value
    return Price(**rates)


def as_price(value: object, *, arg: str = "price") -> Price:
    """A price as a caller may give it -- a :class:`Price`, the compact string form, or a
    mapping ``{"prompt": .., "completion": .., "cached": ..}`` (a Python keyword or a
    sweep file's table) -- as a :class:`Price`; anything else is refused naming ``arg``."""
    if isinstance(value, Price):
        return value
    if isinstance(value, str):
        return parse_price(value, arg=arg)
    if isinstance(value, Mapping):
        keys = set(value)
        if not {"prompt", "completion"} <= keys <= {"prompt", "cached", "completion"}:
            raise ConfigError(
                f"{arg} needs the keys prompt and completion (and optionally cached), "
                f"got {sorted(map(str, keys))}")
        try:
            return Price(**{str(k): v for k, v in value.items()})
        except ConfigError as exc:
            raise ConfigError(f"{arg}: {exc}") from None
    raise ConfigError(f"{arg} must be {PRICE_FORMS} (e.g. 0.2/0.05/0.8) or a table with "
                      f"prompt, cached and completion, got {value!r}")


__all__ = ["PER_TOKENS", "PRICE_FORMS", "Price", "as_price", "call_cost_usd", "parse_price",
           "worst_case_usd"]
