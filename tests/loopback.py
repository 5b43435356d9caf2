"""A throwaway HTTP server on 127.0.0.1 for a test that plays a hostile peer (a control plane, a Ray head):
`with loopback.serving(Handler) as url:` serves `Handler` (an http.server.BaseHTTPRequestHandler) on a port of
its own in a daemon thread and shuts it down when the block ends."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import yaml


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A handler that logs nothing to the test's stderr."""

    def log_message(self, *_args) -> None:
        pass

    def answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    # shutdown waits for serve_forever to look at its flag, every poll_interval: at most 10 ms when the block ends
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig at `path` whose one context `c` names `server` (the loopback peer) with a bearer token."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path
