"""``basevolve dashboard``: a live, read-only web view of a run store (issue 14)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dashboard", help="serve a live, read-only web view of a run store",
        description="Watch runs and sweeps in a browser while they write to the store. "
                    "Read-only: no page writes, runs code or reads any other file.")
    p.add_argument("--store", required=True, help="run store file (SQLite)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=8765, help="TCP port (default 8765; 0 = any)")
    p.add_argument("--open", action="store_true", help="open the page in a web browser")
    p.add_argument("--token", help="secret every request must carry (at least 16 characters; "
                                   "'auto' generates and prints one)")
    p.set_defaults(func=dashboard_command)


def dashboard_command(args: argparse.Namespace) -> int:
    from basevolve.errors import ConfigError

    try:
        from basevolve.dashboard.server import serve
    except ModuleNotFoundError as exc:  # starlette/uvicorn missing from a partial install
        raise ConfigError(f"the dashboard needs {exc.name} (pip install starlette uvicorn)") \
            from None
    return serve(args.store, host=args.host, port=args.port, token=args.token,
                 open_browser=args.open)
