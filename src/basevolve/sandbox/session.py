"""Trusted side of a call session: a sandboxed program whose functions an evaluator calls.

Why (issue 21): a task scored by calling the evolved program on instances (a FunSearch
heuristic on 5 sets of 100 items, a sort timed on fresh inputs, a regression model on
a data array) must keep the test harness *outside* the program, or an LLM rewriting
the program rewrites the harness too.  So the harness is a trusted evaluator in the
basevolve process, and the program runs in the sandbox, imported **once**, behind a
:class:`ProgramSession`::

    with pool.session(code, timeout_s=60, call_timeout_s=2) as program:
        if not program.alive:                  # it did not import: program.imported says why
            ...
        r = program.call("priority", item, bins, timeout_s=0.5)   # -> CallResult
        r.ok, r.value, r.error, r.wall_s, r.cpu_s, r.stdout

Rules:

* arguments are plain data (None, bool, int, float, complex, str, lists, tuples, dicts
  with str keys, numeric/bool numpy arrays), encoded like a program's return value
  (tagged JSON + ``.npy``, never pickle); the answer comes back the same way and is
  decoded here (:func:`basevolve.sandbox.codec.decode_result`);
* every call has its own time limit (``timeout_s``, default the session's
  ``call_timeout_s``), and all calls together with the import stay within the
  session's ``timeout_s``: a call never gets more than what is left;
* ``wall_s``/``cpu_s`` are measured by the sandbox worker (``_session.py``), not by the
  program; every answer must echo the call's random nonce, so a frame the program wrote
  on its own is refused;
* a call that times out, crashes the program, leaves processes behind or returns more
  than ``max_result_bytes`` ends the session: the program is killed, and later calls
  return at once with status ``crashed`` and the reason (the evaluator decides what
  that costs).  An exception or a non-plain value only fails that call.
"""

from __future__ import annotations

import json
import secrets
import signal
import threading
import time
from typing import Any

from basevolve.errors import TaskError
from basevolve.records import CallResult, ExecStatus, Isolation
from basevolve.sandbox._child import BadValue, encode, result_frame
from basevolve.sandbox.codec import (
    DecodeError,
    decode_result,
    memory_error,
    signal_name,
    with_drop_note,
)
from basevolve.sandbox.config import MAX_TIMEOUT_S, SandboxConfig
from basevolve.sandbox.handle import WorkerGone, WorkerHandle
from basevolve.sandbox.passthrough import request_env

BACKSTOP_GRACE_S = 10.0  # the worker kills at the call's limit; this only catches a wedged worker
IMPORT = "<import>"  # the ``fn`` of the CallResult that reports the import


