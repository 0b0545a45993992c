"""The front of a multi-objective run on the dashboard, live (issue 36, item 5).

Real SQLite stores written through the store's public API
(:mod:`basevolve.testing.front_runs`) with vectors worked by hand, the real ``basevolve
dashboard`` command, and Debian's chromium: the run page's ``front`` section must hold the
front, vectors and hypervolume of :mod:`basevolve.store.run_fronts` (worked out below);
the page draws a scatter with the front members highlighted, each point a link to its
program; a child written while the page is open moves the front; an objective name that
is HTML with control characters is text (no element, no script, no dialog); a
single-objective run keeps its page (no section, no ``front`` key).
"""

from __future__ import annotations

import pytest
from dashboard_support import Dashboard, chromium_browser, get_json
from test_dashboard_browser import open_page, points, wait_until

from basevolve.store.sqlite import RunStore
from basevolve.testing.front_runs import (
    Child,
    FrontRun,
    add_child,
    rename_objective,
    write_store,
)

EVIL = "<img src=x onerror=alert(1)>\x1b[31m\u202eacc"
#: how the page shows it: control and bidi characters as visible marks (common.js)
SHOWN = "<img src=x onerror=alert(1)>\u241b[31m\u27e8U+202E\u27e9acc"
OBJS = {"acc": "max", "sec": "min"}
# initial (0.2, 5); children (0.5, 2), (0.8, 3), (0.4, 4) dominated, invalid (1, 0)
KIDS = [Child({"acc": 0.5, "sec": 2.0}), Child({"acc": 0.8, "sec": 3.0}),
        Child({"acc": 0.4, "sec": 4.0}), Child({"acc": 1.0, "sec": 0.0}, valid=False)]


@pytest.fixture(scope="module")
def front_store(tmp_path_factory):
    path = write_store(tmp_path_factory.mktemp("fronts") / "s.sqlite", [
        FrontRun("mo", {"acc": 0.2, "sec": 5.0}, KIDS, objectives=OBJS,
                 reference_point=(0.0, 10.0)),
        FrontRun("live", {"acc": 0.2, "sec": 5.0}, KIDS[:1], objectives=OBJS,
                 reference_point=(0.0, 10.0), status="running"),
        FrontRun("single", {"score": 0.1}, [Child({"score": 0.3}, score=0.3)] * 2),
    ])
    rename_objective(path, "acc", EVIL)
    return path


@pytest.fixture(scope="module")
def front_dash(front_store):
    d = Dashboard(front_store)
    yield d
    d.close()


@pytest.fixture(scope="module")
def front_browser(front_store):
    yield from chromium_browser()


def test_the_front_section_holds_the_stores_front(front_dash):
    f = get_json(front_dash, "/api/run?id=mo")["front"]
    assert [o["name"] for o in f["objectives"]] == [EVIL, "sec"]
    assert [o["direction"] for o in f["objectives"]] == ["max", "min"]
    assert f["reference"] == [0.0, 10.0] and f["reference_derived"] is False
    assert f["hypervolume"] == pytest.approx(6.1)  # 0.8 x 7 + 0.5 x 1
    pts = f["points"]
    on = sorted(v for v, m in zip(pts["vector"], pts["front"], strict=True) if m)
    assert on == [[0.5, 2.0], [0.8, 3.0]] and f["front_size"] == 2
    assert len(pts["vector"]) == f["programs"] == 4  # initial + 3 valid children
    assert f["curve"]["hypervolume"] == pytest.approx([1.0, 4.0, 6.1, 6.1, 6.1])
    assert "front" not in get_json(front_dash, "/api/run?id=single")


def test_the_page_draws_the_front_live_and_names_are_text(front_store, front_dash,
                                                          front_browser, shots):
    page, ev = open_page(front_browser, f"{front_dash.base}/run?id=mo")
    page.wait_for_selector("#front-section circle.front-member")
    assert page.locator("#front-plots svg.front-plot").count() == 1
    assert page.locator("circle.front-member").count() == 2
    assert page.locator("circle.front-other").count() == 2
    assert SHOWN in page.inner_text("#front-objectives")
    assert page.text_content("#front-plots .x-label").startswith(SHOWN)  # text, not markup
    assert page.locator("img[src='x']").count() == 0
    assert points(page, "chart-front-hv") == 5
    page.screenshot(path=str(shots / "run-front.png"), full_page=True)
    link = page.locator("a.front-link.on").first
    pid = link.get_attribute("data-program")
    link.click()  # a point opens its program
    page.wait_for_selector("#program-title")
    wait_until(page, f"document.querySelector('#program-title').textContent === 'Program {pid}'")
    assert ev["dialogs"] == [] and ev["errors"] == [], ev
    page.close()

    page, ev = open_page(front_browser, f"{front_dash.base}/run?id=live")
    page.wait_for_selector("#front-section circle.front-member")
    assert page.text_content("#front-size") == "1 / 2"
    with RunStore(front_store, create=False) as store:  # a child that dominates both
        initial = store.query("SELECT program_id FROM programs WHERE run_id = 'live' "
                              "AND is_initial = 1")[0][0]
        add_child(store, "live", 1, Child({EVIL: 0.9, "sec": 1.0}), parent_id=initial,
                  generation=2)
    wait_until(page, "document.querySelector('#front-size').textContent === '1 / 3'")
    assert page.text_content("#front-hv") == f"{0.9 * 9:.4f}"
    assert page.locator("circle.front-member").count() == 1
    assert ev["dialogs"] == [] and ev["errors"] == [], ev
    page.goto(f"{front_dash.base}/run?id=single")
    page.wait_for_selector("#calls-done")
    assert not page.is_visible("#front-section")
    assert ev["errors"] == [], ev
    page.close()
