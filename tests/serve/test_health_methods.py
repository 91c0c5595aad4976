"""``/health`` answers GET and HEAD; any other method is told which it may use, not "no such repository"."""

from __future__ import annotations

from typing import Any

import pytest

from gitmem.adapters.http_front import FrontApp


def _inner(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no such repository\n"]


@pytest.mark.parametrize("base", ["", "/memories"])
@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"])
def test_health_answers_its_methods_and_names_them_to_any_other(base: str, method: str) -> None:
    seen: list[tuple[str, list[tuple[str, str]]]] = []
    body = FrontApp(_inner, base)(
        {"PATH_INFO": base + "/health", "REQUEST_METHOD": method},
        lambda status, headers: seen.append((status, headers)),
    )
    status, headers = seen[0]
    if method in ("GET", "HEAD"):
        assert status == "200 OK" and b"".join(body) == b"ok\n"
    else:
        assert status == "405 Method Not Allowed", (status, b"".join(body))
        assert ("Allow", "GET, HEAD") in headers
