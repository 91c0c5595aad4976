"""Plain git on a memory: fsck, log with trailers and authors, diff, blame, clone, push.

Teams review and share memories with the git they already have, so every test
here drives the real ``git`` executable against the store's bare repository.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2
from contract.support import Subject, assert_fsck_clean, error_of, git

from gitmem import Changes, FileText, Origin

ALICE = Origin(run_id="run-a1", principal_id="alice", tool_call_id="call-7")
BOB = Origin(run_id="run-b2", principal_id="agent-bob", tool_call_id="call-9")


def history(mem: Subject) -> None:
    """Five changes by two principals: create, edit, create, move, delete."""
    v = mem.write("prefs/language.md", "Reply in English.\n", expected=None, origin=ALICE)
    v = mem.write("prefs/language.md", "Reply in English.\nBe brief.\n", expected=v, origin=BOB)
    t = mem.write("todo.md", "- call mum\n", expected=None, origin=ALICE)
    mem.move("prefs/language.md", "prefs/style/language.md", expected=v, origin=BOB)
    mem.delete("todo.md", expected=t, origin=ALICE)


def log(mem: Subject, fmt: str, *args: str) -> list[str]:
    assert mem.repo is not None
    out = git(mem.repo, "log", f"--format={fmt}", *args, "main").stdout
    return [chunk.strip() for chunk in out.split("\x1e") if chunk.strip()]


def test_fsck_strict_is_clean_after_every_kind_of_change(mem: Subject) -> None:
    assert mem.repo is not None
    assert_fsck_clean(mem.repo)
    history(mem)
    mem.write(
        "prefs/style/language.md",
        "Reply in English.\nBe brief.\n",
        expected=mem.read("prefs/style/language.md").version,
    )
    mem.write("ünïcode/ファイル.md", "", expected=None)
    assert_fsck_clean(mem.repo)
    mem.purge()
    assert_fsck_clean(mem.repo)


def test_log_shows_summaries_and_gitmem_trailers(mem: Subject) -> None:
    history(mem)
    assert log(mem, "%s%x1e") == [
        "delete todo.md",
        "move prefs/language.md → prefs/style/language.md",
        "create todo.md",
        "edit prefs/language.md",
        "create prefs/language.md",
        "init memory",
    ]
    assert log(mem, "%(trailers:key=Gitmem-Run,valueonly)%x1e") == ["run-a1", "run-b2", "run-a1", "run-b2", "run-a1"]
    assert log(mem, "%(trailers:key=Gitmem-Op,valueonly)%x1e")[:5] == ["delete", "move", "create", "edit", "create"]
    assert log(mem, "%(trailers:key=Gitmem-Tool-Call,valueonly)%x1e") == [
        "call-7",
        "call-9",
        "call-7",
        "call-9",
        "call-7",
    ]
    assert log(mem, "%(trailers:key=Gitmem-Principal,valueonly)%x1e")[:2] == ["alice", "agent-bob"]
    move = log(mem, "%(trailers:only,unfold)%x1e", "-1", "--skip=1")[0].splitlines()
    assert "Gitmem-Path: prefs/style/language.md" in move and "Gitmem-From: prefs/language.md" in move


def test_the_principal_is_the_author_and_gitmem_the_committer(mem: Subject) -> None:
    history(mem)
    assert log(mem, "%s%x1e", "--author=alice") == ["delete todo.md", "create todo.md", "create prefs/language.md"]
    assert log(mem, "%s%x1e", "--author=agent-bob") == [
        "move prefs/language.md → prefs/style/language.md",
        "edit prefs/language.md",
    ]
    assert set(log(mem, "%cn%x1e")) == {"gitmem"}
    # a change without a principal is authored by gitmem itself
    mem.write("anon.md", "x\n", expected=None)
    assert log(mem, "%an%x1e", "-1") == ["gitmem"]


def test_commit_times_carry_the_local_offset_as_libgit2_gives_it(mem: Subject) -> None:
    """Author and committer lines are made without libgit2's ``Signature``: same time and zone as it gives."""
    before = int(time.time())
    mem.write("when.md", "x\n", expected=None, origin=ALICE)
    after = int(time.time())
    ((author, committer),) = [line.split("|") for line in log(mem, "%at %ai|%ct %ci%x1e", "-1")]
    now = pygit2.Signature("gitmem", "gitmem@localhost")
    zone = f"{'-' if now.offset < 0 else '+'}{abs(now.offset) // 60:02d}{abs(now.offset) % 60:02d}"
    for line in (author, committer):
        seconds, *_, offset = line.split()
        assert before <= int(seconds) <= after
        assert offset == zone


def test_git_diff_shows_each_change(mem: Subject) -> None:
    assert mem.repo is not None
    history(mem)
    edit = git(mem.repo, "diff", "main~4", "main~3").stdout
    assert "+Be brief." in edit and "--- a/prefs/language.md" in edit
    rename = git(mem.repo, "diff", "-M", "--name-status", "main~2", "main~1").stdout.split()
    assert rename == ["R100", "prefs/language.md", "prefs/style/language.md"]
    assert git(mem.repo, "diff", "--stat", "main~1", "main").stdout.strip().startswith("todo.md")


