"""Is basevolve, from this tree, installed with these extras?  (issue 24, item 10)

``python scripts/installed.py [EXTRA ...]`` exits 0 when the active Python has basevolve
installed from this checkout (editable, the version pyproject.toml names) and every
requirement of pyproject.toml's dependencies and of the named extras installed at a
version the requirement allows; otherwise it prints the first thing missing and exits 1.

Why: scripts/main.sh and scripts/test.sh ran ``pip install`` on every run, and pip
printed 71 "Requirement already satisfied" lines before the main job started.  They now
ask this first and run pip only when something is missing.  Only the standard library
and ``packaging`` (pip's own copy in a fresh venv) are used, so it runs before anything
is installed.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import sys
import tomllib
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # a fresh venv: pip vendors packaging
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]


def missing(extras: list[str], root: Path = ROOT) -> str | None:
    """The first thing not installed, as a short phrase; None when all is there."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    try:
        version = metadata.version(project["name"])
    except metadata.PackageNotFoundError:
        return f"{project['name']} is not installed"
    if version != project["version"]:
        return f"{project['name']} {version} is installed, this tree is {project['version']}"
    spec = importlib.util.find_spec(project["name"])
    origin = Path(spec.origin).resolve() if spec and spec.origin else None
    if origin is None or (root / "src").resolve() not in origin.parents:
        return f"{project['name']} is installed from {origin}, not from this tree"
    scripts = {ep.name: ep.value for ep in metadata.distribution(project["name"]).entry_points
               if ep.group == "console_scripts"}
    for name, target in project.get("scripts", {}).items():
        if scripts.get(name) != target:
            return f"the {name!r} command of this tree is not installed"
    optional = project.get("optional-dependencies", {})
    wanted = [(r, "") for r in project.get("dependencies", [])]
    for extra in extras:
        if extra not in optional:
            return f"pyproject.toml has no extra {extra!r}"
        wanted += [(r, extra) for r in optional[extra]]
    for text, extra in wanted:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            return f"{req.name} is not installed"
        if not req.specifier.contains(have, prereleases=True):
            return f"{req.name} {have} is installed, {text!r} is required"
    return None


def main(argv: list[str]) -> int:
    why = missing(argv)
    if why is None:
        return 0
    print(why)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
