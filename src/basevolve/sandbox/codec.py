"""Trusted side of the sandbox boundary: turn a worker's raw report into an ExecResult.

A program must never influence its score except through the data it returns (issue 2,
section 2), so this module only ever runs ``json.loads`` and
``numpy.load(allow_pickle=False)`` on bytes a program produced - never ``pickle``.  The
value arrives as a tagged tree (``[tag, payload]`` per node, see ``_worker.encode``)
whose array leaves point into ``.npy`` blobs; anything malformed is ``bad_output``.
"""

from __future__ import annotations

import io
import json
import signal
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from basevolve.records import ExecResult, ExecStatus, Isolation

MAGIC = b"BVR1"
MAX_DEPTH = 64
# Largest JSON part (the tagged tree of plain Python values) the parent will parse.
# Why separate from max_result_bytes: parsed JSON costs ~15x its size in Python objects
# (a 60 MB list of ints took ~1 GB in the trusted parent), while .npy blobs cost their
# size.  8 MiB is ~300k tagged numbers; bigger data must come back as numpy arrays.
MAX_TREE_BYTES = 8 * 1024 * 1024
_ARRAY_KINDS = frozenset("biufc")


class DecodeError(ValueError):
    """The child's result bytes are not a well-formed plain-data value."""


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _load_npy(blob: bytes) -> Any:
    """``np.load`` of a ``.npy`` blob, retried once on ``SystemError``.

    Why: numpy parses the ``.npy`` header with :func:`ast.literal_eval`, and CPython
    3.11's AST depth counter is not thread-safe (python/cpython#106905): with results
    decoded in worker threads while the event loop parses replies, ``ast`` can raise a
    spurious "AST constructor recursion depth mismatch" that says nothing about the bytes
    (seen once in 52,800 evaluations of the example-report sweep, scoring a valid program
    0).  The reply parser retries its ``ast.parse`` for the same reason.
    """
    try:
        return np.load(io.BytesIO(blob), allow_pickle=False)
    except SystemError:
        return np.load(io.BytesIO(blob), allow_pickle=False)


def _decode_array(blob: bytes) -> np.ndarray:
    try:
        arr = _load_npy(blob)
    except Exception as exc:  # numpy raises several types on malformed .npy bytes
        raise DecodeError(
            f"array blob is not a valid .npy without pickles ({type(exc).__name__})"
        ) from exc
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in _ARRAY_KINDS or arr.dtype.fields:
        raise DecodeError("array blob does not hold a numeric or bool array")
    return arr


