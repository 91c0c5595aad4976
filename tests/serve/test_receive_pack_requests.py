"""Hand-built ``git-receive-pack`` requests that are not git's protocol get an answer in git's words, never HTTP 500.

A token that may push sent a body that does not parse (garbage, a bad pkt-line
length, a ref command that is not ``old new ref``, a gzip body that is not gzip,
a capability never advertised): dulwich raised while the commands were read and
the server answered 500 with a traceback in its log. Like upload-pack
(``test_upload_pack.py``) it now answers HTTP 200 with one ``ERR`` line saying
what was wrong, and nothing of the memory moves.
"""

from __future__ import annotations

import base64
import gzip
import logging
import urllib.error
import urllib.request

import pytest

from .crafted import pkt
from .support import TOKEN, Mount, Served, fsck_clean, seed


def post(served: Served, name: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{served.server.port}/{name}.git/git-receive-pack",
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/x-git-receive-pack-request",
            "Authorization": "Basic " + base64.b64encode(f"agent:{TOKEN}".encode()).decode(),
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return int(answer.status), bytes(answer.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_a_receive_pack_request_that_does_not_parse_gets_git_s_err_line(
    served: Served, mount: Mount, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    head = seed(mount.store)
    zero = "0" * 40
    bodies: dict[str, tuple[bytes, dict[str, str]]] = {
        "garbage": (b"hello", {}),
        "bad length": (b"zzzzabcd", {}),
        "not a ref command": (pkt(b"abcdef") + b"0000", {}),
        "a command cut short": (b"0063" + f"{head} {zero}".encode(), {}),
        "not gzip": (b"hello", {"Content-Encoding": "gzip"}),
        "unknown capability": (pkt(f"{head} {zero} refs/heads/x\0no-such-capability".encode()) + b"0000", {}),
        "gzip of garbage": (gzip.compress(b"zzzz"), {"Content-Encoding": "gzip"}),
    }
    for what, (body, headers) in bodies.items():
        status, answer = post(served, mount.name, body, headers)
        assert status == 200, (what, status, answer[:300])
        assert answer[4:].startswith(b"ERR receive-pack: protocol error"), (what, answer)
        assert len(answer) < 400, (what, answer)
    bad = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, bad
    assert mount.store.sync.head() == head
    fsck_clean(mount.path)
