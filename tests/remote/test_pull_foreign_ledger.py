"""A pull adopts the remote's erasure ledger: a ref anyone who can push to a plain forge can set.

The forge here is a bare repository changed with the real ``git`` CLI only, as a
teammate (or a stranger with push access) would: its ``refs/gitmem/erasures``
is one hand-made commit, not the chain gitmem writes.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from serve.support import GIT_ENV, fsck_clean, git

from gitmem import MemoryStoreError, Root, remotes
from gitmem.git import erasures
from gitmem.git.erasures import LEDGER_REF
from gitmem.git.loose import open_repository
from gitmem.gitstore import GitFileStore, as_sync


def _forge_ledger(hosting: Path, entries: list[dict[str, object]]) -> None:
    """Point the forge's ``refs/gitmem/erasures`` at one plain commit whose ``entries.jsonl`` holds ``entries``."""
    text = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries)
    blob = _git_in(hosting, text, "hash-object", "-w", "--stdin")
    tree = _git_in(hosting, f"100644 blob {blob}\tentries.jsonl\n", "mktree")
    commit = git("commit-tree", tree, "-m", "ledger", cwd=hosting).stdout.strip()
    git("update-ref", LEDGER_REF, commit, cwd=hosting)


def _git_in(repo: Path, text: str, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, input=text, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _entry(n: int, blobs: tuple[str, ...] = ()) -> dict[str, object]:
    return {"id": f"{n:016x}", "kind": "forget", "at": "2026-01-01T00:00:00Z", "by": "eve", "names": [], "blobs": blobs}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Root, Path]:
    root = Root(tmp_path / "mem")
    store = root.mount("user", create=True, hooks=False)
    store.sync.write("notes/a.md", "first note\n", expected=None)
    hosting = tmp_path / "hosting" / "user.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    remotes.push(store, "origin")
    return root, hosting


def test_many_remote_erasures_are_adopted_at_once_and_as_gitmem_writes_them(pair: tuple[Root, Path]) -> None:
    root, hosting = pair
    store = root.mount("user")
    _forge_ledger(hosting, [_entry(n) for n in range(erasures.MAX_ADOPTED_ENTRIES)])
    started = time.process_time()  # CPU of this process (the adoption runs here): not stretched by load
    assert remotes.pull(store, "origin").kind == "up_to_date"
    took = time.process_time() - started
    with open_repository(str(store.path)) as r:
        tip = str(r.references[LEDGER_REF].target)
        assert [e.id for e in erasures.entries_at(r, tip)] == [f"{n:016x}" for n in range(erasures.MAX_ADOPTED_ENTRIES)]
        chain = git("rev-list", "--first-parent", tip, cwd=store.path).stdout.split()
        assert len(chain) == erasures.MAX_ADOPTED_ENTRIES  # one commit per entry, byte for byte as append's:
        assert erasures.foreign_ledger(r, None, chain[-3]) is None
        assert erasures.foreign_ledger(r, chain[3], tip) is None
    # One append per entry reread and rewrote the whole ledger each time: ~80 ms an entry, minutes for these.
    assert took < 20, took
    fsck_clean(store.path)


def test_a_remote_ledger_beyond_what_one_pull_adopts_is_refused_and_nothing_changes(pair: tuple[Root, Path]) -> None:
    root, hosting = pair
    store = root.mount("user")
    head = store.sync.head()
    _forge_ledger(hosting, [_entry(n) for n in range(erasures.MAX_ADOPTED_ENTRIES + 1)])
    started = time.process_time()
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(store, "origin")
    assert caught.value.code == "too_large", caught.value.message
    assert time.process_time() - started < 15
    assert git("for-each-ref", "refs/gitmem/", cwd=store.path).stdout == ""
    assert store.sync.head() == head
    fsck_clean(store.path)


