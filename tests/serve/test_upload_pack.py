"""Hand-built ``git-upload-pack`` requests get git's answers, never HTTP 500.

Raw pkt-line requests over HTTP, as a tool or an attacker would send them:
wants of objects no ref reaches (absent, a blob, a commit left behind), every
mix of the capabilities dulwich used to insist on, malformed and protocol v2
lines. Each is answered 200 with git's ``ERR upload-pack: …`` line (or a pack),
the server logs no traceback, and the mount is unchanged. A pack asked for
without ``thin-pack`` indexes on its own (no delta against an object the
client has), without side-band it comes bare, and the real git client still
clones and fetches with protocol v0, v1 and v2 (the server speaks v0/v1; a v2
client falls back).
"""

from __future__ import annotations

import logging
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .support import GIT_TIMEOUT, TOKEN, Mount, Served, fsck_clean, git, seed

MISSING = "1" * 40
CAPABILITY_SETS = [
    "multi_ack_detailed side-band-64k thin-pack ofs-delta agent=hand/1.0",
    "side-band-64k ofs-delta",  # no thin-pack
    "thin-pack",  # no side-band, no ofs-delta
    "",  # none at all
]


def pkt(line: str | bytes) -> bytes:
    data = line.encode() if isinstance(line, str) else line
    return b"%04x" % (len(data) + 4) + data


def request(want: str, caps: str = "", *, haves: tuple[str, ...] = ()) -> bytes:
    first = f"want {want} {caps}".rstrip() + "\n"
    return pkt(first) + b"0000" + b"".join(pkt(f"have {h}\n") for h in haves) + pkt("done\n")


def post(served: Served, name: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    url = f"http://127.0.0.1:{served.server.port}/{name}.git/git-upload-pack"
    sent = {
        "Content-Type": "application/x-git-upload-pack-request",
        "Authorization": f"Bearer {TOKEN}",
        **(headers or {}),
    }
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=sent), timeout=GIT_TIMEOUT) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def split_reply(body: bytes) -> tuple[list[bytes], bytes]:
    """The pkt-lines before a bare pack, and the pack (b'' when none)."""
    lines: list[bytes] = []
    pos = 0
    while pos < len(body):
        if body[pos : pos + 4] == b"PACK":
            return lines, body[pos:]
        size = int(body[pos : pos + 4], 16)
        lines.append(body[pos + 4 : pos + size] if size >= 4 else b"")
        pos += max(size, 4)
    return lines, b""


def index_alone(pack: bytes, where: Path) -> subprocess.CompletedProcess[bytes]:
    """``git index-pack --stdin`` in an empty repository: refuses a thin pack (a delta whose base is absent)."""
    git("init", "-q", "--bare", str(where))
    return subprocess.run(
        ["git", "index-pack", "--stdin"], cwd=where, input=pack, capture_output=True, timeout=GIT_TIMEOUT
    )


@pytest.fixture
def no_tracebacks(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO)
    return caplog


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not bad, [r.getMessage() for r in bad]


def test_wants_the_memory_cannot_serve_are_not_our_ref(
    served: Served, mount: Mount, no_tracebacks: pytest.LogCaptureFixture
) -> None:
    head = seed(mount.store)
    blob = git("rev-parse", "main:seed.md", cwd=mount.path).stdout.strip()
    git("update-ref", "refs/heads/gone", head, cwd=mount.path)
    mount.store.sync.write("later.md", "later\n", expected=None)
    left = git("commit-tree", "-m", "left behind", git("rev-parse", "main^{tree}", cwd=mount.path).stdout.strip(),
               cwd=mount.path).stdout.strip()  # fmt: skip
    before = git("for-each-ref", cwd=mount.path).stdout
    for want in (MISSING, blob, left):
        for caps in CAPABILITY_SETS:
            status, body = post(served, mount.name, request(want, caps))
            assert (status, body) == (200, pkt(f"ERR upload-pack: not our ref {want}")), (want, caps, body[:200])
    assert git("for-each-ref", cwd=mount.path).stdout == before
    assert_no_traceback(no_tracebacks)
    fsck_clean(mount.path)


