"""pushcheck on its own: the rules a pushed ref update is held to, read from a clone's objects.

A clone's object directory stands in for a push's quarantine: the mount cannot see
those commits until they are passed as ``object_dirs``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitmem import FileFormat, GitFileStore
from gitmem.git.pushcheck import MAIN, ZERO, RefUpdate, Refusal, check_updates, reason

from .support import commit_all, git, seed, write


@pytest.fixture
def mount(tmp_path: Path) -> GitFileStore:
    store = GitFileStore.init(tmp_path / "user.git")
    seed(store)
    return store


@pytest.fixture
def work(mount: GitFileStore, tmp_path: Path) -> Path:
    git("clone", "-q", mount.path, str(tmp_path / "work"))
    return tmp_path / "work"


def check(
    mount: GitFileStore, work: Path, ref: str = MAIN, new: str | None = None, fmt: FileFormat | None = None
) -> list[Refusal]:
    old = mount.sync.head() if ref == MAIN else ZERO
    new = new or git("rev-parse", "HEAD", cwd=work).stdout.strip()
    verdicts = check_updates(
        mount.path, [RefUpdate(ref, old, new)], fmt or mount.format, object_dirs=[str(work / ".git" / "objects")]
    )
    return verdicts[ref]


def test_a_clean_fast_forward_passes_and_needs_the_pushed_objects(mount: GitFileStore, work: Path) -> None:
    write(work, "notes/a.md", "fine\n")
    new = commit_all(work, "fine")
    assert check(mount, work) == []
    without = check_updates(mount.path, [RefUpdate(MAIN, mount.sync.head(), new)], mount.format)
    assert [r.rule for r in without[MAIN]] == ["missing_object"]


def test_paths_must_already_be_nfc_so_the_store_can_address_them(mount: GitFileStore, work: Path) -> None:
    write(work, "cafe\u0301.md", "decomposed name\n")
    commit_all(work, "nfd")
    [refusal] = check(mount, work)
    assert refusal.rule == "invalid_path" and "NFC" in refusal.message


def test_executable_files_are_refused(mount: GitFileStore, work: Path) -> None:
    write(work, "run.md", "text\n")
    os.chmod(work / "run.md", 0o755)
    commit_all(work, "x bit")
    [refusal] = check(mount, work)
    assert (refusal.rule, refusal.path) == ("file_mode", "run.md")
    assert "100755" in refusal.message


def test_a_merge_reports_a_bad_file_once_at_the_commit_that_added_it(mount: GitFileStore, work: Path) -> None:
    git("checkout", "-q", "-b", "side", cwd=work)
    write(work, "side.md", "password = hunter22\n")
    side = commit_all(work, "side adds a secret")
    git("checkout", "-q", "main", cwd=work)
    write(work, "main.md", "fine\n")
    commit_all(work, "main")
    git("merge", "-q", "--no-edit", "side", cwd=work)
    refusals = check(mount, work)
    assert [(r.rule, r.path, r.commit) for r in refusals] == [("secret:password_assignment", "side.md", side)]
    assert str(refusals[0]).startswith(f"refs/heads/main: commit {side[:12]}: side.md: secret:password_assignment: ")
    assert reason(refusals) == f"side.md in {side[:12]}: secret:password_assignment"


def test_the_mounts_own_format_applies(mount: GitFileStore, work: Path) -> None:
    write(work, "key.md", "-----BEGIN PRIVATE KEY-----\n")
    write(work, "mid.md", "y" * 2000 + "\n")
    commit_all(work, "two files")
    assert {r.rule for r in check(mount, work)} == {"secret:private_key"}
    relaxed = FileFormat(check_secrets=False, max_file_bytes=1000)
    assert [(r.rule, r.path) for r in check(mount, work, fmt=relaxed)] == [("too_large", "mid.md")]


def test_file_count_limits_hold_for_main_unless_the_push_shrinks_it(mount: GitFileStore, work: Path) -> None:
    fmt = FileFormat(max_files=2)
    write(work, "b.md", "b\n")
    write(work, "c.md", "c\n")
    commit_all(work, "grow")
    [refusal] = check(mount, work, fmt=fmt)
    assert refusal.rule == "memory_full" and "3 files" in refusal.message
    git("rm", "-q", "c.md", cwd=work)
    commit_all(work, "shrink back")
    assert check(mount, work, fmt=fmt) == []


def test_only_branches_and_tags_of_commits_can_be_pushed(mount: GitFileStore, work: Path) -> None:
    head = mount.sync.head()
    tree = git("rev-parse", "HEAD^{tree}", cwd=work).stdout.strip()
    verdicts = check_updates(
        mount.path,
        [
            RefUpdate("refs/notes/x", ZERO, head),
            RefUpdate("refs/tags/t", ZERO, tree),
            RefUpdate("refs/tags/ok", ZERO, head),
        ],
        mount.format,
    )
    assert [r.rule for r in verdicts["refs/notes/x"]] == ["ref_name"]
    assert [r.rule for r in verdicts["refs/tags/t"]] == ["not_a_commit"]
    assert verdicts["refs/tags/ok"] == []


def test_many_problems_are_listed_up_to_a_bound(mount: GitFileStore, work: Path) -> None:
    for i in range(30):
        write(work, f"bin/{i:02d}.md", b"\x00")
    commit_all(work, "binaries")
    refusals = check(mount, work)
    assert len(refusals) == 21 and refusals[-1].rule == "too_many_problems"
    assert reason(refusals).endswith("(and 19 more; see the remote messages)")
