"""Text artifacts: tasks that evolve a text (a prompt template) instead of a program.

The paper's appendix (Table "LPO") shows that its depth/breadth regularities carry over
to LLM prompt optimisation, where the evolved artifact is a prompt and its fitness the
answer accuracy of a small answering LLM (issue 15).  A :class:`TextTask` plugs such an
artifact into the same engine, protocols, allocators, store and analysis:

* **extraction**: a reply's artifact is the text inside a fenced block or
  ``<prompt>…</prompt>`` tags (:func:`basevolve.prompts.extract_text`, reached through
  ``extract_program(..., language="text")`` so every protocol's full-rewrite path and the
  SEARCH/REPLACE applier work unchanged);
* **validation**: :meth:`TextTask.check_artifact` (required placeholders, length cap); a
  reply without a valid artifact is a child with score 0 and the reason;
* **nothing is executed**: the text never reaches the sandbox, ``exec``, ``str.format``
  or a shell.  It is still untrusted (LLM-written): it is only ever substituted into
  the answering LLM's messages by plain token replacement
  (:func:`fill_template`), so ``{question.__class__}``-style format-string tricks are
  inert text;
* **scoring**: :meth:`TextTask.evaluate_text` asks an :class:`Answerer` (the engine's
  evaluation client: concurrency, retries, cache, cost records) and scores the answers
  in this process, as a trusted scorer does for programs.

The greedy protocol asks :meth:`TextTask.mutation_messages` for its prompt (the task's
own wording); the island protocols keep their templates, shown the template as the
"program" in a ``text`` block, with the task's system message saying what it is.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from basevolve.prompts.templates import placeholders
from basevolve.records import Evaluation, ExecResult, Isolation, Trust
from basevolve.tasks.base import REFERENCE_TOL, ScoreResult, Task

if TYPE_CHECKING:
    from basevolve.protocols.base import Child

Messages = list[dict[str, str]]

#: ``{name}`` tokens of a template (identifier inside single braces), the syntax of
#: basevolve's own prompt templates (:func:`basevolve.prompts.templates.placeholders`).
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class AnswerCall:
    """One answering-LLM request of an evaluation, as the evaluator recorded it.

    ``text`` is the reply (``None`` when the call failed after the LLM layer's retries);
    ``cache_hit`` means the reply came from the evaluation cache and nothing was sent
    (then every cost field is 0).  ``attempts`` counts the HTTP attempts made.
    """

    text: str | None
    ok: bool
    cache_key: str
    cache_hit: bool = False
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    flops: float = 0.0
    latency_s: float = 0.0
    attempts: int = 0
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Answerer(Protocol):
    """What a text task asks its answers from (the engine's :class:`TextEvaluator`)."""

    async def answer(self, requests: Sequence[Messages]) -> list[AnswerCall]:
        """One reply per request, in order; never raises for a failed call."""
        ...


@dataclass(frozen=True, slots=True)
class TextScore(ScoreResult):
    """What :meth:`TextTask.evaluate_text` found: a trusted score (as for programs), the
    report shown to the next mutation prompt, and one row per answering request.

    Build it with keywords for ``feedback`` and ``rows``: they follow every field of
    :class:`ScoreResult`, which may grow (``artifacts`` did, in issue 21)."""

    feedback: str = ""
    rows: tuple[dict[str, Any], ...] = ()


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """Replace each ``{name}`` of ``values`` in one pass; everything else stays literal.

    Why not ``str.format``: the template is LLM-written, and ``format`` evaluates
    attribute and index lookups (``{question.__class__.__mro__}``) and raises on stray
    braces; a single regex pass substitutes only the declared names, and a value that
    itself contains ``{context}`` is never substituted again.
    """
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


#: How often one placeholder may appear.  Why a bound: each use copies the question or
#: context into the answering prompt, so a template of ``{context}`` x 400 would multiply
#: the evaluation's cost; twice still allows "repeat the question at the end".
MAX_PLACEHOLDER_USES = 2


def check_template(text: str, *, required: Sequence[str], allowed: Sequence[str],
                   max_chars: int) -> str | None:
    """Why ``text`` is not a usable template (``None`` when it is): empty, longer than
    ``max_chars``, a ``required`` placeholder missing, one not in ``allowed``, or one
    used more than :data:`MAX_PLACEHOLDER_USES` times."""
    if not text.strip():
        return "empty prompt template"
    if len(text) > max_chars:
        return (f"prompt template too long: {len(text):,} characters, the cap is "
                f"{max_chars:,} (task parameter max_template_chars)")
    found = placeholders(text)
    missing = [f"{{{n}}}" for n in required if n not in found]
    if missing:
        return f"prompt template lacks the placeholder(s) {', '.join(missing)}"
    unknown = [f"{{{n}}}" for n in found if n not in allowed]
    if unknown:
        known = ", ".join(f"{{{n}}}" for n in allowed)
        return f"prompt template has unknown placeholder(s) {', '.join(unknown)}; allowed: {known}"
    counts = {n: sum(1 for m in PLACEHOLDER.finditer(text) if m.group(1) == n) for n in found}
    over = [f"{{{n}}} x{c}" for n, c in counts.items() if c > MAX_PLACEHOLDER_USES]
    if over:
        return (f"prompt template repeats placeholder(s) {', '.join(over)}; each may appear "
                f"at most {MAX_PLACEHOLDER_USES} times")
    return None


def answered_by_llm(task: Any) -> bool:
    """Whether ``task``'s artifacts are scored by an answering LLM (a :class:`TextTask`:
    the engine's text evaluator, no sandbox), not by an evaluator in the sandbox (an
    OpenEvolve prompt file, issue 31, whose text artifact goes to its evaluator.py)."""
    return getattr(task, "artifact", "program") == "text" and callable(
        getattr(task, "evaluate_text", None))


class TextTask(Task):
    """A task whose evolved artifact is text, scored by asking an LLM (issue 15).

    Subclasses give ``initial_program`` (the initial text), ``system_message`` (for the
    mutation LLM), :meth:`check_artifact` and :meth:`evaluate_text`; optionally
    :meth:`mutation_messages` (the greedy protocol's prompt) and :meth:`answer_settings`.
    """

    artifact: ClassVar[str] = "text"
    language: ClassVar[str] = "text"
    entry: ClassVar[str] = "template"  # no entry function: nothing is executed
    timeout_s: ClassVar[float] = 3600.0  # an evaluation asks many questions

    @abstractmethod
    def check_artifact(self, text: str) -> str | None:
        """Why ``text`` is not a valid artifact, or ``None``."""

    @abstractmethod
    async def evaluate_text(self, text: str, answerer: Answerer) -> TextScore:
        """Score a (checked) artifact by asking ``answerer``; never raises for bad text."""

    def mutation_messages(self, parent: Child) -> Messages | None:
        """The chat prompt asking for a better artifact than ``parent`` (greedy); ``None``
        keeps the protocol's own template."""
        return None

    def answer_settings(self) -> dict[str, Any]:
        """How the evaluator talks to the answering LLM (model, endpoint, sampling)."""
        return {}

    def worst_case_requests(self) -> list[Messages]:
        """Requests at least as long as any one evaluation can send, one per request
        (``--count-eval-calls`` reserves their cost before a child exists)."""
        return []

    def score_value(self, value: Any, *, tol: float = REFERENCE_TOL) -> ScoreResult:
        """Not used: a text task is scored by :meth:`evaluate_text` (nothing runs)."""
        return ScoreResult(0.0, False, error=f"task {self.name!r} scores text, not program output")

    def evaluate(self, result: ExecResult) -> Evaluation:
        """Not used (no sandbox result exists for text); kept total for the base contract."""
        return Evaluation(score=0.0, valid=False, isolation=Isolation.TEXT, trust=Trust.NOT_RUN,
                          error=f"task {self.name!r} scores text, not program output")


__all__ = ["MAX_PLACEHOLDER_USES", "AnswerCall", "Answerer", "Messages", "TextScore",
           "TextTask", "answered_by_llm", "check_template", "fill_template", "placeholders"]
