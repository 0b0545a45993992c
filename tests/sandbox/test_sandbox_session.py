"""Call sessions (issue 21): a program imported once, its functions called many times
by trusted code with plain-data arguments, each call with its own limit and timing."""

from __future__ import annotations

import numpy as np
import pytest
from _sandbox_helpers import assert_healthy

from basevolve.errors import TaskError
from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxPool

PROGRAM = """
import time
IMPORTS = [time.monotonic()]  # one entry per import of the module

def add(a, b=1):
    return a + b

def echo(*args, **kwargs):
    return {"args": list(args), "kwargs": kwargs}

def imports():
    return len(IMPORTS)

def shout(text):
    print("said:", text)
    return text.upper()

def boom():
    raise ValueError("bad input 42")

def leave():
    raise SystemExit(3)

def sleepy(t):
    time.sleep(t)
    return t

def spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n

def not_plain():
    return object()

def double(a):
    return a * 2

NOT_A_FUNCTION = 3
"""


def test_arguments_and_values_are_plain_data_both_ways(pool: SandboxPool) -> None:
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    with pool.session(PROGRAM, timeout_s=30, call_timeout_s=5) as program:
        assert program.alive and program.imported.ok
        assert program.call("add", 2, b=5).value == 7
        r = program.call("echo", 1, 2.5, "x", None, True, (1, 2), [3], {"k": [1]}, 1 + 2j, z="q")
        assert r.ok, r
        assert r.value == {"args": [1, 2.5, "x", None, True, (1, 2), [3], {"k": [1]}, 1 + 2j],
                           "kwargs": {"z": "q"}}  # a tuple stays a tuple, a list a list
        out = program.call("double", arr)
        assert out.ok and isinstance(out.value, np.ndarray)
        assert out.value.dtype == np.float32 and out.value.shape == (3, 4)
        np.testing.assert_array_equal(out.value, arr * 2)
        assert program.call("double", np.array([True, False])).value.dtype == np.int64


def test_many_calls_share_one_import(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=60, call_timeout_s=5) as program:
        values = [program.call("add", i).value for i in range(300)]
        assert values == [i + 1 for i in range(300)]
        assert program.call("imports").value == 1
        assert program.calls == 301


def test_exceptions_output_and_missing_functions_come_back_as_text(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=30, call_timeout_s=5) as program:
        r = program.call("boom")
        assert r.status is ExecStatus.ERROR and r.error == "ValueError: bad input 42"
        assert "Traceback" in r.stderr and "boom" in r.stderr
        assert program.alive  # an exception fails the call, not the session
        s = program.call("shout", "hi")
        assert s.value == "HI" and s.stdout == "said: hi\n"  # only this call's output
        assert program.call("add", 1).stdout == ""
        m = program.call("missing")
        assert m.status is ExecStatus.ERROR
        assert m.error == "function 'missing' is not defined by the program"
        n = program.call("NOT_A_FUNCTION")
        assert n.status is ExecStatus.ERROR and "is a int, not a function" in n.error
        e = program.call("leave")
        assert e.status is ExecStatus.ERROR and "sys.exit(3)" in e.error
        b = program.call("not_plain")
        assert b.status is ExecStatus.BAD_OUTPUT and "not plain data" in b.error
        assert program.alive and program.call("add", 1).value == 2
        assert "said: hi" in program.stdout  # the session's whole output, for the record


def test_a_call_past_its_limit_ends_the_session(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=30, call_timeout_s=5) as program:
        r = program.call("sleepy", 30, timeout_s=0.5)
        assert r.status is ExecStatus.TIMEOUT
        assert r.error == "call 'sleepy' exceeded its limit of 0.5 s"
        assert 0.5 <= r.wall_s < 5
        assert not program.alive
        later = program.call("add", 1)
        assert later.status is ExecStatus.CRASHED
        assert "stopped running in call 'sleepy'" in later.error
    assert_healthy(pool)


def test_the_session_limit_bounds_all_calls_together(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=2.0, call_timeout_s=10) as program:
        r = program.call("sleepy", 30)  # its own limit (10 s) is cut to what is left
        assert r.status is ExecStatus.TIMEOUT and r.wall_s < 2.5
        assert program.call("add", 1).status is ExecStatus.CRASHED


def test_import_failures_say_why(pool: SandboxPool) -> None:
    cases = {
        "def broken(:\n": "SyntaxError",
        "raise RuntimeError('no import for you')\n": "RuntimeError: no import for you",
        "import sys\nsys.exit(4)\n": "sys.exit(4)",
        "import time\ntime.sleep(60)\n": "the import exceeded its limit",
    }
    for code, reason in cases.items():
        with pool.session(code, timeout_s=1.0) as program:
            assert not program.alive
            assert reason in program.imported.error, program.imported
            r = program.call("anything")
            assert r.status is ExecStatus.CRASHED and "did not import" in r.error
    assert_healthy(pool)


def test_cpu_and_wall_time_are_measured(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=30, call_timeout_s=10) as program:
        busy = program.call("spin", 0.3)
        idle = program.call("sleepy", 0.3)
    assert busy.ok and idle.ok
    assert busy.wall_s >= 0.3 and idle.wall_s >= 0.3
    assert busy.cpu_s >= 0.05  # a loaded box may give it a fraction of a core
    assert idle.cpu_s < 0.1 < busy.cpu_s or busy.cpu_s > 3 * idle.cpu_s


def test_evaluator_mistakes_raise_task_errors(pool: SandboxPool) -> None:
    with pool.session(PROGRAM, timeout_s=30) as program:
        with pytest.raises(TaskError, match="plain data"):
            program.call("echo", object())
        with pytest.raises(TaskError, match="plain data"):
            program.call("echo", b"bytes")
        with pytest.raises(TaskError, match="identifier"):
            program.call("not a name")
        with pytest.raises(TaskError, match="timeout_s"):
            program.call("add", 1, timeout_s=-1)
        assert program.call("add", 1).value == 2  # the session is untouched
    with pytest.raises(TaskError, match="timeout_s"):
        with pool.session(PROGRAM, timeout_s=0):
            pass


def test_the_one_shot_path_is_the_special_case_of_one_call(pool: SandboxPool) -> None:
    """entry() tasks keep their one-fork path; the same program answers the same value
    through a session call with no arguments."""
    code = "import numpy as np\ndef main():\n    return {'x': np.arange(3), 'y': (1, 'a')}\n"
    one = pool.run(code, "main", timeout_s=10)
    with pool.session(code, timeout_s=10) as program:
        call = program.call("main")
    assert one.status is call.status is ExecStatus.OK
    assert one.value["y"] == call.value["y"] == (1, "a")
    np.testing.assert_array_equal(one.value["x"], call.value["x"])
