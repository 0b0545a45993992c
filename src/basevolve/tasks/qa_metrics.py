"""Answer scoring for the prompt-optimisation (LPO) task: HotpotQA-style EM and F1.

The paper's prompt-optimisation task (Appendix, Qwen3-1.7B on the first 40 HotpotQA
questions) scores a prompt template by the answering model's accuracy, so two things
must be fixed and stated: how an answer is *read* out of a free-form reply
(:func:`extract_answer`) and how it is *compared* with the gold answer
(:func:`exact_match`, :func:`f1_score`).  The comparison follows the official HotpotQA
evaluation (normalise, then exact match or token F1 with the yes/no rule) so numbers are
comparable with the literature; this is a clean-room implementation written from that
description.

:func:`contains_match` is the rule of the paper's own LPO setup (OpenEvolve's HotpotQA
example, issue 23, item 7): the whole reply, lower-cased and without trailing
punctuation, must equal the gold answer or contain it.  It is lenient (a reply listing
several candidates counts as right), which is why it is not the default.

Everything here is a pure function on strings: no I/O, no state, never raises on odd
text (only :func:`score_answer` raises, for an unknown metric name).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from basevolve.prompts.parse import strip_think

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
# HotpotQA gives no partial credit on these: "no" vs "yes no" must not score 0.67.
_SPECIAL_ANSWERS = frozenset({"yes", "no", "noanswer"})

# Searched in the original text: str.lower() may change lengths (e.g. "İ"), so no indices.
_ANSWER_MARKER = re.compile(r"answer:", re.IGNORECASE)
_QUOTES = ('"', "'", "`")
_MARKDOWN_MARKERS = ("**", "__", "*")  # longest first, so "**" goes in one step


def normalize_answer(s: str) -> str:
    """Lower-case, drop punctuation and the articles a/an/the, collapse whitespace.

    This is the HotpotQA normalisation, so "The  Beatles!" and "beatles" compare equal:
    surface differences in casing, punctuation and articles are not what the task
    measures.  Order matters: punctuation goes before articles so "the," is caught.
    """
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 if the normalised strings are equal, else 0.0 (a float so metrics average)."""
    return 1.0 if normalize_answer(prediction) == normalize_answer(gold) else 0.0


def f1_score(prediction: str, gold: str) -> float:
    """Token-level F1 between the normalised answers (HotpotQA rules).

    Tokens are the whitespace-separated words of the normalised strings, matched as
    multisets (a word counts as often as it occurs on both sides).  If either side
    normalises to "yes", "no" or "noanswer" and the two differ, the score is 0: a
    yes/no question has no partial credit.  No common token gives 0, including when
    both sides are empty (as in the official script; :func:`exact_match` gives 1 there).
    """
    pred = normalize_answer(prediction)
    ref = normalize_answer(gold)
    if (pred in _SPECIAL_ANSWERS or ref in _SPECIAL_ANSWERS) and pred != ref:
        return 0.0
    pred_tokens = pred.split()
    ref_tokens = ref.split()
    overlap = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


#: What OpenEvolve's HotpotQA rule strips from the end of a reply and of the gold answer.
TRAILING_PUNCTUATION = ".,!?;:"


def contains_match(reply: str, gold: str) -> float:
    """1.0 if the reply equals or contains the gold answer, else 0.0 (OpenEvolve's
    HotpotQA rule, the paper's LPO; module docstring).

    Both sides are stripped of surrounding whitespace, lower-cased and stripped of
    trailing ``.,!?;:``; the reply is the model's whole answer with its reasoning
    (``<think>`` blocks, :func:`~basevolve.prompts.parse.strip_think`) removed -- a
    thinking model's deliberation mentions every candidate, and is not its answer.  A
    gold answer that is empty after stripping matches only an equally empty reply (the
    empty string is "contained" in everything).
    """
    r = strip_think(reply or "").strip().lower().rstrip(TRAILING_PUNCTUATION)
    g = (gold or "").strip().lower().rstrip(TRAILING_PUNCTUATION)
    return 1.0 if r == g or (g and g in r) else 0.0


#: name -> (prediction, gold) -> score.  ``em`` and ``f1`` compare the extracted answer
#: (:func:`extract_answer`); ``contains`` takes the whole reply.
METRICS: dict[str, Callable[[str, str], float]] = {"em": exact_match, "f1": f1_score,
                                                    "contains": contains_match}


def score_answer(prediction: str, gold: str, metric: str = "em") -> float:
    """Score one prediction with the metric named ``metric`` (a key of :data:`METRICS`).

    Raises :class:`ValueError` naming the metric and the choices, because the metric
    usually comes from a user's task option and a typo must not pass silently.
    """
    try:
        fn = METRICS[metric]
    except KeyError:
        choices = ", ".join(sorted(METRICS))
        raise ValueError(f"unknown QA metric {metric!r}; choose one of: {choices}") from None
    return fn(prediction, gold)


def _strip_decoration(text: str) -> str:
    # Repeat until stable so nested decorations like **"Paris"** all come off.
    while True:
        before = text
        text = text.strip()
        for marker in _MARKDOWN_MARKERS:
            if text.startswith(marker):
                text = text[len(marker) :]
            if text.endswith(marker):
                text = text[: -len(marker)]
        text = text.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
            text = text[1:-1]
        if text == before:
            return text


def extract_answer(reply: str) -> str:
    """The answer stated in an LLM reply, by one fixed rule (stored prompts stay rescorable).

    Rule:

    1. Drop reasoning: every ``<think>...</think>`` block; then, if a stray ``</think>``
       remains, keep only the text after the last one; then, if an unclosed ``<think>``
       remains, drop everything from it to the end.  (Tags match case-insensitively.)
    2. If the rest contains ``answer:`` (case-insensitive), take the text after its
       *last* occurrence up to the end of that line; if that is empty (nothing but
       whitespace, quotes or Markdown markers, as in ``**Answer:**`` on its own line),
       take the next non-empty line instead.
    3. Otherwise take the last non-empty line of the reply.
    4. Clean up: strip whitespace, Markdown bold/italic markers (``**``, ``__``, ``*``)
       at either end and a matching pair of surrounding quotes (double, single or backtick),
       repeatedly; then remove one trailing period and clean up once more.

    An empty reply (or one that is all reasoning) gives "".  The answer is not
    normalised here; :func:`normalize_answer` does that when scoring.
    """
    text = strip_think(reply)  # the reply parser's rule: reasoning is not the answer
    markers = list(_ANSWER_MARKER.finditer(text))
    if markers:
        rest = text[markers[-1].end() :]
        rest_lines = rest.splitlines() or [""]
        candidate = rest_lines[0]
        if not _strip_decoration(candidate):
            following = (line for line in rest_lines[1:] if _strip_decoration(line))
            candidate = next(following, "")
    else:
        non_empty = [line for line in text.splitlines() if line.strip()]
        candidate = non_empty[-1] if non_empty else ""
    answer = _strip_decoration(candidate)
    if answer.endswith("."):
        answer = _strip_decoration(answer[:-1])
    return answer


__all__ = [
    "METRICS",
    "TRAILING_PUNCTUATION",
    "contains_match",
    "exact_match",
    "extract_answer",
    "f1_score",
    "normalize_answer",
    "score_answer",
]
