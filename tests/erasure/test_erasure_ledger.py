"""Erased stays erased: the ledger, and every way back in refusing what it names.

Each test erases something with ``forget`` or ``purge`` and then tries one way
back in as a person or an admin would: a store write, an import, a stale
clone's push over a file path (the installed hooks) and over ``gitmem serve``,
a pull from a remote that still has it, a proposal's approval. Every refusal
names the rule ``erased`` and leaves ``main`` where it was; ``git fsck --strict``
is clean after.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from serve.support import commit_all, fsck_clean, git, has_object, write

from gitmem import GitFileStore, MemoryStoreError, Origin, Root, remotes, review
from gitmem.adapters.cli import cli
from gitmem.git.erasures import LEDGER_REF, OVERRIDE_TRAILER
from gitmem.hooks import install_hooks
from gitmem.model import Edit
from gitmem.records import RecordStore

ADMIN = Origin("run-9", "admin", "call-9")
SECRET = "office wifi is on the third floor, ask Dana at the desk\n"


def _ledger(path: str) -> list[dict[str, object]]:
    text = git("show", f"{LEDGER_REF}:entries.jsonl", cwd=path).stdout
    return [json.loads(line) for line in text.splitlines()]


def _git_in(path: str, *args: str, stdin: str) -> str:
    done = subprocess.run(["git", *args], cwd=path, input=stdin, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _erased_wifi(store: GitFileStore) -> str:
    sync = store.sync
    v = sync.write("ops/wifi.md", SECRET, expected=None)
    sync.write("keep.md", "keep\n", expected=None)
    sync.forget("ops/wifi.md", origin=ADMIN)
    return v


@pytest.fixture
def store(tmp_path: Path) -> GitFileStore:
    return GitFileStore.init(tmp_path / "user.git")


def test_the_ledger_names_blobs_and_keyed_prints_never_the_path_or_content(store: GitFileStore) -> None:
    sync = store.sync
    one = sync.write("ops/wifi.md", SECRET, expected=None)
    two = sync.write("ops/wifi.md", SECRET + "v2\n", expected=one)
    report = sync.forget("ops/wifi.md", origin=ADMIN)

    (entry,) = _ledger(store.path)
    assert entry["id"] == report.erasure and entry["kind"] == "forget" and entry["by"] == "admin"
    assert set(entry["blobs"]) == {one, two}  # type: ignore[arg-type]
    raw = git("show", f"{LEDGER_REF}:entries.jsonl", cwd=store.path).stdout
    for clear in ("wifi", "ops/", "Dana"):
        assert clear not in raw
    # The prints are keyed: a plain hash of the path is not among them.
    assert hashlib.sha256(b"ops/wifi.md").hexdigest() not in raw
    assert hashlib.sha1(b"ops/wifi.md").hexdigest() not in raw
    # No message anywhere in the mount names the path, the pending mark neither.
    assert "wifi" not in git("log", "--all", "--format=%B", cwd=store.path).stdout
    assert [e.op for e in sync.log("ops/wifi.md")] == ["forget"]
    assert not Path(store.path, "gitmem", "forget-pending").exists()
    fsck_clean(store.path)


def test_a_record_namespace_purge_leaves_no_address_in_the_log(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "rec.git", kind="record")
    records = RecordStore(store.sync, namespace="alice.smith@example.com")
    rid = records.add("Alice lives at 1 Main St").id
    records.purge(origin=ADMIN)

    log = git("log", "--all", "--format=%B", cwd=store.path).stdout
    assert "alice" not in log.lower() and rid not in log
    assert _ledger(store.path)[0]["kind"] == "forget"
    fsck_clean(store.path)


def test_a_store_write_of_erased_content_is_refused_and_an_admin_override_is_recorded(store: GitFileStore) -> None:
    _erased_wifi(store)
    sync = store.sync
    head = sync.head()
    for path in ("ops/wifi.md", "elsewhere/copy.md"):
        with pytest.raises(MemoryStoreError) as err:
            sync.write(path, SECRET, expected=None)
        assert err.value.code == "forbidden" and "erased" in err.value.message
    assert sync.head() == head and [e.path for e in sync.list()] == ["keep.md"]
    # Other content, and the empty file, still go in.
    sync.write("ops/wifi.md", "ask the admin\n", expected=None)
    sync.write("empty.md", "", expected=None)

    sync.apply([Edit("restored.md", SECRET)], origin=ADMIN, trailers=[(OVERRIDE_TRAILER, "court order 12")])
    assert sync.read("restored.md").text == SECRET
    assert f"{OVERRIDE_TRAILER}: court order 12" in git("log", "-1", "--format=%B", cwd=store.path).stdout


def test_purge_records_every_blob_and_old_history_cannot_come_back(store: GitFileStore, tmp_path: Path) -> None:
    install_hooks(store.path)
    sync = store.sync
    v = sync.write("a.md", "purged text\n", expected=None)
    work = tmp_path / "stale"
    git("clone", "-q", store.path, str(work))
    sync.purge(origin=ADMIN)
    (entry,) = _ledger(store.path)
    assert entry["kind"] == "purge" and entry["by"] == "admin" and entry["blobs"] == [v]
    head = sync.head()
    done = git("push", "origin", "HEAD:refs/heads/revived", cwd=work, check=False)
    assert done.returncode != 0 and "erased" in done.stderr, done.stderr
    assert sync.head() == head and not has_object(store.path, v)
    # An agent filling the memory again may write the same words afresh: only forget's are refused there.
    sync.write("b.md", "purged text\n", expected=None)
    fsck_clean(store.path)


def test_import_of_erased_content_is_refused(store: GitFileStore, tmp_path: Path) -> None:
    _erased_wifi(store)
    root = Root(tmp_path)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "wifi.md").write_text(SECRET)
    head = store.sync.head()
    done = CliRunner().invoke(cli, ["--root", str(root.path), "import", "user", str(folder), "--json"])
    # Refused and listed as any refused file is (the rest of a folder would come in: tests/cli).
    assert done.exit_code == 0, done.output
    refused = json.loads(done.stdout)["refused"]
    assert [(r["path"], r["error"]) for r in refused] == [("wifi.md", "forbidden")] and "erased" in refused[0]["message"]
    assert store.sync.head() == head
    done = CliRunner().invoke(cli, ["--root", str(root.path), "import", "user", str(folder), "--strict"])
    assert done.exit_code == 1 and "erased" in done.output, done.output
    assert store.sync.head() == head


def _stale_clone(store: GitFileStore, tmp_path: Path) -> Path:
    """A clone taken while the secret was there, that keeps working on it."""
    sync = store.sync
    sync.write("ops/wifi.md", SECRET, expected=None)
    sync.write("keep.md", "keep\n", expected=None)
    work = tmp_path / "stale"
    git("clone", "-q", store.path, str(work))
    sync.forget("ops/wifi.md", origin=ADMIN)
    return work


def test_a_stale_clone_cannot_push_erased_content_back_through_the_hooks(store: GitFileStore, tmp_path: Path) -> None:
    install_hooks(store.path)
    work = _stale_clone(store, tmp_path)
    head = store.sync.head()
    write(work, "later.md", "later\n")
    commit_all(work, "more work on a stale clone")
    for args in (("push", "origin", "HEAD:refs/heads/revived"), ("push", "origin", "HEAD:refs/tags/v1")):
        done = git(*args, cwd=work, check=False)
        assert done.returncode != 0 and "erased" in done.stderr, done.stderr
    assert store.sync.head() == head
    assert git("for-each-ref", "--format=%(refname)", cwd=store.path).stdout.split() == [LEDGER_REF, "refs/heads/main"]
    fsck_clean(store.path)


def test_a_pull_from_a_remote_that_still_has_it_is_refused(store: GitFileStore, tmp_path: Path) -> None:
    sync = store.sync
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(store, "origin", str(hosting))
    sync.write("keep.md", "keep\n", expected=None)
    v = sync.write("ops/wifi.md", SECRET, expected=None)
    remotes.push(store, "origin")
    sync.forget("ops/wifi.md", origin=ADMIN)
    head = sync.head()
    with pytest.raises(remotes.MergeRefused) as err:
        remotes.pull(store, "origin")
    assert err.value.code == "forbidden" and "erased" in err.value.message
    assert sync.head() == head and not has_object(store.path, v)
    fsck_clean(store.path)


def test_an_approval_of_a_proposal_holding_erased_content_is_refused(store: GitFileStore, tmp_path: Path) -> None:
    v = _erased_wifi(store)
    review.enable(store)
    # A proposal branch made outside the store (plain git in the mount) that holds the erased text.
    blob = _git_in(store.path, "hash-object", "-w", "--stdin", stdin=SECRET)
    assert blob == v
    tree = _git_in(store.path, "mktree", stdin=f"100644 blob {blob}\twifi.md\n")
    head = store.sync.head()
    commit = git("commit-tree", tree, "-p", head, "-m", "bring it back", cwd=store.path).stdout.strip()
    git("update-ref", "refs/heads/proposals/run-x", commit, cwd=store.path)
    with pytest.raises(MemoryStoreError) as err:
        review.approve(store, "run-x", approver="bob")
    assert err.value.code == "forbidden" and "erased" in err.value.message
    assert store.sync.head() == head


def test_the_ledger_ref_moves_forward_only(store: GitFileStore, tmp_path: Path) -> None:
    install_hooks(store.path)
    _erased_wifi(store)
    work = tmp_path / "clone"
    git("clone", "-q", "--bare", store.path, str(work))
    git("fetch", "-q", store.path, f"{LEDGER_REF}:{LEDGER_REF}", cwd=work)
    empty = _git_in(str(work), "mktree", stdin="")
    other = git("commit-tree", empty, "-m", "no ledger", cwd=work).stdout.strip()
    done = git("push", store.path, f"+{other}:{LEDGER_REF}", cwd=work, check=False)
    assert done.returncode != 0 and "erasure_ledger" in done.stderr, done.stderr
    done = git("push", store.path, f":{LEDGER_REF}", cwd=work, check=False)
    assert done.returncode != 0
    assert len(_ledger(store.path)) == 1



def test_an_erasure_killed_before_its_prune_keeps_its_entry_through_the_next_forget(
    store: GitFileStore, tmp_path: Path
) -> None:
    from gitmem.git import erasures

    sync = store.sync
    sync.write("other.md", "another private note\n", expected=None)
    # What a forget killed after moving its refs leaves: an unreachable version, the mark, the entry.
    leak = tmp_path / "leak.md"
    leak.write_text("the killed forget's version\n")
    orphan = git("hash-object", "-w", str(leak), cwd=store.path).stdout.strip()
    Path(store.path, "gitmem", "forget-pending").write_text("forget 00\n")
    killed = erasures.new_entry("forget", "admin", ["00" * 32], [orphan], [])
    erasures.write_pending(store.path, killed)

    report = sync.forget("other.md")

    ids = [e["id"] for e in _ledger(store.path)]
    assert ids == [killed.id, report.erasure]
    assert _ledger(store.path)[0]["blobs"] == [orphan] and not has_object(store.path, orphan)
    fsck_clean(store.path)


def test_import_of_a_history_holding_purged_content_is_refused(store: GitFileStore, tmp_path: Path) -> None:
    from gitmem.exchange import import_history

    sync = store.sync
    v = sync.write("a.md", "purged text\n", expected=None)
    source = tmp_path / "source"
    git("clone", "-q", store.path, str(source))  # a copy of the history from before the purge
    sync.purge(origin=ADMIN)
    head = sync.head()

    done = import_history(sync, str(source), strict=True)

    assert [r.rule for r in done.refused] == ["erased"] and done.refused[0].path == "a.md"
    assert sync.head() == head and not has_object(store.path, v)
    fsck_clean(store.path)
