"""Scripted replies for prompt-optimisation tests: a better prompt really scores higher.

The LLM test server plays both roles of a ``prompt_optimization`` run (issue 15):

* **mutation model** (a request whose messages hold the task's system message, or that
  shows a template in ``<prompt>`` tags / a ``text`` block): it returns the parent
  template with the next of :data:`MARKERS` added, chosen from the request's seed; one
  request in six drops ``{question}`` (an unusable template, scored 0 with the reason),
  one in six adds nothing (a copy: the answer cache hits).  The reply has the format the
  request asks for: ``<prompt>`` tags (greedy, full rewrites), a SEARCH/REPLACE edit
  (CodeEvolve, OpenEvolve's diff mode), ShinkaEvolve's ``<NAME>/<DESCRIPTION>/<DIFF>`` or
  ``<CODE>``; a novelty judge gets "NOVEL", a CodeEvolve meta-prompt call an edit of its
  PROMPT-BLOCK;
* **answering model** (any other request): it finds which question of the project's QA
  sample (:func:`basevolve.tasks.qa_data.load_sample`) the filled-in template asks and
  answers it correctly when ``index % 4 < 1 + markers``, where ``markers`` counts the
  :data:`MARKERS` in the prompt, else "I do not know".  The initial template (no marker)
  scores 0.25; each marker adds 0.25, so greedy and BaSE have a real gradient.

Deterministic: the reply depends only on the request body.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Any

MARKERS = ("Think step by step.", "Quote the sentence that supports the answer.",
           "Keep the answer to a few words.")
_PROMPT = re.compile(r"<prompt>\n?(.*?)\n?</prompt>", re.DOTALL)
_TEXT_BLOCK = re.compile(r"```text\n(.*?)\n```", re.DOTALL)


@lru_cache(maxsize=1)
def _questions() -> tuple[tuple[str, str], ...]:
    from basevolve.tasks.qa_data import load_sample

    return tuple((item.question, item.answer) for item in load_sample())


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def _seeded(body: dict[str, Any], salt: str, n: int) -> int:
    digest = hashlib.sha256(f"{body.get('seed')}:{salt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % n


def is_mutation_request(body: dict[str, Any]) -> bool:
    """A request of the mutation model (every protocol shows the template in ``<prompt>``
    tags or a ``text`` block, or sends the task's system message); else an answer."""
    from basevolve.tasks.prompt_optimization import SYSTEM_MESSAGE

    text = _text(body)
    return (SYSTEM_MESSAGE in text or "<prompt>" in text or "```text" in text
            or "NOVEL or NOT NOVEL" in text or "PROMPT-BLOCK-START" in text)


def mutation_reply(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    text = str(messages[-1].get("content") or "")  # the template is shown to the user
    if "NOVEL or NOT NOVEL" in system:  # ShinkaEvolve's novelty judge
        return "NOVEL: a different wording"
    if "PROMPT-BLOCK-START" in text:  # CodeEvolve's meta-prompt call
        line = text.split("PROMPT-BLOCK-START\n", 1)[-1].split("\n", 1)[0]
        return f"<<<<<<< SEARCH\n{line}\n=======\n{line} Be concise.\n>>>>>>> REPLACE"
    shown = _PROMPT.findall(text) or _TEXT_BLOCK.findall(text)
    current = text.split("# Current Program", 1)[-1]  # OpenEvolve: the parent's section
    templates = [t for t in shown if "{question}" in t and t in current] or \
        [t for t in shown if "{question}" in t] or shown
    parent = templates[0] if templates else "Question: {question}\nContext: {context}"
    template = parent
    roll = _seeded(body, "kind", 6)
    if roll == 0:  # unusable: the required placeholder is gone
        template = template.replace("{question}", "the question")
    elif roll != 1:  # roll 1: an unchanged copy
        missing = [m for m in MARKERS if m not in template]
        if missing:
            template = f"{missing[_seeded(body, 'marker', len(missing))]}\n{template}"
    first = parent.split("\n", 1)[0]
    rest = template[: len(template) - len(parent)] if template.endswith(parent) else None
    if "<<<<<<< SEARCH" in system + text and rest is not None and template != parent:
        diff = f"<<<<<<< SEARCH\n{first}\n=======\n{rest}{first}\n>>>>>>> REPLACE\n"
        if "<DIFF>" in system:
            return f"<NAME>marker</NAME>\n<DESCRIPTION>One more hint.</DESCRIPTION>\n<DIFF>\n{diff}</DIFF>"
        return diff
    if "<CODE>" in system:
        return (f"<NAME>marker</NAME>\n<DESCRIPTION>One more hint.</DESCRIPTION>\n<CODE>\n"
                f"```text\n{template}\n```\n</CODE>")
    return f"Here is an improved prompt.\n<prompt>\n{template}\n</prompt>\n"


def answer_reply(body: dict[str, Any]) -> str:
    text = _text(body)
    markers = sum(m in text for m in MARKERS)
    for index, (question, answer) in enumerate(_questions()):
        if question in text:
            if index % 4 < 1 + markers:
                return f"The context says so.\nAnswer: {answer}"
            return "Answer: I do not know"
    return "Answer: unknown"


def qa_reply(body: dict[str, Any], index: int) -> str:
    """The test server's reply function for prompt-optimisation runs."""
    return mutation_reply(body) if is_mutation_request(body) else answer_reply(body)


__all__ = ["MARKERS", "answer_reply", "is_mutation_request", "mutation_reply", "qa_reply"]
