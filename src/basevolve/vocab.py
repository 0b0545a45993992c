"""Names several layers share (issue 33: vocabulary at the bottom).

Why here: the call purposes are read by the LLM layer (a model's ``role=`` is a purpose,
:mod:`basevolve.llm.ensemble`), the protocols (each proposal's purpose) and the engine;
the feedback modes by the run options (:mod:`basevolve.config`), the prompts
(:mod:`basevolve.prompts.feedback`) and the protocols.  Kept in the lowest layer, each
of them imports the names downward and none reaches the layer that defines the idea's
behaviour.  Imports nothing of basevolve but :mod:`basevolve.errors`.
"""

from __future__ import annotations

from basevolve.errors import ConfigError

#: What an LLM call is for (stored per call, ``calls.purpose``).  Every purpose costs one
#: unit of C: no protocol makes hidden calls.  ``paradigm``: AdaEvolve's breakthrough
#: ideas (issue 26).
PURPOSES: tuple[str, ...] = ("mutation", "fix", "judge", "meta_prompt", "summary", "paradigm")
#: Purposes whose reply is text for the protocol, not a program to run and score: the
#: engine hands the reply to ``Protocol.tell_text`` and stores no program.
TEXT_PURPOSES: tuple[str, ...] = ("judge", "meta_prompt", "summary", "paradigm")

#: ``--feedback``: what of a parent's evaluation the next prompt shows (issue 21, part 3;
#: :mod:`basevolve.prompts.feedback`).  ``none`` keeps the paper's verbatim prompts.
FEEDBACK_MODES = ("none", "artifacts")


def check_feedback(mode: object) -> str:
    """``mode`` if it is one of :data:`FEEDBACK_MODES`, else one clear ConfigError."""
    if not isinstance(mode, str) or mode not in FEEDBACK_MODES:
        raise ConfigError(f"--feedback must be one of {', '.join(FEEDBACK_MODES)}, got "
                          f"{mode!r} (artifacts shows the evaluator's feedback in the next "
                          "prompt)")
    return mode


__all__ = ["FEEDBACK_MODES", "PURPOSES", "TEXT_PURPOSES", "check_feedback"]
