"""Several simulated models behind one port: a router in front of one test server per
model (issue 25, part 4).

Why a router: a multi-model deployment is one serving engine per model behind a router
that picks the engine by the request's ``model`` (vLLM serves one model per process;
LiteLLM or vLLM's router sit in front).  Each engine has its own prefix cache, its own
batch slots and its own request counter.  The simulator keeps that shape: each named
model is a complete :class:`~basevolve.testing.llm_server.LLMTestServer` on its own
loopback port, and this router forwards each chat request, unchanged, to the one its
``model`` names.  So one model's traffic never changes another's replies, cached tokens
(which the FLOPs accounting charges) or queueing: a seeded request to a model gets the
same reply and usage whatever else the process serves.

The router answers itself:

* ``GET /v1/models``: every served id, with its assumed size as ``basevolve_params``
  (None when not stated);
* a chat request naming a model it does not serve: 404 with an OpenAI-style error
  (``"type": "NotFoundError"``, as vLLM answers); one without ``model``: the first model
  (vLLM's default);
* unreadable JSON: 400, as the test server does.

Everything else (usage, latency, faults injected into a backend) is the backend's: the
router relays status, body and ``Retry-After``.  A backend that drops the connection
makes the router drop the client's.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from basevolve.llm.call_order import CALL_HEADER
from basevolve.testing.llm_server import LLMTestServer

#: Longest model name echoed back in a 404 message (the name is client text).
_ECHO_CHARS = 80


class _Front(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # as the test server: bursts of connections are not dropped


class ModelRouter:
    """One port serving several named :class:`LLMTestServer` backends (module doc).

    ``backends`` maps each served id to its (unstarted) server; ``params`` the id to its
    assumed parameter count, reported by ``GET /models``.  The first backend answers
    requests without a ``model``.  Use as a context manager, like the test server.
    """

    def __init__(self, backends: Mapping[str, LLMTestServer], *,
                 params: Mapping[str, float | None] | None = None, port: int = 0,
                 host: str = "127.0.0.1") -> None:
        if not backends:
            raise ValueError("a router needs at least one backend")
        self.backends = dict(backends)
        self.params = {name: (params or {}).get(name) for name in self.backends}
        self.model_ids = tuple(self.backends)
        self._thread: threading.Thread | None = None
        try:
            self._httpd = _Front((host, port), _handler(self))
        except OSError:
            self._close_backends()
            raise

    # -- lifecycle -------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def n_requests(self) -> int:
        """Chat requests the backends received (a 404 reaches none)."""
        return sum(b.n_requests for b in self.backends.values())

    def start(self) -> ModelRouter:
        if self._thread is None:
            for b in self.backends.values():
                b.start()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        for b in self.backends.values():
            b.start()
        self._httpd.serve_forever(poll_interval=0.05)

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()
        self._close_backends()

    def _close_backends(self) -> None:
        for b in self.backends.values():
            b.close()

    def __enter__(self) -> ModelRouter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- routing ---------------------------------------------------------------------
    def backend_for(self, model: object) -> LLMTestServer | None:
        """The backend serving ``model`` (the first one when ``model`` is absent)."""
        if model is None:
            return next(iter(self.backends.values()))
        return self.backends.get(model) if isinstance(model, str) else None

    def models_listing(self) -> dict[str, Any]:
        data = [{"id": name, "object": "model", "owned_by": "basevolve",
                 "basevolve_params": self.params[name]} for name in self.model_ids]
        return {"object": "list", "data": data}


def not_found(model: object) -> dict[str, Any]:
    """vLLM's answer to a request for a model it does not serve."""
    shown = repr(model)
    if len(shown) > _ECHO_CHARS:
        shown = shown[:_ECHO_CHARS] + "..."
    return {"error": {"message": f"The model {shown} does not exist.",
                      "type": "NotFoundError", "param": "model", "code": 404}}


def _handler(router: ModelRouter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as the test server (benchmarks/README.md)

        def setup(self) -> None:
            super().setup()
            # One keep-alive connection per backend for this client connection, closed
            # with it (finish).
            self.upstream: dict[int, http.client.HTTPConnection] = {}

        def finish(self) -> None:
            for conn in self.upstream.values():
                conn.close()
            super().finish()

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, data: bytes,
                  headers: Mapping[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _json(self, status: int, obj: Any) -> None:
            self._send(status, json.dumps(obj).encode())

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, router.models_listing())
            else:
                self._json(404, {"error": {"message": "no such route"}})

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if length < 0:
                    raise ValueError
            except ValueError:
                self.close_connection = True  # the body's end is unknown
                self._json(400, {"error": {"message": "bad Content-Length"}})
                return
            raw = self.rfile.read(length) if length else b""
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "no such route"}})
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("body is not an object")
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
                self._json(400, {"error": {"message": f"bad JSON: {exc}"}})
                return
            backend = router.backend_for(body.get("model"))
            if backend is None:
                self._json(404, not_found(body.get("model")))
                return
            self._forward(backend, raw)

        def _forward(self, backend: LLMTestServer, raw: bytes) -> None:
            conn = self.upstream.get(backend.port)
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", backend.port)
                self.upstream[backend.port] = conn
            headers = {"Content-Type": "application/json"}
            for name in ("Authorization", CALL_HEADER):  # the call's place: issue 34
                if (value := self.headers.get(name)) is not None:
                    headers[name] = value
            try:
                conn.request("POST", "/v1/chat/completions", body=raw, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                # The backend dropped the request (a stall fault, or it is stopping):
                # so does the router, without a reply.
                conn.close()
                del self.upstream[backend.port]
                self.close_connection = True
                return
            extra = {"Retry-After": v} if (v := resp.getheader("Retry-After")) else {}
            self._send(resp.status, data, extra)

    return Handler


__all__ = ["ModelRouter", "not_found"]
