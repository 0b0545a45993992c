"""Serve the dashboard with uvicorn on a socket bound (and checked) before it starts.

Why bind the socket here: a port in use must be one clear message and exit 2, not
uvicorn's log line and exit 1; binding first also makes ``--port 0`` (any free port)
print the real URL, which the tests use.
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
import webbrowser
from pathlib import Path

from basevolve.dashboard.app import create_app
from basevolve.dashboard.security import check_bind
from basevolve.errors import ConfigError


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or ConfigError saying why not."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a TCP port (0-65535)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r} cannot be resolved ({exc.strerror}); "
                          "use an IP address such as 127.0.0.1") from None
    family, kind, proto, _, addr = infos[0]
    # proto must be IPPROTO_TCP (not 0): asyncio sets TCP_NODELAY on accepted sockets only
    # then, and without it every response waits ~40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use; stop what is "
                              "listening there or choose another --port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str, token: str | None) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(store: str | Path, *, host: str = "127.0.0.1", port: int = 8765,
          token: str | None = None, open_browser: bool = False) -> int:
    """Run the dashboard until interrupted; returns the exit code."""
    import anyio
    import uvicorn

    token = check_bind(host, token)
    app = create_app(store, token=token)  # refuses a missing or foreign store first
    sock = bind(host, port)
    url = url_of(sock, host, token)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2,
                            access_log=False, lifespan="off")
    # Loaded before the URL is printed, so that the URL means "ready": uvicorn imports
    # its protocol modules here and anyio its event-loop backend (Starlette's worker
    # threads), else the first page view pays for them (~40 ms; issue 22, item 11).
    config.load()
    anyio.run(anyio.sleep, 0)
    print(f"basevolve dashboard: {url}  (store {store}, read-only; Ctrl-C stops)", flush=True)
    if token:
        print(f"token: {token}  (every request must carry it)", flush=True)
    server = uvicorn.Server(config)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    sys.stdout.flush()
    return 0
