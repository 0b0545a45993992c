"""QA data loading: every format, limit, every error message, and the shipped sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from basevolve.errors import TaskError
from basevolve.tasks.qa_data import (
    QAItem,
    dataset_digest,
    has_context,
    load_qa,
    load_sample,
    sample_path,
)

HOTPOT_FIXTURE = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_fixture.json"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(tmp_path: Path, rows: list[object], name: str = "qa.jsonl") -> Path:
    return write(tmp_path, name, "".join(json.dumps(r) + "\n" for r in rows))


# ------------------------------------------------------------------------------ formats


def test_jsonl_with_ids_contexts_and_blank_lines(tmp_path: Path) -> None:
    text = (
        '{"id": "q1", "question": " Who? ", "answer": " Ada ", "context": "Ada: Ada is."}\n'
        "\n"
        '{"question": "When?", "answer": "1900"}\n'
        "   \n"
        '{"id": 7, "question": "Where?", "answer": "Oslo", "context": "  "}\n'
    )
    items = load_qa(write(tmp_path, "qa.jsonl", text))
    assert items == [
        QAItem("q1", "Who?", "Ada", "Ada: Ada is."),
        QAItem("1", "When?", "1900", None),  # id = 0-based row number, blank lines not rows
        QAItem("7", "Where?", "Oslo", None),  # integer id as text; blank context is none
    ]


def test_csv_with_optional_columns_and_multiline_context(tmp_path: Path) -> None:
    text = (
        "id,question,answer,context\n"
        'a,Who wrote it?,Teodor Brisk,"P1: one.\n\nP2: two."\n'
        ",Which year?,1931,\n"
    )
    items = load_qa(write(tmp_path, "qa.csv", text))
    assert items == [
        QAItem("a", "Who wrote it?", "Teodor Brisk", "P1: one.\n\nP2: two."),
        QAItem("1", "Which year?", "1931", None),
    ]


def test_csv_without_optional_columns_and_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "qa.csv"
    path.write_text("\ufeffquestion,answer\nWho?,Ada\n", encoding="utf-8")
    assert load_qa(path) == [QAItem("0", "Who?", "Ada", None)]


def test_hotpotqa_json_renders_titled_paragraphs() -> None:
    items = load_qa(HOTPOT_FIXTURE)
    assert [it.id for it in items] == ["fx0001", "fx0002", "fx0003"]
    assert items[0].question.startswith("Which lake")
    assert items[0].answer == "Lake Ombra"
    # Sentences starting with whitespace are appended as is, others after one space.
    assert items[0].context == (
        "Nils Havard: Nils Havard (1870-1941) was a painter born in Tovik. "
        "He later lived in Ardenne Cove.\n\n"
        "Tovik: Tovik is a small town beside Lake Ombra.\n\n"
        "Ardenne Cove: Ardenne Cove is a fishing village. It has a lighthouse."
    )
    assert items[1].answer == "yes"
    assert items[2].context is not None
    assert items[2].context.endswith("Harbin & Vell: Harbin & Vell is a printing firm.")
    assert has_context(items)


def test_suffix_is_case_insensitive(tmp_path: Path) -> None:
    path = write(tmp_path, "QA.JSONL", '{"question": "q", "answer": "a"}\n')
    assert load_qa(str(path)) == [QAItem("0", "q", "a", None)]


# -------------------------------------------------------------------------------- limit


def test_limit_keeps_the_first_items(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"question": f"q{i}", "answer": f"a{i}"} for i in range(5)])
    assert [it.id for it in load_qa(path, limit=2)] == ["0", "1"]
    assert len(load_qa(path, limit=40)) == 5
    assert [it.id for it in load_qa(HOTPOT_FIXTURE, limit=1)] == ["fx0001"]


def test_limit_does_not_read_rows_after_it(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.jsonl", '{"question": "q", "answer": "a"}\nnot json\n')
    assert len(load_qa(path, limit=1)) == 1


@pytest.mark.parametrize("limit", [0, -1, 2.0, "3", True])
def test_bad_limit(tmp_path: Path, limit: object) -> None:
    path = jsonl(tmp_path, [{"question": "q", "answer": "a"}])
    with pytest.raises(ValueError, match="limit"):
        load_qa(path, limit=limit)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- errors


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"nope\.jsonl does not exist"):
        load_qa(tmp_path / "nope.jsonl")


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(TaskError, match="does not exist"):
        load_qa(tmp_path / "dir.jsonl")


def test_unsupported_suffix_lists_the_supported_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "qa.txt", "question,answer\n")
    with pytest.raises(TaskError, match=r"qa\.txt.*'\.txt'.*\.jsonl, \.csv, \.json"):
        load_qa(path)


def test_invalid_jsonl_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.jsonl", '{"question": "q", "answer": "a"}\n\n{"question": \n')
    with pytest.raises(TaskError, match=r"bad\.jsonl: line 3 is not valid JSON"):
        load_qa(path)


@pytest.mark.parametrize("name", ["deep.jsonl", "deep.json"])
def test_json_nested_100k_deep_is_one_clear_error(tmp_path: Path, name: str) -> None:
    """A hostile dataset (issue 22, item 8, for --task-param dataset=): RecursionError
    inside json.loads became a traceback; now one TaskError naming the file."""
    path = write(tmp_path, name, "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(TaskError, match=rf"{name.replace('.', '[.]')}.* nested too deeply"):
        load_qa(path)


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path, "list.jsonl", '["q", "a"]\n')
    with pytest.raises(TaskError, match=r"list\.jsonl: line 1 is a JSON list, not an object"):
        load_qa(path)


def test_jsonl_missing_answer_names_column_and_line(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"question": "q", "answer": "a"}, {"question": "q2"}], "m.jsonl")
    with pytest.raises(TaskError, match=r"m\.jsonl: line 2: 'answer' is missing;"):
        load_qa(path)


def test_jsonl_missing_both_columns(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"id": "x"}], "m.jsonl")
    with pytest.raises(TaskError, match=r"line 1: 'question' is missing and 'answer' is missing"):
        load_qa(path)


def test_empty_and_non_string_answers_are_explained(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"question": "q", "answer": "  "}], "e.jsonl")
    with pytest.raises(TaskError, match=r"e\.jsonl: line 1: 'answer' is empty"):
        load_qa(path)
    path = jsonl(tmp_path, [{"question": "q", "answer": 1931}], "n.jsonl")
    with pytest.raises(TaskError, match=r"'answer' is of type int, not a string \(quote it\)"):
        load_qa(path)


def test_jsonl_non_string_context_or_bad_id(tmp_path: Path) -> None:
    path = jsonl(tmp_path, [{"question": "q", "answer": "a", "context": ["t", ["s"]]}], "c.jsonl")
    with pytest.raises(TaskError, match=r"c\.jsonl: line 1 has a 'context' of type list"):
        load_qa(path)
    path = jsonl(tmp_path, [{"id": 1.5, "question": "q", "answer": "a"}], "i.jsonl")
    with pytest.raises(TaskError, match=r"i\.jsonl: line 1 has an 'id' of type float"):
        load_qa(path)


def test_duplicate_ids(tmp_path: Path) -> None:
    rows = [
        {"id": "s1", "question": "q", "answer": "a"},
        {"id": "s1", "question": "q", "answer": "b"},
    ]
    with pytest.raises(TaskError, match=r"line 2 repeats id 's1' \(first used at line 1\)"):
        load_qa(jsonl(tmp_path, rows))


def test_csv_header_without_answer_column(tmp_path: Path) -> None:
    path = write(tmp_path, "h.csv", "question,reply\nWho?,Ada\n")
    with pytest.raises(
        TaskError, match=r"h\.csv: the header \(line 1\) lacks column\(s\) 'answer'"
    ):
        load_qa(path)


def test_csv_row_with_empty_question_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "r.csv", "question,answer\nWho?,Ada\n,Bob\n")
    with pytest.raises(TaskError, match=r"r\.csv: line 3: 'question' is empty"):
        load_qa(path)


def test_csv_short_row_names_the_missing_column(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", "question,answer\nWho?\n")
    with pytest.raises(TaskError, match=r"s\.csv: line 2: 'answer' is missing;"):
        load_qa(path)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("empty.jsonl", "\n  \n"),
        ("empty.csv", ""),
        ("header_only.csv", "question,answer\n"),
        ("empty.json", "[]"),
    ],
)
def test_empty_dataset(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(TaskError, match=re.escape(name) + " contains no questions"):
        load_qa(write(tmp_path, name, text))


def test_invalid_json_file(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", "[\n{]")
    with pytest.raises(TaskError, match=r"bad\.json is not valid JSON \(.* at line 2"):
        load_qa(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("question,answer\nWho?,Zoë\n".encode("latin-1"))
    with pytest.raises(TaskError, match=r"latin\.csv is not valid UTF-8"):
        load_qa(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"data": []}, r"h\.json holds a JSON dict; expected the HotpotQA format"),
        ([["q", "a"]], r"h\.json: item 0 \(0-based\) lacks key\(s\) '_id', 'question'"),
        (
            [{"_id": "x", "question": "q", "answer": "a"}],
            r"h\.json: item 0 \(0-based\) lacks key\(s\) 'context'; expected the HotpotQA",
        ),
        (
            [{"_id": "x", "question": "q", "answer": "a", "context": "plain text"}],
            r"h\.json: item 0 \(0-based\) has a malformed 'context'",
        ),
        (
            [{"_id": "x", "question": "q", "answer": "a", "context": [["T", "not a list"]]}],
            r"item 0 \(0-based\) has a malformed 'context'",
        ),
        (
            [{"_id": "x", "question": "q", "answer": "", "context": []}],
            r"h\.json: item 0 \(0-based\): 'answer' is empty",
        ),
    ],
)
def test_bad_hotpotqa_file(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        load_qa(write(tmp_path, "h.json", json.dumps(data)))


# --------------------------------------------------------------------- has_context, digest


def test_has_context_needs_every_item() -> None:
    full = [QAItem("0", "q", "a", "c"), QAItem("1", "q", "a", "d")]
    assert has_context(full)
    assert not has_context([*full, QAItem("2", "q", "a")])
    assert not has_context([QAItem("0", "q", "a", "   ")])
    assert not has_context([])


def test_dataset_digest_is_stable_and_sensitive() -> None:
    items = [QAItem("0", "Who?", "Ada", None), QAItem("1", "When?", "1900", "ctx")]
    digest = dataset_digest(items)
    assert len(digest) == 64 and int(digest, 16) >= 0
    assert dataset_digest(list(items)) == digest
    assert dataset_digest(items[::-1]) != digest  # order is part of the dataset
    assert dataset_digest([items[0], QAItem("1", "When?", "1901", "ctx")]) != digest
    assert dataset_digest([items[0], QAItem("1", "When?", "1900", None)]) != digest


# -------------------------------------------------------------------------- the sample


def test_sample_has_forty_well_formed_items() -> None:
    assert sample_path().name == "qa_sample.jsonl"
    items = load_sample()
    assert len(items) == 40
    assert len({it.id for it in items}) == 40
    assert [it.id for it in items] == [f"s{i:02d}" for i in range(1, 41)]
    assert has_context(items)
    yes_no = [it for it in items if it.answer in ("yes", "no")]
    assert 5 <= len(yes_no) <= 8
    for item in items:
        assert item.context is not None
        paragraphs = item.context.split("\n\n")
        assert 2 <= len(paragraphs) <= 4, item.id
        assert all(": " in p for p in paragraphs), item.id  # "Title: sentences"
        assert 1 <= len(item.answer.split()) <= 4, item.id
        if item not in yes_no:
            assert item.answer.lower() in item.context.lower(), item.id


def test_load_sample_limit() -> None:
    assert [it.id for it in load_sample(limit=3)] == ["s01", "s02", "s03"]


def test_hotpotqa_openevolve_context_style() -> None:
    """Issue 23, item 7: OpenEvolve's HotpotQA example renders each paragraph as
    "Paragraph i (title):" and its sentences joined by spaces, blank lines between."""
    items = load_qa(HOTPOT_FIXTURE, context_style="openevolve")
    assert items[0].context == (
        "Paragraph 1 (Nils Havard):\n"
        "Nils Havard (1870-1941) was a painter born in Tovik.  He later lived in Ardenne Cove."
        "\n\nParagraph 2 (Tovik):\nTovik is a small town beside Lake Ombra."
        "\n\nParagraph 3 (Ardenne Cove):\nArdenne Cove is a fishing village. It has a lighthouse."
    )
    assert [it.answer for it in items] == [it.answer for it in load_qa(HOTPOT_FIXTURE)]
    assert dataset_digest(items) != dataset_digest(load_qa(HOTPOT_FIXTURE))  # what is asked


def test_openevolve_context_style_needs_the_hotpotqa_format(tmp_path: Path) -> None:
    f = tmp_path / "qa.jsonl"
    f.write_text('{"question": "q", "answer": "a", "context": "c"}\n')
    with pytest.raises(TaskError, match=r"context_style='openevolve'.*HotpotQA.*\.json"):
        load_qa(f, context_style="openevolve")
    with pytest.raises(TaskError, match="context_style must be one of plain, openevolve"):
        load_qa(HOTPOT_FIXTURE, context_style="titles")
