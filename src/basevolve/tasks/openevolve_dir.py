"""OpenEvolve task directories, run unchanged (issue 21, part 2).

``basevolve run --task DIR`` accepts a directory in OpenEvolve's layout:

* ``initial_program.py`` -- the program evolution starts from (EVOLVE-BLOCK markers);
* ``evaluator.py`` -- ``evaluate(program_path)`` returning a dict of metrics or an
  ``EvaluationResult`` (metrics + artifacts); optionally ``evaluate_stage1/2/3``;
* ``config.yaml`` (optional) -- of OpenEvolve's settings basevolve honours
  ``prompt.system_message`` and, under ``evaluator:``, ``timeout``,
  ``cascade_evaluation``, ``cascade_thresholds`` and ``evaluator_args``; an optional
  ``basevolve:`` section may set ``name`` and ``description`` (OpenEvolve ignores keys it
  does not know).  The rest (models, islands, ...) is basevolve's to choose: use its flags.

This module **reads** the directory and never imports ``evaluator.py`` in the basevolve
process: the evaluator imports the untrusted program itself, so it only ever runs inside
the sandbox, next to the program (:mod:`basevolve.tasks.openevolve_harness`, driven by
:mod:`basevolve.tasks.openevolve_cascade`; trust level ``evaluator-in-sandbox``).  Which
stage functions exist is found by parsing ``evaluator.py`` with :mod:`ast`.

Every file of the directory (but hidden ones, ``__pycache__``, ``openevolve_output``,
``basevolve-out`` and symbolic links) is read once, sent to each evaluation's sandbox as
plain data, and hashed for the run's identity: ``--resume`` refuses a directory whose
files changed (:mod:`basevolve.tasks.identity`).  A bad directory is one
:class:`~basevolve.errors.TaskError` line naming the path, the problem and the fix.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from basevolve.errors import TaskError
from basevolve.records import Evaluation, ExecResult, Trust
from basevolve.sandbox.config import MAX_TIMEOUT_S
from basevolve.tasks.base import REFERENCE_TOL, TASKS, ScoreResult, Task

INITIAL_FILE, EVALUATOR_FILE, CONFIG_FILE = "initial_program.py", "evaluator.py", "config.yaml"
MAX_TASK_BYTES = 8 * 1024 * 1024  # all files together (sent to every evaluation's sandbox)
MAX_TASK_FILES = 1000
SKIPPED_DIRS = frozenset({"__pycache__", "openevolve_output", "basevolve-out"})
STAGE_FUNCTIONS = ("evaluate", "evaluate_stage1", "evaluate_stage2", "evaluate_stage3")
# OpenEvolve's EvaluatorConfig defaults (openevolve/config.py), used when config.yaml is
# silent; "system_message" is its name for "the default template".
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_CASCADE = True
DEFAULT_THRESHOLDS = (0.5, 0.75, 0.9)
OPENEVOLVE_DEFAULT_MESSAGE = "system_message"
DEFAULT_SYSTEM_MESSAGE = (
    "You are an expert software engineer. Improve the program so that its evaluator "
    "scores it higher. Keep the functions the evaluator calls, with their names and "
    "signatures, and return the complete program.")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True, slots=True)
class EvaluatorSettings:
    """What of ``config.yaml``'s ``evaluator:`` section (and evaluator.py) a run applies."""

    timeout_s: float = DEFAULT_TIMEOUT_S  # per evaluate() / per stage, as OpenEvolve
    cascade_evaluation: bool = DEFAULT_CASCADE
    cascade_thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS
    evaluator_args: dict[str, Any] = field(default_factory=dict)
    functions: tuple[str, ...] = ()  # of STAGE_FUNCTIONS, found in evaluator.py by ast

    @property
    def cascade(self) -> bool:
        """True when evaluations go stage by stage (else one ``evaluate`` call)."""
        return self.cascade_evaluation and "evaluate_stage1" in self.functions

    @property
    def stages(self) -> tuple[str, ...]:
        """The functions one evaluation may call, in order."""
        if not self.cascade:
            return ("evaluate",)
        return tuple(f for f in STAGE_FUNCTIONS[1:] if f in self.functions)


