"""The viewer's HTTP server: loopback by default, read-only, no scripts.

Why the standard library's threading server: the viewer serves a handful of read-only
pages to one person; every page is rendered on request from the job folders (nothing is
cached but the parsed results, see ``_index.py``), so there is no framework to earn its
weight. What it guards: the Host header (a page on another site cannot reach a loopback
viewer through DNS rebinding), a Content-Security-Policy that forbids every script, and
routes that name jobs and rounds by index and key, never by path.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from evoround.reports import BY_NAME
from evoround.view._index import JobIndex, RoundKey
from evoround.view._pages import NotFound, compare_page, grid_page, jobs_page, render, round_page

log = logging.getLogger(__name__)

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_JOB = re.compile(
    rf"^(?:/job/(\d+)|{re.escape(BY_NAME)}([^/]+))(?:/round/([^/]+)/(mt|sr)/(\d+)/(\d+))?$"
)
"""A job by position (the viewer's own links) or by folder name (report.html's links),
then optionally one of its rounds."""
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _route(index: JobIndex, path: str, query: dict[str, str]) -> str:
    if path == "/":
        return jobs_page(index, query)
    if m := _JOB.match(path):
        i = int(m[1]) if m[1] is not None else index.position(unquote(m[2]))
        if i is None:
            raise NotFound(f"no job named {unquote(m[2])!r} is served here")
        if m[3] is None:
            return grid_page(index, i, query)
        key = RoundKey(unquote(m[3]), m[4], int(m[5]), int(m[6]))
        return round_page(index, i, key, query.get("q", "")[:200])
    if path == "/compare":
        return compare_page(index, query.get("a", ""), query.get("b", ""))
    raise NotFound(f"no page {path}")


def handler_for(index: JobIndex, hosts: frozenset[str] | None) -> type[BaseHTTPRequestHandler]:
    """A request handler bound to ``index``; ``hosts``: Host names accepted (None: any)."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "evoround-view"

        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            if hosts is not None and self._host() not in hosts:
                self._send(
                    421,
                    render(
                        "error.html.j2",
                        title="refused",
                        status="421",
                        message="unexpected Host header",
                    ),
                )
                return
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items() if v}
            try:
                self._send(200, _route(index, url.path, query))
            except NotFound as e:
                self._send(
                    404, render("error.html.j2", title="not found", status="404", message=str(e))
                )
            except Exception:
                log.exception("view: %s", self.path)
                self._send(
                    500,
                    render(
                        "error.html.j2",
                        title="error",
                        status="500",
                        message="the page could not be built (see the viewer's log)",
                    ),
                )

        def _host(self) -> str:
            host = (self.headers.get("Host") or "").strip().lower()
            return host.rsplit(":", 1)[0] if not host.endswith("]") else host

        def _send(self, code: int, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for k, v in HEADERS.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            log.debug("view: " + format, *args)

    return Handler


class ViewServer:
    """A running viewer (``url``), stopped by :meth:`close` (also a context manager)."""

    def __init__(self, index: JobIndex, host: str = "127.0.0.1", port: int = 0) -> None:
        self.index = index
        hosts = LOOPBACK if host in LOOPBACK else None
        self.httpd = ThreadingHTTPServer((host, port), handler_for(index, hosts))
        self.httpd.daemon_threads = True
        bound = self.httpd.server_address
        name = "localhost" if host in LOOPBACK else host
        self.url = f"http://{name}:{bound[1]}/"
        self._thread: threading.Thread | None = None

    def start(self) -> ViewServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self, ready: Callable[[str], None] | None = None) -> None:
        if ready is not None:
            ready(self.url)
        self.httpd.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
        self.httpd.server_close()
        self.index.close()

    def __enter__(self) -> ViewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