def test_what_adopting_may_write_is_bounded_before_anything_is_written(
    pair: tuple[Root, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, hosting = pair
    store = root.mount("user")
    # Each new commit's file holds every entry before it: 40 entries of ~4 KB write ~3.3 MB, not 160 KB.
    monkeypatch.setattr(erasures, "MAX_ADOPTED_BYTES", 1 << 20)
    _forge_ledger(hosting, [_entry(n, tuple(f"{n:08x}{k:032x}" for k in range(100))) for n in range(40)])
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(store, "origin")
    assert caught.value.code == "too_large", caught.value.message
    assert git("for-each-ref", "refs/gitmem/", cwd=store.path).stdout == ""
    fsck_clean(store.path)


def _zeros_blob(repo: Path, size: int) -> str:
    """A loose blob of ``size`` zero bytes in ``repo``, written in pieces (a few hundred KB on disk)."""
    header = b"blob %d\x00" % size
    digest, packer = hashlib.sha1(header), zlib.compressobj(1)
    chunk, parts = bytes(1 << 20), [packer.compress(header)]
    for start in range(0, size, len(chunk)):
        piece = chunk[: min(len(chunk), size - start)]
        digest.update(piece)
        parts.append(packer.compress(piece))
    parts.append(packer.flush())
    oid = digest.hexdigest()
    (repo / "objects" / oid[:2]).mkdir(exist_ok=True)
    (repo / "objects" / oid[:2] / oid[2:]).write_bytes(b"".join(parts))
    return oid


PEAK = [  # the CLI's pull in a process of its own (ledgers over 1 MB refused), printing its peak memory (VmHWM)
    sys.executable,
    "-c",
    "import sys\n"
    "from gitmem.adapters.cli import cli\n"
    "from gitmem.git import erasures\n"
    "erasures._MAX_LEDGER_BYTES = 1 << 20\n"
    "code = cli(sys.argv[1:], standalone_mode=False)\n"
    "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM:')][0].split()[1]\n"
    "print('peak-kb', hwm, file=sys.stderr)\n"
    "sys.exit(code)",
]


def test_a_remote_ledger_too_large_to_read_is_refused_without_reading_it(pair: tuple[Root, Path]) -> None:
    # 96 MB of zeros is a few hundred KB on the forge; reading the blob to learn its size held 1.8 GB for 600 MB.
    root, hosting = pair
    store = root.mount("user")
    head = store.sync.head()
    blob = _zeros_blob(hosting, 96 << 20)
    tree = _git_in(hosting, f"100644 blob {blob}\tentries.jsonl\n", "mktree")
    git("update-ref", LEDGER_REF, git("commit-tree", tree, "-m", "ledger", cwd=hosting).stdout.strip(), cwd=hosting)
    done = subprocess.run(
        [*PEAK, "--root", str(root.path), "pull", "user", "origin"], capture_output=True, text=True, timeout=300
    )
    assert "error [unavailable]: the erasure ledger is larger than gitmem reads" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    peak = int(done.stderr.rsplit("peak-kb", 1)[1].split()[0])
    assert peak < 90 * 1024, f"the pull peaked at {peak // 1024} MB"
    assert git("for-each-ref", "refs/gitmem/", cwd=store.path).stdout == ""
    assert store.sync.head() == head


def _gitmem_ledger(store: GitFileStore, count: int, blobs: int = 0) -> str:
    """``count`` erasures appended to ``store``'s ledger as a forget appends them; returns the ledger's tip."""
    repo = as_sync(store).repo
    tip = ""
    with repo.lock.hold():
        for n in range(count):
            entry = erasures.Entry.from_json(json.dumps(_entry(n, tuple(f"{n:08x}{k:032x}" for k in range(blobs)))))
            tip = erasures.append(repo.fresh(), repo.path, entry, stale_after=60.0, timeout=10.0)
    return tip


@pytest.mark.parametrize("blobs", [0, 100])
def test_a_clone_takes_a_team_ledger_gitmem_wrote_whatever_its_length(
    pair: tuple[Root, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blobs: int
) -> None:
    # A teammate's ledger, pushed by gitmem: the chain append writes. A clone (or a pull behind it)
    # takes that chain as it is, so no bound on what rewriting it would cost refuses an honest memory.
    root, hosting = pair
    team = root.mount("user")
    monkeypatch.setattr(erasures, "MAX_ADOPTED_ENTRIES", 5)
    monkeypatch.setattr(erasures, "MAX_ADOPTED_BYTES", 1 << 16)
    tip = _gitmem_ledger(team, 12, blobs)
    git("push", "-q", str(hosting), f"{LEDGER_REF}:{LEDGER_REF}", cwd=team.path)
    other = Root(tmp_path / "other")
    store, _ = remotes.clone(other, str(hosting), "mine")
    assert git("rev-parse", LEDGER_REF, cwd=store.path).stdout.strip() == tip  # the same commits, not rewritten
    fsck_clean(store.path)
    # Behind by more than one pull could rewrite, and ahead of nothing: taken as it is too.
    more = _gitmem_ledger(team, 20, blobs)
    git("push", "-q", str(hosting), f"{LEDGER_REF}:{LEDGER_REF}", cwd=team.path)
    remotes.pull(store, "origin")
    assert git("rev-parse", LEDGER_REF, cwd=store.path).stdout.strip() == more
    fsck_clean(store.path)


def test_a_forget_landing_while_a_pull_takes_the_team_ledger_keeps_both(
    pair: tuple[Root, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.git import pull as pulling

    root, hosting = pair
    _gitmem_ledger(root.mount("user"), 3)
    git("push", "-q", str(hosting), f"{LEDGER_REF}:{LEDGER_REF}", cwd=root.mount("user").path)
    store, _ = remotes.clone(Root(tmp_path / "other"), str(hosting), "mine")
    _gitmem_ledger(root.mount("user"), 6)  # three more on the forge
    git("push", "-q", str(hosting), f"{LEDGER_REF}:{LEDGER_REF}", cwd=root.mount("user").path)
    real = pulling.swap_ref

    def forget_first(*args: object, **kwargs: object) -> bool:
        repo = as_sync(store).repo  # a forget here appends its entry between the pull's read and its swap
        local = erasures.Entry("f" * 16, "forget", "2026-01-02T00:00:00Z", "me", (), ())
        erasures.append(repo.fresh(), repo.path, local, stale_after=60.0, timeout=10.0)
        monkeypatch.setattr(pulling, "swap_ref", real)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pulling, "swap_ref", forget_first)
    remotes.pull(store, "origin")
    with open_repository(str(store.path)) as r:
        ids = [e.id for e in erasures.entries(r)]
        assert erasures.foreign_ledger(r, None, str(r.references[LEDGER_REF].target), most=100) is None
    assert ids[:3] == [f"{n:016x}" for n in range(3)] and ids[3] == "f" * 16
    assert ids[4:] == [f"{n:016x}" for n in range(3, 6)]  # adopted one by one after it
    fsck_clean(store.path)


def _forge_main_commit(hosting: Path, tmp: Path, path: str, text: str) -> None:
    """A commit on the forge's ``main`` made with the git CLI in a clone of it."""
    work = tmp / "forge-work"
    git("clone", "-q", str(hosting), str(work), cwd=tmp)
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text(text)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "forge edit", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)


@pytest.mark.parametrize("why", ["conflict", "rules"])
def test_a_refused_pull_adopts_nothing_of_the_remote_not_even_its_ledger(
    pair: tuple[Root, Path], tmp_path: Path, why: str
) -> None:
    """The remote's ledger was adopted before what its main brings was checked: a pull refused
    (a conflict, a file the rules refuse) still left this memory with the remote's erasures,
    which then refuse this memory's own writes of that text."""
    root, hosting = pair
    store = root.mount("user")
    if why == "conflict":
        _forge_main_commit(hosting, tmp_path, "notes/a.md", "their note\n")
        store.sync.write("notes/a.md", "our note\n", expected=store.sync.read("notes/a.md").version)
    else:
        _forge_main_commit(hosting, tmp_path, "notes/key.md", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n")
    kept = "text this memory may keep writing\n"
    blob = hashlib.sha1(b"blob %d\0" % len(kept.encode()) + kept.encode()).hexdigest()
    _forge_ledger(hosting, [_entry(1, (blob,))])
    head = store.sync.head()
    with pytest.raises(MemoryStoreError):
        remotes.pull(store, "origin")
    assert store.sync.head() == head
    assert git("for-each-ref", "refs/gitmem/", cwd=store.path).stdout == ""
    store.sync.write("notes/kept.md", kept, expected=None)  # not refused as erased
    fsck_clean(store.path)


def test_a_pull_that_lands_adopts_the_ledger_and_is_checked_against_it(pair: tuple[Root, Path], tmp_path: Path) -> None:
    """What the remote's ledger erased is refused in the same pull that adopts it, and adopted once main lands."""
    root, hosting = pair
    store = root.mount("user")
    erased = "erased elsewhere\n"
    blob = hashlib.sha1(b"blob %d\0" % len(erased.encode()) + erased.encode()).hexdigest()
    _forge_main_commit(hosting, tmp_path, "notes/b.md", erased)
    _forge_ledger(hosting, [_entry(1, (blob,))])
    head = store.sync.head()
    with pytest.raises(MemoryStoreError) as refused:
        remotes.pull(store, "origin")
    assert refused.value.code == "forbidden", refused.value.message
    assert store.sync.head() == head
    assert git("for-each-ref", "refs/gitmem/", cwd=store.path).stdout == ""
    # A remote whose main is clean: the pull lands, and its ledger is adopted with it.
    git("update-ref", "refs/heads/main", git("rev-parse", "main~1", cwd=hosting).stdout.strip(), cwd=hosting)
    remotes.pull(store, "origin")
    assert blob in git("show", f"{LEDGER_REF}:entries.jsonl", cwd=store.path).stdout
    with pytest.raises(MemoryStoreError) as refused:
        store.sync.write("notes/c.md", erased, expected=None)
    assert refused.value.code == "forbidden"


def test_a_ledger_that_cannot_be_adopted_once_main_landed_says_main_moved(
    pair: tuple[Root, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger is adopted after main moved (under the same hold): should that fail, the refusal says main
    moved and that another pull adopts the ledger, rather than read as a pull that changed nothing."""
    from gitmem.git import pull as pull_module

    root, hosting = pair
    store = root.mount("user")
    _forge_main_commit(hosting, tmp_path, "notes/b.md", "their note\n")
    _forge_ledger(hosting, [_entry(1, ("ab" * 20,))])

    def failing(*args: object, **kwargs: object) -> int:
        raise MemoryStoreError("unavailable", "cannot store the erasure ledger: disk full")

    monkeypatch.setattr(pull_module, "_adopt_ledger", failing)
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(store, "origin")
    assert "main now holds" in caught.value.message and "pull again" in caught.value.message
    assert store.sync.read("notes/b.md").text == "their note\n"
    monkeypatch.undo()
    remotes.pull(store, "origin")
    assert "ab" * 20 in git("show", f"{LEDGER_REF}:entries.jsonl", cwd=store.path).stdout


def test_an_erasure_the_mount_adopts_while_a_pull_fetches_is_checked_by_that_pull(
    pair: tuple[Root, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pull's checks read the ledger it built from this memory's before taking the writer lock: an erasure
    this memory took meanwhile (another pull adopting its remote's, a push) must still refuse what it names,
    as the mount's own ledger, read under the lock, did before the pull built one of its own."""
    from gitmem.git import pull as pull_module

    root, hosting = pair
    store = root.mount("user")
    erased = "erased by another copy meanwhile\n"
    blob = hashlib.sha1(b"blob %d\0" % len(erased.encode()) + erased.encode()).hexdigest()
    _forge_main_commit(hosting, tmp_path, "notes/b.md", erased)
    _forge_ledger(hosting, [_entry(1, ("ab" * 20,))])  # the remote has a ledger entry of its own to adopt
    real = pull_module._ledger_brought

    def adopted_meanwhile(*args: object, **kwargs: object) -> object:
        built = real(*args, **kwargs)  # type: ignore[arg-type]
        repo = as_sync(store).repo  # another pull lands its remote's erasure here now
        theirs = [erasures.Entry.from_json(json.dumps(_entry(2, (blob,))))]
        erasures.merge_entries(repo.fresh(), repo.path, theirs, stale_after=60.0, timeout=10.0)
        return built

    monkeypatch.setattr(pull_module, "_ledger_brought", adopted_meanwhile)
    head = store.sync.head()
    with pytest.raises(MemoryStoreError) as refused:
        remotes.pull(store, "origin")
    assert refused.value.code == "forbidden", refused.value.message
    assert store.sync.head() == head
    with open_repository(str(store.path)) as r:
        assert [e.id for e in erasures.entries(r)] == [f"{2:016x}"]  # the remote's own entry not adopted
    fsck_clean(store.path)


def test_a_pull_whose_conflict_proposal_is_refused_adopts_no_ledger(pair: tuple[Root, Path], tmp_path: Path) -> None:
    """A pull that meets a conflict takes the remote's ledger with the proposal it opens: a proposal refused
    (a draft holding what someone settled, of other sides) said "nothing was changed" while the ledger was
    adopted, its erasures refusing this memory's own writes from then on."""
    from gitmem import review

    root, hosting = pair
    store = root.mount("user")
    store.sync.write("notes/b.md", "bee\n", expected=None)
    remotes.push(store, "origin")
    work = tmp_path / "forge-work"
    git("clone", "-q", str(hosting), str(work), cwd=tmp_path)

    def person(path: str, text: str) -> None:
        (work / path).write_text(text)
        git("add", "-A", cwd=work)
        git("commit", "-qm", f"change {path}", cwd=work)
        git("push", "-q", "origin", "HEAD:main", cwd=work)

    person("notes/a.md", "theirs\n")
    person("notes/b.md", "bee, theirs\n")
    store.sync.write("notes/a.md", "ours\n", expected=store.sync.read("notes/a.md").version)
    store.sync.write("notes/b.md", "bee, ours\n", expected=store.sync.read("notes/b.md").version)
    assert remotes.pull(store, propose=True).paths == ("notes/a.md", "notes/b.md")
    review.resolve(store, "merge-origin", "notes/a.md", side="ours")
    person("notes/c.md", "sea\n")  # the remote moves on, and erased a text this memory writes
    kept = "text this memory may keep writing\n"
    blob = hashlib.sha1(b"blob %d\0" % len(kept.encode()) + kept.encode()).hexdigest()
    _forge_ledger(hosting, [_entry(1, (blob,))])
    with pytest.raises(MemoryStoreError) as caught:
        remotes.pull(store, propose=True)
    assert caught.value.code == "version_mismatch" and "nothing was changed" in caught.value.message
    assert git("for-each-ref", LEDGER_REF, cwd=store.path).stdout == ""
    store.sync.write("notes/kept.md", kept, expected=None)  # not refused as erased
    fsck_clean(store.path)
