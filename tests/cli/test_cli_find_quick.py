"""The CLI's find of ``main`` reads a current index without the store, and answers as the store does.

:func:`gitmem.quickread.find` ranks with the committed index over the pygit2-free
peek when the index is stamped with the head; otherwise (no index, one that lags,
one that cannot be read, a refusal) the store answers, catching up as it does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from gitmem import quickread
from gitmem.errors import MemoryStoreError
from gitmem.index import background
from gitmem.index import mount as mount_index
from gitmem.model import Edit
from gitmem.root import Root
from tests.index.test_index_fallback import corpus

QUERIES = [
    ("zeppelin", "", 10),
    ("zeppelin sighting", "", 1000),
    ("ZEPPELIN ticket", "notes/t3/", 5),
    ("harbour", "notes/", 3),
    ("airship harbour note", "", 50),
    ("n0042", "", 10),  # a word of a path
    ("飞艇", "odd/", 10),
    ("nothing-like-this", "", 10),
]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Root:
    monkeypatch.setattr(background, "_spawn", lambda path: None)
    root = Root(tmp_path / "root")
    root.mount("big", create=True).sync.apply(corpus(120))
    return root


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names the store is opened for from now on."""
    opened: list[str] = []
    mount = Root.mount

    def counted(self: Root, name: str, **kwargs: Any) -> Any:
        opened.append(name)
        return mount(self, name, **kwargs)

    monkeypatch.setattr(Root, "mount", counted)
    return opened


def test_a_current_index_is_read_without_the_store(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    store = root.mount("big").sync
    store.rebuild_index()
    expected = [store.find(q, path=p, limit=n) for q, p, n in QUERIES]
    assert any(expected) and all(h.snippet for hits in expected for h in hits)
    opened = _opened(monkeypatch)
    assert [quickread.find(root, "big", q, path=p, limit=n) for q, p, n in QUERIES] == expected
    assert opened == []


def test_a_lagging_or_missing_index_is_the_stores(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    store = root.mount("big").sync
    store.rebuild_index()
    store.apply([Edit("notes/t1/n0001.md", "now about a zeppelin hangar\n"), Edit("notes/t2/n0002.md", None)])
    opened = _opened(monkeypatch)
    for q, p, n in QUERIES:
        answer = quickread.find(root, "big", q, path=p, limit=n)
        assert answer == store.find(q, path=p, limit=n), q
    assert opened == ["big"]  # the first call caught the index up (two files: inline); the rest read it
    assert store.index_status().state == "current"
    mount_index._kept.clear()
    os.rename(mount_index.index_folder(store.path), mount_index.index_folder(store.path) + ".gone")
    assert quickread.find(root, "big", "zeppelin", path="", limit=10) == store.find("zeppelin")  # ranked without it
    assert opened[1:] == ["big"]


def test_refusals_are_the_stores(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    root.mount("big").sync.rebuild_index()
    for query, path, limit, code in (
        ("   ", "", 10, "invalid_pattern"),
        ("zeppelin", "", 0, "invalid_pattern"),
        ("zeppelin", "", 1001, "invalid_pattern"),
        ("zeppelin", "no-slash", 10, "invalid_path"),
        ("zeppelin", "../up/", 10, "invalid_path"),
    ):
        with pytest.raises(MemoryStoreError) as refused:
            quickread.find(root, "big", query, path=path, limit=limit)
        assert refused.value.code == code, (query, path, limit)
    root.mount("recs", create=True, kind="record")
    with pytest.raises(MemoryStoreError) as wrong:
        quickread.find(root, "recs", "zeppelin", path="", limit=10)
    assert wrong.value.code == "wrong_kind"
    with pytest.raises(MemoryStoreError) as missing:
        quickread.find(root, "nope", "zeppelin", path="", limit=10)
    assert missing.value.code == "unknown_memory"
