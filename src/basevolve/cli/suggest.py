""""Did you mean" for a mistyped command or flag (issue 37, item 8).

Why: argparse (before Python 3.14) only says ``unrecognized arguments: --budgte 4`` or
``invalid choice: 'rnu'``; the user then reads ``--help`` to find the one letter.  The
closest known spelling (``difflib``, the same ratio argparse itself adopted later) is
added to that one line.  Unknown flags of a sub-command are reported by the top-level
parser, which does not know that command's flags, so the suggestion looks them up in
the sub-parser the command line names.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known spelling closest to ``word``, if any is close enough."""
    found = difflib.get_close_matches(word, sorted(set(known)), n=1, cutoff=0.6)
    return found[0] if found else None


def _flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The flags valid where ``argv`` went: the top level's plus its command's."""
    flags = list(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            command = next((a for a in argv if a in action.choices), None)
            if command is not None:
                flags += _flags(action.choices[command], argv)
    return flags


def suggestion(message: str, parser: argparse.ArgumentParser, argv: Sequence[str]) -> str:
    """``"; did you mean ...?"`` for the first mistyped command or flag of ``message``
    (an argparse error), or ``""``."""
    bad = _INVALID_CHOICE.search(message)
    if bad:
        choices = re.findall(r"'([^']*)'", message[bad.end():])
        match = closest(bad.group(1), choices)
        return f"; did you mean {match!r}?" if match else ""
    if message.startswith("unrecognized arguments:"):
        flags = _flags(parser, argv)
        for word in message.removeprefix("unrecognized arguments:").split():
            if word.startswith("-"):
                match = closest(word.split("=", 1)[0], flags)
                if match:
                    return f"; did you mean {match}?"
    return ""


__all__ = ["closest", "suggestion"]
