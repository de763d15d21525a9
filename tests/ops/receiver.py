"""A real webhook receiver (http.server on 127.0.0.1) for the webhook and CI tests."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Receiver:
    url: str
    codes: list[int]  # answered in turn; the last one repeats
    headers: dict[str, str] = field(default_factory=dict)
    secret: str = ""
    received: list[dict[str, Any]] = field(default_factory=list)

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 60  # bounds a hung test; measures nothing
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"got {len(self.received)} of {count} deliveries"
            time.sleep(0.02)
        return self.received


@contextmanager
def running_receiver(ssl_context: ssl.SSLContext | None = None) -> Iterator[Receiver]:
    """A webhook receiver on 127.0.0.1 that verifies every request with the standardwebhooks library (over TLS
    with ``ssl_context``)."""
    state = Receiver(url="", codes=[200])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                payload = Webhook(state.secret).verify(body, headers)
                verified = True
            except WebhookVerificationError:
                payload, verified = None, False
            code = state.codes[min(len(state.received), len(state.codes) - 1)]
            state.received.append({"headers": headers, "payload": payload, "verified": verified, "code": code})
            self.send_response(code)
            for name, value in state.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    scheme = "https" if ssl_context is not None else "http"
    state.url = f"{scheme}://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
