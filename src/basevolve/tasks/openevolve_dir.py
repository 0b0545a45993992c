"""OpenEvolve task directories, run unchanged (issue 21, part 2).

``basevolve run --task DIR`` accepts a directory in OpenEvolve's layout:

* ``initial_program.py`` -- the program evolution starts from (EVOLVE-BLOCK markers);
* ``evaluator.py`` -- ``evaluate(program_path)`` returning a dict of metrics or an
  ``EvaluationResult`` (metrics + artifacts); optionally ``evaluate_stage1/2/3``;
* ``config.yaml`` or ``config.yml`` (optional) -- which of OpenEvolve's settings basevolve
  applies, and how, is the table of :mod:`basevolve.tasks.openevolve_keys`; the rest is
  named in one warning line.  An optional ``basevolve:`` section may set ``name`` and
  ``description`` (OpenEvolve ignores keys it does not know).

The three files may be named otherwise (``--program``, ``--evaluator``, ``--config``;
:mod:`basevolve.tasks.openevolve_files`, issue 31, item 1).

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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from basevolve.errors import TaskError
from basevolve.outside_parse import RefusedText, load_yaml, parse_python
from basevolve.records import Evaluation, ExecResult, Trust
from basevolve.tasks.base import REFERENCE_TOL, TASKS, ScoreResult, Task
from basevolve.tasks.openevolve_files import TaskFiles, find_files, naming
from basevolve.tasks.openevolve_keys import fitness_score, initial_failure, read_options
from basevolve.tasks.openevolve_objectives import declared_objectives
from basevolve.tasks.openevolve_settings import (
    DEFAULT_THRESHOLDS,
    DEFAULT_TIMEOUT_S,
    STAGE_FUNCTIONS,
    EvaluatorSettings,
    evaluator_settings,
    section,
)
from basevolve.tasks.program_language import SUFFIX, program_language
from basevolve.tasks.program_language import system_message as language_system_message

INITIAL_FILE, EVALUATOR_FILE, CONFIG_FILE = "initial_program.py", "evaluator.py", "config.yaml"
MAX_TASK_BYTES = 8 * 1024 * 1024  # all files together (sent to every evaluation's sandbox)
MAX_TASK_FILES = 1000
SKIPPED_DIRS = frozenset({"__pycache__", "openevolve_output", "basevolve-out"})
# "system_message" is OpenEvolve's name for "the default template"
OPENEVOLVE_DEFAULT_MESSAGE = "system_message"
DEFAULT_SYSTEM_MESSAGE = (
    "You are an expert software engineer. Improve the program so that its evaluator "
    "scores it higher. Keep the functions the evaluator calls, with their names and "
    "signatures, and return the complete program.")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass(frozen=True, slots=True)
class TaskDirectory:
    """The files of a task directory as read once: what is sent, hashed and shown."""

    path: Path
    text_files: dict[str, str]  # relative POSIX path -> UTF-8 text
    binary_files: dict[str, bytes]  # the files that are not UTF-8 text
    skipped: tuple[str, ...]  # symbolic links and excluded folders, for --show
    config: dict[str, Any]  # config.yaml as parsed ({} when absent)
    files: TaskFiles | None = None  # which files are program, evaluator, config
    outside: dict[str, str] = field(default_factory=dict)  # named files outside the folder

    @property
    def initial_file(self) -> str:
        """How the initial program is named: its path in the directory, else absolute."""
        files = self.files or find_files(self.path)
        return files.label(files.program)

    @property
    def initial_text(self) -> str:
        """The initial program's text (inside the directory or named outside it)."""
        files = self.files or find_files(self.path)
        rel = files.relative(files.program)
        return self.text_files[rel] if rel is not None else self.outside[str(files.program)]

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
        if self.files is not None and self.files.names() != (INITIAL_FILE, EVALUATOR_FILE,
                                                              self.files.label(self.files.config)):
            h.update("\0".join(self.files.names()).encode())  # issue 31: named files
        for name in sorted(self.outside):
            h.update(b"\0" + name.encode() + b"\0" + self.outside[name].encode())
        return h.hexdigest()

    def listing(self) -> str:
        """The directory as one text (stored with the run): every text file in full."""
        parts = [f"=== {rel} ===\n{self.text_files[rel]}" for rel in sorted(self.text_files)]
        parts += [f"=== {rel} === ({len(data)} bytes, binary; sha256 "
                  f"{hashlib.sha256(data).hexdigest()})" for rel, data in
                  sorted(self.binary_files.items())]
        parts += [f"=== {name} (outside the directory) ===\n{text}"
                  for name, text in sorted(self.outside.items())]
        return "\n".join(parts)


