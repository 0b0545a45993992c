"""A user task whose program is a folder of files (issue 31, item 3).

OpenEvolve task directories name a folder as their program (``initial_program/``,
:mod:`basevolve.tasks.openevolve_layouts`); a user's own task file can too, by
subclassing :class:`FolderTask` instead of :class:`~basevolve.tasks.base.Task`::

    class Knapsack(FolderTask):
        name = "knapsack"
        entry = "solve"                # a function of the main module, called with no args
        program_folder = "program"     # relative to this task file's folder
        main_module = "main"           # program/main.py; may import the folder's others
        instructions = "Improve solve() ..."

        def score_value(self, value, *, tol=1e-6): ...

The program is every text file of the folder, kept as one text
(:mod:`basevolve.program_files`), so the LLM sees every file with its path and may change
several in one reply (:mod:`basevolve.prompts.files_reply`).  In the sandbox the
program's source is a small bootstrap (:func:`folder_source`, standard library only)
that writes the files into a folder of the sandbox's own working directory, puts it
first on ``sys.path``, imports ``main_module`` and makes its names the program's, so the
``entry`` evaluation (and a function task's calls) work as for one file.  The scorer
stays trusted, in this process, as for every user task.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import ClassVar

from basevolve.errors import TaskError
from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.program_files import ProgramFilesError, pack, read_folder, unpack
from basevolve.prompts.files_reply import FORMAT_NOTE
from basevolve.tasks.base import Task

_BOOTSTRAP = '''"""basevolve: a program of several files, written out and imported (issue 31)."""
import importlib as _importlib
import json as _json
import os as _os
import sys as _sys

_FILES = _json.loads({files!r})
_ROOT = _os.path.join(_os.getcwd(), "program_files")
for _rel, _text in _FILES.items():
    _parts = _rel.split("/")
    if _rel.startswith("/") or any(_p in ("", ".", "..") for _p in _parts):
        raise ValueError("refusing the file name %r" % (_rel,))
    _path = _os.path.join(_ROOT, *_parts)
    _os.makedirs(_os.path.dirname(_path), exist_ok=True)
    with open(_path, "w", encoding="utf-8", newline="") as _fh:
        _fh.write(_text)
_sys.path.insert(0, _ROOT)
_main = _importlib.import_module({main!r})
globals().update({{_k: _v for _k, _v in vars(_main).items() if not _k.startswith("__")}})
'''


def folder_source(code: str, main_module: str) -> str:
    """The sandboxed source of a packed program: write its files, import ``main_module``."""
    return _BOOTSTRAP.format(files=json.dumps(unpack(code)), main=main_module)


class FolderTask(Task):
    """Base class of a user task whose program is a folder (module docstring)."""

    language: ClassVar[str] = FILES_LANGUAGE
    program_folder: ClassVar[str]
    main_module: ClassVar[str] = "main"
    instructions: ClassVar[str] = ""

    def folder_path(self) -> Path:
        """``program_folder``, a relative one taken from the task file's own folder."""
        folder = Path(self.program_folder).expanduser()
        if not folder.is_absolute():
            folder = Path(inspect.getfile(type(self))).resolve().parent / folder
        return folder

    @property
    def initial_program(self) -> str:
        try:
            files = read_folder(self.folder_path())
            if f"{self.main_module.replace('.', '/')}.py" not in files:
                raise ProgramFilesError(f"it has no {self.main_module}.py (main_module)")
            return pack(files)
        except ProgramFilesError as exc:
            raise TaskError(f"task {self.name!r}: program_folder "
                            f"{str(self.folder_path())!r}: {exc}") from None

    @property
    def system_message(self) -> str:
        return f"{self.instructions}\n\n{FORMAT_NOTE}".lstrip()

    def sandbox_source(self, code: str) -> str:
        """What the sandbox runs for the packed program ``code``."""
        return folder_source(code, self.main_module)


__all__ = ["FolderTask", "folder_source"]
