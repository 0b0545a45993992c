"""Solution pictures (issue 4, part 5): a real PNG per task, also for invalid solutions."""

from __future__ import annotations

import numpy as np
import pytest

from basevolve.errors import TaskError
from basevolve.tasks import load_task
from basevolve.viz import draw_solution
from conftest import grid_packing, run_initial

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.parametrize("name", ["circle_packing", "min_max_distance", "heilbronn_triangle"])
def test_initial_program_pictures(tmp_path, name):
    out = draw_solution(load_task(name), run_initial(name), tmp_path / "sub" / f"{name}.png")
    width, height = _png_size(out)
    assert width >= 600 and height >= 600


def test_invalid_solution_still_drawn(tmp_path):
    centers, radii = grid_packing()
    radii[0] = 0.3  # overlaps its neighbours
    out = tmp_path / "cp.png"
    load_task("circle_packing").draw((centers, radii, 0), out)
    assert _png_size(out)[0] >= 600


def test_unparseable_value_is_a_task_error(tmp_path):
    with pytest.raises(TaskError, match="cannot draw"):
        load_task("min_max_distance").draw(np.zeros((3, 2)), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
