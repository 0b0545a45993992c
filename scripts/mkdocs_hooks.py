"""MkDocs hook: render the Sphinx roles that docstrings use as plain code.

Why: the package's docstrings follow the Python convention ``:func:`run```, which
mkdocstrings' Google-style parser leaves as literal ``:func:`` text before the code
span.  Dropping the role (and a leading ``~`` that shortens the path) keeps the
docstrings as they are for ``help()`` and IDEs while the site reads cleanly.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj|const):(<code>)~?")


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(r"\1", html)
