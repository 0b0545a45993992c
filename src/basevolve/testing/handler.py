"""HTTP request handler of :class:`~basevolve.testing.llm_server.LLMTestServer`.

Kept apart from the server's state so each module stays small.  The handler parses the
body, registers the request with the server (index, fault, in-flight count), sleeps the
configured latency in its own thread, then answers or applies the fault.
"""

from __future__ import annotations

import gzip
import json
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from basevolve.llm.call_order import CALL_HEADER
from basevolve.testing.faults import Fault

if TYPE_CHECKING:
    from basevolve.testing.completion import Prompt
    from basevolve.testing.llm_server import LLMTestServer


def make_handler(server: LLMTestServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two sends; with Nagle on, every keep-alive reply
        # waits ~40 ms for the client's delayed ACK (benchmarks/README.md, "BaSE
        # concurrency").  Production servers (uvicorn, vLLM) set TCP_NODELAY too.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def setup(self) -> None:  # one handler per connection: count them
            super().setup()
            server.connected()

        def _send(
            self,
            status: int,
            data: bytes,
            headers: dict[str, str] | None = None,
            declared: int | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) if declared is None else declared))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models") and server.model_ids:
                data = [{"id": m, "object": "model", "owned_by": "basevolve"}
                        for m in server.model_ids]
                self._json(200, {"object": "list", "data": data})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("body is not an object")
            except ValueError as exc:
                self._json(400, {"error": {"message": f"bad JSON: {exc}"}})
                return
            if body.get("stream"):
                self._json(400, {"error": {"message": "stream=true is not supported"}})
                return
            index, fault, prompt = server.admit(body, self.headers.get("Authorization", ""),
                                                 self.headers.get(CALL_HEADER))
            try:
                if server.delay(body, index, prompt):
                    self.close_connection = True
                    return
                self._respond(body, index, fault, prompt)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            except Exception as exc:  # a scripted reply function raised: say so, loudly
                server.reply_errors.append(f"{type(exc).__name__}: {exc}")
                self._json(500, {"error": {"message": f"reply function raised {exc!r}"}})
            finally:
                server.leave()

        def _respond(self, body: dict, index: int, fault: Fault | None, prompt: Prompt) -> None:
            if fault is Fault.HTTP_500:
                self._json(
                    500, {"error": {"message": "injected server error", "type": "server_error"}}
                )
            elif fault is Fault.HTTP_429:
                self._json(
                    429,
                    {"error": {"message": "injected rate limit", "type": "rate_limit"}},
                    {"Retry-After": "0"},
                )
            elif fault is Fault.HTTP_400:
                self._json(
                    400,
                    {"error": {"message": "injected bad request", "type": "invalid_request_error"}},
                )
            elif fault is Fault.HTTP_401:
                self._json(
                    401, {"error": {"message": "injected bad key", "type": "authentication_error"}}
                )
            elif fault is Fault.STALL:
                server.stall()
                self.close_connection = True  # drop without a response
            elif fault is Fault.GARBAGE:
                self._send(200, b"<html>this is not json {{{")
            elif fault is Fault.EMPTY_CHOICES:
                payload = server.completion(body, index, prompt)
                payload["choices"] = []
                self._json(200, payload)
            elif fault is Fault.TRUNCATED:
                data = json.dumps(server.completion(body, index, prompt)).encode()
                self._send(200, data[: len(data) // 2], {"Connection": "close"}, declared=len(data))
                self.close_connection = True
            elif fault is Fault.REDIRECT:
                self._send(307, b"{}", {"Location": "http://127.0.0.1:9/v1/chat/completions"})
            elif fault is Fault.GZIP:
                data = json.dumps(server.completion(body, index, prompt)).encode()
                self._send(200, gzip.compress(data), {"Content-Encoding": "gzip"})
            elif fault is Fault.LENGTH:
                payload = server.completion(body, index, prompt)
                for choice in payload["choices"]:
                    text = choice["message"]["content"]
                    choice["message"]["content"] = text[: len(text) // 2]
                    choice["finish_reason"] = "length"
                self._json(200, payload)
            else:
                self._json(200, server.completion(body, index, prompt))

    return Handler


__all__ = ["make_handler"]
