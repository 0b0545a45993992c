"""Runs INSIDE the sandbox: the harness that hosts an OpenEvolve task directory's evaluator.

Why it exists (issue 21, part 2): an OpenEvolve ``evaluator.py`` imports the candidate
program itself (``evaluate(program_path)``), so it cannot run in the basevolve process
without running the untrusted program there too.  basevolve therefore ships this module
into a sandbox call session *as the sandboxed program* (:mod:`basevolve.sandbox.session`)
and the trusted side (:mod:`basevolve.tasks.openevolve_cascade`) calls its two functions:

* :func:`setup` receives the task directory's files as plain data (text, or base64 text
  for binary files) and the candidate program's source, writes them into this session's
  private working directory, puts the copy of the task directory first on ``sys.path``
  (as OpenEvolve puts the evaluator's folder there) and imports ``evaluator.py``;
* :func:`run_stage` calls ``evaluate`` or ``evaluate_stageN`` with the path of the
  candidate program and returns **only plain data**: ``{"kind", "metrics",
  "artifacts"}``, converted from a dict or an ``EvaluationResult``.  An exception is not
  caught here: the sandbox reports it as the call's error.

The cascade decisions, the thresholds, the fitness rule and the time limits are all
applied on the trusted side from what comes back; nothing here is believed.

Self-contained on purpose: the sandbox cannot import basevolve, so this file uses the
standard library only (numpy values are recognised by duck typing).  When ``openevolve``
is not importable in the sandbox, :func:`setup` installs a small clean-room stand-in for
``openevolve.evaluation_result.EvaluationResult`` (written from its documented behaviour:
a dataclass of ``metrics`` and ``artifacts``), so evaluators that import it run unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import inspect
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

TASK_DIR = "task"  # the copy of the task directory, inside the session's working directory
CANDIDATE = os.path.join("candidate", "program.py")  # the program the evaluator imports
EVALUATOR_FILE = "evaluator.py"
STAGES = ("evaluate", "evaluate_stage1", "evaluate_stage2", "evaluate_stage3")
MAX_TEXT = 20_000  # characters per metric text or artifact (the trusted side caps again)
MAX_ITEMS = 256  # metrics or artifacts per answer (the rest is dropped, with a note)

_STATE: dict[str, Any] = {}


# ------------------------------------------------------------ the stand-in module
@dataclass
class EvaluationResult:
    """Stand-in for OpenEvolve's result type: numeric metrics plus free-form artifacts."""

    metrics: dict[str, Any]
    artifacts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict[str, Any]) -> EvaluationResult:
        return cls(metrics=metrics)

    def to_dict(self) -> dict[str, Any]:
        return self.metrics

    def has_artifacts(self) -> bool:
        return len(self.artifacts) > 0

    def get_artifact_keys(self) -> list[str]:
        return list(self.artifacts)

    def get_artifact_size(self, key: str) -> int:
        value = self.artifacts.get(key)
        if value is None:
            return 0
        if isinstance(value, bytes | bytearray):
            return len(value)
        return len(str(value).encode("utf-8"))

    def get_total_artifact_size(self) -> int:
        return sum(self.get_artifact_size(k) for k in self.artifacts)


def ensure_openevolve() -> str:
    """``"installed"`` when ``openevolve`` imports here, else install the stand-in."""
    try:
        if importlib.util.find_spec("openevolve") is not None:
            return "installed"
    except (ImportError, ValueError):
        pass
    package = types.ModuleType("openevolve")
    package.__path__ = []  # a package, so `import openevolve.evaluation_result` works
    submodule = types.ModuleType("openevolve.evaluation_result")
    EvaluationResult.__module__ = submodule.__name__
    submodule.EvaluationResult = EvaluationResult  # type: ignore[attr-defined]
    package.EvaluationResult = EvaluationResult  # type: ignore[attr-defined]
    package.evaluation_result = submodule  # type: ignore[attr-defined]
    sys.modules["openevolve"] = package
    sys.modules["openevolve.evaluation_result"] = submodule
    return "stand-in"


