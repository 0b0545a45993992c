"""Shared fixture of the simulator tests: one real sandbox pool per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from basevolve.sandbox import SandboxConfig, SandboxPool


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(SandboxConfig(workers=1)) as p:
        yield p
