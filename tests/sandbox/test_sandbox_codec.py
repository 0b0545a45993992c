"""The trusted decoder never unpickles and rejects malformed result frames."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from basevolve.records import ExecStatus, Isolation
from basevolve.sandbox.codec import DecodeError, decode_result, interpret


def frame(header: object, blobs: tuple[bytes, ...] = ()) -> bytes:
    head = json.dumps(header).encode()
    return b"BVR1" + struct.pack(">I", len(head)) + head + b"".join(blobs)


def npy(arr: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


def test_decodes_tagged_tree_with_arrays() -> None:
    blob = npy(np.arange(4.0))
    status, value, error = decode_result(
        frame(
            {
                "status": "ok",
                "tree": ["t", [["a", 0], ["f", 1.5], ["n", None]]],
                "blobs": [len(blob)],
            },
            (blob,),
        )
    )
    assert status is ExecStatus.OK and error is None
    assert value[0].tolist() == [0.0, 1.0, 2.0, 3.0] and value[1:] == (1.5, None)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "missing"),
        (b"XXXX\x00\x00\x00\x00", "missing"),
        (frame({"status": "ok", "tree": ["x", 1], "blobs": []}), "unknown node tag"),
        (frame({"status": "ok", "tree": ["a", 3], "blobs": []}), "out of range"),
        (frame({"status": "ok", "tree": ["i", "12"], "blobs": []}), "malformed"),
        (frame({"status": "ok", "tree": ["d", [[1, ["n", None]]]], "blobs": []}), "malformed"),
        (frame({"status": "ok", "tree": ["n", None], "blobs": [5]}), "does not match"),
        (frame({"status": "maybe"}), "unknown result status"),
        (frame([1, 2]), "not an object"),
        # Regression: these raised OverflowError out of the decoder, which `basevolve run`
        # did not catch, so one forged result frame ended the whole run.
        (frame({"status": "ok", "tree": ["f", 10**400], "blobs": []}), "number out of range"),
        (frame({"status": "ok", "tree": ["c", [0, 10**400]], "blobs": []}), "number out of range"),
    ],
)
def test_malformed_frames_are_rejected(data: bytes, match: str) -> None:
    with pytest.raises(DecodeError, match=match):
        decode_result(data)


def test_oversized_value_tree_is_refused_before_parsing() -> None:
    """Regression: a 60 MB tagged tree (a list of millions of ints, under
    max_result_bytes) took ~1 GB in the trusted parent once json-parsed; several
    evaluations at once could exhaust the host.  Arrays travel as compact .npy blobs."""
    from basevolve.sandbox.codec import MAX_TREE_BYTES

    big = frame({"status": "ok", "tree": ["l", [["i", 0]] * (MAX_TREE_BYTES // 8)], "blobs": []})
    with pytest.raises(DecodeError, match="return a numpy array"):
        decode_result(big)
    blob = npy(np.zeros(MAX_TREE_BYTES // 8 + 1))  # the same count as an array is fine
    _, value, _ = decode_result(
        frame({"status": "ok", "tree": ["a", 0], "blobs": [len(blob)]}, (blob,))
    )
    assert value.shape == (MAX_TREE_BYTES // 8 + 1,)


def test_pickled_object_array_is_never_loaded() -> None:
    blob = npy(np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DecodeError, match="without pickles"):
        decode_result(frame({"status": "ok", "tree": ["a", 0], "blobs": [len(blob)]}, (blob,)))


def test_interpret_maps_worker_facts_to_statuses() -> None:
    base = {"stdout": "x" * 10, "stdout_dropped": 5, "stderr": "", "seconds": 0.1}
    r = interpret({**base, "timed_out": True}, b"", timeout_s=2, isolation=Isolation.RLIMITS)
    assert (
        r.status is ExecStatus.TIMEOUT and "2 s" in r.error and "5 more bytes truncated" in r.stdout
    )
    assert (
        interpret({**base, "signal": 24}, b"", timeout_s=2, isolation=Isolation.BWRAP).status
        is ExecStatus.TIMEOUT
    )
    r = interpret({**base, "signal": 9}, b"", timeout_s=2, isolation=Isolation.BWRAP)
    assert r.status is ExecStatus.CRASHED and "SIGKILL" in r.error
    r = interpret({**base, "exit_code": 3}, b"", timeout_s=2, isolation=Isolation.BWRAP)
    assert r.status is ExecStatus.CRASHED and "code 3" in r.error
    ok = frame({"status": "ok", "tree": ["i", 1], "blobs": []})
    assert (
        interpret({**base, "exit_code": 0}, ok, timeout_s=2, isolation=Isolation.BWRAP).value == 1
    )
    r = interpret(
        {**base, "exit_code": 0, "leftovers": 2}, ok, timeout_s=2, isolation=Isolation.BWRAP
    )
    assert r.status is ExecStatus.ERROR and "left 2 process" in r.error
    r = interpret({**base, "result_overflow": True}, b"", timeout_s=2, isolation=Isolation.BWRAP)
    assert r.status is ExecStatus.BAD_OUTPUT and "max_result_bytes" in r.error
