"""forget at scale: the pack it leaves keeps deltas, holds no trace of the erased file, and git agrees."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

from gitmem import GitFileStore
from gitmem.git.peek import apply_delta
from gitmem.git.rewritepack import MAX_DEPTH, delta

COMMITS = 600


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", f"--git-dir={repo}", *args], capture_output=True, text=True, check=check)


def _history(repo: Path) -> None:
    """COMMITS commits of notes in 80 folders; every 10th edits ``hot.md`` and ``deep/er/secret.md``."""
    GitFileStore.init(repo)
    stream = bytearray()
    for i in range(COMMITS):
        msg = f"write n{i}\n".encode()
        stream += b"commit refs/heads/main\ncommitter t <t@example.com> %d +0000\n" % (1_700_000_000 + i)
        stream += b"data %d\n%s" % (len(msg), msg)
        if i == 0:
            stream += b"from refs/heads/main^0\n"
        note = f"note {i}: {'words ' * 40}\n".encode()
        stream += b"M 100644 inline d%02d/n%05d.md\ndata %d\n%s\n" % (i % 80, i, len(note), note)
        if i % 10 == 0:
            for name in (b"hot.md", b"deep/er/secret.md"):
                body = b"%s version %d\n" % (name, i)
                stream += b"M 100644 inline %s\ndata %d\n%s\n" % (name, len(body), body)
    subprocess.run(["git", f"--git-dir={repo}", "fast-import", "--quiet"], input=bytes(stream), check=True)
    _git(repo, "repack", "-adq")


def _pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "objects" / "pack").glob("*.pack"))


def test_forget_leaves_a_pack_with_deltas_and_no_trace(tmp_path: Path) -> None:
    repo = tmp_path / "mem.git"
    _history(repo)
    raw = _git(repo, "log", "--all", "--format=", "--raw", "--no-abbrev", "--", "hot.md", "deep").stdout
    versions = {oid for line in raw.splitlines() if line.startswith(":") for oid in line.split()[2:4]}
    versions.discard("0" * 40)
    assert len(versions) >= 2 * (COMMITS // 10)
    shape = _git(repo, "log", "--format=%s|%ct", "--name-status", "--", "d07").stdout

    store = GitFileStore.open(repo).sync
    store.forget("hot.md")
    report = store.forget("deep/er/secret.md")
    assert report.commits_rewritten == COMMITS + 1  # every commit, and the first forget's audit commit

    for blob in versions:
        assert _git(repo, "cat-file", "-e", blob, check=False).returncode != 0, blob
    assert _git(repo, "log", "--all", "--format=%H", "--", "hot.md", "deep").stdout == ""
    assert _git(repo, "fsck", "--strict", "--no-dangling").returncode == 0
    assert _git(repo, "log", "--format=%s|%ct", "--name-status", "--", "d07").stdout == shape

    # Deltas kept: the pack is no larger than git's own best repack of the same objects allows for.
    best = tmp_path / "best.git"
    shutil.copytree(repo, best)
    _git(best, "repack", "-adfq", "--window=50")
    assert _pack_bytes(repo) <= 1.3 * _pack_bytes(best), (_pack_bytes(repo), _pack_bytes(best))
    listed = _git(repo, "verify-pack", "-v", str(next((repo / "objects" / "pack").glob("*.idx")))).stdout
    depths = [int(f[5]) for line in listed.splitlines() if len(f := line.split()) == 7 and f[1] == "tree"]
    assert len(depths) > COMMITS // 2 and max(depths) <= MAX_DEPTH


def test_delta_rebuilds_the_target_exactly() -> None:
    rng = random.Random(7)
    made = 0
    for _ in range(400):
        base = rng.randbytes(rng.choice([3, 40, 700, 70_000, 300_000]))
        a, b = sorted(rng.randrange(len(base) + 1) for _ in range(2))
        target = base[:a] + rng.randbytes(rng.randrange(0, 300)) + base[b:]
        diff = delta(base, target)
        if diff is not None:
            made += 1
            assert apply_delta(base, diff) == target  # the reader of `gitmem ls`, checked against git
            assert len(diff) < len(target)
    assert made > 100
    assert delta(b"x" * 100, b"y" * 100) is None  # nothing shared: stored whole
