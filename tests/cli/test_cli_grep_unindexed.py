"""The CLI's grep answers without the store, exactly as the store does, when no index (a fresh clone) or a small one.

:func:`gitmem.quickread.search` has ``git grep`` print the lines that may match over
the pygit2-free peek and decides each with the store's matcher. Here both paths
answer on the same mount, with git on the ``PATH`` and without it (then the store
answers): in-process against the indexed store, and through whole ``gitmem grep``
processes (text and ``--json``) before and after the index is built. A grep over the
peek starts no indexer. With an index, ``git grep`` answers while the index is small
(:data:`gitmem.quickread.GREP_INDEX_BYTES`) and the store's index otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitmem import quickread
from gitmem.git import gitgrep
from gitmem.index import background
from gitmem.index import mount as mount_index
from gitmem.model import Edit
from gitmem.root import Root
from tests.index.test_index_fallback import PATTERNS, corpus

FILES = 120  # more than a request indexes itself (INLINE_DOCS)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "root")
    store = root.mount("big", create=True).sync
    store.apply(corpus(FILES))
    assert FILES > mount_index.INLINE_DOCS
    return root


def _index_dir(root: Root) -> str:
    return mount_index.index_folder(root.mount_folder("big"))


@pytest.mark.parametrize("git", [True, False], ids=["git-grep", "no-git"])
def test_the_unindexed_answer_is_the_indexed_one(root: Root, git: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(background, "_spawn", started.append)
    if not git:
        monkeypatch.setattr(gitgrep, "available", lambda: False)
    store = root.mount("big").sync
    cases = [(p, o, prefix, limit) for p, o in PATTERNS for prefix in ("", "notes/t3/", "odd/", "odd/\u00fcn\u00ef c\u00f3de/") for limit in (100, 3)]
    cases += [("sighting", {"regex": True}, "", 100), (".", {"regex": True}, "", 100)]  # "." cannot be narrowed
    quick = []
    for pattern, options, prefix, limit in cases:
        assert not os.path.isdir(_index_dir(root))
        quick.append(quickread.search(root, "big", pattern, path=prefix, limit=limit, **_options(options)))
    # Over the peek no indexer starts; the store (no git) hands the build off, as it always does.
    assert set(started) == (set() if git else {root.mount_folder("big")})
    assert not os.path.isdir(_index_dir(root))  # and not done here
    store.rebuild_index()
    assert store.index_status().state == "current"
    for (pattern, options, prefix, limit), answer in zip(cases, quick, strict=True):
        assert answer == store.search(pattern, path=prefix, limit=limit, **options), (pattern, options, prefix)
    # With an index the quick path answers as the store does.
    assert quickread.search(root, "big", "zeppelin", path="", limit=100, **_options({})) == store.search("zeppelin")


@pytest.mark.parametrize("git", [True, False], ids=["git-grep", "no-git"])
@pytest.mark.parametrize("large", [False, True], ids=["small-index", "large-index"])
def test_with_an_index_git_grep_answers_as_the_index_does(
    root: Root, git: bool, large: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A current or a lagging index: ``git grep`` answers while the index is small and git is there,
    the store (its index) otherwise; the answers are the store's, and no indexer is started."""
    started: list[str] = []
    monkeypatch.setattr(background, "_spawn", started.append)
    if not git:
        monkeypatch.setattr(gitgrep, "available", lambda: False)
    if large:
        monkeypatch.setattr(quickread, "GREP_INDEX_BYTES", 1)
    store = root.mount("big").sync
    store.rebuild_index()
    mount = Root.mount
    asked: list[bool] = []  # per call: whether it opened the store

    def counted(self: Root, name: str, **kwargs: Any) -> Any:
        asked[-1] = True
        return mount(self, name, **kwargs)

    cases = [(p, o, prefix, limit) for p, o in PATTERNS for prefix in ("", "notes/t3/", "odd/") for limit in (100, 3)]
    cases += [(".", {"regex": True}, "", 100), ("\u98de\u8247", {}, "", 100)]  # cannot be narrowed: git prints every line
    cases += [("\u8247 zeppelin", {}, "", 100)]  # a literal that is not ASCII: git is not asked
    stored: set[str] = set()  # the patterns that went to the store
    for lagging in (False, True):
        if lagging:  # files the index has not seen yet, and one it holds that is gone
            store.apply([Edit(f"notes/new{i}.md", f"zeppelin number {i}\n") for i in range(3)] + [Edit("notes/t0/n0000.md", None)])
        for pattern, options, prefix, limit in cases:
            expected = store.search(pattern, path=prefix, limit=limit, **options)
            asked.append(False)
            monkeypatch.setattr(Root, "mount", counted)
            answer = quickread.search(root, "big", pattern, path=prefix, limit=limit, **_options(options))
            monkeypatch.setattr(Root, "mount", mount)
            assert answer == expected, (pattern, options, prefix, lagging)
            if asked[-1]:
                stored.add(pattern)
    everything = {c[0] for c in cases}
    if large:
        assert stored == everything
    elif git:  # git is given ASCII literals only
        assert stored == {"\u8247 zeppelin"}
    else:  # without git the store answers
        assert stored == everything
    assert started == []


