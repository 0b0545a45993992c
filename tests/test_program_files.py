"""The one-text encoding of a program of several files (issue 31, item 3).

Round trips are exact (a file without a final newline, an empty file, CRLF lines), every
hostile name is refused with its reason, and writing a folder never leaves it.
"""

from __future__ import annotations

import os

import pytest

from basevolve.program_files import (
    MAX_FILES,
    MAX_TOTAL_CHARS,
    ProgramFilesError,
    is_packed,
    pack,
    path_problem,
    read_folder,
    unpack,
    write_folder,
    write_program_folder,
)

FILES = {"solver.cpp": "int main() { return 0; }\n", "lib/util.py": "X = 1\n",
         "params.json": '{"n": 3}', "lib/__init__.py": "", "notes.txt": "a\r\nb\r\n"}


def test_pack_unpack_round_trip_is_exact():
    text = pack(FILES)
    assert is_packed(text) and unpack(text) == FILES
    assert text.splitlines()[0] == "# === FILE: lib/__init__.py ==="  # path order
    assert "# === FILE: params.json === (no newline at end)\n" in text
    assert not is_packed("import os\n") and not is_packed("")


@pytest.mark.parametrize("name, reason", [
    ("../../etc/passwd", "steps out of the program folder"),
    ("a/../../b.py", "steps out of the program folder"),
    ("/etc/passwd", "is absolute"),
    ("C:/x.py", "is absolute"),
    ("a\\b.py", "is absolute"),
    ("bad\nname.py", "control character"),
    ("bell\x07.py", "control character"),
    ("esc\x1b[31m.py", "control character"),
    (".bashrc", "hidden file"),
    ("-rf", "may not start with '-'"),
    ("a//b.py", "empty part"),
    ("dir/", "empty part"),
    ("x" * 300, "longer than"),
    ("/".join(["d"] * 12) + ".py", "folders deep"),
    ("sp ace.py", "only letters"),
    ("", "empty file name"),
])
def test_hostile_names_are_refused_with_a_reason(name, reason):
    why = path_problem(name)
    assert why is not None and reason in why
    with pytest.raises(ProgramFilesError, match="file name"):
        pack({name: "x\n"})


def test_caps_and_conflicts():
    with pytest.raises(ProgramFilesError, match=f"at most {MAX_FILES}"):
        pack({f"f{i}.py": "" for i in range(MAX_FILES + 1)})
    with pytest.raises(ProgramFilesError, match="characters together"):
        pack({"a.txt": "x" * (MAX_TOTAL_CHARS + 1)})
    with pytest.raises(ProgramFilesError, match="both a file and the folder"):
        pack({"lib": "x\n", "lib/a.py": "y\n"})
    with pytest.raises(ProgramFilesError, match="reads as a file header"):
        pack({"a.py": "x = 1\n# === FILE: b.py ===\n"})
    with pytest.raises(ProgramFilesError, match="at least one file"):
        pack({})


def test_unpack_refuses_a_bad_stored_text():
    with pytest.raises(ProgramFilesError, match="first line must be"):
        unpack("print(1)\n")
    with pytest.raises(ProgramFilesError, match="appears twice"):
        unpack("# === FILE: a.py ===\nx\n# === FILE: a.py ===\ny\n")
    with pytest.raises(ProgramFilesError, match="steps out"):
        unpack("# === FILE: ../a.py ===\nx\n")
    many = "".join(f"# === FILE: f{i}.py ===\n" for i in range(MAX_FILES + 5))
    with pytest.raises(ProgramFilesError, match=f"more than {MAX_FILES} files"):
        unpack(many)


def test_read_folder_skips_hidden_and_refuses_links_and_binary(tmp_path):
    folder = tmp_path / "prog"
    (folder / "lib").mkdir(parents=True)
    (folder / "main.py").write_text("print(1)\n")
    (folder / "lib" / "a.json").write_text("[]")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("x")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "m.pyc").write_bytes(b"\x00")
    assert read_folder(folder) == {"lib/a.json": "[]", "main.py": "print(1)\n"}
    (folder / "link.py").symlink_to("/etc/hostname")
    with pytest.raises(ProgramFilesError, match="symbolic link"):
        read_folder(folder)
    (folder / "link.py").unlink()
    (folder / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ProgramFilesError, match="not UTF-8 text"):
        read_folder(folder)


def test_write_folder_never_leaves_its_root(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    outside = tmp_path / "victim.txt"
    for name in ("../victim.txt", "/tmp/victim.txt", "a/../../victim.txt"):
        with pytest.raises(ProgramFilesError):
            write_folder({name: "owned\n"}, root)
    assert not outside.exists() and list(root.iterdir()) == []
    # a symbolic link planted inside the folder is not followed
    (root / "lib").symlink_to(tmp_path)
    with pytest.raises(ProgramFilesError, match="outside"):
        write_folder({"lib/victim.txt": "owned\n"}, root)
    (root / "lib").unlink()
    os.symlink(outside, root / "f.txt")
    with pytest.raises(OSError):
        write_folder({"f.txt": "owned\n"}, root)
    assert not outside.exists()
    (root / "f.txt").unlink()
    folder = write_program_folder(pack(FILES), root / "best")
    assert read_folder(folder) == {k: v for k, v in FILES.items()}
