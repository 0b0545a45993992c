"""The public API surface: every name in basevolve.__all__ is documented, typed and on
the API reference page; `import basevolve` stays cheap (sandbox workers import it)."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import basevolve

ROOT = Path(__file__).resolve().parents[2]
NAMES = [n for n in basevolve.__all__ if n != "__version__"]


def _check_typed(fn: typing.Callable, where: str) -> None:
    sig = inspect.signature(fn)
    missing = [p.name for p in sig.parameters.values()
               if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty]
    assert not missing, f"{where}: parameters without type hints: {missing}"
    assert sig.return_annotation is not inspect.Signature.empty, f"{where}: no return type"
    typing.get_type_hints(fn)  # the hints resolve (no dangling names)


@pytest.mark.parametrize("name", NAMES)
def test_every_public_name_has_a_docstring_and_type_hints(name):
    obj = getattr(basevolve, name)
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 20, f"basevolve.{name} has no real docstring"
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            if isinstance(member, property):
                member = member.fget
            if isinstance(member, classmethod | staticmethod):
                member = member.__func__
            if inspect.isfunction(member):
                assert inspect.getdoc(member), f"basevolve.{name}.{attr} has no docstring"
                _check_typed(member, f"basevolve.{name}.{attr}")
        typing.get_type_hints(obj)
    else:
        assert callable(obj)
        _check_typed(obj, f"basevolve.{name}")


def test_all_is_complete_and_version_is_a_string():
    assert isinstance(basevolve.__version__, str)
    for name in ("run", "run_async", "resume", "resume_async", "analyze", "report",
                 "RunResult", "Task", "ConfigError"):
        assert name in basevolve.__all__
    assert set(basevolve.__all__) <= set(dir(basevolve))
    assert (ROOT / "src" / "basevolve" / "py.typed").is_file()


def _documented(path: str) -> object:
    """The object a `::: path` directive documents: a module wins over an attribute of
    the same dotted name, as in mkdocstrings (why `basevolve.report` is not listed so)."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        parent, _, attr = path.rpartition(".")
        return getattr(importlib.import_module(parent), attr)


def test_api_reference_page_lists_every_public_name():
    page = (ROOT / "docs" / "api.md").read_text()
    covered = set()
    for path in re.findall(r"^::: ([\w.]+)\s*$", page, flags=re.M):
        name = path.rpartition(".")[2]
        if name == "__version__":
            covered.add(name)
            continue
        assert _documented(path) is getattr(basevolve, name), f"{path} is not basevolve.{name}"
        covered.add(name)
    assert covered == set(basevolve.__all__)


def test_importing_basevolve_does_not_import_the_api_dependencies():
    code = ("import sys, basevolve; heavy = [m for m in ('pandas', 'scipy', 'basevolve.api', "
            "'basevolve.analysis') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_report_stays_the_function_after_the_report_package_is_imported():
    from basevolve.report import write_report  # sets the parent's attribute on first import

    assert callable(write_report)
    assert inspect.isfunction(basevolve.report)
    assert basevolve.report.__module__ == "basevolve.api.analysis"
