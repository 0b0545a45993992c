"""Prompt templates, shipped as plain ``.txt`` package data.

Templates live in ``basevolve/prompts/templates/*.txt`` so they can be diffed against the
paper's appendix ("Prompts") line by line; builders fill them with :func:`fill`.
Placeholders are ``{name}`` (the OpenEvolve convention).  Filling is a single regex pass,
so braces inside inserted program code are never re-interpreted (``str.format`` would
choke on ``{}`` in Python dict literals).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from basevolve.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@cache
def load_template(name: str) -> str:
    """Return the text of template ``name`` (file ``templates/<name>.txt``).

    The single trailing newline of the file is dropped so a rendered message does not end
    in a blank line.
    """
    path = resources.files("basevolve.prompts").joinpath("templates", f"{name}.txt")
    if not path.is_file():
        known = sorted(
            p.name.removesuffix(".txt")
            for p in resources.files("basevolve.prompts").joinpath("templates").iterdir()
            if p.name.endswith(".txt")
        )
        raise ConfigError(f"unknown prompt template {name!r}; known: {', '.join(known)}")
    text = path.read_text(encoding="utf-8")
    return text[:-1] if text.endswith("\n") else text


def has_template(name: str) -> bool:
    """Whether template ``name`` ships with basevolve (e.g. a per-task system block)."""
    return resources.files("basevolve.prompts").joinpath("templates", f"{name}.txt").is_file()


def placeholders(template: str) -> list[str]:
    """Names of the ``{name}`` placeholders of ``template``, in order of first use."""
    seen: dict[str, None] = {}
    for m in _PLACEHOLDER.finditer(template):
        seen.setdefault(m.group(1), None)
    return list(seen)


def fill(template: str, fields: dict[str, str]) -> str:
    """Substitute every placeholder of ``template`` with ``fields[name]`` in one pass.

    Every placeholder must be given and every given field must be used, so a typo in a
    builder fails loudly instead of leaking ``{feature_coords}`` into a prompt.
    """
    needed = set(placeholders(template))
    missing = needed - fields.keys()
    extra = fields.keys() - needed
    if missing or extra:
        raise ConfigError(
            f"template fields mismatch: missing {sorted(missing)}, unexpected {sorted(extra)}; "
            "pass exactly the template's placeholders"
        )
    return _PLACEHOLDER.sub(lambda m: str(fields[m.group(1)]), template)
