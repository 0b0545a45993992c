"""The Starlette application: three static pages, a JSON API and a change stream.

Every route is ``GET`` (Starlette answers any other method with 405), reads the store
through :class:`~basevolve.dashboard.db.ReadOnlyStore` and returns JSON, a PNG, or one
of the package's static files.  Pages are static HTML shells; their scripts fetch the
JSON and write every value into the DOM as text.

Live updates: ``/api/events`` is a server-sent-event stream.  One watcher polls SQLite's
``PRAGMA data_version`` (it changes when another connection commits) twice a second
and each open page gets a ``change`` event, after which it re-fetches its JSON.  A
poll is a read of the WAL index, so writers are never blocked.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from basevolve.dashboard.db import ReadOnlyStore, connect_readonly
from basevolve.dashboard.details import call_detail, program_detail
from basevolve.dashboard.picture import Pictures, PictureUnavailable
from basevolve.dashboard.run_cache import RunRows
from basevolve.dashboard.run_data import run_page
from basevolve.dashboard.run_tables import Page, calls_page, errors_page
from basevolve.dashboard.runs import RunsQuery, runs_page, sweeps_overview
from basevolve.dashboard.security import Guard
from basevolve.errors import ConfigError

POLL_S = 0.5
HEARTBEAT_S = 15.0
CACHE_ENTRIES = 64
RUN_CACHE_ENTRIES = 8  # runs whose rows are kept (a 20,000-call run: ~15 MB)


def static_dir() -> Path:
    return Path(str(resources.files("basevolve.dashboard") / "static"))


def _finite(obj: Any) -> Any:
    """NaN/inf -> None, recursively (JSON has no NaN; browsers reject it)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


class Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, allow_nan=False, separators=(",", ":"))
        except ValueError:  # a NaN somewhere: clean once, only on this slow path
            text = json.dumps(_finite(content), allow_nan=False, separators=(",", ":"))
        return text.encode()


def _error(status: int, message: str) -> Json:
    return Json({"error": message}, status_code=status)


