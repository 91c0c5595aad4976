"""A real ``gitmem serve`` process whose token file an admin edits while it runs.

A live edit that breaks the file (a ``[[tokens]]`` typo, a FIFO, a link to
``/dev/zero``, a 100 MB file) must make every git and MCP request fail closed
(401) at once, without hanging the server or growing it, with the reason in the
server's log once per change; fixing the file restores access without a restart.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from gitmem import Root
from gitmem.adapters.tokens import hash_token, token_entry

from .support import fsck_clean, git, seed, serving

ALICE = "gm_alice-live-edit-0123456789abcdef0123456789"
#: Each request must be answered this fast even while the file is a FIFO (a liveness bound).
ANSWER_SECONDS = 10.0


def _request(url: str, token: str, *, body: bytes | None = None) -> int:
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_SECONDS) as response:
            response.read()
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        with exc:
            status = exc.code
    assert time.monotonic() - started < ANSWER_SECONDS
    return status


def _replace(path: Path, make: str) -> None:
    """What an admin's editor or ``mv`` does: the new file takes the old one's place in one step."""
    fresh = path.with_name(path.name + ".new")
    if make == "typo":
        fresh.write_text(
            f'[[tokens]]\nprincipal = "alice"\nsha256 = "{hash_token(ALICE)}"\nmemories = ["*"]\naccess = "admin"\n'
        )
    elif make == "fifo":
        os.mkfifo(fresh)
    elif make == "link":
        fresh.symlink_to("/dev/zero")
    elif make == "big":
        with fresh.open("wb") as out:
            out.truncate(100 << 20)
    else:
        fresh.write_text(make)
    os.replace(fresh, path)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_live_edit_that_breaks_the_token_file_fails_closed_until_fixed(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    head = seed(root.mount("notes", create=True))
    tokens = tmp_path / "tokens.toml"
    good = token_entry(ALICE, "alice", ["notes"], "write")
    tokens.write_text(good)
    with serving(root.path, tokens, "--workers", "1") as served:  # one worker: one log line per change
        info = served.info
        refs = f"{info['url']}/notes.git/info/refs?service=git-upload-pack"
        hello = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ).encode()
        mcp = info["mcp_url"]
        assert _request(refs, ALICE) == 200  # answered: the worker is up
        worker = int(Path(f"/proc/{served.proc.pid}/task/{served.proc.pid}/children").read_text().split()[0])
        rss_before = _rss_kib(worker)

        for broken in ("typo", "fifo", "link", "big"):
            _replace(tokens, broken)
            for _ in range(3):  # request after request: each refused, the log says why once
                assert _request(refs, ALICE) == 401, broken
                if mcp:
                    assert _request(mcp, ALICE, body=hello) == 401, broken
            # Every line of the typo'd file was an admin token under the old guess; none is one now.
            assert _request(refs, 'access = "admin"') == 401
            assert _request(refs, "[[tokens]]") == 401
        assert _rss_kib(worker) < rss_before + 50 * 1024, "the server read the device or the big file"

        _replace(tokens, good)  # fixed: access is back, without a restart
        assert _request(refs, ALICE) == 200
        url = info["url"].replace("://", f"://alice:{ALICE}@", 1) + "/notes.git"
        git("clone", "-q", url, str(tmp_path / "clone"))
    err = served.err
    said = [line for line in err.splitlines() if "no longer reads" in line]
    assert len(said) == 4, err  # once per change, not per request
    typo, fifo, link, big = said
    assert "[[token]]" in typo and "tokens" in typo
    assert "FIFO" in fifo and "symbolic link" in link and "larger than" in big
    assert ALICE not in err
    assert root.mount("notes").sync.head() == head
    fsck_clean(root.mount_path("notes"))


def test_a_mount_config_planted_while_serving_is_refused_at_once_and_served_again_when_fixed(tmp_path: Path) -> None:
    """The server's git and MCP paths check a mount's control files before dulwich or libgit2 reads them."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.mcp_http_client import HttpMcpClient

    root = Root(tmp_path / "root")
    head = seed(root.mount("notes", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["notes"], "write"))
    config = root.mount_path("notes") / "config"
    saved = config.read_bytes()
    with serving(root.path, tokens) as served:
        info = served.info
        refs = f"{info['url']}/notes.git/info/refs?service=git-upload-pack"
        with HttpMcpClient(info["mcp_url"], ALICE) as client:
            assert not client.call("memory_file_view", memory="notes", path="seed.md").is_error
            for planted in ("fifo", "link"):
                config.unlink()
                if planted == "fifo":
                    os.mkfifo(config)
                else:
                    config.symlink_to("/dev/zero")
                assert _request(refs, ALICE) == 503, planted
                started = time.monotonic()
                viewed = client.call("memory_file_view", memory="notes", path="seed.md")
                created = client.call("memory_file_create", memory="notes", path="new.md", content="x\n")
                assert time.monotonic() - started < ANSWER_SECONDS
                for answer in (viewed, created):
                    assert answer.is_error and json.loads(answer.content[0].text)["error"] == "unavailable"
            config.unlink()
            config.write_bytes(saved)
            assert _request(refs, ALICE) == 200
            assert not client.call("memory_file_view", memory="notes", path="seed.md").is_error
    err = served.err
    assert "memory notes is not served" in err and "FIFO" in err and "symbolic link" in err
    assert root.mount("notes").sync.head() == head  # the refused create wrote nothing
    fsck_clean(root.mount_path("notes"))
