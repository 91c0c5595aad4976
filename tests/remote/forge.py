"""A plain forge for tests: git's own smart-HTTP server (``git http-backend``) behind a tiny CGI runner.

No gitmem code answers a request: each one runs ``git http-backend`` as a new
process with the CGI variables git documents (``GIT_PROJECT_ROOT``,
``GIT_HTTP_EXPORT_ALL``, ``REMOTE_USER`` for pushes), as Apache or nginx would.
With ``password`` set, every request must carry HTTP Basic credentials
``alice:<password>`` (401 otherwise), so a test can tell whether a client sent them.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

USER = "alice"


@dataclass
class Forge:
    """Repositories under ``path`` served at ``http://127.0.0.1:<port>/<name>.git``."""

    path: Path
    port: int
    password: str | None = None

    def url(self, name: str, *, with_password: bool = False) -> str:
        auth = f"{USER}:{self.password}@" if with_password and self.password else ""
        return f"http://{auth}127.0.0.1:{self.port}/{name}.git"

    def repo(self, name: str) -> Path:
        return self.path / f"{name}.git"


def _handler(project_root: Path, password: str | None) -> type[BaseHTTPRequestHandler]:
    class CGI(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # quiet
            return

        def do_GET(self) -> None:
            self._run()

        def do_POST(self) -> None:
            self._run()

        def _run(self) -> None:
            if password is not None:
                expected = "Basic " + base64.b64encode(f"{USER}:{password}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="forge"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                **os.environ,
                "GIT_PROJECT_ROOT": str(project_root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_USER": USER,
                "REMOTE_ADDR": "127.0.0.1",
                "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            if self.headers.get("Git-Protocol"):
                env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
            done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, timeout=120)
            head, _, payload = done.stdout.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = done.stdout.partition(b"\n\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").splitlines():
                key, _, value = line.partition(":")
                if key.lower() == "status":
                    status = int(value.strip().split()[0])
                elif key:
                    headers.append((key, value.strip()))
            self.send_response(status)
            for key, value in headers:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return CGI


@contextmanager
def running_forge(path: Path, password: str | None = None) -> Iterator[Forge]:
    path.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(path, password))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Forge(path, int(server.server_address[1]), password)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def new_repo(forge: Forge, name: str) -> Path:
    """An empty bare repository on the forge, accepting pushes over HTTP, ``main`` its default branch."""
    repo = forge.repo(name)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "config", "http.receivepack", "true"], check=True)
    return repo


@contextmanager
def running_daemon(path: Path) -> Iterator[str]:
    """``git daemon`` serving the repositories under ``path`` with pushes on; yields ``git://127.0.0.1:<port>``."""
    path.mkdir(parents=True, exist_ok=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--informative-errors",
            f"--base-path={path}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        daemon.terminate()
        daemon.wait(10)
