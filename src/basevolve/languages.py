"""Programming languages of evolved programs: names, file suffixes, comments (issue 31, item 2).

OpenEvolve's config names a program's ``language`` and ``file_suffix``; its initial
program is ``initial_program<file_suffix>`` and the EVOLVE-BLOCK markers are written as
comments of that language (``// EVOLVE-BLOCK-START`` in Rust, ``# EVOLVE-BLOCK-START``
in R).  This table is the one place basevolve knows languages: the name prompts use in
code fences, the fence tags a reply may use, the suffixes and the line comment.  It
sits at the bottom of the layers: task directories (:mod:`basevolve.tasks`) and the reply
parser (:mod:`basevolve.prompts.parse`) both read it.

An unknown language or suffix still works (any text program can be evolved): its name
is used as given, and its comment syntax is unknown, so markers are not checked.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Language:
    """One language: ``name`` (fence tag and prompt word), its other fence tags,
    suffixes (the first is the default) and its line comment (None: no line comment)."""

    name: str
    title: str  # how a sentence names it ("C++")
    suffixes: tuple[str, ...]
    comment: str | None
    tags: tuple[str, ...] = ()

    def marker_line(self, marker: str) -> str:
        """``marker`` as a comment line of this language (``// EVOLVE-BLOCK-START``)."""
        return f"{self.comment} {marker}" if self.comment else marker

    @property
    def fence_tags(self) -> tuple[str, ...]:
        return (self.name, *self.tags)


_TABLE = (
    Language("python", "Python", (".py",), "#", ("py", "python3", "py3")),
    Language("rust", "Rust", (".rs",), "//", ("rs",)),
    Language("cpp", "C++", (".cpp", ".cc", ".cxx", ".hpp", ".h"), "//", ("c++", "cxx", "cc")),
    Language("c", "C", (".c",), "//"),
    Language("java", "Java", (".java",), "//"),
    Language("javascript", "JavaScript", (".js", ".mjs"), "//", ("js",)),
    Language("typescript", "TypeScript", (".ts",), "//", ("ts",)),
    Language("go", "Go", (".go",), "//", ("golang",)),
    Language("r", "R", (".r", ".R"), "#", ("R",)),
    Language("julia", "Julia", (".jl",), "#", ("jl",)),
    Language("bash", "shell", (".sh", ".bash"), "#", ("sh", "shell")),
    Language("ruby", "Ruby", (".rb",), "#", ("rb",)),
    Language("sql", "SQL", (".sql",), "--"),
    Language("lua", "Lua", (".lua",), "--"),
    Language("haskell", "Haskell", (".hs",), "--", ("hs",)),
    Language("text", "text", (".txt", ".md"), None, ("markdown", "md")),
)
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in _TABLE}
_BY_TAG = {tag.lower(): lang for lang in _TABLE for tag in lang.fence_tags}
_BY_SUFFIX = {s: lang for lang in reversed(_TABLE) for s in lang.suffixes}


def by_name(name: str) -> Language | None:
    """The language named ``name`` or one of its fence tags (case-insensitive)."""
    return _BY_TAG.get(name.strip().lower())


def by_suffix(suffix: str) -> Language | None:
    """The language of files ending in ``suffix`` (``.rs``; ``.R`` and ``.r`` are R)."""
    return _BY_SUFFIX.get(suffix) or _BY_SUFFIX.get(suffix.lower())


def resolve(language: str | None, suffix: str | None) -> Language:
    """The language of a program from its stated ``language`` and/or ``file_suffix``.

    An unknown name is kept as given (a language with no known comment syntax).
    """
    if language:
        found = by_name(language)
        if found is not None:
            return found
        return Language(language.strip().lower(), language.strip(),
                        (suffix,) if suffix else (), None)
    if suffix:
        found = by_suffix(suffix)
        if found is not None:
            return found
        return Language(suffix.lstrip(".").lower() or "text", suffix, (suffix,), None)
    return LANGUAGES["python"]


def fence_tags(language: str) -> tuple[str, ...]:
    """Every code-fence tag a reply may use for ``language`` (lower case)."""
    found = by_name(language)
    tags = found.fence_tags if found is not None else (language,)
    return tuple(t.lower() for t in tags)


__all__ = ["LANGUAGES", "Language", "by_name", "by_suffix", "fence_tags",
           "resolve"]
