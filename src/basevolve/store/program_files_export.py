"""``basevolve export``: the files of every stored program of several files (issue 31).

A program of several files is stored as one text (:mod:`basevolve.program_files`); the
``programs`` table keeps that text in ``code``.  Beside the tables, ``export`` writes
each such program as the folder ``program_files/<run_id>/<program_id>/`` holding its
files, so they can be read, diffed and run with ordinary tools.  Every name was checked
when the program was stored and is checked again before anything is written
(:func:`~basevolve.program_files.write_folder`: never outside the folder); a stored text
that does not unpack is skipped with its reason in ``program_files/SKIPPED.txt``.
"""

from __future__ import annotations

import re
from pathlib import Path

from basevolve.program_files import HEADER_PREFIX, ProgramFilesError, write_program_folder
from basevolve.store.sqlite import RunStore

FOLDER = "program_files"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def export_program_files(store_path: str | Path, out_dir: Path, run_id: str | None = None
                         ) -> list[Path]:
    """Write the folders (module docstring); the paths written (none: no such program)."""
    sql = ("SELECT run_id, program_id, code FROM programs WHERE substr(code, 1, ?) = ?"
           + (" AND run_id = ?" if run_id is not None else "") + " ORDER BY run_id, program_id")
    params: tuple = (len(HEADER_PREFIX), HEADER_PREFIX) + ((run_id,) if run_id else ())
    with RunStore(store_path, create=False) as store:
        found = [tuple(r) for r in store.db.execute(sql, params)]
    paths: list[Path] = []
    skipped: list[str] = []
    for run, program_id, code in found:
        folder = out_dir / FOLDER / (_UNSAFE.sub("_", run).strip(".") or "run") / str(program_id)
        try:
            paths.append(write_program_folder(code, folder))
        except ProgramFilesError as exc:
            skipped.append(f"run {run!r} program {program_id}: {exc}")
    if skipped:
        note = out_dir / FOLDER / "SKIPPED.txt"
        note.write_text("".join(f"{line}\n" for line in skipped), encoding="utf-8")
        paths.append(note)
    return paths


__all__ = ["FOLDER", "export_program_files"]