def _fail(path: Path, problem: str) -> TaskError:
    return TaskError(f"task directory {str(path)!r}: {problem}")


def read_directory(path: Path, names: dict[str, str] | None = None, *,
                   folder_ok: bool = False) -> TaskDirectory:
    """Read every file of the task directory ``path`` (see the module docstring).

    ``names``: the files named with --program / --evaluator / --config (absolute or
    relative paths; :func:`basevolve.tasks.openevolve_files.find_files`); ``folder_ok``: the
    program may be a folder inside the directory (:mod:`basevolve.tasks.openevolve_layouts`).
    """
    if not path.is_dir():
        raise TaskError(f"task directory {str(path)!r} does not exist or is not a directory")
    named = find_files(path, **(names or {}), folder_ok=folder_ok)
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
    outside: dict[str, str] = {}
    for required in (named.program, named.evaluator, named.config):
        rel = named.relative(required)
        if required is None or (rel is not None and rel in text):
            continue
        if folder_ok and required == named.program and rel is not None \
                and required.is_dir():
            continue  # a folder program: its files are among the directory's
        if required == named.evaluator:  # inside, but not sent as text
            if rel in binary:
                raise _fail(path, f"{rel} is not UTF-8 text")
            why = "is a symbolic link" if required.is_symlink() else "is in a skipped folder"
            raise _fail(path, f"{rel} {why}; links and hidden or skipped folders are not "
                        "sent to the sandbox, so copy the file into the directory")
        try:  # a program or config named outside the directory (or a link): read as text
            outside[str(required)] = required.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise _fail(path, f"{named.label(required)} is not UTF-8 text") from None
        except OSError as exc:
            raise _fail(path, f"cannot read {named.label(required)}: "
                        f"{exc.strerror or exc}") from None
    config_rel = named.relative(named.config)
    source = None if named.config is None else (
        text[config_rel] if config_rel in text else outside[str(named.config)])
    return TaskDirectory(path, text, binary, tuple(skipped),
                         _read_config(path, named.config_name, source), named, outside)


def _read_config(path: Path, name: str, source: str | None) -> dict[str, Any]:
    """The config file's settings ({} when there is none), parsed as YAML."""
    if source is None:
        return {}
    try:  # bounded: no alias bomb, no recursion (issue 32)
        config = load_yaml(source)
    except RefusedText as exc:
        raise _fail(path, f"{name} {exc}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise _fail(path, f"{name} must be a mapping of settings, got a "
                    f"{type(config).__name__}")
    return config


def evaluator_functions(path: Path, source: str, name: str = EVALUATOR_FILE
                        ) -> tuple[str, ...]:
    """Which of ``evaluate`` / ``evaluate_stage1..3`` evaluator.py binds at top level.

    Parsed with :mod:`ast`, never imported here.  Top level includes ``if``/``try``
    blocks; a name bound by ``def``, an assignment or an import counts.
    """
    try:
        tree = parse_python(source, name)
    except RefusedText as exc:
        raise _fail(path, f"{name} {exc}") from None
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


def main_function(source: str) -> str | None:
    """The first function defined inside the EVOLVE block, else the first top-level one."""
    tree = parse_python(source, INITIAL_FILE)  # RefusedText: the caller's one line
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


