"""Text from outside, made safe to print on a terminal (issue 22, item 12).

Why: a program's exception, a model id a server lists, an HTTP error body or a task's
description is data, yet it reaches stderr/stdout inside progress lines, summary tables,
the runs listing, notify lines and error lines.  Written raw, an ANSI escape in it could
clear the screen, move the cursor or recolour text, and a line break could forge a line
of basevolve's own output (``best 1.000000``).  Every printer passes such text through
this module, the one rule for the terminal:

* every control character is shown as a visible escape (``\\x1b``, ``\\n``, ``\\x9b``):
  C0 controls, DEL, C1 controls (``\\x9b`` is an 8-bit CSI on some terminals), the
  Unicode line/paragraph separators and the bidirectional overrides (which reorder
  what is displayed);
* a lone surrogate (which a UTF-8 terminal cannot even encode, so printing it raised
  ``UnicodeEncodeError``) is shown as ``\\udXXX``;
* everything else, non-ASCII letters included, is printed as it is.

:func:`clean` is for one-line fields (line breaks escaped too); :func:`clean_lines` for
multi-line text basevolve lays out itself, keeping ``\\n`` and ``\\t``.  Output that is
JSON (``--json``) needs neither: ``json.dumps`` escapes control characters already.
Log records of the ``basevolve`` loggers (an LLM retry quotes the server's error) are
printed clean by the handler :func:`install_clean_logging` sets up for the CLI.
"""

from __future__ import annotations

import logging
import re
import sys

# \x00-\x1f and \x7f-\x9f (C0, DEL, C1); U+061C, U+200E/F, U+202A-E, U+2066-9 (bidi);
# U+2028/9 (line/paragraph separators); U+D800-U+DFFF (surrogates).
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_ONE_LINE = re.compile(f"[\x00-\x1f{_OTHERS}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")  # keeps \t (\x09) and \n (\x0a)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object) -> str:
    """``str(text)`` as one printable line: every control character escaped visibly."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable():  # the common case, one C-level scan
        return s
    return _ONE_LINE.sub(_escape, s)


def clean_lines(text: object) -> str:
    """Like :func:`clean`, but line breaks and tabs stay (text laid out in lines)."""
    s = text if isinstance(text, str) else str(text)
    return _LINES.sub(_escape, s)


class CleanStderrHandler(logging.Handler):
    """Warnings of the ``basevolve`` loggers on stderr, each one :func:`clean` line.

    Why a handler of its own: without one, Python's last-resort handler printed the
    message raw.  ``sys.stderr`` is looked up per record (as the last-resort handler
    does), so a replaced stderr (a test's capture, a notebook) is honoured.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(clean(record.getMessage()) + "\n")
            sys.stderr.flush()
        except Exception:  # logging must never break the run
            self.handleError(record)


def install_clean_logging() -> None:
    """Give the ``basevolve`` logger a :class:`CleanStderrHandler` (once)."""
    logger = logging.getLogger("basevolve")
    if not any(isinstance(h, CleanStderrHandler) for h in logger.handlers):
        logger.addHandler(CleanStderrHandler())


__all__ = ["CleanStderrHandler", "clean", "clean_lines", "install_clean_logging"]
