"""An image the harness serves itself over http://127.0.0.1, for the image-URL request shape
(there is no internet to fetch one from).

One small threaded HTTP server per process, started on first use on a port the kernel picks
from its ephemeral range (the harness's port registry hands out ports below it, so the two
never collide); its thread is a daemon and ends with the process.
"""

from __future__ import annotations

import functools
import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOOPBACK = "127.0.0.1"
IMAGE_PATH = "/red-square.png"
IMAGE_SIDE = 32


def png_bytes() -> bytes:
    """A small red PNG (the same picture the data: URL shape carries)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (IMAGE_SIDE, IMAGE_SIDE), (220, 40, 40)).save(buffer, "PNG")
    return buffer.getvalue()


class _ImageHandler(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        if self.path != IMAGE_PATH:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a test's output is its verdict, not an access log."""


@functools.lru_cache(maxsize=1)
def image_url() -> str:
    """The served image's URL (the server starts on the first call)."""
    handler = type("ImageHandler", (_ImageHandler,), {"body": png_bytes()})
    server = ThreadingHTTPServer((LOOPBACK, 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="image-server", daemon=True).start()
    return f"http://{LOOPBACK}:{server.server_address[1]}{IMAGE_PATH}"
