"""``gitmem serve`` after a forget: a stale clone's push of the erased content is refused (rule ``erased``)."""

from __future__ import annotations

from pathlib import Path

from gitmem.git.erasures import LEDGER_REF
from gitmem.model import Origin

from .support import Mount, Served, commit_all, fsck_clean, git, write

SECRET = "Dana's home address is 4 Elm Road\n"


def test_a_stale_clone_cannot_push_erased_content_back(served: Served, mount: Mount, tmp_path: Path) -> None:
    sync = mount.store.sync
    erased = sync.write("people/dana.md", SECRET, expected=None)
    sync.write("keep.md", "keep\n", expected=None)
    work = tmp_path / "stale"
    git("clone", "-q", served.url(mount.name), str(work))
    sync.forget("people/dana.md", origin=Origin(principal_id="admin"))
    head = sync.head()

    write(work, "more.md", "work on a stale clone\n")
    commit_all(work, "more")
    for spec in ("HEAD:refs/heads/revived", "HEAD:refs/heads/main"):
        done = git("push", "origin", spec, cwd=work, check=False)
        assert done.returncode != 0, done.stderr
    done = git("push", "origin", "HEAD:refs/heads/revived", cwd=work, check=False)
    assert "erased" in done.stderr and "people/dana.md" in done.stderr, done.stderr
    assert sync.head() == head
    assert git("for-each-ref", "--format=%(refname)", cwd=mount.path).stdout.split() == [LEDGER_REF, "refs/heads/main"]
    assert git("cat-file", "-e", erased, cwd=mount.path, check=False).returncode != 0
    fsck_clean(mount.path)

    # A fresh clone fetches the ledger with plain git, and a push of new work lands.
    fresh = tmp_path / "fresh"
    git("clone", "-q", served.url(mount.name), str(fresh))
    git("fetch", "-q", "origin", f"{LEDGER_REF}:{LEDGER_REF}", cwd=fresh)
    assert erased in git("show", f"{LEDGER_REF}:entries.jsonl", cwd=fresh).stdout
    write(fresh, "new.md", "new\n")
    pushed = commit_all(fresh, "new work")
    git("push", "-q", "origin", "main", cwd=fresh)
    assert sync.head() == pushed


def test_a_served_remote_takes_the_ledger_and_is_reported_while_its_own_history_holds_the_erased_version(
    served: Served, mount: Mount, tmp_path: Path
) -> None:
    from gitmem import GitFileStore, remotes

    local = GitFileStore.init(tmp_path / "local.git")
    remotes.add(local, "team", served.url(mount.name))
    # Join the served memory first: two new memories share their "init memory" commit only
    # when they were made within the same second.
    remotes.pull(local, "team")
    local.sync.write("keep.md", "keep\n", expected=None)
    erased = local.sync.write("people/dana.md", SECRET, expected=None)
    remotes.push(local, "team")
    local.sync.forget("people/dana.md")

    (report,) = remotes.erase(local)

    # gitmem serve never lets main be rewound, so its history keeps the version; the ledger
    # went in, so nothing erased can be pushed there again, and the report names main.
    assert report.remote == "team" and report.holding == ("refs/heads/main",) and not report.clean
    assert git("rev-parse", LEDGER_REF, cwd=mount.path).stdout.strip() == git(
        "rev-parse", LEDGER_REF, cwd=local.path
    ).stdout.strip()
    assert erased in git("show", f"{LEDGER_REF}:entries.jsonl", cwd=mount.path).stdout
    assert not mount.store.sync.check_erasures().ok

    # The host's admin applies the ledger there (it names no path; the blob ids find them).
    (forgot,) = mount.store.sync.forget_erased()
    assert forgot.names == ("people/dana.md",)
    assert mount.store.sync.check_erasures().ok
    assert remotes.remote_holdings(local, "team") == ()
    fsck_clean(mount.path)