@dataclass(frozen=True, slots=True)
class TaskDirectory:
    """The files of a task directory as read once: what is sent, hashed and shown."""

    path: Path
    text_files: dict[str, str]  # relative POSIX path -> UTF-8 text
    binary_files: dict[str, bytes]  # the files that are not UTF-8 text
    skipped: tuple[str, ...]  # symbolic links and excluded folders, for --show
    config: dict[str, Any]  # config.yaml as parsed ({} when absent)

    @property
    def total_bytes(self) -> int:
        return sum(len(t.encode()) for t in self.text_files.values()) + sum(
            len(b) for b in self.binary_files.values())

    def digest(self) -> str:
        """SHA-256 over every file's relative path and bytes, in path order."""
        h = hashlib.sha256()
        files = {**{k: v.encode() for k, v in self.text_files.items()}, **self.binary_files}
        for rel in sorted(files):
            h.update(rel.encode() + b"\0" + str(len(files[rel])).encode() + b"\0")
            h.update(files[rel])
        return h.hexdigest()

    def listing(self) -> str:
        """The directory as one text (stored with the run): every text file in full."""
        parts = [f"=== {rel} ===\n{self.text_files[rel]}" for rel in sorted(self.text_files)]
        parts += [f"=== {rel} === ({len(data)} bytes, binary; sha256 "
                  f"{hashlib.sha256(data).hexdigest()})" for rel, data in
                  sorted(self.binary_files.items())]
        return "\n".join(parts)


def _fail(path: Path, problem: str) -> TaskError:
    return TaskError(f"task directory {str(path)!r}: {problem}")


def read_directory(path: Path, required: tuple[str, ...] = (INITIAL_FILE, EVALUATOR_FILE)
                   ) -> TaskDirectory:
    """Read every file of the task directory ``path`` (see the module docstring);
    ``required``: the files it must hold (a folder or prompt program: only evaluator.py,
    :mod:`basevolve.tasks.openevolve_layouts`)."""
    if not path.is_dir():
        raise TaskError(f"task directory {str(path)!r} does not exist or is not a directory")
    for required_file in required:
        if not (path / required_file).is_file():
            raise _fail(path, f"has no {required_file}; an OpenEvolve task directory needs "
                        f"{INITIAL_FILE} and {EVALUATOR_FILE}")
    text: dict[str, str] = {}
    binary: dict[str, bytes] = {}
    skipped: list[str] = []
    total = 0
    try:
        entries = sorted(path.rglob("*"))
    except OSError as exc:
        raise _fail(path, f"cannot be listed: {exc.strerror or exc}") from None
    for entry in entries:
        rel = entry.relative_to(path).as_posix()
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in rel.split("/")):
            continue
        if entry.is_symlink():
            skipped.append(f"{rel} (symbolic link, not sent)")
            continue
        if not entry.is_file():
            continue
        if len(text) + len(binary) >= MAX_TASK_FILES:
            raise _fail(path, f"holds more than {MAX_TASK_FILES} files; move data or outputs "
                        "the evaluator does not need out of it")
        try:
            data = entry.read_bytes()
        except OSError as exc:
            raise _fail(path, f"cannot read {rel}: {exc.strerror or exc}") from None
        total += len(data)
        if total > MAX_TASK_BYTES:
            raise _fail(path, f"is too large: its files exceed {MAX_TASK_BYTES // 2**20} MB "
                        "(each evaluation gets a copy); move large files the evaluator "
                        "does not need out of it")
        try:
            text[rel] = data.decode("utf-8")
        except UnicodeDecodeError:
            binary[rel] = data
    for required_file in required:
        if (path / required_file).is_symlink():
            raise _fail(path, f"{required_file} is a symbolic link; links are not sent to the "
                        "sandbox, so copy the file into the directory")
        if required_file not in text:
            raise _fail(path, f"{required_file} is not UTF-8 text")
    return TaskDirectory(path, text, binary, tuple(skipped), _read_config(path, text))


def _read_config(path: Path, text: dict[str, str]) -> dict[str, Any]:
    if CONFIG_FILE not in text:
        if (path / CONFIG_FILE).exists():
            raise _fail(path, f"{CONFIG_FILE} is not UTF-8 text")
        return {}
    import yaml

    try:
        config = yaml.safe_load(text[CONFIG_FILE])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _fail(path, f"{CONFIG_FILE} is not valid YAML{where}: {problem}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise _fail(path, f"{CONFIG_FILE} must be a mapping of settings, got a "
                    f"{type(config).__name__}")
    return config


