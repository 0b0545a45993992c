"""prompt_optimization without a server: templates, extraction, scoring (issue 15).

The answering model is a scripted :class:`Answerer` here; the end-to-end tests
(tests/engine/test_lpo_e2e.py) use the real test server and the real evaluator.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from basevolve.errors import ConfigError, TaskError
from basevolve.prompts import extract_program
from basevolve.protocols import Child
from basevolve.tasks import TASKS, load_task
from basevolve.tasks.text import AnswerCall, check_template, fill_template, placeholders


class Scripted:
    """Answers each request with ``reply(prompt_text)``; records what was asked."""

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    async def answer(self, requests):
        self.asked.extend(requests)
        out = []
        for i, messages in enumerate(requests):
            text = self.reply(messages[-1]["content"])
            out.append(AnswerCall(text, text is not None, f"k{i}", prompt_tokens=10,
                                  completion_tokens=2, flops=1.0,
                                  error=None if text is not None else "HTTP 500"))
        return out


def _task(**params):
    return load_task("prompt_optimization", params)


def test_registered_with_declared_params():
    assert "prompt_optimization" in TASKS
    task = _task(limit=5)
    assert task.artifact == "text" and task.language == "text" and len(task.items) == 5
    assert task.required == ("question", "context")  # the sample has contexts
    assert task.check_artifact(task.initial_program) is None


def test_fill_is_token_replacement_not_format():
    """LLM-written templates never reach str.format: attribute lookups stay text, and a
    value holding a placeholder is not substituted again."""
    t = "{question.__class__} {question} {context} {0} {{x}} {"
    out = fill_template(t, {"question": "Q{context}", "context": "C"})
    assert out == "{question.__class__} Q{context} C {0} {{x}} {"
    assert placeholders("{a} {b} {a}") == ["a", "b"]


@pytest.mark.parametrize(("text", "why"), [
    ("", "empty prompt template"),
    ("Context: {context}", "lacks the placeholder(s) {question}"),
    ("{question}", "lacks the placeholder(s) {context}"),
    ("{question} {context} {answer}", "unknown placeholder(s) {answer}"),
    ("{question} {context} {context} {context}", "repeats placeholder(s) {context} x3"),
    ("{question} {context}" + "x" * 100, "too long: 120 characters, the cap is 100"),
])
def test_check_template_reasons(text, why):
    got = check_template(text, required=("question", "context"),
                         allowed=("question", "context"), max_chars=100)
    assert got is not None and why in got


def test_a_dataset_without_contexts_needs_only_question(tmp_path):
    data = tmp_path / "qa.jsonl"
    data.write_text('{"question": "2+2?", "answer": "4"}\n{"question": "3+3?", "answer": "6"}\n')
    task = _task(dataset=str(data))
    assert task.required == ("question",) and "{context}" not in task.initial_program
    assert task.check_artifact("Q: {question}") is None
    assert "unknown placeholder(s) {context}" in task.check_artifact("{question} {context}")


def test_extract_text_needs_tags_or_a_fence():
    assert extract_program("x <prompt>\nA {question}\n</prompt> y", language="text").code == "A {question}\n"
    fenced = "Sure:\n```\nB {question}\n```\nand\n```python\nprint(1)\n```\n"
    assert extract_program(fenced, language="text").code == "B {question}\n"
    last = "<prompt>one {question}</prompt> then <PROMPT>two {question}</PROMPT>"
    assert extract_program(last, language="text").code == "two {question}\n"
    cut = "Here:\n```text\nC {question}\nline"  # truncated by max_tokens
    assert extract_program(cut, language="text").method == "unterminated_fence"
    bad = extract_program("Just answer carefully: {question}", language="text")
    assert bad.code is None and "<prompt>" in bad.error
    assert extract_program("<think><prompt>x</prompt></think>", language="text").code is None


def test_evaluate_scores_exact_match_and_reports_failures():
    task = _task(limit=4, failures_shown=1)
    gold = {it.question: it.answer for it in task.items}
    right = {task.items[0].question, task.items[2].question}

    def reply(prompt):
        q = next(q for q in gold if q in prompt)
        return f"Reasoning...\nAnswer: {gold[q]}." if q in right else "Answer: Nobody"

    answerer = Scripted(reply)
    score = asyncio.run(task.evaluate_text(task.initial_program, answerer))
    assert score.valid and score.score == 0.5 and score.metrics["em"] == 0.5
    assert [r["correct"] for r in score.rows] == [1.0, 0.0, 1.0, 0.0]
    assert score.rows[1]["answer"] == "Nobody" and score.rows[1]["gold"] == task.items[1].answer
    # the filled prompt holds the question and its context, once each
    content = answerer.asked[0][0]["content"]
    assert task.items[0].question in content and task.items[0].context in content
    assert "2 of 4 questions fully right" in score.feedback
    assert f"Question: {task.items[1].question}" in score.feedback
    assert "Given (wrong): 'Nobody'" in score.feedback
    assert task.items[3].question not in score.feedback  # failures_shown=1
    # the gold answer stays hidden unless asked for (a template could memorise it)
    assert repr(task.items[1].answer) not in score.feedback
    shown = _task(limit=4, failures_shown=1, show_expected=True)
    told = asyncio.run(shown.evaluate_text(shown.initial_program, Scripted(reply)))
    assert f"Expected: {task.items[1].answer!r}" in told.feedback


def test_f1_metric_gives_partial_credit():
    task = _task(limit=1, metric="f1")
    gold = task.items[0].answer
    score = asyncio.run(task.evaluate_text(task.initial_program,
                                           Scripted(lambda _: f"Answer: {gold} extra words")))
    assert 0 < score.score < 1 and score.metrics["em"] == 0.0


def test_failed_answer_calls_count_wrong_and_are_reported():
    task = _task(limit=3)
    score = asyncio.run(task.evaluate_text(task.initial_program, Scripted(lambda _: None)))
    assert score.valid and score.score == 0.0 and score.metrics["failed_answer_calls"] == 3
    assert "3 of 3 answer calls failed" in score.error
    assert all(r["status"] == "failed" and r["answer"] is None for r in score.rows)


def test_invalid_template_is_scored_zero_without_asking():
    task = _task(limit=3)
    answerer = Scripted(lambda _: "Answer: x")
    score = asyncio.run(task.evaluate_text("no placeholders", answerer))
    assert not score.valid and score.score == 0.0 and "lacks" in score.error
    assert answerer.asked == []


def test_mutation_prompt_shows_template_accuracy_and_failures():
    task = _task(limit=3)
    parent = Child(1, task.initial_program, 0.3333, True,
                   output="stdout:\n1 of 3 questions fully right.\n- Question: Q?\n  Expected: 'a'\n  Given: 'b'")
    messages = task.mutation_messages(parent)
    assert messages[0] == {"role": "system", "content": task.system_message}
    user = messages[1]["content"]
    assert "Accuracy: 0.3333 on 3 questions" in user and task.initial_program.strip() in user
    assert "Expected: 'a'" in user and "<prompt>" in user and "stdout:" not in user


def test_greedy_uses_the_task_prompt():
    import numpy as np

    from basevolve.protocols import PROTOCOLS

    task = _task(limit=2)
    proto = PROTOCOLS.get("greedy")(task=task, breadth=1, trajectory=0, rng=np.random.default_rng(0))
    proto.set_initial(Child(1, task.initial_program, 0.5, True))
    assert proto.ask().messages == task.mutation_messages(Child(1, task.initial_program, 0.5, True))


def test_identity_changes_with_the_dataset(tmp_path):
    from basevolve.tasks.identity import task_identity

    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"question": "q?", "answer": "a"}) + "\n")
    first = task_identity("prompt_optimization", _task(dataset=str(data)))
    data.write_text(json.dumps({"question": "q?", "answer": "b"}) + "\n")
    second = task_identity("prompt_optimization", _task(dataset=str(data)))
    assert first.sha256 != second.sha256
    assert task_identity("prompt_optimization", _task(limit=3)).sha256 != \
        task_identity("prompt_optimization", _task(limit=4)).sha256


@pytest.mark.parametrize(("params", "error", "text"), [
    ({"limit": 0}, ConfigError, "out of range"),
    ({"metric": "bleu"}, ConfigError, "not one of em, f1"),
    ({"nope": 1}, ConfigError, "unknown --task-param 'nope'"),
    ({"dataset": "/does/not/exist.jsonl"}, TaskError, "does not exist"),
    ({"answer_params": "lots"}, ConfigError, "answer_params"),
])
def test_bad_params_are_clear(params, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        _task(**params)


def test_initial_template_file(tmp_path):
    good = tmp_path / "t.txt"
    good.write_text("Context: {context}\nQ: {question}\nAnswer:")
    assert _task(template=str(good)).initial_program == good.read_text()
    bad = tmp_path / "bad.txt"
    bad.write_text("Context: {context}")
    with pytest.raises(TaskError, match=r"lacks the placeholder\(s\) \{question\}"):
        _task(template=str(bad))


def test_program_tasks_refuse_task_params():
    with pytest.raises(ConfigError, match="takes no --task-param"):
        load_task("circle_packing", {"limit": 3})


def test_the_papers_lpo_setup_contains_metric_and_openevolve_contexts():
    """Issue 23, item 7: metric=contains and context_style=openevolve reproduce the
    paper's LPO (OpenEvolve's HotpotQA example, Table 11): the first 40 questions, each
    paragraph shown as "Paragraph i (title):", and a reply right when, lower-cased and
    without trailing punctuation, it equals or contains the gold answer."""
    from pathlib import Path

    from basevolve.tasks.prompt_optimization import SYSTEM_MESSAGE

    hotpot = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_fixture.json"
    task = _task(dataset=str(hotpot), metric="contains", context_style="openevolve")
    assert task.params["limit"] == 40 and len(task.items) == 3
    replies = {"Which lake": "It is Lake Ombra, beside Tovik.",  # contains the gold answer
               "Are Pella": "Yes.", "Which company": "Harbin & Vell"}

    def reply(prompt):
        return next(r for q, r in replies.items() if q in prompt)

    answerer = Scripted(reply)
    score = asyncio.run(task.evaluate_text(task.initial_program, answerer))
    assert [r["correct"] for r in score.rows] == [1.0, 1.0, 0.0]
    assert score.score == pytest.approx(2 / 3) and score.metrics["contains"] == pytest.approx(2 / 3)
    assert score.metrics["em"] == pytest.approx(1 / 3)  # EM on the extracted answer differs
    assert "Paragraph 1 (Nils Havard):\nNils Havard (1870-1941)" in answerer.asked[0][0]["content"]
    assert "contains" in task.system_message and task.system_message != SYSTEM_MESSAGE
    assert "contained" in score.feedback  # the mutation model is told the rule
    # the defaults are unchanged: normalised EM on the extracted answer, "Title: ..." contexts
    plain = _task(dataset=str(hotpot))
    assert plain.system_message == SYSTEM_MESSAGE and plain.metric == "em"
    assert plain.items[0].context.startswith("Nils Havard: ")
    with pytest.raises(ConfigError, match="context_style"):
        _task(context_style="paragraphs")


def test_identity_of_default_runs_is_unchanged_by_the_new_parameter():
    """Runs stored before context_style existed resume as the same task; the paper's
    style is another task (other contexts, other digest)."""
    import hashlib
    from pathlib import Path

    from basevolve.tasks.qa_data import dataset_digest

    hotpot = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_fixture.json"
    task = _task(dataset=str(hotpot))
    old = dict(task.params)
    del old["context_style"]  # the parameters as stored before issue 23
    assert task.identity_parts() == (dataset_digest(task.items), json.dumps(old, sort_keys=True))
    styled = _task(dataset=str(hotpot), context_style="openevolve")
    assert hashlib.sha256(repr(styled.identity_parts()).encode()).digest() != \
        hashlib.sha256(repr(task.identity_parts()).encode()).digest()
