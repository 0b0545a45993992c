"""How a worker process is started: the bubblewrap command line or the plain fallback.

Issue 2, section 3: a program sees only the Python installation and its packages,
read-only, and nothing else - not the home or working directory, not the store, not the
caller's environment.  The mount plan below binds ``/usr`` (and the merged-usr
``/bin``, ``/lib*`` links), the interpreter prefixes and their ``site-packages``, the
dynamic-linker cache, a generated ``/etc/passwd``/``/etc/group`` (the host's are never
shown) and the worker script; ``/tmp`` is a private size-limited tmpfs.

Who gets what (issue 22, items 16-17; docs/running.md, "Threat model"):

* root: bubblewrap, programs dropped to the slot's own uid;
* not root: bubblewrap in a user namespace (``--unshare-user``, and ``--disable-userns``
  where bubblewrap has it), programs keep the caller's uid mapped inside; the worker
  makes itself non-dumpable, so a program of the same uid can neither trace it nor read
  its ``/proc`` files; the private ``/tmp`` and ``/dev/shm`` are emptied between
  evaluations and System V IPC is denied (no per-evaluation IPC namespace without root);
* the rlimits fallback: the worker starts detached (``_launch.py``) from a clean
  environment, and the program runs under Landlock where the kernel has it;
* every mode: every worker is started by ``_launch.py`` (into its memory cgroup, when the
  pool has one) and every program runs under the seccomp filter of
  :mod:`basevolve.sandbox.seccomp` (its memory watched by the worker when no cgroup caps it).
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from basevolve.records import Isolation
from basevolve.sandbox.config import SandboxConfig
from basevolve.sandbox.passthrough import read_binds, read_paths
from basevolve.sandbox.seccomp import encoded as seccomp_filter

WORKER_SCRIPT = Path(__file__).with_name("_worker.py")
LAUNCH_SCRIPT = Path(__file__).with_name("_launch.py")
# Loaded by the worker from its own directory (``_worker.load_sibling``).
SIBLING_SCRIPTS = tuple(Path(__file__).with_name(n) for n in (
    "_child.py", "_procs.py", "_session.py", "_guard.py", "_memwatch.py", "_prepare.py"))
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
    """Everything needed to (re)start the worker of one pool slot.

    ``guards``: what protects its programs besides the isolation level, as short tags
    (``uid-drop``, ``user-namespace``, ``seccomp``, ``landlock-abiN``, ...); the pool adds
    its memory cap and reports them as :attr:`SandboxPool.protections`.
    """

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    isolation: Isolation
    guards: tuple[str, ...] = ()


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _bwrap_has(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap knows ``option`` (``--disable-userns`` is new in 0.8.0)."""
    try:
        out = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10,
                             env=minimal_env("/"), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in out.stdout + out.stderr


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: none); the child uses the same syscall."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return abi if abi > 0 else 0


def seccomp_filters_supported() -> bool:
    """Seccomp filter mode is compiled in (the ``Seccomp`` line of /proc/self/status)."""
    try:
        return "Seccomp:" in Path("/proc/self/status").read_text()
    except OSError:
        return False


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
    argv = [bwrap]
    if os.geteuid() != 0:
        # unprivileged: a user namespace of our own; the program cannot make another one
        argv.append("--unshare-user")
        if _bwrap_has(bwrap, "--disable-userns"):
            argv.append("--disable-userns")
    argv += [
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
    binds = [(root, root) for root in _python_roots()] + list(read_binds(cfg))
    for dest, src in binds:
        for parent in reversed(Path(dest).parents):
            p = str(parent)
            if p not in ("/", "/usr") and p not in made and not p.startswith("/usr/"):
                made.add(p)
                argv += ["--perms", "0755", "--dir", p]  # host /root is 0700: open the path only
        argv += ["--ro-bind", src, dest]
        made.add(dest)
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


def _landlock_rules(cfg: SandboxConfig) -> dict[str, list[str]]:
    """What a fallback program may read (Landlock, ``_guard.py``); it writes only its dir."""
    read = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
            "/sys/devices/system/cpu", *_python_roots(),
            *read_paths(cfg)]
    return {
        "read": read,
        "read_files": ["/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"],
        "devices": ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"],
    }


