"""What a client can make the session book keep for it is bounded by what it was offered.

The book (one record per session, read by every worker) holds a session's
subscriptions and, for each, where the memory's ``main`` was when it subscribed.
``resources/unsubscribe`` takes any URI (it is a no-op for one never subscribed),
so the record must only ever name URIs the session could subscribe to: a client
sending megabytes of made-up URIs must not grow a file the server reads back at
every change, nor break its own session for the other workers.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPDeprecationWarning

from bench.mcp_http_client import HttpMcpClient
from gitmem import Root
from gitmem.adapters.mcp_book import SessionBook
from gitmem.adapters.mcp_server import save_cursors
from gitmem.errors import MemoryStoreError

from .support import book_workers

TOKEN = "tok-rob-book-bounds-0123456789abcdef"
CONTEXT = "memory://notes/context"


class Served:
    def __init__(self, root: Root, book: SessionBook, urls: list[str]) -> None:
        self.root = root
        self.book = book
        self.urls = urls


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """Two "workers" (two apps on two ports) over one session book, as ``--workers 2`` has."""
    with book_workers(tmp_path, TOKEN, "rob", "read") as (root, book, _, _, urls):
        yield Served(root, book, urls)


def unsubscribe(client: HttpMcpClient, uri: str) -> None:
    assert client.session is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        client.run(client.session.unsubscribe_resource(uri))  # type: ignore[arg-type]


def the_record(book: SessionBook) -> Path:
    (record,) = book.path.glob("*/*.json")
    return record


def tools_list(url: str, session: str) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-06-18",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return int(answer.status)


def test_unsubscribing_from_made_up_uris_keeps_nothing_of_them(served: Served) -> None:
    with HttpMcpClient(served.urls[0], TOKEN) as client:
        client.subscribe(CONTEXT)
        for n in range(6):  # 6 MB of URIs nobody offered: past what the book reads back (4 MiB)
            unsubscribe(client, f"memory://{'x' * 1_000_000}{n}/context")
        unsubscribe(client, "memory://secret/context")  # a memory the token does not reach
        record = the_record(served.book)
        assert record.stat().st_size < 64 * 1024
        kept = json.loads(record.read_text(encoding="utf-8"))
        assert kept["subscriptions"] == [CONTEXT]
        assert set(kept["heads"]) == {CONTEXT}
        # The session still answers through the other worker, which takes it up from the book.
        assert tools_list(served.urls[1], record.stem) == 200
        unsubscribe(client, CONTEXT)
        kept = json.loads(the_record(served.book).read_text(encoding="utf-8"))
        assert kept["subscriptions"] == [] and kept["heads"] == {}


def open_session(url: str, client_name: str) -> tuple[int, str | None]:
    """An ``initialize`` naming the client ``client_name`` (sent as UTF-8): its status and session id."""
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": client_name, "version": "1"}}}  # fmt: skip
    request = urllib.request.Request(
        url,
        data=json.dumps(hello, ensure_ascii=False).encode("utf-8"),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {TOKEN}",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status), answer.headers.get("mcp-session-id")
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, None


def test_a_handshake_too_large_for_the_book_is_refused_and_nothing_of_it_kept(served: Served) -> None:
    # Under the body cap (4 MiB), but the book keeps the handshake for every worker to replay: kept as it came,
    # each session of a token's 64 would be a file of megabytes that the other workers cannot read back.
    status, session = open_session(served.urls[0], "é" * 1_900_000)
    assert status == 413 and session is None
    assert [p.name for p in served.book.path.glob("*/*") if p.name != ".owner"] == []
    status, session = open_session(served.urls[0], "é" * 1000)  # an ordinary one is kept, for every worker
    assert status == 200 and session is not None
    assert the_record(served.book).stat().st_size < 64 * 1024
    assert tools_list(served.urls[1], session) == 200


def test_what_an_ended_session_leaves_behind_is_swept_by_the_next_reap(tmp_path: Path) -> None:
    # A memory_context prompt still in flight when its session ends (a DELETE through another worker)
    # saves its cursors after the session's files are gone, and a worker killed while it replaced a
    # record leaves its temporary file: neither may stay in the book for as long as the server runs.
    book = SessionBook(tmp_path / "book")
    owner = "a" * 64
    ids = []
    for _ in range(2):
        admitted = book.admit(owner, 8, 60.0)
        assert admitted.session_id is not None and admitted.lock_fd is not None
        book.register(owner, admitted.session_id, {"init": "{}", "subscriptions": []})
        book.idle(admitted.lock_fd)
        os.close(admitted.lock_fd)
        ids.append(admitted.session_id)
    live, ended = ids
    save_cursors(book.cursor_path(owner, live), {"notes": "0" * 40})
    book.remove(owner, ended)
    save_cursors(book.cursor_path(owner, ended), {"notes": "0" * 40})  # the late prompt's save
    folder = book.path / owner
    leftover = folder / f".{live}.json.999999.0badf00d.tmp"
    leftover.write_text("{", encoding="utf-8")
    os.utime(leftover, (time.time() - 7200, time.time() - 7200))
    book.reap(3600.0)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [".owner", f"{live}.json", f"{live}.lock", f"{live}.cursors"]
    )


def test_the_book_never_writes_a_record_its_workers_could_not_read_back(tmp_path: Path) -> None:
    book = SessionBook(tmp_path / "book")
    owner = "b" * 64
    admitted = book.admit(owner, 8, 60.0)
    assert admitted.session_id is not None and admitted.lock_fd is not None
    book.register(owner, admitted.session_id, {"init": "{}", "subscriptions": []})
    with pytest.raises(MemoryStoreError) as refused:
        book.update(owner, admitted.session_id, lambda record: {**record, "init": "é" * 1_000_000})
    assert refused.value.code == "too_large"
    assert book.load(owner, admitted.session_id) == {"init": "{}", "subscriptions": [], "generation": 1}
    os.close(admitted.lock_fd)
