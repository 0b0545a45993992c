"""Embedded-model tests get a pytest-timeout derived from a measured rate (issue 37,
item 4; see ``embedded_rate.py``): a test marked ``@pytest.mark.embedded_work(waits=fn)``,
where ``fn(rate)`` is the longest the test may wait in all at that rate (its internal
waits, each from :meth:`Rate.limit`, summed), runs under ``timeout_for(fn(rate))``
instead of the fixed 300 s.  The rate is measured once,
only when such a test is selected, before the first one runs (not inside its limit).
"""

from __future__ import annotations

import pytest
from embedded_rate import rate, timeout_for


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "embedded_work(waits=fn): fn(rate) = the longest this embedded-model test "
        "may wait in all at the measured rate; its pytest-timeout is derived from it")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Measure (once) and set the limit before pytest-timeout reads the marker: its own
    ``pytest_runtest_protocol`` wrapper arms the timer, and this one runs first."""
    work = item.get_closest_marker("embedded_work")
    if work is not None:
        measured = rate()
        limit = timeout_for(work.kwargs["waits"](measured))
        item.add_marker(pytest.mark.timeout(limit))
        item.user_properties.append(("embedded_rate", measured.describe()))
        item.user_properties.append(("embedded_timeout_s", round(limit)))
    yield


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per embedded-model test: the measured rate and the limit it ran under."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
            "failed", []):
        props = dict(report.user_properties)
        if "embedded_timeout_s" in props and report.when == "call":
            terminalreporter.write_line(
                f"{report.nodeid}: {props['embedded_rate']}; timeout "
                f"{props['embedded_timeout_s']} s, took {report.duration:.0f} s")
