"""Hostile pushes against ``gitmem serve``: crafted objects and packs, refused ref updates, odd commands.

After each attempt: a clear refusal (an ``unpack`` error or ``ng`` status, never an
HTTP error), every ref as it was, nothing the push carried left in the mount, and
``git fsck --strict`` clean.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME, commit_message

from .crafted import EMPTY_TREE, ZERO, Report, commit, oid, pack, receive_pack, tree
from .support import (
    MALFORMED_KINDS,
    TOKEN,
    Mount,
    Served,
    commit_all,
    fsck_clean,
    git,
    has_object,
    malformed_commit,
    seed,
    write,
)

MAIN = "refs/heads/main"


def refs_of(mount: Path) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=mount).stdout


def push(
    served: Served, mount: Mount, commands: list[tuple[str, str, str]], data: bytes | None, **kw: object
) -> Report:
    base = f"http://127.0.0.1:{served.server.port}"
    return receive_pack(base, mount.name, TOKEN, commands, data, **kw)  # type: ignore[arg-type]


def assert_untouched(mount: Mount, refs_before: str, carried: list[str]) -> None:
    assert refs_of(mount.path) == refs_before
    for ident in carried:
        assert not has_object(mount.path, ident), f"{ident} was left in the mount"
    fsck_clean(mount.path)


def head_parts(mount: Mount) -> tuple[str, str]:
    """main's commit and the id of seed.md's blob."""
    head = mount.store.sync.head()
    blob = git("rev-parse", f"{head}:seed.md", cwd=mount.path).stdout.strip()
    return head, blob


def fresh_blob() -> tuple[str, bytes]:
    data = f"note {secrets.token_hex(8)}\n".encode()
    return oid("blob", data), data


# --- 1. objects git itself refuses ------------------------------------------------------


def _malformed(head: str, seed_blob: str) -> dict[str, list[tuple[str, bytes]]]:
    new_id, new = fresh_blob()
    good = tree((b"100644", b"new.md", new_id), (b"100644", b"seed.md", seed_blob))
    cases: dict[str, list[tuple[str, bytes]]] = {
        "duplicate-entries": [tree((b"100644", b"new.md", new_id), (b"100644", b"new.md", new_id))],
        "unsorted-entries": [tree((b"100644", b"seed.md", seed_blob), (b"100644", b"new.md", new_id))],
        "zero-padded-mode": [tree((b"0100644", b"new.md", new_id), (b"100644", b"seed.md", seed_blob))],
        "file-entry-is-a-commit": [tree((b"100644", b"new.md", head), (b"100644", b"seed.md", seed_blob))],
        "folder-entry-is-a-blob": [tree((b"40000", b"notes", new_id), (b"100644", b"seed.md", seed_blob))],
        "dotgit-folder": [tree((b"40000", b".git", EMPTY_TREE), (b"100644", b"seed.md", seed_blob))],
        "dotdot-folder": [tree((b"40000", b"..", EMPTY_TREE), (b"100644", b"seed.md", seed_blob))],
    }
    out = {}
    for name, (raw_tree,) in cases.items():
        objs = [("blob", new), ("tree", raw_tree), ("tree", b"")]
        objs.append(("commit", commit(oid("tree", raw_tree), [head])))
        out[name] = objs
    bad_commits = {
        "bad-time-zone": commit(oid("tree", good), [head], committer=b"M <m@example.com> 1700000000 +00000"),
        "zero-padded-date": commit(oid("tree", good), [head], committer=b"M <m@example.com> 01700000000 +0000"),
        "nul-in-message": commit(oid("tree", good), [head], message=b"hidden\0text\n"),
        "no-author": commit(oid("tree", good), [head]).replace(b"author ", b"auth0r ", 1),
    }
    for name, raw in bad_commits.items():
        out[name] = [("blob", new), ("tree", good), ("commit", raw)]
    return out


MALFORMED = [
    "duplicate-entries",
    "unsorted-entries",
    "zero-padded-mode",
    "file-entry-is-a-commit",
    "folder-entry-is-a-blob",
    "dotgit-folder",
    "dotdot-folder",
    "bad-time-zone",
    "zero-padded-date",
    "nul-in-message",
    "no-author",
]


@pytest.mark.parametrize("case", MALFORMED)
def test_objects_git_refuses_are_refused_as_an_unpack_error(served: Served, mount: Mount, case: str) -> None:
    seed(mount.store)
    head, seed_blob = head_parts(mount)
    objs = _malformed(head, seed_blob)[case]
    before = refs_of(mount.path)
    new = oid("commit", objs[-1][1])
    report = push(served, mount, [(head, new, MAIN)], pack(objs))
    assert report.http == 200
    assert report.unpack is not None and report.unpack != "ok", report
    assert report.status(MAIN) == ["unpacker error"]
    assert "git rejects the pushed objects" in report.messages
    assert_untouched(mount, before, [oid(kind, raw) for kind, raw in objs if raw])


FOLDER_NAMES = [b".gitmodules", b".gitattributes", b"GIT~1", b".git", b"notes", b"cafe\xcc\x81", b"a\\b", b"tab\tname"]
PUSHCHECK_ONLY = {b"notes", b"cafe\xcc\x81", b"a\\b", b"tab\tname"}  # names git's fsck lets through


@pytest.mark.parametrize("name", FOLDER_NAMES, ids=[n.decode("utf-8", "replace") for n in FOLDER_NAMES])
def test_every_tree_entry_is_checked_even_an_empty_folder(served: Served, mount: Mount, name: bytes) -> None:
    seed(mount.store)
    head, seed_blob = head_parts(mount)
    entries = sorted([(b"40000", name, EMPTY_TREE), (b"100644", b"seed.md", seed_blob)], key=lambda e: e[1])
    raw_tree = tree(*entries)
    objs = [("tree", b""), ("tree", raw_tree), ("commit", commit(oid("tree", raw_tree), [head]))]
    before = refs_of(mount.path)
    report = push(served, mount, [(head, oid("commit", objs[-1][1]), MAIN)], pack(objs))
    [status] = report.status(MAIN)
    if name in PUSHCHECK_ONLY:
        assert report.unpack == "ok" and "invalid_path" in status, report
    else:
        assert report.unpack != "ok" and status == "unpacker error", report
    assert_untouched(mount, before, [oid("tree", raw_tree), oid("commit", objs[-1][1])])


def test_a_folder_holding_a_commit_or_an_executable_already_in_a_parent_is_refused(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    # A subtree with a bad entry arrives under a fresh name: no file is "added" by the diff
    # rules' standards except the one in the folder, so the entry rules must see the folder.
    seed(mount.store)
    head, seed_blob = head_parts(mount)
    inner = tree((b"100755", b"run.md", seed_blob))
    raw_tree = tree((b"40000", b"bin", oid("tree", inner)), (b"100644", b"seed.md", seed_blob))
    objs = [("tree", inner), ("tree", raw_tree), ("commit", commit(oid("tree", raw_tree), [head]))]
    before = refs_of(mount.path)
    report = push(served, mount, [(head, oid("commit", objs[-1][1]), MAIN)], pack(objs))
    [status] = report.status(MAIN)
    assert status.startswith("bin/run.md") and "file_mode" in status
    assert_untouched(mount, before, [oid("tree", raw_tree)])


# --- 4. only what accepted updates reach enters the mount ----------------------------------


def test_a_refused_branch_leaves_nothing_when_another_ref_of_the_push_lands(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    git("checkout", "-q", "-b", "leak", cwd=work)
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
    write(work, "keys/id.md", key)
    leak = commit_all(work, "a private key")
    key_blob = git("rev-parse", f"{leak}:keys/id.md", cwd=work).stdout.strip()
    git("checkout", "-q", "main", cwd=work)
    write(work, "fine.md", "fine\n")
    fine = commit_all(work, "fine")

    done = git("push", "origin", "main", "leak", cwd=work, check=False)
    assert done.returncode != 0
    assert "[remote rejected] leak -> leak (keys/id.md in" in done.stderr, done.stderr
    assert mount.store.sync.head() == fine
    assert not has_object(mount.path, key_blob), "the refused branch's secret stayed readable"
    assert not has_object(mount.path, leak)
    fsck_clean(mount.path)


def test_objects_no_update_reaches_never_enter_the_mount(served: Served, mount: Mount) -> None:
    seed(mount.store)
    head, seed_blob = head_parts(mount)
    new_id, new = fresh_blob()
    secret = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    raw_tree = tree((b"100644", b"new.md", new_id), (b"100644", b"seed.md", seed_blob))
    raw_commit = commit(oid("tree", raw_tree), [head])
    objs = [("blob", new), ("tree", raw_tree), ("commit", raw_commit), ("blob", secret)]
    report = push(served, mount, [(head, oid("commit", raw_commit), MAIN)], pack(objs))
    assert report.unpack == "ok" and report.status(MAIN) == ["ok"], report
    assert mount.store.sync.read("new.md").text == new.decode()
    assert not has_object(mount.path, oid("blob", secret)), "an unreferenced object came in with the push"
    fsck_clean(mount.path)


def test_a_push_that_loses_its_compare_and_swap_leaves_no_objects(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    write(work, "from-person.md", "written by a person, lost to the race\n")
    pushed = commit_all(work, "person")
    blob = git("rev-parse", f"{pushed}:from-person.md", cwd=work).stdout.strip()

    def agent_writes_meanwhile(name: str, updates: object) -> None:
        mount.store.sync.write("from-agent.md", "agent\n", expected=None)

    served.app.before_update = agent_writes_meanwhile
    done = git("push", "origin", "main", cwd=work, check=False)
    assert "(the ref moved to" in done.stderr, done.stderr
    assert not has_object(mount.path, pushed) and not has_object(mount.path, blob)
    fsck_clean(mount.path)


# --- 5. provenance a push cannot forge ------------------------------------------------------


def test_a_pushed_commit_whose_gitmem_trailers_hide_what_it_changed_is_refused(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    seed(mount.store)
    mount.store.sync.write("prefs/language.md", "Reply in English.\n", expected=None)
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    write(work, "prefs/language.md", "Reply in Klingon.\n")
    git("add", "-A", cwd=work)
    forged = commit_message("edit", ("notes/harmless.md",), Origin(principal_id="alice"))
    identity = {"GIT_COMMITTER_NAME": COMMITTER_NAME, "GIT_COMMITTER_EMAIL": COMMITTER_EMAIL}
    git("commit", "-q", "-m", forged, cwd=work, env={**identity, "GIT_AUTHOR_NAME": "alice"})
    before = refs_of(mount.path)
    pushed = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "prefs/language.md" in done.stderr and "provenance" in done.stderr, done.stderr
    assert_untouched(mount, before, [pushed])

    # Honest trailers (every changed path named) are taken, whoever made the commit.
    git("commit", "-q", "--amend", "-m", commit_message("edit", ("prefs/language.md",), Origin()), cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    [entry] = mount.store.sync.log("prefs/language.md", limit=1)
    assert entry.commit == git("rev-parse", "HEAD", cwd=work).stdout.strip()


def test_a_forged_move_trailer_is_refused_at_push(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    mount.store.sync.write("victim.md", "the victim's notes\n", expected=None)
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    write(work, "innocent.md", "nothing to see\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", commit_message("move", ("victim.md", "innocent.md"), Origin()), cwd=work)
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "provenance" in done.stderr, done.stderr


# --- 6. refusals, not server errors --------------------------------------------------------


def _one_commit(mount: Mount) -> tuple[str, list[tuple[str, bytes]]]:
    head, seed_blob = head_parts(mount)
    new_id, new = fresh_blob()
    raw_tree = tree((b"100644", b"new.md", new_id), (b"100644", b"seed.md", seed_blob))
    raw_commit = commit(oid("tree", raw_tree), [head])
    return head, [("blob", new), ("tree", raw_tree), ("commit", raw_commit)]


@pytest.mark.parametrize("damage", ["truncated", "count-too-high", "missing-delta-base", "garbage", "checksum"])
def test_a_broken_pack_gets_an_unpack_error_report_not_a_server_error(
    served: Served, mount: Mount, damage: str
) -> None:
    seed(mount.store)
    head, objs = _one_commit(mount)
    new = oid("commit", objs[-1][1])
    data = {
        "truncated": pack(objs)[:-30],
        "count-too-high": pack(objs, count=5),
        "missing-delta-base": pack(objs, deltas=["ab" * 20]),
        "garbage": b"PACK" + secrets.token_bytes(200),
        "checksum": (lambda raw: raw[:-1] + bytes([raw[-1] ^ 0xFF]))(pack(objs)),  # always a different byte
    }[damage]
    before = refs_of(mount.path)
    report = push(served, mount, [(head, new, MAIN)], data)
    assert report.http == 200
    assert report.unpack not in (None, "ok"), report
    assert report.status(MAIN) == ["unpacker error"]
    assert_untouched(mount, before, [new])


def test_a_ref_named_twice_is_refused_and_the_report_says_what_happened(served: Served, mount: Mount) -> None:
    seed(mount.store)
    head, objs = _one_commit(mount)
    new = oid("commit", objs[-1][1])
    before = refs_of(mount.path)
    report = push(served, mount, [(head, new, MAIN), (head, new, MAIN)], pack(objs))
    assert report.unpack == "ok"
    assert len(report.status(MAIN)) == 2 and all(s == "duplicate_ref" for s in report.status(MAIN)), report
    assert "named more than once" in report.messages
    assert_untouched(mount, before, [new])
    # The same push naming main once lands.
    report = push(served, mount, [(head, new, MAIN)], pack(objs))
    assert report.status(MAIN) == ["ok"] and mount.store.sync.head() == new


def test_a_push_from_a_shallow_clone_lands(served: Served, mount: Mount, tmp_path: Path) -> None:
    seed(mount.store)
    for i in range(3):
        mount.store.sync.write(f"n{i}.md", f"note {i}\n", expected=None)
    work = tmp_path / "work"
    git("clone", "-q", "--depth", "1", served.url(mount.name), str(work))
    assert git("rev-parse", "--is-shallow-repository", cwd=work).stdout.strip() == "true"
    write(work, "from-shallow.md", "pushed from a shallow clone\n")
    pushed = commit_all(work, "shallow push")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    assert mount.store.sync.head() == pushed
    assert mount.store.sync.read("from-shallow.md").text == "pushed from a shallow clone\n"
    fsck_clean(mount.path)


def test_a_new_root_commit_on_a_branch_with_a_zero_old_value_for_a_ref_that_exists_is_reported_stale(
    served: Served, mount: Mount
) -> None:
    seed(mount.store)
    _head, objs = _one_commit(mount)
    new = oid("commit", objs[-1][1])
    before = refs_of(mount.path)
    report = push(served, mount, [(ZERO, new, MAIN)], pack(objs))
    [status] = report.status(MAIN)
    assert status != "ok"
    assert_untouched(mount, before, [new])


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_objects_git_refuses_are_refused_when_the_real_client_pushes_them(
    served: Served, mount: Mount, tmp_path: Path, kind: str
) -> None:
    seed(mount.store)
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    before = refs_of(mount.path)
    pushed = malformed_commit(work, kind)
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0 and "unpacker error" in done.stderr, done.stderr
    assert "git rejects the pushed objects" in done.stderr
    assert_untouched(mount, before, [pushed])


def test_what_the_server_relays_shows_escape_sequences_as_text(served: Served, mount: Mount) -> None:
    # A refusal quotes the ref name the client sent; git's own client would not send
    # this one, a hostile client does. Its escape sequences (clear the screen, retitle
    # the terminal) must reach the pusher's terminal as text.
    seed(mount.store)
    head, _ = head_parts(mount)
    before = refs_of(mount.path)
    hostile = "refs/\x1b[2J\x1b]0;owned\x07x"
    report = push(served, mount, [(ZERO, head, hostile)], pack([]))
    assert report.status(hostile) and report.status(hostile) != ["ok"]
    assert "\\x1b[2J" in report.messages, report.messages
    assert "\x1b" not in report.messages and "\x07" not in report.messages
    assert_untouched(mount, before, [])
