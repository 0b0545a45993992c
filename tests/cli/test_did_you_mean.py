"""Issue 37, item 8: a mistyped command or flag gets one line with the closest spelling."""

from __future__ import annotations

import pytest

from basevolve.cli import main


@pytest.mark.parametrize(("argv", "hint"), [
    (["rnu", "--task", "x"], "; did you mean 'run'?"),
    (["run", "--task", "circle_packing", "--budgte", "4"], "; did you mean --budget?"),
    (["run", "--task", "circle_packing", "--budget=4", "--deph=2"], "; did you mean --depth?"),
    (["sweep", "x.toml", "--store", "s", "--executr", "ray"], "; did you mean --executor?"),
    (["tasks", "--jsno"], "; did you mean --json?"),
])
def test_mistyped_names_get_a_suggestion(capsys, argv, hint):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("basevolve: error: ")
    assert hint in err, err


def test_nothing_close_gets_no_suggestion(capsys):
    with pytest.raises(SystemExit):
        main(["tasks", "--zzzzzzzz"])
    assert "did you mean" not in capsys.readouterr().err
