"""Sandbox child side: framing helpers, the plain-data encoder and the forked child.

Loaded by ``_worker.py`` from its own directory (inside the sandbox basevolve is not
importable), so it is self-contained: standard library only, numpy when pre-imported.
The program runs as a module named ``program``, so an ``if __name__ == "__main__":``
block does not run.  Its value is written to fd 3 as ``b"BVR1"`` + 4-byte header length
+ JSON header (a tagged tree: every node ``[tag, payload]``, so tuples survive and user
data can never be mistaken for a tag) + concatenated ``.npy`` blobs saved with
``allow_pickle=False``; ``basevolve.sandbox.codec`` decodes it in the trusted parent.
"""

from __future__ import annotations

import ctypes
import fcntl
import io
import json
import linecache
import os
import resource
import signal
import struct
import sys
import traceback
import types
from collections.abc import Sequence
from typing import Any

MODULE_NAME = "program"
PROGRAM_FILE = "program.py"
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
MAX_DEPTH = 64
RESULT_FD = 3
KEYCTL_NR = {"x86_64": 250, "aarch64": 219, "riscv64": 219}  # the keyctl(2) syscall
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 7, 22
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5
REQUEST_FD = 4


def read_exact(fd: int, n: int) -> bytes | None:
    chunks = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes | None:
    head = read_exact(fd, 4)
    if head is None:
        return None
    return read_exact(fd, struct.unpack(">I", head)[0])


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_frame(fd: int, data: bytes) -> None:
    write_all(fd, struct.pack(">I", len(data)) + data)


# ---------------------------------------------------------------- child side


class BadValue(Exception):
    pass


def encode(value: Any, blobs: list[bytes], depth: int = 0) -> list[Any]:
    """Tagged tree: every node is [tag, payload]; unambiguous, tuples survive."""
    if depth > MAX_DEPTH:
        raise BadValue(f"returned value is nested deeper than {MAX_DEPTH} levels")
    np = sys.modules.get("numpy")
    if value is None:
        return ["n", None]
    if isinstance(value, bool):
        return ["b", bool(value)]
    if np is not None and isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc" or value.dtype.fields is not None:
            raise BadValue(
                f"returned a numpy array of dtype {value.dtype}; only numeric or bool arrays are plain data"
            )
        buf = io.BytesIO()
        # np.asarray, not ascontiguousarray: the latter turns a 0-d array into shape (1,),
        # and the scorer must see exactly the shape the program returned.
        np.save(buf, np.asarray(value), allow_pickle=False)
        blobs.append(buf.getvalue())
        return ["a", len(blobs) - 1]
    if np is not None and isinstance(value, np.generic):
        if value.dtype.kind not in "biufc":
            raise BadValue(f"returned a numpy scalar of dtype {value.dtype}; not plain data")
        return encode(value.item(), blobs, depth + 1)
    if isinstance(value, int):
        return ["i", int(value)]
    if isinstance(value, float):
        return ["f", float(value)]
    if isinstance(value, complex):
        return ["c", [value.real, value.imag]]
    if isinstance(value, str):
        return ["s", str(value)]
    if isinstance(value, (list, tuple)):
        tag = "t" if isinstance(value, tuple) else "l"
        return [tag, [encode(v, blobs, depth + 1) for v in value]]
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise BadValue(
                    f"returned a dict with a key of type {type(k).__name__}; keys must be str"
                )
            items.append([str(k), encode(v, blobs, depth + 1)])
        return ["d", items]
    raise BadValue(f"returned an object of type {type(value).__name__}, which is not plain data")


def result_frame(header: dict[str, Any], blobs: Sequence[bytes] = ()) -> bytes:
    head = json.dumps(header).encode()
    return b"BVR1" + struct.pack(">I", len(head)) + head + b"".join(blobs)