class _TreeDecoder:
    """Rebuild the value from the tagged tree; each tag has one handler (no if-chains)."""

    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs
        self.handlers: dict[str, Callable[[Any, int], Any]] = {
            "n": lambda p, d: None,
            "b": lambda p, d: self._typed(p, bool),
            "i": lambda p, d: self._typed(p, int),
            "f": lambda p, d: float(self._typed(p, (int, float))),
            "c": lambda p, d: complex(
                *[float(self._typed(x, (int, float))) for x in self._pair(p)]
            ),
            "s": lambda p, d: self._typed(p, str),
            "l": lambda p, d: [self.decode(x, d + 1) for x in self._typed(p, list)],
            "t": lambda p, d: tuple(self.decode(x, d + 1) for x in self._typed(p, list)),
            "d": lambda p, d: {
                self._typed(k, str): self.decode(v, d + 1)
                for k, v in map(self._pair, self._typed(p, list))
            },
            "a": lambda p, d: _decode_array(self.blobs[self._index(p)]),
        }

    @staticmethod
    def _typed(payload: Any, kinds: type | tuple[type, ...]) -> Any:
        if isinstance(payload, bool) and kinds is not bool:
            raise DecodeError("unexpected bool in the value tree")
        if not isinstance(payload, kinds):
            raise DecodeError(f"malformed value tree ({type(payload).__name__} payload)")
        return payload

    @staticmethod
    def _pair(payload: Any) -> list:
        if not isinstance(payload, list) or len(payload) != 2:
            raise DecodeError("malformed value tree (expected a pair)")
        return payload

    def _index(self, payload: Any) -> int:
        idx = self._typed(payload, int)
        if not 0 <= idx < len(self.blobs):
            raise DecodeError(f"array index {idx} out of range")
        return idx

    def decode(self, node: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise DecodeError(f"value nested deeper than {MAX_DEPTH} levels")
        tag, payload = self._pair(node)
        handler = self.handlers.get(tag) if isinstance(tag, str) else None
        if handler is None:
            raise DecodeError(f"unknown node tag {tag!r} in the value tree")
        return handler(payload, depth)


def decode_result(data: bytes, *, nonce: str | None = None) -> tuple[ExecStatus, Any, str | None]:
    """Decode the child's result frame -> (status, value, error).

    ``nonce``: the answer to a session call must echo the call's nonce; a frame the
    program wrote to the result channel on its own (say, ahead of the call, to fake a
    fast answer) does not know it and is refused.
    """
    if len(data) < 8 or data[:4] != MAGIC:
        raise DecodeError("result frame is missing or truncated")
    (head_len,) = struct.unpack(">I", data[4:8])
    if head_len > MAX_TREE_BYTES:
        raise DecodeError(
            f"returned value holds too many plain Python items ({head_len} bytes of JSON,"
            f" limit {MAX_TREE_BYTES}); return a numpy array instead of long lists"
        )
    try:
        header = json.loads(data[8 : 8 + head_len])
    except (ValueError, RecursionError) as exc:
        raise DecodeError("result header is not valid JSON") from exc
    if not isinstance(header, dict):
        raise DecodeError("result header is not an object")
    if nonce is not None and header.get("nonce") != nonce:
        raise DecodeError("the answer does not belong to this call (wrong nonce): the program"
                          " wrote to the result channel itself")
    status = header.get("status")
    if status in (ExecStatus.ERROR, ExecStatus.BAD_OUTPUT):
        return ExecStatus(status), None, str(header.get("error") or "unspecified error")[:4000]
    if status != ExecStatus.OK:
        raise DecodeError(f"unknown result status {status!r}")
    sizes = header.get("blobs")
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise DecodeError("malformed blob table")
    blobs, pos = [], 8 + head_len
    for size in sizes:
        blobs.append(data[pos : pos + size])
        pos += size
    if pos != len(data):
        raise DecodeError("blob table does not match the result length")
    try:
        value = _TreeDecoder(blobs).decode(header.get("tree"))
    except DecodeError:
        raise
    except RecursionError as exc:
        raise DecodeError("value tree too deep") from exc
    except OverflowError as exc:  # e.g. ["f", 10**400]: JSON ints are unbounded, floats not
        raise DecodeError(f"number out of range for a float in the value tree ({exc})") from exc
    except (TypeError, ValueError) as exc:  # any other malformed node: bad output, never a crash
        raise DecodeError(f"malformed value tree ({type(exc).__name__}: {exc})") from exc
    return ExecStatus.OK, value, None


def interpret(
    header: dict[str, Any], result: bytes, *, timeout_s: float, isolation: Isolation
) -> ExecResult:
    """Map the worker's facts (exit status, timeout, result bytes) to one ExecResult."""
    common = {
        "stdout": with_drop_note(header.get("stdout", ""), header.get("stdout_dropped", 0)),
        "stderr": with_drop_note(header.get("stderr", ""), header.get("stderr_dropped", 0)),
        "isolation": isolation,
        "seconds": float(header.get("seconds", 0.0)),
    }
    sig = header.get("signal")
    if header.get("memory_exceeded"):
        return ExecResult(ExecStatus.CRASHED, error=memory_error(header), **common)
    if header.get("timed_out"):
        return ExecResult(
            ExecStatus.TIMEOUT, error=f"exceeded the wall-clock limit of {timeout_s:g} s", **common
        )
    if sig == signal.SIGXCPU:
        return ExecResult(
            ExecStatus.TIMEOUT, error="exceeded the CPU-time limit (RLIMIT_CPU)", **common
        )
    if header.get("result_overflow"):
        return ExecResult(
            ExecStatus.BAD_OUTPUT,
            error="returned value is larger than the sandbox's max_result_bytes",
            **common,
        )
    if result:
        try:
            status, value, error = decode_result(result)
        except DecodeError as exc:
            return ExecResult(
                ExecStatus.BAD_OUTPUT, error=f"result could not be decoded: {exc}", **common
            )
        leftovers = header.get("leftovers") or 0
        if status is ExecStatus.OK and leftovers:
            # A program that leaves processes behind (a daemon) is misbehaving even if it
            # returned a value: it is killed and the evaluation does not count.
            return ExecResult(
                ExecStatus.ERROR,
                error=f"program left {leftovers} process(es) running after it returned; they were killed",
                **common,
            )
        return ExecResult(status, value=value, error=error, **common)
    if sig is not None:
        hint = " (out of memory or killed)" if sig == signal.SIGKILL else ""
        return ExecResult(
            ExecStatus.CRASHED,
            error=f"program was killed by {signal_name(sig)}{hint} before returning",
            **common,
        )
    code = header.get("exit_code")
    return ExecResult(
        ExecStatus.CRASHED,
        error=f"program exited with code {code} before returning a value",
        **common,
    )


def memory_error(header: dict[str, Any], what: str = "the evaluation") -> str:
    """The reason of an evaluation stopped for using more than ``memory_mb`` in total
    (issue 22, item 17): the worker's watcher or the slot's cgroup said so."""
    limit = header.get("memory_limit_mb")
    used = header.get("memory_used_mb")
    if header.get("memory_by") == "cgroup":
        how = "the kernel's OOM killer fired in the slot's memory cgroup"
        if isinstance(used, int | float):
            how += f", whose limit of {used:g} MiB is memory_mb plus the warm worker"
    else:
        how = "the sandbox worker stopped it"
        if isinstance(used, int | float):
            how += f" at {used:g} MiB, summed over its processes"
    return (f"out of memory: the processes of {what} together used more than "
            f"memory_mb={limit} MiB ({how})")


def with_drop_note(text: str, dropped: int) -> str:
    return f"{text}\n[... {dropped} more bytes truncated]" if dropped else text
