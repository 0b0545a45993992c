"""A user task whose program is a folder (issue 31, item 3; basevolve's tests): main.py
imports util.py and reads table.json beside it; the scorer rewards a larger total."""

from basevolve.tasks.base import ScoreResult
from basevolve.tasks.folder_program import FolderTask


class FolderSum(FolderTask):
    name = "folder_sum"
    entry = "solve"
    program_folder = "program"
    main_module = "main"
    instructions = "Make solve() return a larger number; it must stay at most 100."
    timeout_s = 30.0

    def score_value(self, value, *, tol=1e-6):
        if not isinstance(value, int | float) or isinstance(value, bool) or value > 100:
            return ScoreResult(0.0, False, error=f"bad value {value!r}")
        return ScoreResult(float(value) / 100.0, True)
