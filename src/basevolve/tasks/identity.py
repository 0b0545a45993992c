"""What a run was scored with: the identity of its task (issue 12, item 1).

Why: a run's scores are only comparable if every program of the run was scored by the
same scorer.  A user who edits a task file between a crash and ``--resume`` would
otherwise get a run whose initial program was scored by the old scorer and whose
children by the new one (a best score 10x too high, silently).  So the store keeps, for
every run:

* ``name``: the task's *declared* ``name`` (runs and the ``task`` column are named by it,
  not by the file name, so two copies of a file in different folders are one task);
* for a user task file: its absolute path, the SHA-256 of its bytes and its source text
  (so the scorer a run used can be read back even after the file changed);
* for an OpenEvolve task directory: its absolute path, a SHA-256 over every file it
  sends to the sandbox (path and bytes) and the text of those files;
* for a built-in task: the basevolve version and a SHA-256 over the task module's source,
  its initial program and its system message (an upgrade that changes a built-in scorer
  is a task change too);
* in every case, what :meth:`~basevolve.tasks.base.Task.identity_parts` adds: for
  ``prompt_optimization`` the digest of its QA items and its ``--task-param`` values,
  so a resume against an edited dataset is refused like an edited scorer.

:func:`check_resume` compares the stored identity with the task as it is now and refuses
a changed one unless the user explicitly allows it (``--allow-task-change``); the
allowed change is then recorded in the store (``task_changes``).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError
from basevolve.tasks.base import TASKS, Task


@dataclass(frozen=True, slots=True)
class TaskIdentity:
    """Identity of the task a run is scored with (stored in the ``runs`` row)."""

    name: str
    kind: str  # "builtin", "file", "directory" or "object" (defined in code, basevolve.run)
    sha256: str
    path: str | None = None  # absolute path of a user task file
    version: str | None = None  # basevolve version, for a built-in task
    source: str | None = None  # text of a user task file

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """How to name this task to a user: its file, or the built-in name."""
        if self.path:
            what = "task directory" if self.kind == "directory" else "task file"
            return f"{what} {self.path!r}"
        return f"task object {self.name!r}" if self.kind == "object" else f"built-in task {self.name!r}"


def resolve_task_spec(spec: str) -> str:
    """A task file given by a relative path becomes absolute; a built-in name stays.

    Why: ``--resume`` may run from another folder; a relative path stored with the run
    would then load a different file, or none.
    """
    if spec in TASKS:
        return spec
    path = Path(spec).expanduser()
    if path.suffix == ".py" or path.exists():
        return str(path.resolve())
    return spec


def task_identity(spec: str, task: Task) -> TaskIdentity:
    """The identity of ``task``, loaded from ``spec`` (a built-in name or a file path)."""
    if spec in TASKS:
        from basevolve import __version__

        module = sys.modules[type(task).__module__]
        digest = hashlib.sha256()
        for part in (inspect.getsource(module), task.initial_program, task.system_message,
                     *task.identity_parts()):
            digest.update(part.encode())
            digest.update(b"\0")
        return TaskIdentity(task.name, "builtin", digest.hexdigest(), version=__version__)
    path = Path(spec).expanduser().resolve()
    if path.is_dir():
        return directory_identity(path, task)
    data = path.read_bytes()
    digest = hashlib.sha256(data)
    for part in task.identity_parts():  # e.g. a dataset and the --task-param values
        digest.update(b"\0" + part.encode())
    return TaskIdentity(task.name, "file", digest.hexdigest(), path=str(path),
                        source=data.decode("utf-8", errors="replace"))


def directory_identity(path: Path, task: Task) -> TaskIdentity:
    """The identity of an OpenEvolve task directory: a hash over every file it sends.

    The files are the ones read when ``task`` was loaded (the evaluator sees exactly
    those), so an edit to evaluator.py, config.yaml, the initial program or a data file
    changes the identity; ``source`` lists every text file in full.
    """
    directory = getattr(task, "directory", None)
    if directory is None or not hasattr(directory, "digest"):
        raise ConfigError(f"{str(path)!r} is a directory, but task {task.name!r} was not "
                          "loaded from it as an OpenEvolve task directory")
    digest = hashlib.sha256(directory.digest().encode())
    for part in task.identity_parts():
        digest.update(b"\0" + part.encode())
    return TaskIdentity(task.name, "directory", digest.hexdigest(), path=str(path),
                        source=directory.listing())


def object_identity(task: Task) -> TaskIdentity:
    """The identity of a task passed as an object (``basevolve.run(task=MyTask())``).

    Why a hash of what the object *is*: such a task has no file to re-read, so a resume
    is checked against its class source (when Python can find it -- not for classes
    typed into some notebook front-ends) and everything the engine uses from it: name,
    entry, time limit, initial program and system message.
    """
    try:
        source: str | None = inspect.getsource(type(task))
    except (OSError, TypeError):
        source = None
    digest = hashlib.sha256()
    for part in (source or "", task.name, task.entry, repr(task.timeout_s),
                 task.initial_program, task.system_message, *task.identity_parts()):
        digest.update(part.encode())
        digest.update(b"\0")
    return TaskIdentity(task.name, "object", digest.hexdigest(), source=source)


def check_resume(run_id: str, stored_sha256: str | None, now: TaskIdentity,
                 *, allow_change: bool) -> bool:
    """True when the task changed and the change is allowed; raise when it is not allowed.

    A run stored before identities were recorded (``stored_sha256`` is None) cannot be
    checked; it is not refused.
    """
    if stored_sha256 is None or stored_sha256 == now.sha256:
        return False
    if allow_change:
        return True
    raise ConfigError(
        f"{now.label} changed since run {run_id!r} started (sha256 {stored_sha256[:12]}… "
        f"→ {now.sha256[:12]}…): the run's stored programs were scored with the old "
        "version, so mixing in new scores would make its results meaningless. Restore the "
        "task as it was, or pass --allow-task-change to continue with the new one (the "
        "change is recorded in the store)"
    )


__all__ = ["TaskIdentity", "check_resume", "directory_identity", "object_identity",
           "resolve_task_spec", "task_identity"]