def _section(path: Path, config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, f"{CONFIG_FILE}: {key} must be a mapping, got {value!r}")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _plain(value: Any, depth: int = 0) -> bool:
    """Plain data that a sandbox call can carry (for ``evaluator_args``)."""
    if depth > 20:
        return False
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def evaluator_functions(path: Path, source: str) -> tuple[str, ...]:
    """Which of ``evaluate`` / ``evaluate_stage1..3`` evaluator.py binds at top level.

    Parsed with :mod:`ast`, never imported here.  Top level includes ``if``/``try``
    blocks; a name bound by ``def``, an assignment or an import counts.
    """
    try:
        tree = ast.parse(source, filename=EVALUATOR_FILE)
    except SyntaxError as exc:
        raise _fail(path, f"{EVALUATOR_FILE} has a syntax error at line {exc.lineno}: "
                    f"{exc.msg}") from None
    bound: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                bound.update(t.id for t in targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.Import | ast.ImportFrom):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))
    visit(tree.body)
    return tuple(f for f in STAGE_FUNCTIONS if f in bound)


def evaluator_settings(path: Path, config: dict[str, Any], functions: tuple[str, ...]
                       ) -> EvaluatorSettings:
    """The checked ``evaluator:`` settings; one clear error for each bad value."""
    section = _section(path, config, "evaluator")
    timeout = section.get("timeout", DEFAULT_TIMEOUT_S)
    if not _number(timeout) or not 0 < timeout <= MAX_TIMEOUT_S / 8:
        raise _fail(path, f"{CONFIG_FILE}: evaluator.timeout={timeout!r} must be a number of "
                    f"seconds > 0 and at most {MAX_TIMEOUT_S / 8:g}")
    cascade = section.get("cascade_evaluation", DEFAULT_CASCADE)
    if not isinstance(cascade, bool):
        raise _fail(path, f"{CONFIG_FILE}: evaluator.cascade_evaluation={cascade!r} must be "
                    "true or false")
    thresholds = section.get("cascade_thresholds", list(DEFAULT_THRESHOLDS))
    if not isinstance(thresholds, list) or not all(_number(t) for t in thresholds):
        raise _fail(path, f"{CONFIG_FILE}: evaluator.cascade_thresholds={thresholds!r} must "
                    "be a list of numbers, e.g. [0.5, 0.75]")
    args = section.get("evaluator_args") or {}
    if not isinstance(args, dict) or not _plain(args):
        raise _fail(path, f"{CONFIG_FILE}: evaluator.evaluator_args must be a mapping of "
                    "plain values (numbers, strings, lists, mappings)")
    if "evaluate" not in functions:
        raise _fail(path, f"{EVALUATOR_FILE} defines no evaluate(program_path) function")
    if cascade and "evaluate_stage1" in functions and not thresholds:
        raise _fail(path, f"{CONFIG_FILE}: evaluator.cascade_thresholds is empty, but the "
                    "cascade (evaluate_stage1) needs one threshold per stage after the first;"
                    " give e.g. [0.5] or set cascade_evaluation: false")
    return EvaluatorSettings(float(timeout), cascade, tuple(float(t) for t in thresholds),
                             dict(args), functions)


def main_function(source: str) -> str | None:
    """The first function defined inside the EVOLVE block, else the first top-level one."""
    tree = ast.parse(source, filename=INITIAL_FILE)
    lines = source.splitlines()
    start = next((i + 1 for i, ln in enumerate(lines) if "EVOLVE-BLOCK-START" in ln), None)
    end = next((i + 1 for i, ln in enumerate(lines) if "EVOLVE-BLOCK-END" in ln), len(lines) + 1)
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    defs.sort(key=lambda n: n.lineno)
    if start is not None:
        inside = [n for n in defs if start < n.lineno < end]
        if inside:
            return inside[0].name
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return top[0].name if top else None


