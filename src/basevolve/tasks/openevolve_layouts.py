"""OpenEvolve task directories whose program is a folder or a prompt file (issue 31).

:func:`load_task_directory` reads a directory in one of three layouts and gives its task:

* ``initial_program.py`` -- :class:`~basevolve.tasks.openevolve_dir.OpenEvolveDirTask`;
* ``initial_program/`` **a folder** (OpenEvolve's ``language: "mixed"``, e.g. C++,
  Python and JSON files; item 3) -- :class:`OpenEvolveFolderTask`.  The program is every
  text file of the folder, kept as one text in the encoding of
  :mod:`basevolve.program_files`; the LLM sees every file with its path and may change
  several in one reply (:mod:`basevolve.prompts.files_reply`); the evaluator receives the
  path of a folder holding the candidate's files (``candidate/initial_program``);
* **a prompt file** (OpenEvolve's ``llm_prompt_optimization`` layout; item 4): the
  config says ``language: "text"``, or there is no ``initial_program.py`` and there is an
  ``initial_prompt.txt`` -- :class:`OpenEvolvePromptTask`.  The prompt is evolved as a
  text artifact (basevolve's LPO path: the reply's ``<prompt>`` section or fenced block,
  never executed), and scored by the directory's ``evaluator.py`` in the sandbox as for
  programs: it receives the path of a file holding the candidate prompt, under the
  prompt file's own name.

What of the prompt layout is supported: ``evaluator.py`` (direct or cascade),
``prompt.system_message`` (with one sentence added: the new prompt goes inside
``<prompt>`` tags, since a bare reply cannot be told from the prose around it),
``max_code_length`` (OpenEvolve's default 10,000) as the prompt's length cap, the
directory's other files (dataset settings, ``templates/``) sent to the sandbox beside the
evaluator.  The prompt file is ``initial_prompt.txt`` (or ``initial_program.txt``); a
directory with neither is refused with one line.  Not here: an evaluator that calls a
remote LLM cannot reach the network from the sandbox (its error is the evaluation's), and
``prompt.template_dir`` (OpenEvolve's own prompt templates) is not applied: basevolve's
protocols write their prompts.

Every refusal is one :class:`~basevolve.errors.TaskError` line naming the directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from basevolve.errors import TaskError
from basevolve.outside_parse import RefusedText, load_yaml
from basevolve.program_files import LANGUAGE as FILES_LANGUAGE
from basevolve.program_files import ProgramFilesError, check_files, pack, unpack
from basevolve.prompts.files_reply import FORMAT_NOTE
from basevolve.tasks.openevolve_dir import (
    CONFIG_FILE,
    OpenEvolveDirTask,
    TaskDirectory,
    read_directory,
)
from basevolve.tasks.openevolve_dir import (
    load_task_directory as load_python_directory,
)
from basevolve.tasks.openevolve_files import DEFAULT_CONFIGS, find_files, locate, naming
from basevolve.tasks.program_language import initial_file

PROGRAM_FOLDER = "initial_program"
PROMPT_FILES = ("initial_prompt.txt", "initial_program.txt")
DEFAULT_MAX_PROMPT_CHARS = 10_000  # OpenEvolve's max_code_length default
PROMPT_NOTE = ("Give the whole new prompt inside <prompt> and </prompt> tags, and nothing "
               "else inside them.")
DEFAULT_PROMPT_MESSAGE = (
    "You are an expert prompt engineer. Improve the prompt so that its evaluator scores "
    "it higher; keep its placeholders and the input it expects.")


def _fail(path: Path, problem: str) -> TaskError:
    return TaskError(f"task directory {str(path)!r}: {problem}")


def _language(directory: TaskDirectory) -> Any:
    return directory.config.get("language")


class OpenEvolveFolderTask(OpenEvolveDirTask):
    """A task directory whose program is the folder ``initial_program/`` (module docstring)."""

    language: ClassVar[str] = FILES_LANGUAGE  # type: ignore[misc]

    def initial_and_entry(self, directory: TaskDirectory) -> tuple[str, str | None]:
        named = directory.files or find_files(directory.path, folder_ok=True)
        path, prefix = directory.path, named.label(named.program) + "/"
        self.program_folder = named.program.name
        language = _language(directory)
        if language not in (None, FILES_LANGUAGE):
            raise _fail(path, f"{PROGRAM_FOLDER}/ is a folder, a program of several files; "
                        f"{CONFIG_FILE} says language={language!r} (use \"mixed\" or omit it)")
        binary = sorted(k for k in directory.binary_files if k.startswith(prefix))
        if binary:
            raise _fail(path, f"{binary[0]} is not UTF-8 text; a program's files are evolved "
                        "as text, so move data out of the program folder")
        files = {k[len(prefix):]: v for k, v in directory.text_files.items()
                 if k.startswith(prefix)}
        try:
            check_files(files)
            return pack(files), None
        except ProgramFilesError as exc:
            raise _fail(path, f"{PROGRAM_FOLDER}/: {exc}") from None

    @property
    def system_message(self) -> str:
        return f"{super().system_message}\n\n{FORMAT_NOTE}"

    @property
    def program_note(self) -> str:
        """What ``tasks --show`` says of the program."""
        n = len(unpack(self.initial_program))
        return (f"{PROGRAM_FOLDER}/ -- a folder of {n} file(s), evolved together (language "
                "\"mixed\"); the evaluator receives the folder's path")

    def sandbox_program(self, code: str) -> tuple[dict[str, str], str]:
        """The candidate as files, written as the folder the evaluator receives."""
        return unpack(code), getattr(self, "program_folder", PROGRAM_FOLDER)


class OpenEvolvePromptTask(OpenEvolveDirTask):
    """A task directory whose evolved artifact is a prompt file (module docstring)."""

    artifact: ClassVar[str] = "text"
    language: ClassVar[str] = "text"  # type: ignore[misc]

    def initial_and_entry(self, directory: TaskDirectory) -> tuple[str, str | None]:
        path, files = directory.path, directory.files or find_files(directory.path)
        name = files.program.name  # found, or named with --program (issue 31, item 1)
        limit = directory.config.get("max_code_length", DEFAULT_MAX_PROMPT_CHARS)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise _fail(path, f"{CONFIG_FILE}: max_code_length={limit!r} must be a whole "
                        "number of characters > 0")
        self.prompt_file, self.max_chars = name, limit
        initial = directory.initial_text
        why = self.check_artifact(initial)
        if why is not None:
            raise _fail(path, f"{name}: {why}")
        return initial, "prompt"

    @property
    def system_message(self) -> str:
        own = super().system_message if self.config_system_message else DEFAULT_PROMPT_MESSAGE
        return f"{own}\n\n{PROMPT_NOTE}"

    @property
    def program_note(self) -> str:
        """What ``tasks --show`` says of the program."""
        return (f"{self.prompt_file} -- a prompt, evolved as text and never executed; the "
                f"evaluator receives the path of a file holding it (at most {self.max_chars:,} "
                "characters, max_code_length)")

    def check_artifact(self, text: str) -> str | None:
        """Why ``text`` is not a usable prompt: empty, or over ``max_code_length``."""
        if not text.strip():
            return "empty prompt"
        if len(text) > self.max_chars:
            return (f"prompt too long: {len(text):,} characters, the cap is "
                    f"{self.max_chars:,} (max_code_length)")
        return None

    def sandbox_program(self, code: str) -> tuple[str, str]:
        """The candidate prompt, written under the prompt file's own name."""
        return code, self.prompt_file


