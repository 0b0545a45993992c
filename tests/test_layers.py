"""The layering of ``src/basevolve`` stays true (issue 33).

Read from the imports of the source (parsed with :mod:`ast`, nothing is imported):

(a) no file-level import circle.  Function-level imports count (an import written
    inside a function to dodge a circle at import time is still a circle to the reader);
    imports under ``if TYPE_CHECKING:`` do not.  ``from basevolve.x import y`` counts as
    an import of package ``basevolve.x``'s ``__init__`` only when ``y`` is a name of it,
    not a submodule; ``import basevolve.x.y`` is an import of ``basevolve.x.y`` alone.
(b) no import from a lower layer to a higher one, nor across two packages of one layer,
    except the ``allow`` lines of docs/design.md's "## Layers" block (each with its
    reason; an ``allow`` nothing needs any more fails too, so the list stays short).
(c) no module over :data:`MAX_LINES` lines (one idea per module).

The layer order is written once, in the fenced ``layers`` block of docs/design.md's
"## Layers" section; this test parses it.  The checker is tested on small planted
packages too (``test_checker_*``), so a checker that finds nothing cannot pass quietly.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "basevolve"
DESIGN = ROOT / "docs" / "design.md"
MAX_LINES = 400
FIX_UPWARD = ("move the shared name down to the lowest module that owns the idea, let the "
              "higher layer register into a registry below or pass what is needed as an "
              "argument; if it must stay, add 'allow FROM -> TO: reason' to the layers "
              "block of docs/design.md")
FIX_CIRCLE = ("move the names both sides share into a lower module both import, or import "
              "the sibling module directly instead of names from the package __init__")


@dataclass
class Layers:
    """The parsed ``layers`` block: layer index per top-level name, bottom first."""

    names: list[str] = field(default_factory=list)  # layer names, bottom first
    of: dict[str, int] = field(default_factory=dict)  # top-level module/package -> layer
    open: set[int] = field(default_factory=set)  # layers whose members import each other
    allow: dict[tuple[str, str], str] = field(default_factory=dict)  # (from, to) -> reason


def parse_layers(markdown: str) -> Layers:
    """The ``layers`` fenced block under "## Layers" (format: the block's own comments)."""
    section = markdown.split("\n## Layers\n", 1)
    assert len(section) == 2, "docs/design.md has no '## Layers' section"
    block = re.search(r"```layers\n(.*?)```", section[1], re.S)
    assert block, "docs/design.md's '## Layers' section has no ```layers block"
    layers = Layers()
    for n, raw in enumerate(block.group(1).splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("allow ") else raw
        if not line.strip():
            continue
        if m := re.fullmatch(r"\s*allow\s+(\S+)\s*->\s*(\S+?)\s*:\s*(.*)", line):
            assert m.group(3).strip(), f"layers block line {n}: an allow needs its reason"
            layers.allow[(m.group(1), m.group(2))] = m.group(3).strip()
            continue
        m = re.fullmatch(r"([\w-]+)(\*?):\s*(.+)", line)
        assert m, f"layers block line {n} is not 'NAME: members' or 'allow A -> B: why'"
        layers.names.append(m.group(1))
        if m.group(2):
            layers.open.add(len(layers.names) - 1)
        for member in m.group(3).split():
            assert member not in layers.of, f"{member!r} is in two layers"
            layers.of[member] = len(layers.names) - 1
    return layers


@dataclass(frozen=True)
class Import:
    source: str  # importing module, e.g. basevolve.sweep.status
    target: str  # imported module (a file of the package)
    line: int
    path: Path
    names: tuple[str, ...]  # names taken from the target ('' for a plain import)


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` under the package ``root``."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _runtime_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If):
            t = node.test
            if (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
                    isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"):
                for child in node.orelse:
                    visit(child)
                return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imports(root: Path) -> tuple[dict[str, Path], list[Import]]:
    """The package's modules and its imports of its own modules (see the module doc)."""
    files = module_files(root)
    top = root.name
    out: list[Import] = []

    def owner(name: str) -> str | None:  # the longest module prefix of a dotted name
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                pairs = [(owner(a.name), ("",)) for a in node.names if a.name.split(".")[0] == top]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                if base.split(".")[0] != top:
                    continue
                subs = [a.name for a in node.names if f"{base}.{a.name}" in files]
                names = tuple(a.name for a in node.names if f"{base}.{a.name}" not in files)
                pairs = [(f"{base}.{s}", ("",)) for s in subs]
                if names:
                    pairs.append((owner(base), names))
            out += [Import(mod, t, node.lineno, path, n) for t, n in pairs if t and t != mod]
    return files, out


def circles(files: dict[str, Path], found: list[Import]) -> list[str]:
    """One line per import circle (strongly connected set of modules), with one path."""
    edges: dict[str, dict[str, Import]] = {m: {} for m in files}
    for imp in found:
        edges[imp.source].setdefault(imp.target, imp)

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {m: reach(m) for m in files}
    done: set[str] = set()
    lines = []
    for m in sorted(files):
        ring = {w for w in reached[m] if m in reached[w]}
        if len(ring) < 2 or m in done:
            continue
        done |= ring
        # the shortest path m -> ... -> m inside the ring, each step shown with its line
        back: dict[str, str] = {}
        todo, last = deque([m]), m
        while todo:
            last = todo.popleft()
            if m in edges[last]:
                break
            for nxt in edges[last]:
                if nxt in ring and nxt not in back and nxt != m:
                    back[nxt] = last
                    todo.append(nxt)
        path = [last]
        while path[-1] != m:
            path.append(back[path[-1]])
        path.reverse()
        steps = [*path, m]
        shown = " -> ".join(
            f"{b} ({_where(edges[a][b])})" for a, b in pairwise(steps))
        lines.append(f"import circle of {len(ring)} modules ({', '.join(sorted(ring))}): "
                     f"{steps[0]} -> {shown}; fix: {FIX_CIRCLE}")
    return lines


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def _where(imp: Import) -> str:
    return f"{_shown(imp.path)}:{imp.line}"


def _layer_key(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward(layers: Layers, files: dict[str, Path], found: list[Import]) -> list[str]:
    """One line per import that goes up a layer or across a layer (not allowed), then
    one per module in no layer and per ``allow`` nothing uses any more."""
    lines: list[str] = []
    used: set[tuple[str, str]] = set()
    for key in sorted({_layer_key(m) for m in files} - set(layers.of)):
        lines.append(f"{key} is in no layer; fix: add it to the layers block of "
                     "docs/design.md (a new shared name's module goes in the lowest layer)")
    for imp in found:
        a, b = _layer_key(imp.source), _layer_key(imp.target)
        if a == b or a not in layers.of or b not in layers.of:
            continue
        if b == "__init__" and all(n.startswith("__") for n in imp.names):
            continue  # the face's own metadata (__version__); its API names are the top
        la, lb = layers.of[a], layers.of[b]
        if la > lb or (la == lb and la in layers.open):
            continue
        if (imp.source, imp.target) in layers.allow:
            used.add((imp.source, imp.target))
            continue
        how = "up" if lb > la else "across"
        lines.append(
            f"{_where(imp)}: {imp.source} (layer {la + 1} {layers.names[la]}) imports "
            f"{imp.target} (layer {lb + 1} {layers.names[lb]}): an import {how} the layers; "
            f"fix: {FIX_UPWARD}")
    for pair, why in sorted(layers.allow.items()):
        if pair not in used:
            lines.append(f"allow {pair[0]} -> {pair[1]} ({why}) is no longer needed; fix: "
                         "drop it from the layers block of docs/design.md")
    return lines


def long_modules(files: dict[str, Path], limit: int = MAX_LINES) -> list[str]:
    out = []
    for mod, path in sorted(files.items()):
        n = len(path.read_text().splitlines())
        if n > limit:
            out.append(f"{_shown(path)}: {mod} has {n} lines (limit {limit}); fix: split "
                       "it along its ideas (one idea per module)")
    return out


def check(root: Path, layers: Layers, limit: int = MAX_LINES) -> list[str]:
    """Every problem of the package at ``root``, one line each (empty: all well)."""
    files, found = imports(root)
    return [*circles(files, found), *upward(layers, files, found),
            *long_modules(files, limit)]


def test_the_package_keeps_its_layers() -> None:
    problems = check(SRC, parse_layers(DESIGN.read_text()))
    assert not problems, f"{len(problems)} layering problem(s):\n" + "\n".join(problems)


# ------------------------------------------------------------- the checker itself
LAYERS_MD = """# design

## Layers

```layers
# bottom first
base*: errors vocab
low:   low
mid:   mid side
high:  high
face:  __init__
{allow}
```
"""


def plant(tmp_path: Path, modules: dict[str, str], allow: str = "") -> list[str]:
    """Write package ``pkg`` (``{"low.py": source, "mid/__init__.py": ...}``) and check it."""
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", "errors.py": "", "vocab.py": "", "low.py": "",
                      "high.py": "", "side.py": "", "mid/__init__.py": "", **modules}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return check(root, parse_layers(LAYERS_MD.format(allow=allow)))


def test_checker_finds_an_upward_import_with_its_file_line_and_layers(tmp_path) -> None:
    problems = plant(tmp_path, {"low.py": "import os\n\nfrom pkg.high import thing\n"})
    assert len(problems) == 1
    assert problems[0].startswith(f"{tmp_path / 'pkg' / 'low.py'}:3: pkg.low (layer 2 low) "
                                  "imports pkg.high (layer 4 high): an import up the layers")
    assert "allow FROM -> TO: reason" in problems[0]
    # a function-level import is an import; down and within the base pool are fine
    deep = plant(tmp_path, {"mid/x.py": "from pkg.low import a\nfrom pkg import errors\n\n"
                            "def f():\n    from pkg.high import thing\n",
                            "vocab.py": "from pkg.errors import E\n"})
    assert [p.split(": ", 1)[0] for p in deep] == [f"{tmp_path / 'pkg' / 'mid' / 'x.py'}:5"]


def test_checker_refuses_an_import_across_one_layer_and_a_module_in_no_layer(tmp_path) -> None:
    problems = plant(tmp_path, {"side.py": "from pkg.mid import x\n", "extra.py": ""})
    assert "pkg.side (layer 3 mid) imports pkg.mid (layer 3 mid): an import across" in \
        problems[1]
    assert problems[0].startswith("extra is in no layer")


def test_checker_takes_listed_exceptions_with_a_reason_and_refuses_stale_ones(tmp_path) -> None:
    allowed = "allow pkg.low -> pkg.high: the reason it must"
    assert plant(tmp_path, {"low.py": "from pkg.high import thing\n"}, allowed) == []
    stale = plant(tmp_path, {"low.py": ""}, allowed)
    assert stale == ["allow pkg.low -> pkg.high (the reason it must) is no longer needed; "
                     "fix: drop it from the layers block of docs/design.md"]
    with pytest.raises(AssertionError, match="needs its reason"):
        plant(tmp_path, {}, "allow pkg.low -> pkg.high:")


def test_checker_finds_circles_function_level_ones_included(tmp_path) -> None:
    problems = plant(tmp_path, {
        "mid/__init__.py": "from pkg.mid.a import A\n",
        "mid/a.py": "from pkg.mid.b import B\nA = 1\n",
        "mid/b.py": "B = 2\n\ndef late():\n    from pkg.mid.a import A  # dodges it at import\n"})
    assert len(problems) == 1 and problems[0].startswith("import circle of 2 modules")
    assert f"pkg.mid.a -> pkg.mid.b ({tmp_path / 'pkg' / 'mid' / 'a.py'}:1) -> pkg.mid.a (" \
           f"{tmp_path / 'pkg' / 'mid' / 'b.py'}:4)" in problems[0]


def test_checker_counts_a_package_init_only_for_its_names(tmp_path) -> None:
    """``from pkg.mid import b`` (a submodule) is no import of ``mid/__init__``; ``from
    pkg.mid import NAME`` is, and closes a circle with an ``__init__`` that imports it."""
    init = "from pkg.mid.a import A\nNAME = 1\n"
    sibling = plant(tmp_path, {"mid/__init__.py": init, "mid/b.py": "",
                               "mid/a.py": "from pkg.mid import b\nfrom . import b as c\nA = 1\n"})
    assert sibling == []
    face = plant(tmp_path, {"mid/__init__.py": init, "mid/a.py": "from . import NAME\nA = 1\n"})
    assert len(face) == 1 and "(pkg.mid, pkg.mid.a)" in face[0]


def test_checker_leaves_out_type_checking_imports(tmp_path) -> None:
    guarded = ("from typing import TYPE_CHECKING\nimport typing\n\nif TYPE_CHECKING:\n"
               "    from pkg.high import thing\nif typing.TYPE_CHECKING:\n"
               "    import pkg.high\n")
    assert plant(tmp_path, {"low.py": guarded}) == []
    otherwise = guarded + "else:\n    from pkg.high import other\n"
    assert [p.split(": ", 1)[0] for p in plant(tmp_path, {"low.py": otherwise})] == [
        f"{tmp_path / 'pkg' / 'low.py'}:9"]


def test_checker_finds_a_long_module(tmp_path) -> None:
    assert plant(tmp_path, {"mid/ok.py": "x = 1\n" * MAX_LINES}) == []
    assert plant(tmp_path, {"mid/ok.py": "x = 1\n" * (MAX_LINES + 1)}) == [
        f"{tmp_path / 'pkg' / 'mid' / 'ok.py'}: pkg.mid.ok has {MAX_LINES + 1} lines (limit "
        f"{MAX_LINES}); fix: split it along its ideas (one idea per module)"]


def test_the_layers_block_names_every_package_once() -> None:
    layers = parse_layers(DESIGN.read_text())
    assert layers.names[0] == "base" and layers.names[-1] == "face"
    on_disk = {p.stem if p.suffix else p.name for p in SRC.iterdir()
               if (p.suffix == ".py") or (p / "__init__.py").is_file()}
    assert on_disk - set(layers.of) == set(), "modules in no layer"
