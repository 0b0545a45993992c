"""Hostile programs against the call channel (issue 21, item 5): each is contained, fails
its call with a reason (or is measured correctly despite itself), leaves nothing running
and leaves the pool able to evaluate the next program."""

from __future__ import annotations

import os

from _sandbox_helpers import (
    HAVE_BWRAP,
    assert_healthy,
    needs_bwrap,
    needs_root,
    sandbox_uid_processes,
)

from basevolve.records import ExecStatus
from basevolve.sandbox import SandboxPool


def test_patched_clocks_cannot_fake_a_calls_time(pool: SandboxPool) -> None:
    """The program replaces every clock it can reach; the worker's measurement stands."""
    code = """
import time, resource, os
_real = time.monotonic
for name in ("perf_counter", "monotonic", "time", "process_time", "thread_time"):
    setattr(time, name, lambda: 0.0)
    setattr(time, name + "_ns", lambda: 0)
resource.getrusage = lambda who: resource.struct_rusage((0.0,) * 16)
os.times = lambda: os.times_result((0.0,) * 5)

def work(seconds):
    end = _real() + seconds
    while _real() < end:
        pass
    return time.perf_counter()
"""
    with pool.session(code, timeout_s=30, call_timeout_s=10) as program:
        r = program.call("work", 0.4)
    assert r.ok and r.value == 0.0  # the program's own clock says no time passed
    assert r.wall_s >= 0.4
    assert r.cpu_s >= 0.05  # a loaded two-core box may give it a fraction of a core


def test_a_frame_written_ahead_of_the_call_is_refused(pool: SandboxPool) -> None:
    """A program that writes an answer to the result channel before it is called (to be
    'fast') does not know the call's nonce: the answer is refused, the session ends."""
    code = """
import json, os, struct
def _frame():
    head = json.dumps({"status": "ok", "tree": ["i", 42], "blobs": [], "nonce": "guess"}).encode()
    body = b"BVR1" + struct.pack(">I", len(head)) + head
    return struct.pack(">I", len(body)) + body
os.write(3, _frame())  # at import: it becomes the 'answer' the import step reads first

def answer():
    os.write(3, _frame())
    return 0
"""
    with pool.session(code, timeout_s=30, call_timeout_s=5) as program:
        assert program.alive  # the forged frame was taken as the import's "ok"...
        r = program.call("answer")  # ...so this call reads the program's own frame first
        assert r.status is ExecStatus.BAD_OUTPUT and "nonce" in r.error
        assert not program.alive
        assert program.call("answer").status is ExecStatus.CRASHED
    assert_healthy(pool)


def test_lying_eq_and_other_objects_never_reach_the_evaluator(pool: SandboxPool) -> None:
    code = """
class Liar(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

class LyingList(list):
    def __eq__(self, other):
        return True

class Opaque:
    def __eq__(self, other):
        return True

def liar():
    return Liar(7)

def lying_list():
    return LyingList([1, 2])

def opaque():
    return Opaque()
"""
    with pool.session(code, timeout_s=30, call_timeout_s=5) as program:
        n = program.call("liar")
        assert n.ok and type(n.value) is int and n.value == 7 and n.value != 8
        lst = program.call("lying_list")
        assert lst.ok and type(lst.value) is list and lst.value != [3]
        o = program.call("opaque")
        assert o.status is ExecStatus.BAD_OUTPUT and "Opaque" in o.error


def test_megabytes_of_output_are_capped_per_call(pool: SandboxPool) -> None:
    code = """
import sys
def flood(mb):
    chunk = "x" * 1023 + "\\n"
    for _ in range(mb * 1024):
        sys.stdout.write(chunk)
    sys.stderr.write("e" * (mb << 20))
    return mb
"""
    limit = pool.config.output_limit_bytes
    with pool.session(code, timeout_s=60, call_timeout_s=30) as program:
        r = program.call("flood", 8)
        assert r.ok and r.value == 8
        assert len(r.stdout) < limit + 200 and "more bytes truncated" in r.stdout
        assert len(r.stderr) < limit + 200 and "more bytes truncated" in r.stderr
        assert program.call("flood", 0).stdout == ""  # the flood did not spill over
        assert len(program.stdout) <= limit + 200  # the session's record is capped too


