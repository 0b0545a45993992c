"""Program extraction from LLM replies (full-rewrite mode)."""

from __future__ import annotations

import pytest

from basevolve.prompts import extract_program, extract_tag, strip_think

PROG = "import numpy as np\n\n\ndef run():\n    return np.zeros(3)\n"
HELPER = "def helper(x):\n    return x * 2\n"


def fence(code: str, tag: str = "python", mark: str = "```") -> str:
    return f"{mark}{tag}\n{code}{mark}\n"


def test_prose_around_a_fence():
    reply = "Here is my improved version.\n\n" + fence(PROG) + "\nIt is faster because..."
    p = extract_program(reply, entry="run")
    assert p.ok and p.code == PROG and p.method == "fence_entry" and p.warnings == ()


@pytest.mark.parametrize(("tag", "mark"), [("", "```"), ("py", "```"), ("python", "~~~")])
def test_fence_variants(tag, mark):
    p = extract_program("x\n" + fence(PROG, tag, mark), entry="run")
    assert p.code == PROG


def test_indented_fence_in_a_list_and_info_string_extras():
    indented = "".join(f"   {ln}\n" for ln in fence(PROG, "python title=run.py").splitlines())
    assert extract_program("1. Use zeros:\n" + indented, entry="run").code == PROG
    assert extract_program(fence(PROG, "python:main.py"), entry="run").code == PROG
    assert extract_program(fence(PROG, "Python"), entry="run").code == PROG
    assert extract_program(fence(PROG).replace("\n", "\r\n"), entry="run").code == PROG


def test_several_blocks_prefer_the_entry_function():
    longer_helper = HELPER + "".join(f"# padding line {i}\n" for i in range(20))
    reply = fence(longer_helper) + "and the main program:\n" + fence(PROG)
    assert extract_program(reply, entry="run").code == PROG
    # without an entry name the longest block wins
    assert extract_program(reply).code == longer_helper


def test_several_blocks_skip_other_languages_and_template_echo():
    reply = (
        fence("pip install numpy\n", "bash")
        + fence("# Your rewritten program here\n")
        + fence(PROG)
    )
    p = extract_program(reply, entry="run")
    assert p.code == PROG


def test_missing_fences_bare_code_with_prose():
    reply = "Sure! Here is the program:\n" + PROG + "\nThis should score higher."
    p = extract_program(reply, entry="run")
    assert p.method == "bare" and p.code == PROG


def test_unterminated_fence():
    p = extract_program("Here:\n```python\n" + PROG, entry="run")
    assert p.method == "unterminated_fence" and p.code == PROG
    cut = extract_program("Here:\n```python\n" + PROG + "def other(:\n")
    assert cut.code is None and "unterminated" in cut.error and "SyntaxError" in cut.error


def test_closing_fence_on_the_last_code_line():
    """Issue 31, item 10: a closing fence right after the last code line ends the block
    (OpenEvolve accepts it); the prose after it is not code, the line's code is kept."""
    same_line = "Here:\n```python\n" + PROG.rstrip("\n") + "```\nThat is faster.\n"
    p = extract_program(same_line, entry="run")
    assert p.ok and p.method == "fence_entry" and p.code == PROG
    # a second block after such a block is still a block of its own
    two = "```python\n" + HELPER.rstrip("\n") + "```\nand:\n" + fence(PROG)
    assert extract_program(two, entry="run").code == PROG
    assert extract_program(two, entry="helper").code == HELPER
    # a fence inside a string literal does not close the block
    quoted = 'def run():\n    return "```"\n'
    assert extract_program(fence(quoted), entry="run").code == quoted


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("<think>only thinking</think>   ", "empty reply"),
        ("I cannot help with that.", "not a Python program"),
        ("Sure", "not a Python program"),
        (fence("def run(:\n    pass\n"), "SyntaxError line 1"),
        (fence("echo hi\n", "bash"), "only blocks in other languages"),
        (fence("\n"), "only empty code blocks"),
    ],
)
def test_garbage_gives_none_with_reason(reply, reason):
    p = extract_program(reply, entry="run")
    assert p.code is None and p.method == "none"
    assert reason in p.error


def test_missing_entry_is_a_warning_not_an_error():
    p = extract_program(fence(HELPER), entry="run")
    assert p.code == HELPER and "'run'" in p.warnings[0]


def test_think_blocks_are_stripped_defensively():
    reply = "<think>```python\ndef run():\n    return 0\n```</think>\n" + fence(PROG)
    assert extract_program(reply, entry="run").code == PROG
    assert strip_think("reasoning...</think>answer") == "answer"
    assert strip_think("answer<think>never closed") == "answer"


def test_shinka_tagged_reply():
    reply = f"<NAME>\nzeros_v2\n</NAME>\n<DESCRIPTION>Use zeros.</DESCRIPTION>\n<CODE>\n{fence(PROG)}</CODE>"
    assert extract_tag(reply, "NAME") == "zeros_v2"
    assert extract_tag(reply, "MISSING") is None
    assert extract_program(extract_tag(reply, "CODE"), entry="run").code == PROG


def test_transient_ast_system_error_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11's AST depth counter can raise SystemError under threads
    (python/cpython#106905); the parser retries instead of failing the run."""
    import ast

    real, calls = ast.parse, []

    def flaky(code: str, *a: object, **k: object) -> ast.Module:
        calls.append(code)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=117, after=53)")
        return real(code, *a, **k)

    monkeypatch.setattr(ast, "parse", flaky)
    code = "def f():\n    return 12345  # unique to this test\n"
    parsed = extract_program(f"```python\n{code}```", entry="f")
    assert parsed.ok and len(calls) == 2
