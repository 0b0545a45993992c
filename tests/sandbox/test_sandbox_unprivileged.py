"""Isolation for everyone (issue 22, item 16), with real processes: a basevolve process
that holds an API key in its environment opens a pool -- as an unprivileged uid
(unprivileged bubblewrap, and the forced rlimits fallback) and as root (forced fallback) --
and hostile programs try what an LLM-written program did in the adversarial pass: read
the key from their ancestors' (or any) ``/proc/PID/environ``, talk to a server on
127.0.0.1, read a host file, escape with a user namespace or a mount, and use 2.4 GB by
forking under ``memory_mb=768`` (item 17).

Each case runs ``_probe_driver.py`` in a fresh process (``python -c``), so its
``/proc/<pid>/environ`` holds the key from exec, as a real run's does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import basevolve

NOBODY = 65534
SECRET = "sk-bv-test-9f3c1d-must-not-leak"
DRIVER = (Path(__file__).parent / "_probe_driver.py").read_text()
EPERM = 1


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
            "OPENAI_API_KEY": SECRET, **extra}


def _nobody_python() -> tuple[str, dict[str, str]] | None:
    """An interpreter uid 65534 can run that imports basevolve and numpy.

    The venv's own interpreter may live under a home directory the uid cannot enter
    (pyenv under /root); the system interpreter of the same version then runs the same
    code with the source tree and site-packages on PYTHONPATH."""
    import numpy

    src = str(Path(basevolve.__file__).parents[1])
    site = str(Path(numpy.__file__).parents[1])
    env = _env({"PYTHONPATH": f"{src}:{site}"})
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for exe in (sys.executable, f"/usr/bin/python{version}"):
        try:
            done = subprocess.run([exe, "-c", "import basevolve.sandbox, numpy"], env=env,
                                  user=NOBODY, group=NOBODY, extra_groups=[], cwd="/tmp",
                                  capture_output=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return exe, env
    return None


@pytest.fixture(scope="module")
def secret_file() -> Iterator[str]:
    """A host file every uid may read (0644 in a 0755 directory): only the sandbox hides it."""
    folder = tempfile.mkdtemp(prefix="bv-host-", dir="/tmp")
    os.chmod(folder, 0o755)
    path = Path(folder) / "credentials.txt"
    path.write_text(SECRET)
    path.chmod(0o644)
    yield str(path)
    shutil.rmtree(folder, ignore_errors=True)


def _drive(isolation: str, secret_file: str, *, as_nobody: bool) -> tuple[dict, str]:
    args = json.dumps({"isolation": isolation, "secret_file": secret_file})
    if as_nobody:
        if os.geteuid() == 0:
            found = _nobody_python()
            if found is None:
                pytest.skip("no Python interpreter that uid 65534 may run imports basevolve")
            exe, env = found
            who = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
        else:  # the suite itself runs unprivileged
            exe, env, who = sys.executable, _env({}), {}
    else:
        exe, env, who = sys.executable, _env({}), {}
    done = subprocess.run([exe, "-c", DRIVER, args], env=env, cwd="/tmp", capture_output=True,
                          text=True, timeout=600, check=False, **who)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _userns_works() -> bool:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    who = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if os.geteuid() == 0 else {}
    done = subprocess.run([bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                           "--proc", "/proc", "--dev", "/dev", "true"], capture_output=True,
                          timeout=60, check=False, **who)
    return done.returncode == 0


def _assert_contained(out: dict) -> None:
    """What every mode must stop: the key, the driver, the network, new namespaces."""
    for probe in out["probes"]:
        assert probe["status"] == "ok", probe
        seen = probe["value"]
        assert seen["env_has_key"] is False
        assert seen["environ_leaks"] == []  # no process whose environ it could read has the key
        assert SECRET not in seen["driver_environ"]
        assert SECRET not in seen["secret_file"]
        assert seen["connect"] != "connected" and seen["unix_connect"] != "connected"
        assert seen["unshare_user"] == [-1, EPERM] and seen["mount"] == [-1, EPERM]
        assert out["driver_pid"] not in seen["ancestors"]  # detached, or in a pid namespace
    assert out["accepted"] == []  # neither the 127.0.0.1 nor the UNIX listener saw anyone
    hog = out["hog"]
    assert hog["status"] == "crashed" and "out of memory" in hog["error"], hog
    assert out["after"] == {"status": "ok", "value": 7, "error": None}  # the pool survived


@pytest.mark.skipif(not _userns_works(), reason="unprivileged user namespaces do not work here")
def test_unprivileged_user_gets_bubblewrap(secret_file: str) -> None:
    out, stderr = _drive("auto", secret_file, as_nobody=True)
    assert out["driver_uid"] != 0
    assert out["isolation"] == "bwrap"
    assert {"user-namespace", "seccomp", "net-namespace", "caller-uid"} <= set(out["protections"])
    assert "falling back" not in stderr
    _assert_contained(out)
    first, second = (p["value"] for p in out["probes"])
    assert first["uid"] == out["driver_uid"]  # the caller's uid, mapped in its namespace
    assert first["shmget"] == -1  # no IPC namespace per evaluation without root: no SysV IPC
    assert "FileNotFoundError" in first["secret_file"]  # the host file is not even there
    assert "FileNotFoundError" in first["driver_environ"]  # nor the driver's pid
    assert first["wrote"] == ["/tmp/bv-left", "/dev/shm/bv-left"]  # its uid owns both
    assert second["left_by_earlier"] == []  # emptied between evaluations
    if "landlock-scope" in out["protections"]:
        assert first["signal_worker"] == "PermissionError"  # same uid, still untouchable


@pytest.mark.parametrize("as_nobody", [True, False], ids=["unprivileged", "root"])
def test_forced_fallback_protects_the_key_the_network_and_memory(
        secret_file: str, as_nobody: bool) -> None:
    if not as_nobody and os.geteuid() != 0:
        pytest.skip("the root case needs root")
    out, stderr = _drive("rlimits", secret_file, as_nobody=as_nobody)
    assert out["isolation"] == "rlimits"
    assert "falling back to 'rlimits' isolation" in stderr  # loud, on stderr
    assert "Threat model" in stderr
    _assert_contained(out)
    first = out["probes"][0]["value"]
    assert "detached" in out["protections"] and "seccomp" in out["protections"]
    driver_pid_visible = "FileNotFoundError" not in first["driver_environ"]
    assert driver_pid_visible  # no pid namespace: it exists, but its environ is refused
    assert "PermissionError" in first["driver_environ"]
    if as_nobody:
        assert out["driver_uid"] == NOBODY and first["uid"] == NOBODY
        assert "YOUR uid" in stderr
        assert out["driver_dumpable"] is False and out["dumpable_after"] is True
        assert "parent-non-dumpable" in out["protections"]
        assert first["shmget"] == -1
    if any(t.startswith("landlock-abi") for t in out["protections"]):
        assert "PermissionError" in first["secret_file"]  # a host file it could otherwise read
