"""Shared fixtures: one warm pool for the whole sandbox suite (worker start-up costs ~0.5 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from basevolve.sandbox import SandboxConfig, SandboxPool


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(SandboxConfig(workers=2, memory_mb=768, tmpfs_mb=32, max_file_mb=8)) as p:
        yield p
