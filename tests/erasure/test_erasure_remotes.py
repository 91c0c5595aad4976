"""After a forget: remotes get the rewritten history with a lease, and ``fsck --erasures`` proves the mount clean."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from serve.support import commit_all, fsck_clean, git, write

from gitmem import MemoryStoreError, Origin, Root, remotes
from gitmem.adapters.cli import cli
from gitmem.git.erasures import LEDGER_REF

SECRET = "Dana's phone is 555 0142\n"


class Team:
    """A mount with two plain bare remotes that both hold the secret."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = Root(tmp_path / "mem")
        self.store = self.root.mount("user", create=True)
        self.sync = self.store.sync
        self.sync.write("keep.md", "keep\n", expected=None)
        self.secret = self.sync.write("people/dana.md", SECRET, expected=None)
        self.hostings = []
        for name in ("origin", "backup"):
            hosting = tmp_path / f"{name}.git"
            git("init", "-q", "--bare", "-b", "main", str(hosting))
            remotes.add(self.store, name, str(hosting))
            remotes.push(self.store, name)
            self.hostings.append(hosting)

    def cli(self, *args: str) -> tuple[int, str]:
        done = CliRunner().invoke(cli, ["--root", str(self.root.path), *args])
        return done.exit_code, done.output


def _reaches(hosting: Path, oid: str) -> bool:
    return oid in git("rev-list", "--objects", "--all", cwd=hosting).stdout


def test_push_after_forget_replaces_the_remote_history_with_a_lease_and_sends_the_ledger(tmp_path: Path) -> None:
    team = Team(tmp_path)
    origin = team.hostings[0]
    team.sync.forget("people/dana.md", origin=Origin(principal_id="admin"))
    assert _reaches(origin, team.secret)

    pushed = remotes.push(team.store, "origin")
    assert {p.ref for p in pushed} >= {"refs/heads/main", LEDGER_REF}
    assert git("rev-parse", "main", cwd=origin).stdout.strip() == team.sync.head()
    assert not _reaches(origin, team.secret)
    assert git("rev-parse", LEDGER_REF, cwd=origin).stdout.strip() == git(
        "rev-parse", LEDGER_REF, cwd=team.store.path
    ).stdout.strip()


def test_the_lease_never_overwrites_work_pushed_to_the_remote_since(tmp_path: Path) -> None:
    team = Team(tmp_path)
    origin = team.hostings[0]
    work = tmp_path / "person"
    git("clone", "-q", str(origin), str(work))
    write(work, "later.md", "a person's later work\n")
    theirs = commit_all(work, "later work")
    git("push", "-q", "origin", "main", cwd=work)
    team.sync.forget("people/dana.md")
    code, out = team.cli("push", "user", "origin")
    assert code != 0 and "pull" in out, out
    assert git("rev-parse", "main", cwd=origin).stdout.strip() == theirs


def test_forget_remotes_pushes_everywhere_and_reports_each_remote(tmp_path: Path) -> None:
    team = Team(tmp_path)
    code, out = team.cli("forget", "user", "people/dana.md", "--yes", "--remotes", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert [(r["remote"], r["clean"], r["holding"]) for r in report["remotes"]] == [
        ("backup", True, []),
        ("origin", True, []),
    ]
    for hosting in team.hostings:
        assert not _reaches(hosting, team.secret)
        fsck_clean(hosting)


def test_forget_remotes_names_a_remote_ref_that_still_reaches_erased_content(tmp_path: Path) -> None:
    team = Team(tmp_path)
    backup = team.hostings[1]
    git("branch", "old-copy", "main", cwd=backup)  # a branch there that gitmem does not push
    code, out = team.cli("forget", "user", "people/dana.md", "--yes", "--remotes", "--json")
    assert code == 1, out
    report = json.loads(out)
    by_name = {r["remote"]: r for r in report["remotes"]}
    assert by_name["origin"]["clean"] is True
    assert by_name["backup"]["holding"] == ["refs/heads/old-copy"]


def test_fsck_erasures_proves_the_mount_clean_and_names_what_still_holds_an_erased_version(tmp_path: Path) -> None:
    team = Team(tmp_path)
    team.sync.forget("people/dana.md")
    code, out = team.cli("fsck", "user", "--erasures", "--json")
    assert code == 0, out
    assert json.loads(out)["ok"] is True and json.loads(out)["entries"] == 1
    # Plant what a broken erasure would leave: the blob back in the store, its id in a derived file.
    path = team.store.path
    Path(tmp_path, "leak.md").write_text(SECRET)
    blob = git("hash-object", "-w", str(tmp_path / "leak.md"), cwd=path).stdout.strip()
    assert blob == team.secret
    os.makedirs(os.path.join(path, "gitmem", "derived"), exist_ok=True)
    Path(path, "gitmem", "derived", "cache.json").write_text(json.dumps({"version": blob}))
    code, out = team.cli("fsck", "user", "--erasures")
    assert code == 1
    assert f"object {blob}" in out and "gitmem/derived/cache.json" in out


def test_a_pull_adopts_an_erasure_made_on_another_copy(tmp_path: Path) -> None:
    team = Team(tmp_path)
    other = team.root.mount("other", create=True)
    # A second copy of the same memory (as an admin sets one up: main fetched with plain git).
    git("fetch", "-q", str(team.hostings[0]), "+refs/heads/main:refs/heads/main", cwd=other.path)
    remotes.add(other, "origin", str(team.hostings[0]))
    assert remotes.pull(other, "origin").kind == "up_to_date"
    assert other.sync.read("people/dana.md").text == SECRET
    team.sync.forget("people/dana.md")
    remotes.push(team.store, "origin")  # the rewritten history and the ledger

    remotes.pull(other, "origin")

    ledger = git("show", f"{LEDGER_REF}:entries.jsonl", cwd=other.path).stdout
    assert team.secret in ledger
    with pytest.raises(MemoryStoreError) as err:  # the erased text may not be written here either
        other.sync.write("copy.md", SECRET, expected=None)
    assert err.value.code == "forbidden"
    # It still holds its own old copy: fsck --erasures says so, until this copy forgets it too.
    audit = other.sync.check_erasures()
    assert not audit.ok and any(team.secret in line for line in audit.holders)
    code, out = team.cli("forget", "other", "--from-ledger", "--yes", "--json")
    assert code == 0, out
    assert [r["names"] for r in json.loads(out)["forgotten"]] == [["people/dana.md"]]
    code, out = team.cli("fsck", "other", "--erasures")
    assert code == 0 and out.startswith("ok"), out
