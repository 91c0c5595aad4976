"""No request waits for an index build: grep and find answer without the index, which is built after.

A mount of more files than a request may index itself (``INLINE_DOCS``) with no
index (a fresh clone), an index of another history, or one far behind: every
answer equals a full scan of the head, with git (``git grep`` picks the files)
and without it (each file read once), and the index is built off the request.
"""

from __future__ import annotations

import os
import shutil
import sys
import time

import pytest

from gitmem import SyncGitFileStore
from gitmem.fileformat import decode_stored
from gitmem.git import gitgrep
from gitmem.grep import compile_pattern, scan
from gitmem.index import background, fallback
from gitmem.index import mount as mount_index
from gitmem.model import Edit, SearchResult

FILES = 150
ODD = {
    "odd/kelvin.md": "The \u212aELVIN scale starts at zero\n",  # the Kelvin sign casefolds to an ASCII k
    "odd/strasse.md": "Hauptstra\u00dfe 5, third floor\n",  # ß casefolds to ss
    "odd/ligature.md": "a \ufb01le of the zeppelin ﬂeet\n",  # ﬁ, ﬂ fold to fi, fl
    "odd/cjk.md": "飞艇 zeppelin 记录\n",
    "odd/crlf.md": "Zeppelin over the bay\r\nsecond line\r\n",
    "odd/no newline.md": "first line\nthe last Zeppelin line",
    "odd/\u00fcn\u00ef c\u00f3de/front.md": "---\ntitle: Zeppelin notes\n---\nbody of the zeppelin, strasse 3\n",
}
PATTERNS: list[tuple[str, dict[str, bool]]] = [
    ("zeppelin", {}),
    ("ZEPPELIN", {"case_sensitive": True}),
    ("Zeppelin", {"case_sensitive": True}),
    ("kelvin", {}),
    ("strasse", {}),
    ("file of", {}),
    ("fleet", {}),
    ("ticket KX-1[0-9]", {"regex": True}),
    ("(zeppelin|airship) (over|sighting)", {"regex": True}),
    ("飞艇", {}),
    ("nothing like this", {}),
]


@pytest.fixture
def store(tmp_path: os.PathLike[str]) -> SyncGitFileStore:
    store = SyncGitFileStore.init(os.path.join(tmp_path, "big.git"))
    store.apply(corpus(FILES))
    return store


def corpus(files: int) -> list[Edit]:
    """``files`` notes in seven folders (every 9th mentions a zeppelin), and the odd texts of :data:`ODD`."""
    edits = [
        Edit(
            f"notes/t{i % 7}/n{i:04}.md",
            f"note {i} about the {'harbour' if i % 2 else 'airship'}\n"
            + (f"Zeppelin sighting logged as ticket KX-{i}\n" if i % 9 == 0 else "nothing to report\n"),
        )
        for i in range(files)
    ]
    return edits + [Edit(path, text) for path, text in ODD.items()]


