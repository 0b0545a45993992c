"""HotpotQA-style answer metrics and the answer-extraction rule, on hand-checked strings."""

from __future__ import annotations

import pytest

from basevolve.tasks.qa_metrics import (
    METRICS,
    exact_match,
    extract_answer,
    f1_score,
    normalize_answer,
    score_answer,
)

# ---------------------------------------------------------------------------- normalise


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The  Beatles!", "beatles"),
        ("An apple a day", "apple day"),  # all three articles go, as whole words
        ("theatre anthem", "theatre anthem"),  # ...but not inside words
        ("  Hello,\tWorld.\n", "hello world"),  # case, punctuation, any whitespace
        ("U.S.A.", "usa"),
        ("the, end", "end"),  # punctuation first, so "the," is still an article
        ("Rock 'n' Roll", "rock n roll"),
        ("", ""),
        ("  ", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


# ------------------------------------------------------------------------------ EM / F1


def test_exact_match_compares_normalised_strings() -> None:
    assert exact_match("The Beatles", "beatles!") == 1.0
    assert exact_match("Beatles", "Rolling Stones") == 0.0
    assert exact_match("", "") == 1.0
    assert isinstance(exact_match("a", "b"), float)


def test_f1_partial_overlap() -> None:
    # "quick brown fox" vs "quick red fox": common {quick, fox} = 2 tokens;
    # precision 2/3, recall 2/3, F1 = 2 * (2/3 * 2/3) / (4/3) = 2/3.
    assert f1_score("The quick brown fox", "quick red fox") == pytest.approx(2 / 3)
    # "river caddow" vs "caddow": common 1; precision 1/2, recall 1; F1 = 1 / 1.5 = 2/3.
    assert f1_score("River Caddow", "Caddow") == pytest.approx(2 / 3)


def test_f1_counts_tokens_as_a_multiset() -> None:
    # "fox fox" vs "fox": only one "fox" is shared; precision 1/2, recall 1 -> 2/3.
    assert f1_score("fox fox", "fox") == pytest.approx(2 / 3)


def test_f1_is_one_on_equal_normalised_answers() -> None:
    assert f1_score("The Beatles.", "beatles") == 1.0


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("yes it is", "yes"),  # token F1 would be 0.5; yes/no gets no partial credit
        ("no", "no way"),
        ("noanswer", "an answer"),
        ("yes", "no"),
    ],
)
def test_f1_yes_no_rule(prediction: str, gold: str) -> None:
    assert f1_score(prediction, gold) == 0.0


def test_f1_yes_no_equal_scores_one() -> None:
    assert f1_score("Yes.", "yes") == 1.0


def test_f1_empty_and_disjoint() -> None:
    assert f1_score("", "Paris") == 0.0
    assert f1_score("Paris", "") == 0.0
    assert f1_score("", "") == 0.0  # official rule: no common token -> 0
    assert f1_score("the", "a") == 0.0  # both normalise to ""
    assert f1_score("London", "Paris") == 0.0


def test_score_answer_dispatches_and_defaults_to_em() -> None:
    assert set(METRICS) == {"em", "f1", "contains"}
    assert score_answer("quick brown fox", "quick red fox") == 0.0
    assert score_answer("quick brown fox", "quick red fox", "f1") == pytest.approx(2 / 3)
    assert score_answer("Paris", "paris", metric="em") == 1.0


def test_score_answer_unknown_metric_names_it_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"'bleu'.*contains, em, f1"):
        score_answer("a", "b", "bleu")