def test_git_blame_attributes_lines_to_changes(mem: Subject) -> None:
    assert mem.repo is not None
    history(mem)
    porcelain = git(mem.repo, "blame", "--line-porcelain", "main", "--", "prefs/style/language.md").stdout
    authors = [line.split(" ", 1)[1] for line in porcelain.splitlines() if line.startswith("author ")]
    assert authors == ["alice", "agent-bob"]


def test_git_clone_checks_out_exactly_the_memory(mem: Subject, tmp_path: Path) -> None:
    assert mem.repo is not None
    history(mem)
    mem.write("notes/empty.md", "", expected=None)
    mem.write("notes/crlf.md", "one\r\ntwo\r\n", expected=None)
    mem.write("caf\u00e9/r\u00e9sum\u00e9.md", "accents\n", expected=None)
    mem.write("deep/er/than/that.md", "deep\n", expected=None)
    clone = tmp_path / "clone"
    git(tmp_path, "-c", "core.autocrlf=false", "clone", "--quiet", str(mem.repo), str(clone))
    on_disk = {}
    for root, dirs, files in os.walk(clone):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            full = Path(root) / name
            on_disk[full.relative_to(clone).as_posix()] = full.read_bytes().decode()
    assert on_disk == mem.files()
    assert git(clone, "status", "--porcelain").stdout == ""


def test_a_plain_git_push_is_seen_by_the_store(mem: Subject, tmp_path: Path) -> None:
    assert mem.repo is not None
    history(mem)
    keep = mem.write("keep.md", "kept\n", expected=None)
    cursor = mem.cursor()
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(mem.repo), str(clone))
    (clone / "prefs/style/language.md").write_text("Reply in French.\n")
    (clone / "people").mkdir()
    (clone / "people/alice.md").write_text("---\ndescription: Alice\n---\nlikes tea\n")
    (clone / "keep.md").unlink()
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", "edit by hand")
    git(clone, "push", "--quiet", "origin", "main")

    assert mem.files() == {
        "people/alice.md": "---\ndescription: Alice\n---\nlikes tea\n",
        "prefs/style/language.md": "Reply in French.\n",
    }
    assert {e.path: e.description for e in mem.list()}["people/alice.md"] == "Alice"
    changes = mem.changes(cursor)
    assert isinstance(changes, Changes)
    assert changes.paths == ("keep.md", "people/alice.md", "prefs/style/language.md")
    assert mem.head() == git(clone, "rev-parse", "HEAD").stdout.strip()
    # a store write based on the pre-push content fails: the push removed the file
    exc = error_of(mem.write, "keep.md", "stale edit\n", expected=keep)
    assert exc.code == "not_found" and exc.current is None
    pushed = mem.read("prefs/style/language.md")
    assert pushed == FileText("prefs/style/language.md", "Reply in French.\n", pushed.version)
    # the store builds on the pushed commit, and the clone fast-forwards to it
    mem.write("people/bob.md", "bob\n", expected=None, origin=BOB)
    git(clone, "pull", "--quiet", "--ff-only")
    assert (clone / "people/bob.md").read_text() == "bob\n"
    assert_fsck_clean(mem.repo)


def test_a_store_sees_a_commit_made_with_git_plumbing_in_the_bare_repo(mem: Subject) -> None:
    """No clone at all: git hash-object / mktree / commit-tree / update-ref on the mount."""
    assert mem.repo is not None
    cursor = mem.cursor()
    blob = git(mem.repo, "hash-object", "-w", "--stdin", input="made by plumbing\n").stdout.strip()
    tree = git(mem.repo, "mktree", input=f"100644 blob {blob}\tplumbed.md\n").stdout.strip()
    commit = git(mem.repo, "commit-tree", tree, "-p", "main", "-m", "plumbing").stdout.strip()
    git(mem.repo, "update-ref", "refs/heads/main", commit, cursor)
    assert mem.files() == {"plumbed.md": "made by plumbing\n"}
    assert mem.changes(cursor).paths == ("plumbed.md",)


def test_content_pushed_by_plain_git_outside_the_rules_stays_readable(mem: Subject, tmp_path: Path) -> None:
    """Other git clients can push anything; the store must read it, not crash on it."""
    assert mem.repo is not None
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "--quiet", str(mem.repo), str(clone))
    (clone / "binary.bin").write_bytes(b"\xff\xfe\x00bytes\n")
    (clone / "big.md").write_text("line of text\n" * 10_000)
    (clone / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (clone / "run.sh").chmod(0o755)
    (clone / "link.md").symlink_to("run.sh")
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", "foreign content")
    git(clone, "push", "--quiet", "origin", "main")

    listing = {e.path: e for e in mem.list()}
    assert sorted(listing) == ["big.md", "binary.bin", "run.sh"]  # a symlink is not a memory file
    assert listing["big.md"].size == 130_000 and listing["big.md"].description == "line of text"
    assert mem.read("binary.bin").text == "\ufffd\ufffd\x00bytes\n"
    assert mem.read("big.md").text.count("\n") == 10_000
    assert len(mem.search("line of text", limit=5).matches) == 5
    assert error_of(mem.read, "link.md").code == "not_found"
    # the store can bring such a file back within its rules
    small = mem.write("big.md", "short now\n", expected=listing["big.md"].version)
    assert mem.read("big.md").version == small
    assert_fsck_clean(mem.repo)
