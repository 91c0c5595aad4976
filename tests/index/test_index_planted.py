"""The search index's own files (segments, table of contents, Whoosh's write lock) planted as a FIFO or a link.

Whoosh opens its files by name with a plain ``open``; gitmem's storage opens them
through the one opener instead, so a planted file makes the index read as broken
(rebuilt, or answered without it), never a hang or a read or write outside the
mount. Each run is a child process with a time-out, so a hang fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from contract.support import assert_fsck_clean

from gitmem import GitFileStore

ROOT = Path(__file__).resolve().parents[2]


def _indexed(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo)
    store.sync.write("notes/cats.md", "a memory about cats\n", expected=None)
    store.sync.rebuild_index()
    folder = repo / "gitmem" / "index"
    assert any(folder.iterdir())
    return repo, folder


@pytest.mark.parametrize("target", ["toc", "segment", "WRITELOCK"])
@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_planted_index_file_neither_hangs_nor_reaches_outside(tmp_path: Path, target: str, kind: str) -> None:
    repo, folder = _indexed(tmp_path)
    names = sorted(p.name for p in folder.iterdir())
    if target == "toc":
        name = next(n for n in names if n.endswith(".toc"))
    elif target == "segment":
        name = next(n for n in names if n.endswith(".seg"))
    else:
        name = "WRITELOCK"
    outside = tmp_path / "outside"
    outside.write_bytes(b"theirs")
    (folder / name).unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(folder / name)
    else:
        (folder / name).symlink_to(outside)
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "from gitmem import GitFileStore\n"
        f"store = GitFileStore.open({str(repo)!r})\n"
        "store.sync.write('notes/dogs.md', 'a memory about dogs\\n', expected=None)\n"
        "print(sorted(m.path for m in store.sync.search('memory about').matches))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "['notes/cats.md', 'notes/dogs.md']" in done.stdout
    assert outside.read_bytes() == b"theirs"
    assert_fsck_clean(repo)
