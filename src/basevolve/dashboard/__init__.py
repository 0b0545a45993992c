"""``basevolve dashboard``: a live, read-only web view of a run store (issue 14).

Pages: the runs list (sortable, filterable, paginated in SQL; sweeps grouped), a run
(running best vs calls and vs cumulative effective FLOPs per trajectory and overall,
BaSE pulls per arm and the allocator's state, child scores, lineage of accepted
programs, code with a diff against the parent, prompt and raw reply of every call,
the best solution's picture, errors and outputs) and a sweep (heat map of mean fitness
over (C, T), fitness-FLOPs envelope, reliability table from :mod:`basevolve.analysis`).

Design choices, and why:

* **Starlette on uvicorn** (not FastAPI): the dashboard needs routing, static files, a
  streaming response for server-sent events and ASGI middleware, all of which Starlette
  is; FastAPI adds request validation and OpenAPI generation on top (and pydantic as a
  dependency) that a dozen read-only ``GET`` endpoints do not use.  uvicorn is the
  reference ASGI server and accepts a pre-bound socket, so "port in use" is checked by
  us and reported as one line (:mod:`basevolve.dashboard.server`).
* **uPlot, vendored** (``static/uPlot.iife.min.js``, MIT, with its licence): ~50 kB,
  no dependencies, draws thousands of points on a canvas quickly, no inline script or
  ``eval`` (works under the strict CSP), and shipped as package data it works offline.
  Server-side SVG would have meant re-drawing on every live update on the server and
  shipping large documents; heat maps are plain HTML tables.
* **Read-only by construction**: SQLite opened with ``mode=ro`` plus ``query_only``
  (:mod:`.db`), only ``GET`` routes, no code execution (pictures are drawn from stored
  plain data, :mod:`.picture`), no file read but the store and the package's own
  static files.
* **Safe with LLM-written text**: JSON API + pages that write every value with
  ``textContent``; Content-Security-Policy without ``'unsafe-inline'``; loopback by
  default, a token for anything else (:mod:`.security`).
* **Live**: a server-sent-event stream driven by ``PRAGMA data_version``; readers in
  WAL mode never block the writer (:mod:`.app`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from basevolve.dashboard.app import create_app
    from basevolve.dashboard.server import serve

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from basevolve.dashboard.app import create_app

        return create_app
    if name == "serve":
        from basevolve.dashboard.server import serve

        return serve
    raise AttributeError(f"module 'basevolve.dashboard' has no attribute {name!r}")
