"""The CLI's ``find`` of a mount with no index (a fresh clone) answers at once, with the files the index ranks.

Whole ``gitmem find`` processes run while the test holds the index lock, so no
indexer can build anything meanwhile: each answer comes without the index (its
folder is still absent after the call) and without waiting for a build. Then
the index is built and the same calls are made again.
The two answers rank the same files with the same versions and snippets; only
the scores may differ (without the index, the corpus statistics are those of
the matching files, see :mod:`gitmem.index.fallback`). With git on ``PATH``
(``git grep`` picks the files) and without it (every file read).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.index import mount as mount_index
from gitmem.model import Edit
from gitmem.root import Root
from tests.index.test_index_fallback import corpus

FILES = 120  # more than a request indexes itself (INLINE_DOCS)
MORE = {
    "odd/with space.md": "a zeppelin seen from the pier\n",
    "odd/caf\u00e9 notes.md": "Caf\u00e9 au lait, no zeppelin today\n",
    "odd/front.md": "---\ndescription: a kelvin note\n---\nbody with a ticket number\n",
    "odd/no-newline.md": "last ticket without a newline",
    "zeppelin-in-the-name.md": "nothing about airships in here\n",
}
QUERIES = [
    ("zeppelin ticket",),
    ("kelvin",),  # one file holds it with the Kelvin sign
    ("caf\u00e9",),  # a word that is not plain ASCII: git cannot pick the files
    ("\u98de\u8247",),
    ("airship", "--path", "notes/t3"),
    ("zeppelin", "--path", "odd", "--limit", "3"),
    ("ticket", "--limit", "1000"),
    ("nowhereword",),
]


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "root")
    store = root.mount("big", create=True).sync
    store.apply([*corpus(FILES), *(Edit(p, t) for p, t in MORE.items())])
    assert FILES > mount_index.INLINE_DOCS
    return root


def _find(root: Root, env: dict[str, str], *args: str) -> list[tuple[str, str, str]]:
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", root.folder, "--json", "find", "big", *args],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return sorted((h["path"], h["version"], h["snippet"]) for h in json.loads(done.stdout)["hits"])


@pytest.mark.parametrize("git", [True, False], ids=["git-grep", "no-git"])
def test_cli_find_without_an_index_ranks_the_files_the_index_ranks(root: Root, git: bool, tmp_path: Path) -> None:
    env = dict(os.environ)
    if not git:
        bare = tmp_path / "bin"  # a PATH without git (the interpreter is named by its full path)
        bare.mkdir()
        env["PATH"] = str(bare)
        assert shutil.which("git", path=env["PATH"]) is None
    folder = root.mount_folder("big")
    index_dir = mount_index.index_folder(folder)
    with open(mount_index.lock_file(folder), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # no indexer builds while the unindexed answers are made
        unindexed = []
        for query in QUERIES:
            unindexed.append(_find(root, env, *query))
            assert not os.path.isdir(index_dir), query  # answered without an index, none built meanwhile
    store = root.mount("big").sync
    store.rebuild_index()  # the indexers the calls started found the lock taken and left
    assert store.index_status().state == "current"
    indexed = [_find(root, env, *query) for query in QUERIES]
    assert unindexed == indexed
    assert all(indexed[:7]) and indexed[7] == []
    assert {p for p, _, _ in indexed[1]} == {"odd/front.md", "odd/kelvin.md"}
    assert "zeppelin-in-the-name.md" in {p for p, _, _ in indexed[0]}  # a name holds the word
    assert {p for p, _, _ in indexed[2]} == {"odd/caf\u00e9 notes.md"}
