"""Anonymous load against a ``--public-read`` server: gzip bombs and floods stay cheap and bounded.

Every request goes to 127.0.0.1 only, in loops bounded in count; the server must
keep answering token holders (and, once the flood is over, anonymous readers).
"""

from __future__ import annotations

import gzip
import io
import secrets
import threading
import urllib.error
import urllib.request
from pathlib import Path

from gitmem.adapters.http_server import _trim_negotiation

from .crafted import oid, pack, receive_pack
from .support import TOKEN, Mount, Served, git, has_object, seed

BOMBS = 4  # as many as waitress has workers


def _post(url: str, body: bytes, service: str, token: str | None = None) -> int:
    headers = {"Content-Type": f"application/x-{service}-request", "Content-Encoding": "gzip"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def negotiation_bomb(head: str, megabytes: int = 30) -> bytes:
    """~``megabytes`` MB of fetch negotiation that gzip packs into well under 100 KB."""
    have = f"0032have {head}\n".encode()
    lines = [f"0032want {head}\n".encode(), b"0000", have * (megabytes * 1024 * 1024 // len(have)), b"0009done\n"]
    return gzip.compress(b"".join(lines), compresslevel=9)


def test_gzip_bombs_are_refused_by_their_inflated_size_and_token_holders_are_still_served(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    served.app.public_read = True
    head = seed(mount.store)
    bomb = negotiation_bomb(head)
    assert len(bomb) < 200_000
    url = f"http://127.0.0.1:{served.server.port}/{mount.name}.git/git-upload-pack"
    codes: list[int] = []
    threads = [threading.Thread(target=lambda: codes.append(_post(url, bomb, "git-upload-pack"))) for _ in range(BOMBS)]
    for thread in threads:
        thread.start()
    # While the bombs are in flight a token holder clones (the guard is git's own 60 s timeout).
    git("clone", "-q", served.url(mount.name), str(tmp_path / "with-token"))
    for thread in threads:
        thread.join(120)
    assert len(codes) == BOMBS and set(codes) <= {401, 413}, codes
    assert 413 in codes
    # Anonymous readers are served again once the flood is over.
    git("clone", "-q", served.url(mount.name, token=None), str(tmp_path / "anonymous"))
    assert (tmp_path / "anonymous" / "seed.md").is_file()


def test_anonymous_requests_beyond_their_slots_are_turned_away_at_once_not_queued(served: Served, mount: Mount) -> None:
    served.app.public_read = True
    seed(mount.store)
    taken = [served.app._anonymous.acquire(blocking=False) for _ in range(served.app.anonymous_slots)]
    try:
        assert all(taken)
        url = f"http://127.0.0.1:{served.server.port}/{mount.name}.git/info/refs?service=git-upload-pack"
        try:
            urllib.request.urlopen(url, timeout=30).close()
            code = 200
        except urllib.error.HTTPError as exc:
            code = exc.code
            assert exc.headers["Retry-After"] and "busy" in exc.read().decode()
            exc.close()
        assert code == 401
        # A token holder is not limited by the anonymous slots (git retries with its token).
        assert git("ls-remote", served.url(mount.name)).stdout.strip()
        refused = git("ls-remote", served.url(mount.name, token=None), check=False)
        assert refused.returncode != 0
    finally:
        for _ in taken:
            served.app._anonymous.release()


def test_a_push_whose_body_inflates_past_the_cap_is_refused_with_a_report(served: Served, mount: Mount) -> None:
    head = seed(mount.store)
    served.app.max_push_bytes = 256 * 1024
    # One 8 MiB blob stored without compression: the pack is 8 MiB, its gzip a few KB.
    blob = b"\0" * (8 * 1024 * 1024)
    body = pack([("blob", blob)], level=0)
    assert len(gzip.compress(body)) < 100_000
    base = f"http://127.0.0.1:{served.server.port}"
    report = receive_pack(base, mount.name, TOKEN, [(head, "ab" * 20, "refs/heads/main")], body, gzip_body=True)
    assert report.http == 200
    assert report.unpack is not None and "exceeds the server's limit" in report.unpack, report
    assert report.status("refs/heads/main") == ["pack too large"]
    assert mount.store.sync.head() == head
    assert not has_object(mount.path, oid("blob", blob))


def test_a_negotiation_with_thousands_of_haves_is_trimmed_and_still_answered_with_a_pack(
    served: Served, mount: Mount
) -> None:
    served.app.public_read = True
    head = seed(mount.store)
    want = f"want {head} side-band-64k ofs-delta thin-pack\n".encode()
    haves = b"".join(f"0032have {secrets.token_hex(20)}\n".encode() for _ in range(15_000))
    body = f"{len(want) + 4:04x}".encode() + want + b"0000" + haves + b"0009done\n"
    assert len(body) < served.app.max_fetch_request_bytes
    url = f"http://127.0.0.1:{served.server.port}/{mount.name}.git/git-upload-pack"
    request = urllib.request.Request(
        url, data=gzip.compress(body), method="POST",
        headers={"Content-Type": "application/x-git-upload-pack-request", "Content-Encoding": "gzip"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200
        assert b"PACK" in answer.read()


def test_trimming_keeps_the_first_wants_and_haves_and_every_other_line() -> None:
    def pkt(text: str) -> bytes:
        return f"{len(text) + 4:04x}{text}".encode()

    a, b, c = "a" * 40, "b" * 40, "c" * 40
    body = (
        pkt(f"want {a} side-band-64k\n") + pkt(f"want {a}\n") + pkt(f"want {b}\n") + b"0000"
        + pkt(f"have {a}\n") + pkt(f"have {a}\n") + pkt(f"have {b}\n") + pkt(f"have {c}\n") + pkt("done\n")
    )  # fmt: skip
    trimmed = _trim_negotiation(body, max_haves=2)
    expected = (
        pkt(f"want {a} side-band-64k\n") + pkt(f"want {b}\n") + b"0000"
        + pkt(f"have {a}\n") + pkt(f"have {b}\n") + pkt("done\n")
    )  # fmt: skip
    assert trimmed == expected
    assert _trim_negotiation(b"zzzz-not-pkt-lines", 2) == b"zzzz-not-pkt-lines"


def test_an_anonymous_slot_is_freed_even_when_the_body_is_never_read(served: Served, mount: Mount) -> None:
    served.app.public_read = True
    seed(mount.store)
    environ = {
        "PATH_INFO": f"/{mount.name}.git/info/refs",
        "QUERY_STRING": "service=git-upload-pack",
        "REQUEST_METHOD": "GET",
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "0",
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    for _ in range(served.app.anonymous_slots + 2):
        body = served.app(dict(environ), lambda status, headers, exc_info=None: None)
        body.close()  # type: ignore[attr-defined]  # a client that went away before the first chunk
    taken = [served.app._anonymous.acquire(blocking=False) for _ in range(served.app.anonymous_slots)]
    assert all(taken)
    for _ in taken:
        served.app._anonymous.release()