# ------------------------------------------------------------ the two entry points
def _write(root: str, rel: str, data: bytes) -> None:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"refusing the file name {rel!r}")
    path = os.path.join(root, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def write_candidate(work: str, program: Any, name: str | None) -> str:
    """The candidate as a file, or as a folder of files (checked again by ``_write``)."""
    if name is not None and (not isinstance(name, str) or "/" in name or name in ("", ".", "..")):
        raise ValueError(f"refusing the candidate name {name!r}")
    if isinstance(program, dict):
        folder = os.path.join(work, os.path.dirname(CANDIDATE), name or "program")
        os.makedirs(folder)
        for rel, text in program.items():
            _write(folder, rel, text.encode("utf-8"))
        return folder
    path = os.path.join(work, os.path.dirname(CANDIDATE), name or os.path.basename(CANDIDATE))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(program)
    return path


def setup(text_files: dict[str, str], binary_files: dict[str, str], program: Any,
          evaluator: str = EVALUATOR_FILE, suffix: str = ".py", *,
          program_name: str | None = None) -> dict:
    """Write the task directory's copy and the candidate, import the evaluator
    (``evaluator``: its path inside the directory, e.g. ``evaluator_stub.py``; issue 31).

    The candidate keeps its language's ``suffix`` (``program.rs``: issue 31, item 2).

    ``program``: the candidate's source, or ``{relative path: text}`` for a program of
    several files (issue 31), written as the folder ``candidate/<name>`` whose path the
    evaluator receives; ``program_name``: the candidate's file or folder name (a prompt file
    keeps its own, e.g. ``prompt.txt``).  Returns ``{"functions": [...], "openevolve":
    "installed" | "stand-in"}``: which of ``evaluate`` / ``evaluate_stage1..3`` the
    imported evaluator defines.
    """
    work = os.getcwd()
    task_dir = os.path.join(work, TASK_DIR)
    os.makedirs(task_dir, exist_ok=True)
    for rel, text in text_files.items():
        _write(task_dir, rel, text.encode("utf-8"))
    for rel, encoded in binary_files.items():
        _write(task_dir, rel, base64.b64decode(encoded))
    if not (suffix.startswith(".") and suffix[1:].replace("_", "").replace("-", "")
            .replace("+", "").isalnum() and len(suffix) <= 17):
        raise ValueError(f"refusing the file suffix {suffix!r}")
    if program_name is None and not isinstance(program, dict):
        program_name = os.path.splitext(os.path.basename(CANDIDATE))[0] + suffix
    program_path = write_candidate(work, program, program_name)
    # This harness was imported as the module ``program``; an evaluator that imports the
    # candidate under that name must get the candidate, not us.
    sys.modules.pop("program", None)
    sys.path.insert(0, task_dir)
    provided = ensure_openevolve()
    os.chdir(task_dir)  # relative data paths of the evaluator resolve in its own folder
    if evaluator not in text_files:
        raise ImportError(f"the evaluator {evaluator!r} is not among the directory's files")
    path = os.path.join(task_dir, *evaluator.split("/"))
    if os.path.dirname(path) != task_dir:  # its own folder too, as OpenEvolve puts it there
        sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("evaluation_module", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {evaluator}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluation_module"] = module
    spec.loader.exec_module(module)
    _STATE.update(module=module, program_path=program_path)
    return {"functions": [n for n in STAGES if callable(getattr(module, n, None))],
            "openevolve": provided}


def run_stage(name: str, kwargs: dict | None = None) -> dict:
    """``evaluator.<name>(program_path, **kwargs)`` as plain data (see :func:`plain`)."""
    if name not in STAGES:
        raise ValueError(f"unknown stage {name!r}")
    function = getattr(_STATE["module"], name)
    result = function(_STATE["program_path"], **(kwargs or {}))
    if inspect.iscoroutine(result):  # an ``async def evaluate`` (OpenEvolve's
        # r_robust_regression example): run it to its result, as its author meant
        result = asyncio.run(result)
    return plain(result)


# ------------------------------------------------------------ plain data out
def _numpy_item(value: Any) -> Any:
    """A numpy scalar as the matching Python number (duck typed: no numpy import)."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        try:
            return value.item()
        except Exception:
            return value
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            text = f"<{len(value)} bytes of binary data>"
    else:
        try:
            text = str(value)
        except Exception:
            text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " [...]"


def _metric(value: Any) -> bool | int | float | str:
    value = _numpy_item(value)
    if isinstance(value, bool | int | float):
        return value
    return _text(value)


def _capped(items: dict[Any, Any], convert: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, (key, value) in enumerate(items.items()):
        if i >= MAX_ITEMS:
            out["basevolve.dropped"] = f"{len(items) - MAX_ITEMS} more entries were dropped"
            break
        out[_text(key)[:200]] = convert(value)
    return out


def plain(result: Any) -> dict:
    """A dict or an ``EvaluationResult`` (any object with a dict ``metrics``) as plain data.

    ``kind`` is ``"dict"``, ``"result"`` or ``"other"`` (then only ``type`` is given:
    OpenEvolve treats such a return as an error).
    """
    if isinstance(result, dict):
        return {"kind": "dict", "metrics": _capped(result, _metric), "artifacts": {}}
    metrics = getattr(result, "metrics", None)
    if not isinstance(metrics, dict):
        return {"kind": "other", "type": type(result).__name__}
    artifacts = getattr(result, "artifacts", None) or {}
    if not isinstance(artifacts, dict):
        artifacts = {"artifacts": artifacts}
    return {"kind": "result", "metrics": _capped(metrics, _metric),
            "artifacts": _capped(artifacts, _text)}