def task_name(path: Path, config: dict[str, Any], cfg: str = CONFIG_FILE) -> str:
    """``basevolve.name`` of config.yaml, else the directory's name made safe."""
    given = section(path, config, "basevolve", cfg).get("name")
    if given is not None:
        if not isinstance(given, str) or not given.strip() or _UNSAFE.search(given):
            raise _fail(path, f"{cfg}: basevolve.name={given!r} must be a non-empty "
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
        files = directory.files or find_files(path)
        cfg = files.config_name
        initial, entry = self.initial_and_entry(directory)
        evaluator = files.evaluator_name
        functions = evaluator_functions(path, directory.text_files[evaluator], evaluator)
        self.settings = evaluator_settings(path, config, functions, cfg, evaluator)
        self.options = read_options(path, config, cfg)  # issue 31, item 5
        prompt = section(path, config, "prompt", cfg).get("system_message")
        if prompt is not None and not isinstance(prompt, str):
            raise _fail(path, f"{cfg}: prompt.system_message must be text")
        self.config_system_message = prompt not in (None, "", OPENEVOLVE_DEFAULT_MESSAGE)
        self._system_message = (str(prompt) if self.config_system_message
                                else self.default_system_message())
        self._initial_program = initial
        description = section(path, config, "basevolve", cfg).get("description")
        self.name = task_name(path, config, cfg)  # type: ignore[misc]
        self.entry = entry or "main"  # type: ignore[misc]
        self.description = (str(description) if description is not None  # type: ignore[misc]
                            else f"OpenEvolve task directory {path.name}")
        self.timeout_s = self.settings.timeout_s  # type: ignore[misc]
        # several objectives from the config's basevolve: section (issue 36)
        self.objectives, self.reference_point = declared_objectives(  # type: ignore[misc]
            path, config, cfg)

    def initial_and_entry(self, directory: TaskDirectory) -> tuple[str, str | None]:
        """The initial program's text and its main function (a hook: a folder or a prompt
        file is read by :mod:`basevolve.tasks.openevolve_layouts`); sets the program's
        language and file suffix (issue 31, item 2)."""
        path = directory.path
        files = directory.files or find_files(path)
        language, self.file_suffix = program_language(directory.config, files.program.name)
        if not SUFFIX.fullmatch(self.file_suffix):
            raise _fail(path, f"{files.config_name}: file_suffix={self.file_suffix!r} must be "
                        "a dot and up to 16 letters or digits, e.g. '.rs'")
        self.language = language.name  # type: ignore[misc]  # prompts' fences, the parser
        self.program_language = language
        initial, entry = directory.initial_text, None
        if language.name == "python":
            try:
                entry = main_function(initial)
            except RefusedText as exc:
                raise _fail(path, f"{files.label(files.program)} {exc}") from None
        return initial, entry

    def default_system_message(self) -> str:
        """basevolve's system message when the config gives none, in the program's
        language."""
        language = getattr(self, "program_language", None)
        if language is None or language.name == "python":
            return DEFAULT_SYSTEM_MESSAGE
        return language_system_message(language)

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
        """Score ``code`` in ``session`` (a sandbox session running the harness); a child
        longer than ``max_code_length`` is refused unrun, as OpenEvolve does."""
        from basevolve.tasks.openevolve_cascade import evaluate_in_session

        if (refused := self.options.refuse(code, self._initial_program, session)) is not None:
            return refused
        return evaluate_in_session(self, session, code, timeout_s or self.timeout_s)

    def fitness(self, metrics: dict[str, Any]) -> float:
        """OpenEvolve's fitness rule with this directory's feature dimensions (item 7)."""
        return fitness_score(metrics, self.options.feature_dimensions)

    def start_failure(self, evaluation: Evaluation) -> str | None:
        """Why a run must stop before any LLM call: the initial program's evaluation gave
        no metrics (the evaluator cannot be imported, raises or times out; item 9)."""
        return initial_failure(self, evaluation)


def load_task_directory(path: Path, names: dict[str, Any] | None = None) -> OpenEvolveDirTask:
    """An :class:`OpenEvolveDirTask` for ``path`` (a TaskError line for a bad directory).

    ``names``: the run's ``task_params`` naming the program, evaluator and config
    (:mod:`basevolve.tasks.openevolve_files`; any other key is refused)."""
    path = path.expanduser().resolve()
    return OpenEvolveDirTask(read_directory(path, naming(path, names)))


__all__ = ["DEFAULT_SYSTEM_MESSAGE", "DEFAULT_THRESHOLDS", "DEFAULT_TIMEOUT_S", "MAX_TASK_BYTES",
           "EvaluatorSettings", "OpenEvolveDirTask",
           "TaskDirectory", "load_task_directory", "read_directory"]
