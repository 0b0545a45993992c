"""Replies that change a program of several files (issue 31, item 3).

Full rewrites of named files (per-file fences, or one fence of header-separated files),
per-file SEARCH/REPLACE, the tagged formats, and hostile replies: a name outside the
folder, an absolute name, a control character, too many files -- each refused with the
reason, the parent unchanged, nothing written.
"""

from __future__ import annotations

import pytest

from basevolve.program_files import MAX_FILES, pack, unpack
from basevolve.prompts.files_reply import parse_files_diff, parse_files_reply, parse_files_rewrite

SOLVER = ("import json\n\n# EVOLVE-BLOCK-START\ndef choose(items):\n    return items[:1]\n"
          "# EVOLVE-BLOCK-END\n\n\ndef run():\n    return choose([1, 2])\n")
PARENT = pack({"solver.py": SOLVER, "params.json": '{"n": 3}\n', "kernel.cpp": "int f();\n"})


def test_full_rewrite_of_named_files_keeps_the_others():
    reply = ("Changed two files.\n# === FILE: params.json ===\n```json\n{\"n\": 4}\n```\n\n"
             "# === FILE: kernel.cpp ===\n```cpp\nint f() { return 2; }\n```\nDone.")
    parsed = parse_files_rewrite(PARENT, reply)
    files = unpack(parsed.code)
    assert files == {"solver.py": SOLVER, "params.json": '{"n": 4}\n',
                     "kernel.cpp": "int f() { return 2; }\n"}
    assert parsed.method == "files:params.json;kernel.cpp"


def test_prose_between_a_header_and_its_fence_is_not_part_of_the_file():
    reply = ("# === FILE: kernel.cpp ===\nThe kernel now returns 2:\n\n```cpp\n"
             "int f() { return 2; }\n```\nThat is all.\n")
    assert unpack(parse_files_rewrite(PARENT, reply).code)["kernel.cpp"] == \
        "int f() { return 2; }\n"


def test_one_fence_of_header_separated_files_and_a_new_file():
    reply = ("```\n# === FILE: params.json === (no newline at end)\n{\"n\": 5}\n"
             "# === FILE: extra/notes.md ===\nhello\n```\n")
    files = unpack(parse_files_rewrite(PARENT, reply).code)
    assert files["params.json"] == '{"n": 5}' and files["extra/notes.md"] == "hello\n"
    assert files["solver.py"] == SOLVER


def test_per_file_search_replace_is_all_or_nothing():
    edit = ("# === FILE: solver.py ===\n<<<<<<< SEARCH\n    return items[:1]\n=======\n"
            "    return items[:2]\n>>>>>>> REPLACE\n# === FILE: kernel.cpp ===\n"
            "<<<<<<< SEARCH\nint f();\n=======\nint f(int);\n>>>>>>> REPLACE\n")
    parsed = parse_files_diff(PARENT, edit)
    files = unpack(parsed.code)
    assert "items[:2]" in files["solver.py"] and files["kernel.cpp"] == "int f(int);\n"
    assert parsed.method.startswith("files-diff:solver.py=exact;kernel.cpp=")
    # the protocol confines edits to a file's EVOLVE block when it has one
    outside = edit.replace("    return items[:1]\n=======\n    return items[:2]",
                           "def run():\n=======\ndef run2():")
    refused = parse_files_diff(PARENT, outside)
    assert refused.code is None and "solver.py" in refused.error
    bad = edit.replace("int f();\n=======", "int g();\n=======")
    refused = parse_files_diff(PARENT, bad)
    assert refused.code is None and refused.error.startswith("diff not applied to kernel.cpp")
    unnamed = parse_files_diff(PARENT, "<<<<<<< SEARCH\nint f();\n=======\nx\n>>>>>>> REPLACE\n")
    assert unnamed.code is None and "name the file each edit belongs to" in unnamed.error
    missing = parse_files_diff(PARENT, "# === FILE: nope.py ===\n<<<<<<< SEARCH\na\n=======\n"
                                       "b\n>>>>>>> REPLACE\n")
    assert missing.code is None and "has no file 'nope.py'" in missing.error


def test_tagged_formats_and_python_syntax():
    code = ("<NAME>x</NAME><DESCRIPTION>d</DESCRIPTION><CODE>\n# === FILE: kernel.cpp ===\n"
            "```cpp\nint f() { return 3; }\n```\n</CODE>")
    assert "return 3" in unpack(parse_files_reply(PARENT, code, "tagged_code").code)["kernel.cpp"]
    assert parse_files_reply(PARENT, "<NAME>x</NAME>", "tagged_diff").error.startswith(
        "reply has no <DIFF> section")
    broken = parse_files_reply(PARENT, "# === FILE: solver.py ===\n```python\ndef (:\n```\n")
    assert broken.code is None and broken.error.startswith("solver.py: SyntaxError")
    assert "names no file" in parse_files_reply(PARENT, "```python\nx = 1\n```").error


@pytest.mark.parametrize("name, reason", [
    ("../../etc/passwd", "steps out of the program folder"),
    ("/etc/passwd", "is absolute"),
    ("evil\x1b]0;title\x07.py", "control character"),
    ("a\u0085b.py", "control character"),
])
@pytest.mark.parametrize("fmt", ["full", "diff"])
def test_hostile_file_names_in_a_reply_are_refused(tmp_path, monkeypatch, name, reason, fmt):
    monkeypatch.chdir(tmp_path)
    reply = f"# === FILE: {name} ===\n```\nowned\n```\n"
    parsed = parse_files_reply(PARENT, reply, fmt)
    assert parsed.code is None and reason in parsed.error
    assert parsed.error.startswith("the reply names a file the program may not have")
    assert list(tmp_path.iterdir()) == []  # parsing writes nothing anywhere


def test_a_reply_with_too_many_files_is_refused():
    reply = "".join(f"# === FILE: f{i}.txt ===\n```\n{i}\n```\n" for i in range(MAX_FILES + 1))
    parsed = parse_files_rewrite(PARENT, reply)
    assert parsed.code is None and f"at most {MAX_FILES}" in parsed.error