def make_launch(
    cfg: SandboxConfig, isolation: Isolation, host_dir: Path, uid: int | None, *,
    cgroup_procs: str | None = None, watch_memory: bool = False,
) -> LaunchSpec:
    """Build the command for one pool slot whose programs run as ``uid`` (None: no uid
    drop, not root); ``host_dir`` is the slot's private parent-side dir.

    In bwrap mode ``host_dir`` holds the generated passwd/group; in the rlimits fallback it
    is the worker's scratch root (per-evaluation directories live inside it).
    ``cgroup_procs``: the slot cgroup's ``cgroup.procs`` the worker joins before it starts;
    ``watch_memory``: no cgroup caps the slot, so the worker watches the evaluation's
    memory itself (``_memwatch.py``).
    """
    root = os.geteuid() == 0
    private_ipc = root  # as root each evaluation gets a fresh IPC namespace (_child.py)
    guards = ["uid-drop" if uid is not None else "caller-uid"]
    worker_cfg: dict = {
        "preload": list(cfg.preload),
        "uid": uid,
        "gid": uid,
        "work_root": "/tmp",
        "unshare_net": False,
        "unshare_ipc": False,
        "wipe": [],
        "watch_memory_mb": cfg.memory_mb if watch_memory else None,
        "landlock": None,
        "seccomp": None,
    }
    if seccomp_filters_supported():
        # the fallback sees the host's sockets: no connect() at all (seccomp.py)
        worker_cfg["seccomp"] = seccomp_filter(private_ipc=private_ipc,
                                          connect=isolation is Isolation.BWRAP)
    if worker_cfg["seccomp"]:
        guards.append("seccomp")
    if isolation is Isolation.BWRAP:
        worker_cfg["unshare_ipc"] = root
        if not root:
            guards.append("user-namespace")
            if landlock_abi() >= 6:  # signals and ptrace of the worker (same uid) refused
                worker_cfg["landlock"] = {"scope_only": True}
                guards.append("landlock-scope")
            # the caller's uid owns the private /tmp and /dev/shm: empty them between
            # evaluations, or one program could leave files for the next
            worker_cfg["wipe"] = ["/tmp", "/dev/shm"]
        bwrap = bwrap_path()
        assert bwrap is not None
        shown = uid if uid is not None else os.getuid()
        passwd, group = passwd_text(shown, uid if uid is not None else os.getgid())
        (host_dir / "passwd").write_text(passwd)
        (host_dir / "group").write_text(group)
        inner = _bwrap_argv(bwrap, cfg, host_dir, worker_cfg)
        env, cwd, detach = minimal_env("/tmp"), str(host_dir), False
        guards.append("net-namespace")
    else:
        work_root = host_dir / "work"
        work_root.mkdir(mode=0o711, exist_ok=True)
        worker_cfg.update(work_root=str(work_root), unshare_net=root)
        abi = landlock_abi()
        if abi:
            worker_cfg["landlock"] = _landlock_rules(cfg)
            guards.append(f"landlock-abi{abi}")
        guards += ["detached", "net-namespace" if root else "net-seccomp"]
        inner = [sys.executable, "-I", "-B", str(WORKER_SCRIPT), json.dumps(worker_cfg)]
        env, cwd, detach = minimal_env(str(work_root)), str(work_root), True
    launch = {"argv": inner, "cgroup_procs": cgroup_procs, "detach": detach}
    argv = [sys.executable, "-I", "-S", "-B", str(LAUNCH_SCRIPT), json.dumps(launch)]
    if not worker_cfg["seccomp"] and "net-seccomp" in guards:
        guards.remove("net-seccomp")
    return LaunchSpec(tuple(argv), env, cwd, isolation, tuple(guards))