# ---------------------------------------------------------------------- extract_answer


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("The town is Lenholt.\nAnswer: River Caddow", "River Caddow"),
        ("reasoning...\nanswer: Holbrook\n", "Holbrook"),  # lowercase marker
        ("Final ANSWER: 1931 (from the second paragraph)", "1931 (from the second paragraph)"),
        ("Answer: London\nOn reflection:\nAnswer: Paris", "Paris"),  # last occurrence wins
        ("Answer:\n\n  Brennick  \nmore text", "Brennick"),  # empty after marker -> next line
        ("**Answer:**\nTessel", "Tessel"),  # only Markdown after the marker counts as empty
        ("**Answer:** Captain Wade", "Captain Wade"),
        (
            "Answer: Heathmoor Press. It publishes Northern Kite.",
            "Heathmoor Press. It publishes Northern Kite",
        ),
        (
            "Lenholt is the town.\nThe river is the Caddow.\n\n",
            "The river is the Caddow",
        ),  # last line
        ("Veltish", "Veltish"),
        ("İzmir? No.\nAnswer: Paris", "Paris"),  # "İ".lower() is 2 chars: no index drift
        ('Answer: "Biscuit"', "Biscuit"),
        ("Answer: 'Marrowind'.", "Marrowind"),
        ("Answer: `clockmaker`", "clockmaker"),
        ("Answer: **Linfold Town**.", "Linfold Town"),
        ("Answer: __Iron Cradle__", "Iron Cradle"),
        ("Answer: *bassoon*", "bassoon"),
        ('Answer: **"Stellbridge."**', "Stellbridge"),
        ("Answer: U.S.A.", "U.S.A"),  # only one trailing period goes
        ("Answer: the Smiths'", "the Smiths'"),  # an unpaired quote is not a surrounding one
        ("", ""),
        ("   \n\n  ", ""),
        ("Answer:", ""),
    ],
)
def test_extract_answer(reply: str, expected: str) -> None:
    assert extract_answer(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<think>Answer: maybe London</think>\nAnswer: Paris", "Paris"),
        ("<THINK>\nhmm\n</THINK>Wexmoor University", "Wexmoor University"),
        ("<think>a</think>x<think>Answer: no</think>\nAnswer: yes", "yes"),
        ("Answer: Tessel\n<think>but answer: Morrow? let me", "Tessel"),  # unclosed: drop to end
        ("the chat template opened the block\nAnswer: no\n</think>\n\nAnswer: yes", "yes"),
        ("<think>thinking forever, answer: Morrow", ""),  # all reasoning, cut off
    ],
)
def test_extract_answer_drops_think_blocks(reply: str, expected: str) -> None:
    assert extract_answer(reply) == expected


def test_extracted_answer_scores_against_gold() -> None:
    reply = "<think>Founder: Odile Varsh, born in Lenholt.</think>\n**Answer:** The River Caddow."
    assert score_answer(extract_answer(reply), "River Caddow") == 1.0


@pytest.mark.parametrize(("reply", "gold", "correct"), [
    ("Lake Ombra", "Lake Ombra", 1.0),
    ("lake ombra.", "Lake Ombra", 1.0),  # case and trailing punctuation do not matter
    ("The town lies beside Lake Ombra, I think!", "Lake Ombra", 1.0),  # contains it
    ("Answer: Lake Ombra?!", "lake ombra.", 1.0),
    ("<think>Lake Ombra or Lake Vell?</think>Lake Vell", "Lake Ombra", 0.0),  # not reasoning
    ("Lake Omb", "Lake Ombra", 0.0),
    ("yes", "no", 0.0),
    ("", "Lake Ombra", 0.0),
    ("...", ".", 1.0),  # a gold answer of punctuation only: equality, never "contains ''"
    ("anything", ".", 0.0),
])
def test_contains_is_openevolves_hotpotqa_rule(reply, gold, correct) -> None:
    """Issue 23, item 7: the paper's LPO (OpenEvolve's HotpotQA example) counts a reply
    correct if, lower-cased and without trailing punctuation, it equals the gold answer
    or contains it."""
    from basevolve.tasks.qa_metrics import contains_match

    assert contains_match(reply, gold) == correct
    assert score_answer(reply, gold, "contains") == correct