def apply_limits(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        res = getattr(resource, name)
        resource.setrlimit(res, (value, value))


def forget_keys(libc: Any) -> None:
    """Empty the kernel keyrings this uid shares with earlier evaluations.

    Why: the user, user-session and persistent keyrings belong to the uid, not to a
    process, and the session keyring is inherited from the worker; keys a program adds
    there outlive it (even its pool), a channel to later evaluations with the same uid.
    Called right after the uid drop, so only the sandbox uid's own keyrings are touched
    (never those of a user running basevolve without root).  Best effort: an
    architecture without a known ``keyctl`` number or a kernel without keyrings skips it.
    """
    nr = KEYCTL_NR.get(os.uname().machine)
    if nr is None:
        return
    syscall = libc.syscall
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        syscall(nr, ctypes.c_long(KEYCTL_CLEAR), ctypes.c_long(ring))
    syscall(nr, ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), None)  # a fresh, empty one
    persistent = syscall(
        nr,
        ctypes.c_long(KEYCTL_GET_PERSISTENT),
        ctypes.c_long(-1),
        ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
    )
    if persistent > 0:
        syscall(nr, ctypes.c_long(KEYCTL_CLEAR), ctypes.c_long(persistent))


def child_main(
    cfg: dict[str, Any], libc: Any, workdir: str, req_r: int, out_w: int, err_w: int, res_w: int
) -> None:
    """Runs in a pre-forked child: prepare, wait for the request, then run the program."""
    os.setsid()
    # Move the pipe ends to high fds first so dup2 below never clobbers them.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 200) for fd in (out_w, err_w, res_w, req_r)]
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(high[0], 1)
    os.dup2(high[1], 2)
    os.dup2(high[2], RESULT_FD)
    os.dup2(high[3], REQUEST_FD)
    os.closerange(REQUEST_FD + 1, 1 << 16)  # protocol pipes, pidfds, everything else
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    guard = sys.modules["_basevolve_sandbox_guard"]  # loaded by _worker.py (_guard.py)
    guard.oom_first()
    if cfg.get("unshare_net"):
        libc.unshare(CLONE_NEWNET | CLONE_NEWIPC)  # best effort in the rlimits fallback
    elif cfg.get("unshare_ipc"):
        # bwrap's IPC namespace belongs to the whole worker: without a fresh one per child,
        # a SysV segment or message queue one program creates is readable by every later
        # evaluation of the worker.  Done in the spare, so it costs no evaluation time.
        libc.unshare(CLONE_NEWIPC)
    os.chdir(workdir)
    raw = read_frame(REQUEST_FD)  # the worker forked us ahead of time; block until needed
    if raw is None:
        os._exit(0)
    req = json.loads(raw)
    if req.get("op") != "open":  # a call session keeps reading its calls from it
        os.close(REQUEST_FD)
    sys.modules["_basevolve_sandbox_prepare"].prepare(req, workdir)  # env, fresh seeds
    apply_limits(req["limits"])
    uid, gid = cfg.get("uid"), cfg.get("gid")
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        forget_keys(libc)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    guard.lock(libc, cfg, workdir)  # Landlock (fallback) and the seccomp filter
    sys.argv = [PROGRAM_FILE]
    me = os.getpid()
    if req.get("op") == "open":
        serve(req["code"], me)  # a call session: never returns

    def finish(header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        before_answer(me)
        try:
            write_all(RESULT_FD, result_frame(header, blobs))
            # Closing the pipes before _exit lets the worker answer without waiting for
            # the kernel to tear this (large, forked) address space down.
            os.closerange(0, RESULT_FD + 1)
        finally:
            os._exit(0)

    try:
        mod = load_program(req["code"])
    except BaseException as exc:  # the program's own failure, reported with its reason
        finish(failure(exc))
    finish(*run_function(mod, req["entry"], (), {}, me, session=False))


def before_answer(me: int) -> None:
    """Only the process the worker started may answer (a fork of the program exits
    here); its buffered output is flushed first, so it arrives before the answer."""
    if os.getpid() != me:
        os._exit(0)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def load_program(code: str) -> types.ModuleType:
    """Exec ``code`` as the module ``program`` (its ``__main__`` block does not run)."""
    mod = types.ModuleType(MODULE_NAME)
    mod.__file__ = PROGRAM_FILE
    sys.modules[MODULE_NAME] = mod
    linecache.cache[PROGRAM_FILE] = (len(code), None, code.splitlines(True), PROGRAM_FILE)
    exec(compile(code, PROGRAM_FILE, "exec"), mod.__dict__)
    return mod


def failure(exc: BaseException) -> dict[str, Any]:
    """The result header of a program that raised (its traceback goes to stderr)."""
    if isinstance(exc, SystemExit):
        return {"status": "error",
                "error": f"program called sys.exit({exc.code!r}) instead of returning"}
    try:
        traceback.print_exception(exc)
        reason = f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:
        reason = type(exc).__name__
    return {"status": "error", "error": reason}


def run_function(mod: types.ModuleType, name: str, args: Sequence[Any], kwargs: dict[str, Any],
                 me: int, *, session: bool) -> tuple[dict[str, Any], Sequence[bytes]]:
    """Call ``mod.<name>(*args, **kwargs)``; the result header and its ``.npy`` blobs.

    A fork of the program that returns through here exits at once: only the process the
    worker started may answer.
    """
    what = "function" if session else "entry function"
    fn = mod.__dict__.get(name)
    if fn is None:
        return {"status": "error", "error": f"{what} {name!r} is not defined by the program"}, ()
    if not callable(fn):
        label = "function" if session else "entry"
        return {"status": "error",
                "error": f"{label} {name!r} is a {type(fn).__name__}, not a function"}, ()
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # the program's own failure, reported with its reason
        if os.getpid() != me:
            os._exit(0)
        return failure(exc), ()
    if os.getpid() != me:
        os._exit(0)
    try:
        blobs: list[bytes] = []
        tree = encode(value, blobs)
    except BadValue as exc:
        return {"status": "bad_output", "error": str(exc)}, ()
    except BaseException as exc:
        return {"status": "bad_output",
                "error": f"could not encode the returned value: {type(exc).__name__}"}, ()
    return {"status": "ok", "tree": tree, "blobs": [len(b) for b in blobs]}, blobs


# ---------------------------------------------------------------- call sessions


def decode(node: Any, blobs: Sequence[bytes]) -> Any:
    """Rebuild a call argument from the tagged tree ``encode`` wrote (trusted sender)."""
    tag, payload = node
    if tag == "n":
        return None
    if tag in ("b", "i", "s"):
        return payload
    if tag == "f":
        return float(payload)
    if tag == "c":
        return complex(payload[0], payload[1])
    if tag == "l":
        return [decode(x, blobs) for x in payload]
    if tag == "t":
        return tuple(decode(x, blobs) for x in payload)
    if tag == "d":
        return {k: decode(v, blobs) for k, v in payload}
    if tag == "a":
        import numpy

        return numpy.load(io.BytesIO(blobs[payload]), allow_pickle=False)
    raise ValueError(f"unknown tag {tag!r}")


def unpack_call(packed: bytes) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of one call from its ``BVR1`` frame."""
    if packed[:4] != b"BVR1":
        raise ValueError("not a BVR1 frame")
    (size,) = struct.unpack(">I", packed[4:8])
    header = json.loads(packed[8 : 8 + size])
    blobs, pos = [], 8 + size
    for n in header["blobs"]:
        blobs.append(packed[pos : pos + n])
        pos += n
    value = decode(header["tree"], blobs)
    return list(value["args"]), dict(value["kwargs"])


def serve(code: str, me: int) -> None:
    """Call-session mode: import the program once, then answer calls until EOF.

    Each call is two frames on ``REQUEST_FD`` (JSON ``{"fn", "nonce"}`` and the packed
    arguments); each answer is one length-prefixed result frame on ``RESULT_FD`` that
    echoes the call's nonce, so a frame the program wrote itself ahead of time is never
    taken for an answer.  Timing is not done here (the program could fake it): the worker
    measures every call from outside this process.
    """

    def reply(header: dict[str, Any], blobs: Sequence[bytes] = ()) -> None:
        before_answer(me)
        data = result_frame(header, blobs)
        try:
            write_all(RESULT_FD, struct.pack(">I", len(data)) + data)
        except OSError:
            os._exit(0)

    try:
        mod = load_program(code)
    except BaseException as exc:
        reply(failure(exc))
        os._exit(0)
    reply({"status": "ok", "tree": ["n", None], "blobs": []})
    while True:
        raw = read_frame(REQUEST_FD)
        packed = read_frame(REQUEST_FD) if raw is not None else None
        if packed is None:
            os._exit(0)
        nonce = None
        try:
            call = json.loads(raw)
            nonce = call["nonce"]
            args, kwargs = unpack_call(packed)
        except Exception as exc:
            header, blobs = {"status": "error", "error": "the call's arguments could not be"
                             f" decoded ({type(exc).__name__}: {exc})"}, ()
        else:
            header, blobs = run_function(mod, call["fn"], args, kwargs, me, session=True)
        header["nonce"] = nonce
        reply(header, blobs)
