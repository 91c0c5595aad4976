"""A fetch request that wants every commit of a long history costs about a clone, not wants x history.

The server asks which wanted commits some ref still reaches (so a fetch racing
an agent's write is served). Asked of libgit2 one want and one ref at a time,
a request naming each of a 6,000-commit memory's commits (300 KB, any read
token, or anyone with ``--public-read``) held a request thread for over two
minutes; sixteen of them held the whole server.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request

from gitmem.git.reach import reachable_wants

from .support import GIT_TIMEOUT, TOKEN, Mount, Served, fsck_clean, git

COMMITS = 3000
#: A liveness bound: one walk of 3,000 commits takes milliseconds; wants x history took ~10 s here.
WALK_BOUND = 3.0


def long_history(mount: Mount, commits: int) -> list[str]:
    """``commits`` commits on ``main`` (newest first), written by ``git fast-import``."""
    stream = []
    for i in range(commits):
        stream.append(f"commit refs/heads/main\ncommitter a <a@example.com> {1_700_000_000 + i} +0000\ndata 2\nc\n")
        if i == 0:
            stream.append("from refs/heads/main^0\n")
        text = f"{i}\n"
        stream.append(f"M 100644 inline f{i % 40}.md\ndata {len(text)}\n{text}\n")
    subprocess.run(
        ["git", "fast-import", "--quiet"], input="".join(stream), text=True, cwd=mount.path, check=True,
        timeout=GIT_TIMEOUT,
    )  # fmt: skip
    return git("rev-list", "main", cwd=mount.path).stdout.split()


def pkt(line: str) -> bytes:
    return f"{len(line) + 4:04x}".encode() + line.encode()


def test_wanting_every_commit_of_a_long_history_is_one_walk(served: Served, mount: Mount) -> None:
    revs = long_history(mount, COMMITS)
    assert len(revs) > COMMITS
    began = time.thread_time()  # CPU: a loaded machine does not stretch it
    found = reachable_wants(str(mount.path), [*revs, "0" * 40, "f" * 40])
    assert time.thread_time() - began < WALK_BOUND
    assert found == set(revs)  # every one reached, nothing made up
    # Served: a request wanting them all gets the pack (git's answer, not an error).
    body = pkt(f"want {revs[0]} side-band-64k\n") + b"".join(pkt(f"want {r}\n") for r in revs[1:]) + b"0000"
    body += pkt("done\n")
    request = urllib.request.Request(
        f"http://127.0.0.1:{served.server.port}/{mount.name}.git/git-upload-pack",
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-git-upload-pack-request", "Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=GIT_TIMEOUT * 4) as answer:
        data = answer.read()
    assert answer.status == 200
    assert b"PACK" in data and b"ERR " not in data[:64]
    fsck_clean(mount.path)


def test_a_gap_in_one_refs_history_leaves_the_other_refs_wants_served(served: Served, mount: Mount) -> None:
    """A commit missing below one ref (a damaged or borrowed history) must not hide what ``main`` reaches.

    libgit2's walk stops at the first commit it cannot read; one walk over every
    ref then left a want behind ``main`` unreached when the broken ref's history
    happened to be walked first, and the fetch was refused.
    """
    revs = long_history(mount, 20)
    behind = revs[2]
    absent = "1" * 40  # the broken ref's commit names a parent the mount does not hold
    tree = git("rev-parse", "main^{tree}", cwd=mount.path).stdout.strip()
    orphans = [
        subprocess.run(
            ["git", "hash-object", "-t", "commit", "--literally", "-w", "--stdin"],
            input=f"tree {tree}\nparent {absent}\nauthor a <a@example.com> 1 +0000\n"
            f"committer a <a@example.com> 1 +0000\n\ngap {i}\n",
            text=True, cwd=mount.path, capture_output=True, check=True,
        ).stdout.strip()
        for i in range(8)  # several, so a broken history is walked before main's whatever the order
    ]  # fmt: skip
    try:
        for i, orphan in enumerate(orphans):
            git("update-ref", f"refs/heads/gap{i}", orphan, cwd=mount.path)
        assert reachable_wants(str(mount.path), [behind, *orphans]) == {behind, *orphans}
        body = pkt(f"want {behind} side-band-64k\n") + b"0000" + pkt("done\n")
        request = urllib.request.Request(
            f"http://127.0.0.1:{served.server.port}/{mount.name}.git/git-upload-pack",
            data=body,
            method="POST",
            headers={"Content-Type": "application/x-git-upload-pack-request", "Authorization": f"Bearer {TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=GIT_TIMEOUT) as answer:
            data = answer.read()
        assert answer.status == 200
        assert b"PACK" in data and b"ERR " not in data[:64]
    finally:
        for i in range(8):
            git("update-ref", "-d", f"refs/heads/gap{i}", cwd=mount.path)
    fsck_clean(mount.path)
