"""The examples that reproduce the paper use its Thompson sampling (issue 23, item 1).

The paper's BaSE cites plain Thompson sampling (Section 5: Thompson 1933; Agrawal &
Goyal 2012); basevolve's ``thompson`` discounts old rewards (0.95), a variant of our own.
Every command or call in the README and the docs that runs Thompson sampling must name
``thompson_plain``, and the pages that list ``thompson`` must say it is ours.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `--allocator thompson`, allocator="thompson", allocator = ["ucb", "thompson"], ...
DISCOUNTED = re.compile(r"""(--allocator\s+thompson\b(?!_)|allocator\s*=\s*[^\n]*["']thompson["'])""")


def test_no_example_runs_the_discounted_variant():
    found = [f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
             for page in PAGES
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if DISCOUNTED.search(line)]
    assert not found, "examples running the discounted thompson:\n" + "\n".join(found)


def test_the_discounted_variant_is_documented_as_ours():
    table = (ROOT / "docs" / "allocators.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| `thompson` |"))
    assert "ours" in row and "0.95" in row
    plain = next(line for line in table.splitlines() if line.startswith("| `thompson_plain` |"))
    assert "paper" in plain