def task_name(path: Path, config: dict[str, Any]) -> str:
    """``basevolve.name`` of config.yaml, else the directory's name made safe."""
    given = _section(path, config, "basevolve").get("name")
    if given is not None:
        if not isinstance(given, str) or not given.strip() or _UNSAFE.search(given):
            raise _fail(path, f"{CONFIG_FILE}: basevolve.name={given!r} must be a non-empty "
                        "name of letters, digits and . _ + -")
        return given
    name = _UNSAFE.sub("_", path.name).strip("._+-")[:100] or "openevolve_task"
    return f"{name}_dir" if name in TASKS else name  # never a built-in task's name


class OpenEvolveDirTask(Task):
    """A task made from an OpenEvolve task directory (see the module docstring).

    Scored by :class:`basevolve.engine.openevolve_eval.OpenEvolveEvaluator`
    (``evaluation = "openevolve"``): the directory's evaluator runs in the sandbox, beside
    the program, and every evaluation is recorded at trust level ``evaluator-in-sandbox``.
    """

    evaluation: ClassVar[str] = "openevolve"
    trust: ClassVar[Trust] = Trust.IN_SANDBOX

    def __init__(self, directory: TaskDirectory) -> None:
        path, config = directory.path, directory.config
        self.directory = directory
        initial, entry = self.initial_and_entry(directory)
        functions = evaluator_functions(path, directory.text_files[EVALUATOR_FILE])
        self.settings = evaluator_settings(path, config, functions)
        prompt = _section(path, config, "prompt").get("system_message")
        if prompt is not None and not isinstance(prompt, str):
            raise _fail(path, f"{CONFIG_FILE}: prompt.system_message must be text")
        self.config_system_message = prompt not in (None, "", OPENEVOLVE_DEFAULT_MESSAGE)
        self._system_message = str(prompt) if self.config_system_message else DEFAULT_SYSTEM_MESSAGE
        self._initial_program = initial
        description = _section(path, config, "basevolve").get("description")
        self.name = task_name(path, config)  # type: ignore[misc]
        self.entry = entry or "main"  # type: ignore[misc]
        self.description = (str(description) if description is not None  # type: ignore[misc]
                            else f"OpenEvolve task directory {path.name}")
        self.timeout_s = self.settings.timeout_s  # type: ignore[misc]

    def initial_and_entry(self, directory: TaskDirectory) -> tuple[str, str | None]:
        """The initial program's text and its main function (a hook: a folder or a prompt
        file is read by :mod:`basevolve.tasks.openevolve_layouts`)."""
        path, initial = directory.path, directory.text_files[INITIAL_FILE]
        try:
            entry = main_function(initial)
        except SyntaxError as exc:
            raise _fail(path, f"{INITIAL_FILE} has a syntax error at line {exc.lineno}: "
                        f"{exc.msg}") from None
        language = directory.config.get("language")
        if language not in (None, "python"):
            raise _fail(path, f"{CONFIG_FILE}: language={language!r}; basevolve runs Python "
                        "task directories only")
        return initial, entry

    @property
    def initial_program(self) -> str:
        return self._initial_program

    @property
    def system_message(self) -> str:
        return self._system_message

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        """Not used: the directory's evaluator scores the program (in the sandbox)."""
        return ScoreResult(0.0, False, error=f"task {self.name!r} is scored by its "
                           "directory's evaluator.py, not from a returned value")

    def evaluate(self, result: ExecResult) -> Evaluation:
        """Not used (no single returned value); total for the base contract."""
        return Evaluation(score=0.0, valid=False, isolation=result.isolation, trust=self.trust,
                          error=f"task {self.name!r} is scored by its directory's evaluator.py")

    def evaluate_candidate(self, session: Any, code: str, timeout_s: float | None = None
                           ) -> Evaluation:
        """Score ``code`` in ``session`` (a sandbox session running the harness)."""
        from basevolve.tasks.openevolve_cascade import evaluate_in_session

        return evaluate_in_session(self, session, code, timeout_s or self.timeout_s)


def load_task_directory(path: Path) -> OpenEvolveDirTask:
    """An :class:`OpenEvolveDirTask` for ``path`` (a TaskError line for a bad directory)."""
    return OpenEvolveDirTask(read_directory(path.expanduser().resolve()))


__all__ = ["DEFAULT_SYSTEM_MESSAGE", "MAX_TASK_BYTES", "EvaluatorSettings", "OpenEvolveDirTask",
           "TaskDirectory", "load_task_directory", "read_directory"]
