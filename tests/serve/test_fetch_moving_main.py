"""Clones and fetches while ``main`` moves between the ref listing and the pack request.

Smart HTTP is two requests. The server here is wrapped so that an agent write
lands on ``main`` just before every ``git-upload-pack`` request is served: the
tip the client saw in the listing is then no ref's value any more, only an
ancestor of ``main``. Every clone and fetch must still succeed, with exactly the
commit the listing showed (dulwich alone answered 500, "Client wants invalid object").
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmem import Root
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp

from .support import TOKEN, fsck_clean, git, seed


class _MovesMain:
    """A WSGI wrapper: a store write to ``main`` before each pack request reaches the app."""

    def __init__(self, app: GitHttpApp, root: Root, name: str) -> None:
        self.app = app
        self.store = root.mount(name).sync
        self.moves = 0
        self._count = itertools.count()
        self.max_push_bytes = app.max_push_bytes

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").endswith("/git-upload-pack"):
            n = next(self._count)
            self.store.write(f"agent/moved{n}.md", f"agent write {n}\n", expected=None)
            self.moves += 1
        return self.app(environ, start_response)

    def close(self, timeout: float = 10.0) -> None:
        self.app.close(timeout)


@pytest.fixture
def moving(tmp_path: Path) -> Iterator[tuple[Root, _MovesMain, str]]:
    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True)
    seed(store)
    for i in range(3):
        store.sync.write(f"n{i}.md", f"note {i}\n", expected=None)
    wrapper = _MovesMain(GitHttpApp(root, tokens=frozenset({TOKEN})), root, "notes")
    server = GitHttpServer(wrapper, "127.0.0.1", 0).start()
    try:
        yield root, wrapper, f"http://agent:{TOKEN}@127.0.0.1:{server.port}/notes.git"
    finally:
        server.stop()


def _advertised(url: str) -> str:
    line = git("ls-remote", url, "refs/heads/main").stdout.split()
    return line[0]


def test_clone_gets_the_advertised_tip_although_main_moved(
    moving: tuple[Root, _MovesMain, str], tmp_path: Path
) -> None:
    root, wrapper, url = moving
    before = root.mount("notes").sync.head()
    git("clone", "-q", url, str(tmp_path / "clone"))
    assert wrapper.moves >= 1, "main did not move between the listing and the pack request"
    cloned = git("rev-parse", "HEAD", cwd=tmp_path / "clone").stdout.strip()
    assert cloned == before, "the clone should hold the tip it was shown"
    assert root.mount("notes").sync.head() != cloned
    git("fsck", "--strict", cwd=tmp_path / "clone")
    fsck_clean(root.mount_path("notes"))


def test_fetch_and_shallow_fetch_while_main_moves(moving: tuple[Root, _MovesMain, str], tmp_path: Path) -> None:
    root, wrapper, url = moving
    clone = tmp_path / "clone"
    git("clone", "-q", url, str(clone))
    for _ in range(3):
        shown = _advertised(url)
        done = git("fetch", "origin", cwd=clone, check=False)
        assert done.returncode == 0, done.stderr
        fetched = git("rev-parse", "origin/main", cwd=clone).stdout.strip()
        # The fetch's own listing happened after `shown`'s pack request moved main once more.
        assert git("merge-base", "--is-ancestor", shown, fetched, cwd=clone).returncode == 0
        assert fetched != root.mount("notes").sync.head()
    shallow = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", url, str(shallow))
    assert git("rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "1"
    for _ in range(2):
        done = git("fetch", "--depth", "1", "origin", cwd=shallow, check=False)
        assert done.returncode == 0, done.stderr
    deeper = git("fetch", "--depth", "3", "origin", cwd=shallow, check=False)  # dulwich offers no --deepen
    assert deeper.returncode == 0, deeper.stderr
    assert git("rev-list", "--count", "origin/main", cwd=shallow).stdout.strip() == "3"
    git("fsck", "--strict", cwd=shallow)
    assert wrapper.moves >= 7


def test_a_commit_no_ref_reaches_is_still_refused(tmp_path: Path) -> None:
    """Only history is served: a commit that left every ref (a deleted proposal) is not handed out."""
    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True)
    seed(store)
    path = root.mount_path("notes")
    git("branch", "gone", "main", cwd=path)
    store.sync.write("later.md", "later\n", expected=None)
    # A commit only the branch `gone` reaches: made with plain git, then the branch is deleted.
    tree = git("rev-parse", "main^{tree}", cwd=path).stdout.strip()
    orphan = git("commit-tree", tree, "-m", "orphan", cwd=path).stdout.strip()
    git("update-ref", "refs/heads/gone", orphan, cwd=path)
    server = GitHttpServer(GitHttpApp(root, tokens=frozenset({TOKEN})), "127.0.0.1", 0).start()
    try:
        url = f"http://agent:{TOKEN}@127.0.0.1:{server.port}/notes.git"
        work = tmp_path / "work"
        git("init", "-q", str(work))
        assert git("fetch", url, orphan, cwd=work, check=False).returncode == 0  # a ref reaches it
        git("update-ref", "-d", "refs/heads/gone", cwd=path)
        other = tmp_path / "other"
        git("init", "-q", str(other))
        refused = git("fetch", url, orphan, cwd=other, check=False)
        assert refused.returncode != 0
    finally:
        server.stop()
