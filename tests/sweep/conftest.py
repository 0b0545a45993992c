"""Fixtures of the sweep tests (helpers live in ``_sweep_helpers``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _sweep_helpers import SMALL_GRID, write_grid


@pytest.fixture()
def grid_file(tmp_path):
    def make(url: str, text: str = SMALL_GRID) -> Path:
        return write_grid(tmp_path / "sweep.toml", url, text)
    return make
