"""Prices per model (issue 25, part 3): costs of known usages, the cached-token
convention shared with the FLOPs accounting, the worst case that a dollar budget
reserves, refused prices, the compact form, the catalog and ``basevolve models``."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pytest

from basevolve.cli import main
from basevolve.errors import ConfigError
from basevolve.llm.catalog import MODELS, catalog_price, price_of, resolve_model
from basevolve.llm.flops import usage_flops
from basevolve.llm.prices import (
    Price,
    as_price,
    call_cost_usd,
    parse_price,
    worst_case_usd,
)
from basevolve.records import Usage

P = Price(prompt=0.2, cached=0.05, completion=0.8)


# --- costs of known usages (hand-computed) -------------------------------------------

@pytest.mark.parametrize(
    ("usage", "price", "usd"),
    [
        # 600 uncached * 0.2 + 400 cached * 0.05 + 500 completion * 0.8 = 540 per 1e6
        (Usage(1000, 400, 500), P, 540e-6),
        # 2M prompt * $3/M + 1M completion * $15/M = $21
        (Usage(2_000_000, 0, 1_000_000), Price(prompt=3, completion=15), 21.0),
        # no cache discount given: cached tokens cost the prompt rate, 1000 * 1.0 = 1000e-6
        (Usage(1000, 500, 0), Price(prompt=1, completion=2), 1000e-6),
        # cached reported above prompt is clamped to prompt: 100 * 0.5 = 50e-6
        (Usage(100, 250, 0), Price(prompt=1, cached=0.5, completion=2), 50e-6),
        # negative counts (a broken server) cost nothing, never a refund
        (Usage(-10, -3, -7), P, 0.0),
        (Usage(0, 0, 0), P, 0.0),
        # free (local) models cost 0 whatever they process
        (Usage(10_000, 2_000, 4_000), Price(prompt=0, completion=0), 0.0),
    ],
)
def test_cost_of_known_usages(usage: Usage, price: Price, usd: float) -> None:
    assert call_cost_usd(usage, price) == pytest.approx(usd, rel=1e-12, abs=0)


def test_cached_default_is_the_prompt_rate() -> None:
    price = Price(prompt=0.3, completion=1.2)
    assert price.cached == 0.3
    # with no discount, how much of the prompt was cached does not change the cost
    assert call_cost_usd(Usage(5000, 0, 100), price) == call_cost_usd(Usage(5000, 4999, 100),
                                                                     price)
    # with a discount it does, by exactly cached * (prompt - cached rate)
    diff = call_cost_usd(Usage(5000, 0, 100), P) - call_cost_usd(Usage(5000, 3000, 100), P)
    assert diff == pytest.approx(3000 * (0.2 - 0.05) / 1e6, rel=1e-12)


def test_cached_convention_matches_the_flops_accounting() -> None:
    """Prompt tokens include the cached ones, as in ``usage_flops``: with a free cache and
    one rate r for everything else, the cost is r/1e6 per token that FLOPs count."""
    rng = random.Random(2501)
    price = Price(prompt=0.7, cached=0.0, completion=0.7)
    for _ in range(200):
        prompt = rng.randint(0, 50_000)
        usage = Usage(prompt, rng.randint(0, prompt + 100), rng.randint(0, 20_000))
        tokens_counted = usage_flops(usage, 0.5)  # 2 * 0.5 * tokens = tokens
        assert call_cost_usd(usage, price) == pytest.approx(tokens_counted * 0.7 / 1e6,
                                                           rel=1e-12, abs=0)


# --- the worst case a dollar budget reserves -----------------------------------------

def test_worst_case_hand_computed() -> None:
    # 1000 prompt tokens at the dearer prompt rate 0.2 + 4096 * 0.8 = 3476.8 per 1e6
    assert worst_case_usd(1000, 4096, P) == pytest.approx(3476.8e-6, rel=1e-12)
    # a cached rate above the prompt rate (cache writes on some providers): bound uses it
    dear_cache = Price(prompt=1.0, cached=1.25, completion=2.0)
    assert worst_case_usd(100, 10, dear_cache) == pytest.approx((125 + 20) / 1e6, rel=1e-12)
    assert worst_case_usd(0, 0, P) == 0.0
    assert worst_case_usd(-5, -5, P) == 0.0


def test_worst_case_bounds_every_actual_cost_to_the_last_bit() -> None:
    """Property over seeded random prices and usages within the same prompt and cap:
    the actual cost never exceeds the reserved worst case, compared exactly (no
    tolerance), including the edge where all tokens are used."""
    rng = random.Random(25)
    checked = 0
    for _ in range(3000):
        rates = [rng.choice((0.0, rng.uniform(0, 100), rng.random() * 1e-3, 0.1, 1 / 3))
                 for _ in range(3)]
        price = Price(prompt=rates[0], cached=rates[1], completion=rates[2])
        cap_prompt = rng.randint(0, 200_000)
        max_tokens = rng.randint(0, 40_000)
        bound = worst_case_usd(cap_prompt, max_tokens, price)
        for prompt in (cap_prompt, rng.randint(0, cap_prompt)):
            completion = rng.choice((max_tokens, rng.randint(0, max_tokens)))
            cached = rng.choice((0, prompt, rng.randint(0, prompt + 10)))
            cost = call_cost_usd(Usage(prompt, cached, completion), price)
            assert 0.0 <= cost <= bound, (price, cap_prompt, max_tokens, prompt, cached,
                                          completion, cost, bound)
            checked += 1
    assert checked == 6000


def test_exact_sum_avoids_the_float_rounding_above_the_bound() -> None:
    """Why the costs are summed exactly: in floats, (p - c) * r + c * r can round above
    p * r; find such a case and check call_cost_usd stays at the bound there."""
    rng = random.Random(7)
    found = 0
    for _ in range(20_000):
        r = rng.uniform(0, 10)
        p = rng.randint(1, 10**6)
        c = rng.randint(0, p)
        if (p - c) * r + c * r > p * r:  # the naive float sum overshoots
            found += 1
            price = Price(prompt=r, completion=0.0)
            assert call_cost_usd(Usage(p, c, 0), price) <= worst_case_usd(p, 0, price)
    assert found > 0  # the hazard is real on this platform, so the check above bites


# --- refused prices --------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-0.01, -1, math.nan, math.inf, -math.inf, True, "0.2", None])
@pytest.mark.parametrize("field", ["prompt", "cached", "completion"])
def test_bad_rates_are_refused_with_one_clear_line(field: str, bad: object) -> None:
    kwargs: dict[str, object] = {"prompt": 0.2, "cached": 0.05, "completion": 0.8}
    kwargs[field] = bad
    if field == "cached" and bad is None:  # None is "not given": the prompt rate
        assert Price(**kwargs).cached == 0.2  # type: ignore[arg-type]
        return
    with pytest.raises(ConfigError) as info:
        Price(**kwargs)  # type: ignore[arg-type]
    msg = str(info.value)
    assert f"price {field}" in msg and repr(bad) in msg and "e.g. 0.2" in msg
    assert "\n" not in msg


def test_price_is_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        Price(0.2, 0.8)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        P.prompt = 1.0  # type: ignore[misc]
    assert Price(prompt=1, completion=2).prompt == 1.0 and isinstance(P.cached, float)


# --- the compact form --------------------------------------------------------------------

@pytest.mark.parametrize(
    ("text", "price"),
    [
        ("0.2/0.05/0.8", Price(prompt=0.2, cached=0.05, completion=0.8)),
        ("0.2/0.8", Price(prompt=0.2, cached=0.2, completion=0.8)),
        (" 3 / 15 ", Price(prompt=3, completion=15)),
        ("0/0/0", Price(prompt=0, completion=0)),
        ("1e-1/2.5e0", Price(prompt=0.1, completion=2.5)),
    ],
)
def test_parse_price_forms(text: str, price: Price) -> None:
    assert parse_price(text) == price
    assert parse_price(str(price)) == price  # str() is the same form, read back


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("0.2", ["PROMPT/COMPLETION", "'0.2'"]),
        ("0.2/0.1/0.3/0.4", ["PROMPT/CACHED/COMPLETION", "'0.2/0.1/0.3/0.4'"]),
        ("", ["PROMPT/COMPLETION", "''"]),
        ("cheap/0.8", ["prompt price 'cheap'", "not a number"]),
        ("0.2//0.8", ["cached price ''", "not a number"]),
        ("0.2/-0.8", ["completion price '-0.8'", ">= 0"]),
        ("nan/0.8", ["prompt price 'nan'", "finite"]),
        ("0.2/0.1/inf", ["completion price 'inf'", "finite"]),
    ],
)
def test_parse_price_errors_name_the_value(text: str, needles: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_price(text, arg="--price")
    msg = str(info.value)
    assert msg.startswith("--price") and "\n" not in msg
    for needle in needles:
        assert needle in msg


def test_as_price_takes_the_forms_a_caller_writes() -> None:
    assert as_price(P) is P
    assert as_price("0.2/0.05/0.8") == P
    assert as_price({"prompt": 0.2, "cached": 0.05, "completion": 0.8}) == P
    assert as_price({"prompt": 1, "completion": 2}) == Price(prompt=1, completion=2)
    with pytest.raises(ConfigError, match=r"^price needs the keys prompt and completion"):
        as_price({"prompt": 1})
    with pytest.raises(ConfigError, match=r"^price needs .*'extra'"):
        as_price({"prompt": 1, "completion": 2, "extra": 3})
    with pytest.raises(ConfigError, match=r"^price = : price completion .* got -2"):
        as_price({"prompt": 1, "completion": -2}, arg="price = ")
    with pytest.raises(ConfigError, match=r"^price= must be .* got 3"):
        as_price(3, arg="price=")


# --- the catalog and overrides --------------------------------------------------------

def test_catalog_prices_present_or_none() -> None:
    # the embedded models run locally: no per-token charge
    for name in ("embedded", "embedded-small"):
        assert MODELS.get(name).price == Price(prompt=0, cached=0, completion=0)
    # the paper's models run on the user's own server: no list price, unpriced
    for name in ("qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "llama-3.1-8b"):
        assert MODELS.get(name).price is None
    # looked up by catalog name (any case) or served id, as the rest of the catalog
    assert catalog_price("EMBEDDED") == catalog_price("Qwen2.5-Coder-1.5B-Instruct-Q4_K_M")
    assert catalog_price("nobody/knows") is None and catalog_price(None) is None
    # an uncatalogued model is unpriced; a --params override keeps the catalog's price
    assert resolve_model("org/m", params=2e9).price is None
    assert resolve_model("embedded", params=2e9).price == MODELS.get("embedded").price


def test_price_of_prefers_the_override() -> None:
    assert price_of("qwen3-8b", None) is None
    assert price_of("qwen3-8b", P) is P
    assert price_of("embedded", None) == Price(prompt=0, completion=0)
    assert price_of("embedded", P) is P
    assert price_of("org/uncatalogued", P) is P and price_of("org/uncatalogued", None) is None


def test_to_dict_keeps_its_keys_and_adds_the_price() -> None:
    d = MODELS.get("embedded").to_dict()
    assert {"name", "served_id", "active_params", "total_params", "context_length", "backend",
            "description", "max_tokens"} <= d.keys()
    assert d["price"] == {"prompt": 0.0, "cached": 0.0, "completion": 0.0}
    assert MODELS.get("qwen3-8b").to_dict()["price"] is None


# --- basevolve models -------------------------------------------------------------------

def test_models_table_shows_a_price_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0]
    start = header.index("PRICE $/M")
    cells = {line.split()[0]: line[start:].split()[0] for line in lines[1:]}
    assert cells["embedded"] == cells["embedded-small"] == "0/0/0"
    assert cells["qwen3-8b"] == cells["llama-3.1-8b"] == "-"
    assert set(cells) == set(MODELS.names())


def test_models_json_has_the_price_in_a_subprocess() -> None:
    out = subprocess.run([sys.executable, "-m", "basevolve", "models", "--json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["embedded"]["price"] == {"prompt": 0.0, "cached": 0.0, "completion": 0.0}
    assert rows["qwen3-14b"]["price"] is None