@pytest.fixture
def handed_off(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record hand-offs instead of building, so the index stays missing."""
    calls: list[str] = []
    monkeypatch.setattr(background, "hand_off", lambda path, catch_up: calls.append(path))
    return calls


def full_scan(store: SyncGitFileStore, pattern: str, prefix: str = "", **kw: bool) -> SearchResult:
    repo = store.repo
    files = [(p, decode_stored(repo.blob(oid))) for p, oid in repo.files_at(repo.head(), prefix)]
    return scan(files, compile_pattern(pattern, **kw), 100)


def wait_for_background(timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while background.running():
        assert time.monotonic() < deadline, "the background build did not end"
        time.sleep(0.05)


def test_the_table_of_characters_that_fold_to_ascii_is_complete() -> None:
    expected = {
        c
        for c in map(chr, range(0x80, sys.maxunicode + 1))
        if any(x.isascii() for x in c.casefold()) or any(x.isascii() for x in c.lower())
    }
    assert set(fallback.FOLDS_TO_ASCII) == expected


def test_every_character_that_folds_into_a_literal_is_asked_of_git_and_no_other() -> None:
    from gitmem.index.needles import literal_need

    for c in fallback.FOLDS_TO_ASCII:
        made = {x for x in c.casefold() + c.lower() if x.isascii()}
        for letter in made:
            need = literal_need(f"qq{letter}")
            assert need is not None and c in fallback.folding_into(need), (c, letter)
    assert fallback.folding_into(literal_need("zeppelin")) == ["\u0130", "\u0149", "\ufb01", "\ufb02", "\ufb03", "\ufb04"]  # type: ignore[arg-type]
    assert fallback.folding_into(literal_need("42 degrees")) == ["\u00df", "\u017f", "\u1e9e", "\ufb05", "\ufb06"]  # type: ignore[arg-type]
    assert fallback.folding_into(literal_need("x 42")) == []  # type: ignore[arg-type]


def test_a_literal_made_partly_by_a_folding_character_is_found_through_git(
    tmp_path: os.PathLike[str], handed_off: list[str]
) -> None:
    """Each folding character between ASCII letters, and each literal its fold makes across it."""
    store = SyncGitFileStore.init(os.path.join(tmp_path, "fold.git"))
    texts = {f"f/{ord(c):05x}.md": f"word pre{c}post word\n" for c in fallback.FOLDS_TO_ASCII}
    store.apply([*corpus(FILES), *(Edit(p, t) for p, t in texts.items())])
    for path, text in texts.items():
        folded = text.casefold()
        start = folded.index("pre") + 2
        end = folded.index("post") + 2
        literal = "".join(x for x in folded[start:end] if x.isascii())  # e.g. "essp" across ß
        if literal[1:-1] and literal in folded:
            got = store.search(literal)
            assert got == full_scan(store, literal), literal
            assert path in {m.path for m in got.matches}, (path, literal)
    assert store.index_status().state == "missing" and handed_off


@pytest.mark.parametrize("with_git", [True, False], ids=["git-grep", "no-git"])
def test_grep_without_an_index_answers_as_a_full_scan_and_builds_nothing(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch, with_git: bool
) -> None:
    if not with_git:
        monkeypatch.setattr(gitgrep, "available", lambda: False)
    for pattern, kw in PATTERNS:
        for prefix in ("", "odd/", "notes/t3/", "odd/\u00fcn\u00ef c\u00f3de/"):
            got = store.search(pattern, path=prefix, **kw)
            assert got == full_scan(store, pattern, prefix, **kw), (pattern, kw, prefix)
    assert store.search("kelvin").matches[0].path == "odd/kelvin.md"
    assert store.search("strasse").matches[0].path == "odd/strasse.md"
    assert store.index_status().state == "missing"  # the requests indexed nothing themselves...
    assert handed_off and set(handed_off) == {store.path}  # ...and handed the build off


def test_a_failing_git_grep_falls_back_to_reading_the_files(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # available() is cached as True: the call itself fails
    for pattern, kw in PATTERNS:
        assert store.search(pattern, **kw) == full_scan(store, pattern, **kw), pattern


def test_git_grep_skips_symbolic_links_and_reads_odd_paths(
    store: SyncGitFileStore, handed_off: list[str], tmp_path: os.PathLike[str]
) -> None:
    import subprocess

    work = os.path.join(tmp_path, "work")
    subprocess.run(["git", "clone", "-q", store.path, work], check=True)
    os.symlink("../odd/kelvin.md", os.path.join(work, "notes", "link.md"))
    with open(os.path.join(work, "notes", "caf\u00e9 zeppelin.md"), "w") as f:
        f.write("zeppelin in a caf\u00e9\n")
    for args in (["add", "-A"], ["commit", "-qm", "odd"], ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", *args], cwd=work, check=True)
    got = store.search("zeppelin", limit=1000)
    assert got == full_scan(store, "zeppelin")
    assert "notes/caf\u00e9 zeppelin.md" in {m.path for m in got.matches}
    assert "notes/link.md" not in {m.path for m in store.search("kelvin").matches}


def test_find_without_an_index_ranks_the_files_the_index_would_rank(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert store.find("nowhereword") == []  # no file holds it: nothing to rank
    queries = ["zeppelin ticket", "airship", "t3", "飞艇", "kelvin"]
    without = {q: store.find(q, limit=1000) for q in queries}
    monkeypatch.setattr(gitgrep, "available", lambda: False)
    no_git = {q: store.find(q, limit=1000) for q in queries}
    assert store.index_status().state == "missing"
    store.rebuild_index()
    for q in queries:
        indexed = store.find(q, limit=1000)
        assert indexed, q
        assert {h.path for h in without[q]} == {h.path for h in indexed} == {h.path for h in no_git[q]}, q
        assert {(h.path, h.version, h.snippet) for h in without[q]} == {(h.path, h.version, h.snippet) for h in indexed}


def test_the_index_is_built_after_the_request_and_then_used(store: SyncGitFileStore) -> None:
    first = store.search("zeppelin")
    wait_for_background()
    status = store.index_status()
    assert status.state == "current" and status.documents == FILES + len(ODD)
    assert store.search("zeppelin") == first


def test_a_request_catches_up_a_few_files_itself_and_hands_off_more(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store.rebuild_index()
    indexed = store.head()
    store.apply([Edit(f"notes/new{i}.md", f"zeppelin number {i}\n") for i in range(3)])
    assert store.search("zeppelin") == full_scan(store, "zeppelin")
    assert store.index_status().state == "current" and not handed_off  # three files: done inline
    monkeypatch.setattr(mount_index, "INLINE_DOCS", 2)
    store.apply([Edit(f"notes/more{i}.md", f"zeppelin again {i}\n") for i in range(3)])
    assert store.search("zeppelin") == full_scan(store, "zeppelin")
    status = store.index_status()
    assert status.state == "behind" and status.commit != indexed and handed_off == [store.path]


def test_an_index_far_behind_is_not_used_while_it_catches_up(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store.rebuild_index()
    monkeypatch.setattr(mount_index, "INLINE_DOCS", 0)
    monkeypatch.setattr(mount_index, "FAR_BEHIND", 3)
    store.apply([Edit(f"notes/t{i % 7}/n{i:04}.md", f"rewritten {i}: zeppelin\n") for i in range(0, FILES, 10)])
    for pattern, kw in PATTERNS:
        assert store.search(pattern, **kw) == full_scan(store, pattern, **kw), pattern
    ranked = store.find("rewritten", limit=100)
    assert len(ranked) == len(range(0, FILES, 10))
    assert store.index_status().state == "behind"


def test_a_rebuild_commits_in_batches_and_stamps_only_the_last(
    store: SyncGitFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mount_index, "REBUILD_BATCH", 40)
    status = store.rebuild_index()
    total = FILES + len(ODD)
    assert status.state == "current" and status.documents == total
    assert status.segments == total // 40 + 1
    for pattern, kw in PATTERNS:
        assert store.search(pattern, **kw) == full_scan(store, pattern, **kw), pattern


def test_a_rebuild_cut_short_leaves_an_index_without_a_stamp_that_is_not_used(
    store: SyncGitFileStore, handed_off: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.index import engine

    monkeypatch.setattr(mount_index, "REBUILD_BATCH", 40)
    real_apply = engine.apply
    batches: list[str | None] = []

    def apply_then_die(writer: object, docs: object, commit: str | None, **kw: bool) -> None:
        real_apply(writer, docs, commit, **kw)  # type: ignore[arg-type]
        batches.append(commit)
        if len(batches) == 2:
            raise KeyboardInterrupt  # as a kill between two batches would leave it

    monkeypatch.setattr(engine, "apply", apply_then_die)
    with pytest.raises(KeyboardInterrupt):
        store.rebuild_index()
    monkeypatch.setattr(engine, "apply", real_apply)
    assert batches == [None, None]
    fresh = SyncGitFileStore.open(store.path)
    assert fresh.index_status().state == "missing"
    assert fresh.search("zeppelin") == full_scan(fresh, "zeppelin")


def test_the_process_mode_builds_the_index_in_a_detached_process(store: SyncGitFileStore) -> None:
    with background.detached():
        assert store.search("zeppelin") == full_scan(store, "zeppelin")
    assert background._mode.get() == "thread"
    deadline = time.monotonic() + 120
    while store.index_status().state != "current":
        assert time.monotonic() < deadline, "the detached indexer did not build the index"
        time.sleep(0.1)
    assert store.index_status().documents == FILES + len(ODD)
    for pid in list(background._children):  # reap it: the test must not leave a zombie
        os.waitpid(pid, 0)
        background._children.remove(pid)


def test_an_erasure_deletes_a_built_index_and_the_next_search_answers_without_it(
    store: SyncGitFileStore, handed_off: list[str]
) -> None:
    store.rebuild_index()
    store.forget("odd/kelvin.md")
    assert store.index_status().state == "missing"
    assert store.search("kelvin") == full_scan(store, "kelvin")
    assert not store.search("kelvin").matches
    shutil.rmtree(os.path.join(store.path, "gitmem", "index"), ignore_errors=True)


def test_the_cli_grep_answers_at_once_and_a_find_starts_the_detached_indexer(
    store: SyncGitFileStore, tmp_path: os.PathLike[str]
) -> None:
    """A grep needs no index (git grep over the peek) and starts none; a find ranks with the
    index, answers without it meanwhile, and leaves a detached indexer building it."""
    import subprocess

    env = {**os.environ, "GITMEM_ROOT": str(tmp_path)}

    def gitmem(*args: str) -> str:
        argv = [sys.executable, "-m", "gitmem.adapters.cli", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout

    done = gitmem("grep", "big", "zeppelin", "--limit", "1000")
    expected = [f"{m.path}:{m.line}:{m.text}" for m in full_scan(store, "zeppelin").matches]
    assert done.splitlines() == expected
    assert store.index_status().state == "missing"
    assert gitmem("find", "big", "zeppelin").strip()
    deadline = time.monotonic() + 120
    while store.index_status().state != "current":  # the find's process has exited; its indexer has not
        assert time.monotonic() < deadline, "no detached indexer built the index"
        time.sleep(0.1)
    assert background._mode.get() == "thread"