def _options(options: dict[str, bool]) -> dict[str, bool]:
    return {"regex": options.get("regex", False), "case_sensitive": options.get("case_sensitive", False)}


def test_refusals_are_the_stores(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "_spawn", lambda path: None)
    from gitmem.errors import MemoryStoreError

    for args, code in (
        (("big", "", "", 10), "invalid_pattern"),
        (("big", "(", "", 10), "invalid_pattern"),
        (("big", "zeppelin", "no-slash", 10), "invalid_path"),
        (("big", "zeppelin", "", 0), "invalid_pattern"),
        (("nope", "zeppelin", "", 10), "unknown_memory"),
    ):
        name, pattern, prefix, limit = args
        with pytest.raises(MemoryStoreError) as quick:
            quickread.search(root, name, pattern, regex=pattern == "(", case_sensitive=False, path=prefix, limit=limit)
        assert quick.value.code == code, args
    root.mount("recs", create=True, kind="record")
    with pytest.raises(MemoryStoreError) as wrong:
        quickread.search(root, "recs", "zeppelin", regex=False, case_sensitive=False, path="", limit=10)
    assert wrong.value.code == "wrong_kind"
    assert not os.path.isdir(_index_dir(root))


def _gitmem(root: Root, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", root.folder, *args],
        capture_output=True, text=True, env=env, check=True,
    )
    return done.stdout


def _wait_current(root: Root) -> None:
    store = root.mount("big").sync
    deadline = time.monotonic() + 120
    while store.index_status().state != "current":
        assert time.monotonic() < deadline, "the detached indexer did not build the index"
        time.sleep(0.05)


@pytest.mark.parametrize("git", [True, False], ids=["git-grep", "no-git"])
def test_cli_first_grep_equals_the_indexed_grep(root: Root, git: bool, tmp_path: Path) -> None:
    env = dict(os.environ)
    if not git:
        bare = tmp_path / "bin"  # a PATH without git (the interpreter is named by its full path)
        bare.mkdir()
        env["PATH"] = str(bare)
        assert shutil.which("git", path=env["PATH"]) is None
    calls = [
        ("grep", "big", "zeppelin"),
        ("grep", "big", "strasse", "--json"),
        ("grep", "big", "KELVIN", "--path", "odd"),
        ("grep", "big", "sighting", "--limit", "2"),
        ("grep", "big", "zeppelin", "--path", "odd/\u00fcn\u00ef c\u00f3de", "--json"),
        ("grep", "big", "ZEPPELIN", "-s"),
        ("grep", "big", "ticket KX-1[0-9]", "-E", "--json"),
    ]
    first = [_gitmem(root, env, *call) for call in calls]
    if git:  # a grep over the peek starts no indexer
        assert not os.path.isdir(_index_dir(root))
    _gitmem(root, env, "index", "rebuild", "big")
    _wait_current(root)
    indexed = [_gitmem(root, env, *call) for call in calls]
    assert first == indexed
    assert "Hauptstra\u00dfe" in json.loads(indexed[1])["matches"][0]["text"]