def pack_call(fn: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """The packed arguments of one call (the same format a program's value comes back in).

    The encoder is the child's own (``_child.encode``), so both sides speak one format.
    """
    blobs: list[bytes] = []
    try:
        tree = encode({"args": list(args), "kwargs": kwargs}, blobs)
    except BadValue as exc:
        raise TaskError(f"the arguments of call {fn!r} must be plain data (numbers, str, "
                        f"lists, tuples, dicts with str keys, numeric numpy arrays): {exc}") from None
    return result_frame({"tree": tree, "blobs": [len(b) for b in blobs]}, blobs)


class ProgramSession:
    """One imported program in one sandbox worker; see the module docstring.

    Made by :meth:`basevolve.sandbox.SandboxPool.session`, which opens and closes it.
    Thread-safe (one call at a time).  Counters for the record: ``calls``, ``wall_s``,
    ``cpu_s`` (sums over calls), ``stdout``/``stderr`` (the import's and every call's
    output, capped at the pool's ``output_limit_bytes`` each).
    """

    def __init__(self, handle: WorkerHandle, config: SandboxConfig, code: str, *,
                 timeout_s: float, call_timeout_s: float | None = None,
                 seed: int | None = None) -> None:
        if not isinstance(code, str):
            raise TaskError(f"the program must be source text (str), got {type(code).__name__}")
        for name, value in (("timeout_s", timeout_s), ("call_timeout_s", call_timeout_s)):
            if value is None and name == "call_timeout_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    0 < value <= MAX_TIMEOUT_S):
                raise TaskError(f"session {name}={value!r} must be a number of seconds > 0 and"
                                f" at most {MAX_TIMEOUT_S:g}")
        self._handle, self._config, self._code, self._seed = handle, config, code, seed
        self.timeout_s = float(timeout_s)
        self.call_timeout_s = float(call_timeout_s or timeout_s)
        self.isolation: Isolation = handle.isolation
        self._lock = threading.Lock()
        self._deadline = time.monotonic() + self.timeout_s
        self.imported: CallResult | None = None
        self.ended_reason: str | None = None
        self.calls = 0
        self.wall_s = 0.0
        self.cpu_s = 0.0
        self._out: list[str] = []
        self._err: list[str] = []
        self.worker_lost = False

    # ------------------------------------------------------------------ state
    @property
    def alive(self) -> bool:
        """True while the program is imported and running (calls can reach it)."""
        return self.ended_reason is None and self.imported is not None

    @property
    def remaining_s(self) -> float:
        """Seconds left of the session's whole ``timeout_s``."""
        return max(self._deadline - time.monotonic(), 0.0)

    @property
    def stdout(self) -> str:
        return self._capped(self._out)

    @property
    def stderr(self) -> str:
        return self._capped(self._err)

    def _capped(self, parts: list[str]) -> str:
        text = "".join(parts)
        cap = self._config.output_limit_bytes
        return text if len(text) <= cap else text[:cap] + f"\n[... {len(text) - cap} more characters truncated]"

    # ------------------------------------------------------------------ protocol
    def open(self) -> CallResult:
        """Import the program (once); :attr:`imported` says how it went."""
        with self._lock:
            if self.imported is not None:
                return self.imported
            limit = max(self.remaining_s, 1e-3)
            request = {"op": "open", "code": self._code, "timeout_s": limit,
                       "env": request_env(self._config, self.isolation), "seed": self._seed,
                       "limits": self._config.rlimits(self.timeout_s),
                       "output_limit": self._config.output_limit_bytes,
                       "max_result_bytes": self._config.max_result_bytes}
            result = self._send(IMPORT, [json.dumps(request).encode()], limit, None, count=True)
            if result.ok:
                result = CallResult(IMPORT, ExecStatus.OK, stdout=result.stdout,
                                    stderr=result.stderr, wall_s=result.wall_s,
                                    cpu_s=result.cpu_s, isolation=self.isolation)
            else:
                self.ended_reason = f"the program did not import: {result.error}"
            self.imported = result
            return result

    def call(self, fn: str, /, *args: Any, timeout_s: float | None = None,
             **kwargs: Any) -> CallResult:
        """Call ``fn(*args, **kwargs)`` in the program; never raises for the program's faults.

        Raises :class:`~basevolve.errors.TaskError` only for the *evaluator's* mistakes
        (a bad function name, a non-plain argument, a bad time limit).
        """
        if not isinstance(fn, str) or not fn.isidentifier():
            raise TaskError(f"call: the function name must be an identifier, got {fn!r}")
        if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(
                timeout_s, int | float) or not 0 < timeout_s <= MAX_TIMEOUT_S):
            raise TaskError(f"call {fn!r}: timeout_s={timeout_s!r} must be a number of seconds"
                            f" > 0 and at most {MAX_TIMEOUT_S:g}")
        packed = pack_call(fn, args, kwargs)
        with self._lock:
            if self.imported is None:
                raise TaskError("call() before open(): use SandboxPool.session(...)")
            if not self.alive:
                return CallResult(fn, ExecStatus.CRASHED, error=self.ended_reason,
                                  isolation=self.isolation)
            left = self.remaining_s
            if left <= 0:
                self.ended_reason = (f"the evaluation used up its whole limit of "
                                     f"{self.timeout_s:g} s")
                return CallResult(fn, ExecStatus.TIMEOUT, error=self.ended_reason,
                                  isolation=self.isolation)
            limit = min(float(timeout_s or self.call_timeout_s), left)
            nonce = secrets.token_hex(8)
            request = {"op": "call", "fn": fn, "nonce": nonce, "timeout_s": limit,
                       "output_limit": self._config.output_limit_bytes,
                       "max_result_bytes": self._config.max_result_bytes}
            result = self._send(fn, [json.dumps(request).encode(), packed], limit, nonce)
            self.calls += 1
            self.wall_s += result.wall_s
            self.cpu_s += result.cpu_s
            return result

    def close(self) -> None:
        """End the program (idempotent); the worker is killed if it misbehaved."""
        with self._lock:
            if self._handle.dead or self.worker_lost:
                return
            try:
                header, _ = self._handle.exchange([b'{"op": "close"}'], BACKSTOP_GRACE_S)
            except WorkerGone:
                self.worker_lost = True
                return
            if header.get("leftovers"):
                self._handle.kill()  # something escaped: never reuse this worker
            if self.ended_reason is None:
                self.ended_reason = "the session was closed"

    def _send(self, fn: str, frames: list[bytes], limit: float, nonce: str | None,
              count: bool = False) -> CallResult:
        try:
            header, answer = self._handle.exchange(frames, limit + BACKSTOP_GRACE_S, count)
        except WorkerGone as exc:
            self.worker_lost = True
            self.ended_reason = f"the sandbox worker died or hung during call {fn!r} ({exc})"
            return CallResult(fn, ExecStatus.CRASHED, error=self.ended_reason,
                              isolation=self.isolation, wall_s=limit)
        result = self._interpret(fn, header, answer, limit, nonce)
        self._out.append(result.stdout)
        self._err.append(result.stderr)
        if header.get("ended") and self.ended_reason is None:
            what = "its import" if fn == IMPORT else f"call {fn!r}"
            self.ended_reason = f"the program stopped running in {what}: {result.error}"
        if (header.get("ended") and (header.get("timed_out") or header.get("signal")
                                      or header.get("leftovers")
                                      or header.get("result_overflow")
                                      or header.get("memory_exceeded"))):
            self._handle.kill()  # as after a one-shot evaluation: never reuse the worker
            self.worker_lost = True
        return result

    def _interpret(self, fn: str, header: dict[str, Any], answer: bytes, limit: float,
                   nonce: str | None) -> CallResult:
        """The worker's facts -> one CallResult (mirrors ``codec.interpret``)."""
        common = {
            "stdout": with_drop_note(str(header.get("stdout", "")), header.get("stdout_dropped", 0)),
            "stderr": with_drop_note(str(header.get("stderr", "")), header.get("stderr_dropped", 0)),
            "wall_s": float(header.get("wall_s", 0.0)),
            "cpu_s": float(header.get("cpu_s", 0.0)),
            "isolation": self.isolation,
        }
        what = "the import" if fn == IMPORT else f"call {fn!r}"
        if header.get("no_session"):
            return CallResult(fn, ExecStatus.CRASHED, error="the sandbox worker has no open"
                              " session (it was restarted)", **common)
        if header.get("memory_exceeded"):
            return CallResult(fn, ExecStatus.CRASHED, error=memory_error(header, what), **common)
        if header.get("timed_out"):
            return CallResult(fn, ExecStatus.TIMEOUT,
                              error=f"{what} exceeded its limit of {limit:g} s", **common)
        if header.get("signal") == signal.SIGXCPU:
            return CallResult(fn, ExecStatus.TIMEOUT,
                              error="exceeded the CPU-time limit (RLIMIT_CPU)", **common)
        if header.get("result_overflow"):
            return CallResult(fn, ExecStatus.BAD_OUTPUT, error=f"{what} returned more than the"
                              " sandbox's max_result_bytes", **common)
        if answer:
            try:
                status, value, error = decode_result(answer, nonce=nonce)
            except DecodeError as exc:
                self.ended_reason = f"{what}: protocol violation ({exc})"
                return CallResult(fn, ExecStatus.BAD_OUTPUT,
                                  error=f"answer could not be decoded: {exc}", **common)
            if header.get("leftovers"):
                return CallResult(fn, ExecStatus.ERROR, error=f"program left "
                                  f"{header['leftovers']} process(es) running after {what};"
                                  " they were killed", **common)
            return CallResult(fn, status, value=value, error=error, **common)
        sig = header.get("signal")
        if sig is not None:
            hint = " (out of memory or killed)" if sig == signal.SIGKILL else ""
            return CallResult(fn, ExecStatus.CRASHED,
                              error=f"program was killed by {signal_name(sig)}{hint} during {what}", **common)
        return CallResult(fn, ExecStatus.CRASHED, error=f"program exited with code "
                          f"{header.get('exit_code')} during {what}", **common)


__all__ = ["IMPORT", "ProgramSession", "pack_call"]
