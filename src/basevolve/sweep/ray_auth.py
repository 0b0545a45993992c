"""Is the Ray cluster a sweep connects to protected by a token? (issue 22, item 15)

Why this check: a Ray cluster runs whatever code a client sends it, on every node.
Ray 2.60's ``ray start --head`` starts *without* authentication unless a token exists
or ``RAY_AUTH_MODE=token`` is set (it logs "Token authentication is disabled"), and a
driver that has a token connects to such a cluster just the same -- so ``basevolve
sweep --executor ray`` used to connect silently to a cluster anyone on the network
could use.  The documented commands (docs/sweeps.md) now start an authenticated
cluster, and the driver says so loudly when the one it reached is not.

How: the only reliable test is to knock without a token.  A child process with
``RAY_AUTH_MODE=disabled`` and no token variables opens a GCS client to the cluster
(``ray._raylet.GcsClient``, what Ray's own CLI uses): an authenticated GCS refuses it
(``AuthenticationError``), an open one lets it in.  The driver's own process cannot do
this, because its authentication mode is fixed when Ray is first initialised in it.
About a second, once per sweep session.
"""

from __future__ import annotations

import os
import subprocess
import sys

#: What the child runs: exit 0 = let in without a token, 3 = refused for want of one.
_PROBE = """\
import sys
try:
    from ray._raylet import GcsClient
    GcsClient(address=sys.argv[1])
except Exception as exc:
    text = f"{type(exc).__name__}: {exc}"
    sys.exit(3 if "Authentication" in text or "Unauthenticated" in text else 4)
"""
_TOKEN_VARS = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
PROBE_TIMEOUT_S = 60.0


def _probe(gcs_address: str, env: dict[str, str]) -> int | None:
    """The child's exit code (0 let in, 3 refused for a token, 4 other), None if it hung."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, gcs_address], env=env,
                              capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode


def requires_token(gcs_address: str) -> bool | None:
    """True: the cluster refuses a client without a token; False: it lets one in;
    None: the check itself failed (Ray changed, the GCS went away) -- say so, do not guess."""
    env = {k: v for k, v in os.environ.items() if k not in _TOKEN_VARS}
    env["RAY_AUTH_MODE"] = "disabled"
    return {0: False, 3: True}.get(_probe(gcs_address, env))  # type: ignore[arg-type]


def token_refused(gcs_address: str) -> bool:
    """Whether the cluster refuses this process's own token settings (checked apart,
    before ``ray.init``: a refused driver otherwise retries for ~20 s, logging a line a
    second from Ray's C++ client, then fails with "Failed to connect")."""
    return _probe(gcs_address, dict(os.environ)) == 3


def warning(address: str, protected: bool | None) -> str | None:
    """The line to print for a cluster found ``protected`` (None: nothing to say)."""
    fix = ("start the cluster as docs/sweeps.md shows (RAY_AUTH_MODE=token on every node, "
           "the token from `ray get-auth-token --generate` copied to each)")
    if protected is False:
        return (f"basevolve: warning: the Ray cluster at {address} has no authentication: "
                f"anyone who can reach its port can run code on its nodes; {fix}")
    if protected is None:
        return (f"basevolve: warning: could not check whether the Ray cluster at {address} "
                f"requires a token; if it does not, anyone who can reach its port can run "
                f"code on its nodes; {fix}")
    return None


__all__ = ["PROBE_TIMEOUT_S", "requires_token", "token_refused", "warning"]
