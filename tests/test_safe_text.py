"""The one rule for text UTF-8 cannot hold (basevolve.safe_text; issue 22, items 1-2)."""

from __future__ import annotations

import json

from basevolve.records import (
    Attempt,
    AttemptStatus,
    Completion,
    Evaluation,
    ExecResult,
    ExecStatus,
    Usage,
)
from basevolve.safe_text import REPLACEMENT, safe_params, utf8_safe

LONE_HIGH, LONE_LOW = "\ud800", "\udcff"
PAIR = "\ud83d\ude00"  # the JSON/UTF-16 spelling of U+1F600


def test_lone_surrogates_become_the_replacement_character_and_pairs_their_character() -> None:
    assert utf8_safe(f"a{LONE_HIGH}b{LONE_LOW}c") == f"a{REPLACEMENT}b{REPLACEMENT}c"
    assert utf8_safe(f"x{PAIR}y") == "x\U0001f600y"
    assert utf8_safe(f"{LONE_LOW}{LONE_HIGH}") == REPLACEMENT * 2  # low then high: no pair
    assert utf8_safe(f"\ufeff{LONE_HIGH}") == f"\ufeff{REPLACEMENT}"  # a BOM char is kept
    for text in ("", "plain", "é ü 漢字 \U0001f600", "\x00nul"):
        assert utf8_safe(text) is text  # nothing to do: the same object
    for text in (f"a{LONE_HIGH}", PAIR, LONE_LOW * 3):
        utf8_safe(text).encode("utf-8")  # always encodable


def test_safe_params_cleans_strings_of_sequences_and_mappings_only() -> None:
    assert safe_params(("r", LONE_HIGH, 3, None, b"\xff")) == ["r", REPLACEMENT, 3, None, b"\xff"]
    assert safe_params({"r": LONE_LOW, "n": 1}) == {"r": REPLACEMENT, "n": 1}
    clean = ("r", 1)
    assert safe_params(clean) is clean


def test_records_that_carry_outside_text_clean_it_when_built() -> None:
    ex = ExecResult(ExecStatus.ERROR, error=f"ValueError: {LONE_HIGH}", stdout=LONE_LOW,
                    stderr=PAIR)
    assert (ex.error, ex.stdout, ex.stderr) == (f"ValueError: {REPLACEMENT}", REPLACEMENT,
                                                "\U0001f600")
    ev = Evaluation(0.0, False, error=LONE_HIGH, stdout=LONE_LOW, stderr="ok")
    assert (ev.error, ev.stdout, ev.stderr) == (REPLACEMENT, REPLACEMENT, "ok")
    attempt = Attempt(0, AttemptStatus.HTTP_ERROR, 0.1, None, f"HTTP 500: {LONE_HIGH}")
    assert attempt.error == f"HTTP 500: {REPLACEMENT}"
    c = Completion(text=LONE_HIGH, raw_text=f"<think>{LONE_LOW}</think>", finish_reason=LONE_HIGH,
                   usage=Usage(), latency_s=0.0, attempts=(attempt,), model=LONE_LOW)
    assert (c.text, c.raw_text, c.finish_reason, c.model) == (
        REPLACEMENT, f"<think>{REPLACEMENT}</think>", REPLACEMENT, REPLACEMENT)
    # what the engine builds from them (prompts, the request body) encodes
    json.dumps({"e": ev.error, "o": ex.stdout}, ensure_ascii=False).encode("utf-8")