def test_a_forked_helper_left_running_fails_the_call_and_is_killed(pool: SandboxPool) -> None:
    code = """
import os, time
def spawn():
    if os.fork() == 0:
        os.setsid()
        time.sleep(60)
        os._exit(0)
    return "spawned"

def waited():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "ok"

def returns_twice():
    os.fork()  # both processes return from here; only the one the worker started answers
    return os.getpid()
"""
    with pool.session(code, timeout_s=30, call_timeout_s=10) as program:
        assert program.call("waited").value == "ok"  # a child it waits for is fine
        twice = program.call("returns_twice")
        assert twice.status is ExecStatus.ERROR and "left 1 process(es) running" in twice.error
        assert not program.alive
    with pool.session(code, timeout_s=30, call_timeout_s=10) as program:
        r = program.call("spawn")
        assert r.status is ExecStatus.ERROR and "process(es) running" in r.error
        assert program.call("waited").status is ExecStatus.CRASHED
    if pool.uid_range is not None:
        assert sandbox_uid_processes(pool.uid_range) == []
    assert_healthy(pool)


def test_a_call_that_kills_its_process_is_a_crash(pool: SandboxPool) -> None:
    code = "import os, signal\ndef die():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    with pool.session(code, timeout_s=30, call_timeout_s=5) as program:
        r = program.call("die")
        assert r.status is ExecStatus.CRASHED and "SIGKILL" in r.error
        assert not program.alive
    assert_healthy(pool)


@needs_bwrap
@needs_root
def test_evaluator_data_on_the_host_is_invisible(pool: SandboxPool, tmp_path) -> None:
    """The trusted side's instances and expected answers never enter the sandbox: a
    program that knows their host path (and the evaluator's own file) finds nothing."""
    assert HAVE_BWRAP and pool.isolation.value == "bwrap"
    answers = tmp_path / "expected_answers.json"
    answers.write_text('{"secret": 1234}')
    code = """
import os
def peek(paths):
    found = {}
    for p in paths:
        try:
            with open(p) as fh:
                found[p] = fh.read()
        except OSError as exc:
            found[p] = type(exc).__name__
    found["parent_environ"] = os.path.exists(f"/proc/{os.getppid()}/environ") and "visible"
    return found
"""
    here = os.path.abspath(__file__)
    with pool.session(code, timeout_s=30) as program:
        r = program.call("peek", [str(answers), here, "/proc/1/environ"])
    assert r.ok, r
    assert r.value[str(answers)] in ("FileNotFoundError", "PermissionError")
    assert r.value[here] in ("FileNotFoundError", "PermissionError")
    assert "secret" not in repr(r.value) and "OPENAI" not in repr(r.value)


def test_lone_surrogates_in_a_calls_text_are_made_storable(pool: SandboxPool) -> None:
    """Issue 22, items 1-2, on the call channel: an exception message, printed text and a
    returned string holding a lone surrogate come back without crashing anything."""
    code = (
        "import os, sys\n"
        "def weird():\n"
        "    os.write(1, b'out \\xed\\xa0\\x80 \\xff\\n')  # a surrogate's bytes, invalid UTF-8\n"
        "    sys.stderr.write('err \\udfff\\n')  # stderr escapes it (backslashreplace)\n"
        "    return 'value \\ud800'\n"
        "def raise_it():\n"
        "    raise ValueError('bad \\ud800 input')\n"
    )
    with pool.session(code, timeout_s=30) as program:
        r = program.call("weird")
        e = program.call("raise_it")
    assert r.ok
    for text in (r.stdout, r.stderr, e.error, e.stderr):
        text.encode("utf-8")  # storable: no lone surrogate left
    assert "\ufffd" in e.error or "?" in e.error
    assert isinstance(r.value, str)  # program data stays data; the store cleans on write
