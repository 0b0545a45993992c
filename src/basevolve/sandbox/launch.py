"""How a worker process is started: the bubblewrap command line or the plain fallback.

Issue 2, section 3: a program sees only the Python installation and its packages,
read-only, and nothing else - not the home or working directory, not the store, not the
caller's environment.  The mount plan below binds ``/usr`` (and the merged-usr
``/bin``, ``/lib*`` links), the interpreter prefixes and their ``site-packages``, the
dynamic-linker cache, a generated ``/etc/passwd``/``/etc/group`` (the host's are never
shown) and the worker script; ``/tmp`` is a private size-limited tmpfs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from basevolve.records import Isolation
from basevolve.sandbox.config import SandboxConfig

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
# Loaded by the worker from its own directory (``_worker.load_sibling``).
SIBLING_SCRIPTS = tuple(Path(__file__).with_name(n) for n in ("_child.py", "_procs.py",
                                                                "_session.py"))
SANDBOX_DIR = "/opt/basevolve"
SANDBOX_WORKER_PATH = f"{SANDBOX_DIR}/_worker.py"
SANDBOX_HOSTNAME = "sandbox"
_THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "BLIS_NUM_THREADS",
)


def minimal_env(home: str) -> dict[str, str]:
    """The whole environment a worker gets: thread vars are set before numpy is imported."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
    }
    env.update(dict.fromkeys(_THREAD_VARS, "1"))
    return env


def passwd_text(uid: int | None, gid: int | None) -> tuple[str, str]:
    """The generated ``/etc/passwd`` and ``/etc/group`` a sandboxed program sees."""
    passwd = "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
    group = "root:x:0:\n"
    if uid is not None:
        passwd += f"sandbox:x:{uid}:{gid}:basevolve sandbox:/tmp/run:/usr/sbin/nologin\n"
        group += f"sandbox:x:{gid}:\n"
    return passwd, group


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """Everything needed to (re)start the worker of one pool slot."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    isolation: Isolation


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _python_roots() -> list[str]:
    """Directories holding the interpreter and its importable packages (bound read-only).

    Only ``site-packages``/``dist-packages`` entries of ``sys.path`` are added, never a
    source checkout put there by an editable install (the worker imports no basevolve).
    """
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.add(str(Path(os.path.realpath(sys.executable)).parent.parent))
    for entry in sys.path:
        if Path(entry).name in ("site-packages", "dist-packages") and os.path.isdir(entry):
            roots.add(entry)
    keep = []
    for root in sorted({os.path.realpath(r) for r in roots} | roots, key=len):
        if os.path.isdir(root) and not root.startswith("/usr/"):
            keep.append(root)
    return keep


def _bwrap_argv(bwrap: str, cfg: SandboxConfig, etc_dir: Path, worker_cfg: dict) -> list[str]:
    argv = [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        SANDBOX_HOSTNAME,
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "0755",
        "--size",
        str(cfg.tmpfs_mb * 1024 * 1024),
        "--tmpfs",
        "/tmp",
        "--perms",
        "0755",
        "--dir",
        "/etc",
    ]
    made: set[str] = set()
    for root in _python_roots():
        for parent in reversed(Path(root).parents):
            p = str(parent)
            if p not in ("/", "/usr") and p not in made and not p.startswith("/usr/"):
                made.add(p)
                argv += ["--perms", "0755", "--dir", p]  # host /root is 0700: open the path only
        argv += ["--ro-bind", root, root]
        made.add(root)
    for name in ("ld.so.cache", "ld.so.conf", "localtime"):
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    argv += [
        "--ro-bind",
        str(etc_dir / "passwd"),
        "/etc/passwd",
        "--ro-bind",
        str(etc_dir / "group"),
        "/etc/group",
        "--ro-bind",
        str(WORKER_SCRIPT),
        SANDBOX_WORKER_PATH,
    ]
    for script in SIBLING_SCRIPTS:
        argv += ["--ro-bind", str(script), f"{SANDBOX_DIR}/{script.name}"]
    argv += [
        "--chdir",
        "/tmp",
        "--clearenv",
    ]
    for key, value in minimal_env("/tmp/run").items():
        argv += ["--setenv", key, value]
    argv += [sys.executable, "-I", "-B", SANDBOX_WORKER_PATH, json.dumps(worker_cfg)]
    return argv


def make_launch(
    cfg: SandboxConfig, isolation: Isolation, host_dir: Path, uid: int | None
) -> LaunchSpec:
    """Build the command for one pool slot whose programs run as ``uid`` (None: no uid
    drop, not root); ``host_dir`` is the slot's private parent-side dir.

    In bwrap mode ``host_dir`` holds the generated passwd/group; in the rlimits fallback it
    is the worker's scratch root (per-evaluation directories live inside it).
    """
    root = os.geteuid() == 0
    worker_cfg = {
        "preload": list(cfg.preload),
        "uid": uid,
        "gid": uid,
        "work_root": "/tmp",
        "unshare_net": False,
        "unshare_ipc": False,
    }
    if isolation is Isolation.BWRAP:
        worker_cfg["unshare_ipc"] = root  # a fresh IPC namespace per evaluation (_child.py)
        bwrap = bwrap_path()
        assert bwrap is not None
        passwd, group = passwd_text(uid, uid)
        (host_dir / "passwd").write_text(passwd)
        (host_dir / "group").write_text(group)
        argv = _bwrap_argv(bwrap, cfg, host_dir, worker_cfg)
        return LaunchSpec(tuple(argv), minimal_env("/tmp"), str(host_dir), isolation)
    work_root = host_dir / "work"
    work_root.mkdir(mode=0o711, exist_ok=True)
    worker_cfg.update(work_root=str(work_root), unshare_net=root)
    argv = [sys.executable, "-I", "-B", str(WORKER_SCRIPT), json.dumps(worker_cfg)]
    return LaunchSpec(tuple(argv), minimal_env(str(work_root)), str(work_root), isolation)
