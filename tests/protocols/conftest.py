"""Fixtures for protocol tests."""

from __future__ import annotations

import pytest
from protocol_fakes import FakeTask


@pytest.fixture
def task() -> FakeTask:
    return FakeTask()