def layout(path: Path, program: Path | None = None) -> str:
    """``"classic"``, ``"folder"``, ``"prompt"`` or ``"none"``: the layout of ``path``;
    ``program``: the program named with --program, if any."""
    if program is not None:
        if program.is_dir():
            return "folder"
        return "prompt" if program.suffix == ".txt" else "classic"
    classic = path / initial_file(path)
    if classic.is_file() and classic.suffix != ".txt":
        return "classic"
    if (path / PROGRAM_FOLDER).is_dir() and not (path / PROGRAM_FOLDER).is_symlink():
        return "folder"
    if any((path / f).is_file() for f in PROMPT_FILES):
        return "prompt"
    return "none"


def load_task_directory(path: Path, names: dict[str, Any] | None = None) -> OpenEvolveDirTask:
    """The task of the OpenEvolve task directory ``path``, in any of the three layouts;
    ``names``: the files named with --program / --evaluator / --config (issue 31, item 1)."""
    path = path.expanduser().resolve()
    named = naming(path, names)
    program = locate(path, named["program"]) if "program" in named else None
    kind = layout(path, program)
    if kind == "none" and path.is_dir():
        language = _config_language(path, named)
        if language == "text":
            kind = "prompt"  # refused below with the prompt layout's own line
        elif language == FILES_LANGUAGE and kind == "none":
            raise _fail(path, f"{CONFIG_FILE} says language: \"mixed\" but there is no "
                        f"{PROGRAM_FOLDER}/ folder holding the program's files")
    if kind in ("classic", "none"):
        return load_python_directory(path, named)  # its own error names what is missing
    if program is None:
        found = path / PROGRAM_FOLDER if kind == "folder" else next(
            (path / f for f in PROMPT_FILES if (path / f).is_file()), None)
        if found is None:
            raise _fail(path, f"{CONFIG_FILE} says language: \"text\" but there is no "
                        f"{' or '.join(PROMPT_FILES)}; put the prompt to evolve there")
        named = {**named, "program": str(found)}
    directory = read_directory(path, named, folder_ok=kind == "folder")
    if kind == "folder":
        return OpenEvolveFolderTask(directory)
    return OpenEvolvePromptTask(directory)


def _config_language(path: Path, named: dict[str, str]) -> Any:
    """The config's ``language`` (None when there is no config or it does not parse: the
    classic loader reports that)."""
    config_path = locate(path, named["config"]) if "config" in named else next(
        (path / n for n in DEFAULT_CONFIGS if (path / n).is_file()), None)
    if config_path is None:
        return None
    try:
        config = load_yaml(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RefusedText):
        return None
    return config.get("language") if isinstance(config, dict) else None


__all__ = ["PROGRAM_FOLDER", "PROMPT_FILES", "OpenEvolveFolderTask", "OpenEvolvePromptTask",
           "layout", "load_task_directory"]
