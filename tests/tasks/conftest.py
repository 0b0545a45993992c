"""Shared fixtures for task tests: hand-made configurations with exact arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.tasks import load_task


def grid_packing() -> tuple[np.ndarray, np.ndarray]:
    """16 circles of radius 1/8 on a 4x4 grid (all exactly touching, dyadic so exact in
    floating point) plus 10 zero-radius circles in the gaps; sum of radii = 2.0."""
    g = np.array([1, 3, 5, 7]) / 8.0
    centers = [[x, y] for x in g for y in g]
    radii = [0.125] * 16
    gaps = [[x, y] for x in (0.25, 0.5, 0.75) for y in (0.25, 0.5, 0.75)] + [[0.0, 0.0]]
    centers += gaps
    radii += [0.0] * len(gaps)
    return np.array(centers, dtype=float), np.array(radii, dtype=float)


def run_initial(name: str):
    """Run a built-in initial program in-process (our own trusted code) and return its value."""
    task = load_task(name)
    namespace: dict = {"__name__": "program"}
    exec(compile(task.initial_program, f"<{name} initial>", "exec"), namespace)
    return namespace[task.entry]()


@pytest.fixture
def packing() -> tuple[np.ndarray, np.ndarray]:
    return grid_packing()