def test_every_capability_mix_gets_a_pack_that_indexes_alone(
    served: Served, mount: Mount, tmp_path: Path, no_tracebacks: pytest.LogCaptureFixture
) -> None:
    """A gc'ed mount stores one version as a delta of the other; a fetch of the new one
    given the old one must still not get a delta against it unless it asked for thin-pack."""
    seed(mount.store)
    big = "".join(f"line {i}: the release checklist has one more step\n" for i in range(800))
    mount.store.sync.write("big.md", big, expected=None)
    old = mount.store.sync.head()
    mount.store.sync.write("big.md", big + "one more line\n", expected=mount.store.sync.read("big.md").version)
    new = mount.store.sync.head()
    git("repack", "-a", "-d", "-f", "-q", cwd=mount.path)
    deltas = git("verify-pack", "-v", *map(str, (mount.path / "objects" / "pack").glob("*.idx")), cwd=mount.path)
    assert " 1 " in deltas.stdout or "chain length = 1" in deltas.stdout, "no delta in the pack: nothing to test"
    for i, caps in enumerate(CAPABILITY_SETS):
        status, body = post(served, mount.name, request(new, caps, haves=(old,)))
        assert status == 200
        lines, pack = split_reply(body)
        if "side-band-64k" in caps:
            assert not pack and any(line.startswith(b"\x01PACK") for line in lines), caps
            pack = b"".join(line[1:] for line in lines if line[:1] == b"\x01")
        else:
            assert pack, (caps, lines)  # bare after the negotiation, as git sends it
            assert lines[-1].startswith((b"ACK", b"NAK")), lines
        if "thin-pack" not in caps:  # with it, a delta against the old version would be the server's right
            done = index_alone(pack, tmp_path / f"alone-{i}")
            assert done.returncode == 0, (caps, done.stderr.decode())
            assert (
                new.encode()
                in git("verify-pack", "-v", *map(str, (tmp_path / f"alone-{i}").rglob("*.idx"))).stdout.encode()
            )
    assert_no_traceback(no_tracebacks)
    fsck_clean(mount.path)


def test_malformed_and_v2_requests_are_refused_in_git_s_words(
    served: Served, mount: Mount, no_tracebacks: pytest.LogCaptureFixture
) -> None:
    head = seed(mount.store)
    bodies = {
        "empty": b"",
        "bad length": b"zzzz",
        "short id": pkt("want zz\n") + b"0000" + pkt("done\n"),
        "unknown capability": request(head, "no-such-capability"),
        "bad depth": pkt(f"want {head}\n") + pkt("deepen zz\n") + b"0000" + pkt("done\n"),
        "bad filter": pkt(f"want {head} filter\n") + pkt("filter blob:nonsense\n") + b"0000" + pkt("done\n"),
        "bad have": pkt(f"want {head}\n") + b"0000" + pkt("have zz\n") + pkt("done\n"),
        "unknown command": pkt(f"want {head}\n") + b"0000" + pkt("bogus\n") + pkt("done\n"),
        "v2 fetch": pkt("command=fetch\n") + b"0001" + pkt(f"want {head}\n") + pkt("done\n") + b"0000",
        "v2 ls-refs": pkt("command=ls-refs\n") + b"0001" + pkt("peel\n") + b"0000",
    }
    for what, body in bodies.items():
        for headers in ({}, {"Git-Protocol": "version=2"}):
            status, answer = post(served, mount.name, body, headers)
            assert status == 200, (what, status, answer[:200])
            lines, pack = split_reply(answer)
            assert not pack and len(lines) == 1 and lines[0].startswith(b"ERR upload-pack: protocol error"), (
                what,
                answer,
            )
            assert len(lines[0]) < 300
    assert mount.store.sync.head() == head
    assert_no_traceback(no_tracebacks)
    fsck_clean(mount.path)


@pytest.mark.parametrize("version", ["0", "1", "2"])
def test_the_git_client_still_clones_and_fetches(
    served: Served, mount: Mount, tmp_path: Path, version: str, no_tracebacks: pytest.LogCaptureFixture
) -> None:
    seed(mount.store)
    proto = ("-c", f"protocol.version={version}")
    work = tmp_path / "clone"
    git(*proto, "clone", "-q", served.url(mount.name), str(work))
    mount.store.sync.write("next.md", "next\n", expected=None)
    git(*proto, "fetch", "-q", "origin", cwd=work)
    assert git("rev-parse", "origin/main", cwd=work).stdout.strip() == mount.store.sync.head()
    git("fsck", "--strict", cwd=work)
    assert_no_traceback(no_tracebacks)
    fsck_clean(mount.path)