class Watcher:
    """A counter that goes up whenever another connection commits to the store.

    Also the key of the dashboard's small caches: a value computed at version v stays
    right until the counter moves (checked at most every ``POLL_S / 2``).
    """

    def __init__(self, store: ReadOnlyStore) -> None:
        self.store = store
        self.version = 0
        self._con: sqlite3.Connection | None = None
        self._last: tuple[int, int] | None = None
        self._checked = 0.0
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, Any]] = {}

    def poll(self) -> int:
        with self._lock:
            now = time.monotonic()
            if now - self._checked < POLL_S / 2:
                return self.version
            self._checked = now
            if self._con is None:
                self._con = connect_readonly(self.store.path)
            state = (self._con.execute("PRAGMA data_version").fetchone()[0],
                     self._con.execute("PRAGMA schema_version").fetchone()[0])
            if self._last is not None and state != self._last:
                self.version += 1
                if state[1] != self._last[1]:
                    self.store.refresh_schema()  # a migration may have added columns
            self._last = state
            return self.version

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, reused until the store changes."""
        version = self.poll()
        hit = self._cache.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = compute()
        if len(self._cache) >= CACHE_ENTRIES:  # e.g. many tau lists typed in: start over
            self._cache.clear()
        self._cache[key] = (version, value)
        return value


def create_app(store_path: str | Path, *, token: str | None = None,
               check_host: bool = True) -> Guard:
    """The dashboard as an ASGI app (wrapped in :class:`~basevolve.dashboard.security.Guard`)."""
    store = ReadOnlyStore(store_path)
    pictures = Pictures(store)
    watcher = Watcher(store)
    pages = static_dir()

    def page(name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return FileResponse(pages / name, media_type="text/html; charset=utf-8")
        return endpoint

    def api_runs(request: Request) -> Response:
        try:
            data = runs_page(store, RunsQuery.from_params(request.query_params))
        except ConfigError as exc:
            return _error(400, str(exc))
        data["sweeps"] = watcher.cached("sweeps", lambda: sweeps_overview(store))
        return Json(data)

    runs_seen: dict[str, tuple[int, RunRows, bytes | None]] = {}  # id -> version, rows, body

    def api_run(request: Request) -> Response:
        """The run page's JSON, encoded once per change of the run: kept while the store
        version is the same; after a commit, the run's rows are read again only where
        they can have changed (:class:`~basevolve.dashboard.run_cache.RunRows`) and the
        page rebuilt only if they did, so a long live run costs what changed, and a
        finished run is not rebuilt because another run of the store moved."""
        run_id = request.query_params.get("id", "")
        version = watcher.poll()
        hit = runs_seen.get(run_id)
        if hit is not None and hit[0] == version:
            body = hit[2]
        else:
            rows = hit[1] if hit is not None else RunRows(run_id)
            with rows.lock:
                if rows.refresh(store) or hit is None:
                    data = run_page(store, run_id, rows)
                    body = None if data is None else Json(data).body
                else:
                    body = hit[2]
            if len(runs_seen) >= RUN_CACHE_ENTRIES and run_id not in runs_seen:
                runs_seen.clear()
            runs_seen[run_id] = (version, rows, body)
        if body is None:
            return _error(404, "no such run")
        return Response(body, media_type="application/json")

    def api_table(kind: str) -> Callable[[Request], Response]:
        """``/api/calls`` or ``/api/errors``: one page of the run page's tables."""
        fetch = calls_page if kind == "calls" else errors_page

        def endpoint(request: Request) -> Response:
            run_id = request.query_params.get("run", "")
            try:
                q = Page.from_params(request.query_params)
            except ConfigError as exc:
                return _error(400, str(exc))
            if store.one("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)) is None:
                return _error(404, "no such run")
            return Json(fetch(store, run_id, q))
        return endpoint

    def _int(request: Request, name: str) -> int:
        """An id or index; SQLite integers are 64-bit, and binding a larger Python int
        raises OverflowError (a 500), so such a value is refused here as a 400."""
        try:
            value = int(request.query_params.get(name, ""))
        except ValueError:
            raise ConfigError(f"{name} must be an integer") from None
        if not -(2**63) <= value < 2**63:
            raise ConfigError(f"{name} {value} is out of range (a 64-bit integer)")
        return value

    def api_call(request: Request) -> Response:
        try:
            data = call_detail(store, request.query_params.get("run", ""), _int(request, "index"))
        except ConfigError as exc:
            return _error(400, str(exc))
        return _error(404, "no such call") if data is None else Json(data)

    def api_program(request: Request) -> Response:
        try:
            data = program_detail(store, request.query_params.get("run", ""), _int(request, "id"))
        except ConfigError as exc:
            return _error(400, str(exc))
        return _error(404, "no such program") if data is None else Json(data)

    def api_picture(request: Request) -> Response:
        try:
            png = pictures.best_png(request.query_params.get("run", ""))
        except PictureUnavailable as exc:
            return Response(str(exc), status_code=404, media_type="text/plain; charset=utf-8")
        return Response(png, media_type="image/png")

    def api_sweep(request: Request) -> Response:
        from basevolve.dashboard.sweeps import parse_taus, sweep_page  # pandas: load on use

        try:
            taus = parse_taus(request.query_params.get("tau"))
        except ConfigError as exc:
            return _error(400, str(exc))
        sweep = request.query_params.get("id", "all")
        return Json(watcher.cached(f"sweep:{sweep}:{taus}", lambda: sweep_page(store, sweep, taus)))

    def api_version(request: Request) -> Response:
        return Json({"version": watcher.poll()})

    async def api_events(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen = watcher.poll()
            yield f"retry: 2000\nevent: hello\ndata: {seen}\n\n"
            quiet = 0.0
            while True:
                await asyncio.sleep(POLL_S)
                now = watcher.poll()
                if now != seen:
                    seen, quiet = now, 0.0
                    yield f"event: change\ndata: {now}\n\n"
                else:
                    quiet += POLL_S
                    if quiet >= HEARTBEAT_S:
                        quiet = 0.0
                        yield ": ping\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    routes = [
        Route("/", page("runs.html")),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Route("/run", page("run.html")),
        Route("/sweep", page("sweep.html")),
        Route("/api/runs", api_runs),
        Route("/api/run", api_run),
        Route("/api/calls", api_table("calls")),
        Route("/api/errors", api_table("errors")),
        Route("/api/call", api_call),
        Route("/api/program", api_program),
        Route("/api/picture", api_picture),
        Route("/api/sweep", api_sweep),
        Route("/api/version", api_version),
        Route("/api/events", api_events),
        Mount("/static", StaticFiles(directory=pages), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.store = store
    return Guard(app, token=token, check_host=check_host and token is None)
