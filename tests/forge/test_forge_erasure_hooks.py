"""Erasure that reaches a plain-git remote, hooks on every memory gitmem creates, and the
documented way forward when a refused commit already sits on a forge's main.

Real processes: the `gitmem` command, `git push` over a file path into a mount (its
hooks run), and bare repositories playing the forge.
"""

from __future__ import annotations

import os
from pathlib import Path

from .support import as_json, commit, fsck, git, gitmem, has_object

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def test_memories_gitmem_creates_get_its_hooks_unless_no_hooks(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    source = tmp_path / "src"
    git("init", "-q", "-b", "main", str(source))
    commit(source, {"a.md": "alpha\n"}, "alpha")
    assert gitmem(root, "init", "hooked").returncode == 0
    assert gitmem(root, "init", "bare-ish", "--no-hooks").returncode == 0
    assert gitmem(root, "import", "imported", "--history", str(source), "--create").returncode == 0
    assert gitmem(root, "import", "plain", "--history", str(source), "--create", "--no-hooks").returncode == 0
    for name, hooked in (("hooked", True), ("bare-ish", False), ("imported", True), ("plain", False)):
        for hook in ("pre-receive", "post-receive"):
            path = root / f"{name}.git" / "hooks" / hook
            assert path.is_file() == hooked, (name, hook)
            if hooked:
                assert os.access(path, os.X_OK) and "# gitmem-hook" in path.read_text()
    # The hook is live: a binary pushed over a file path is refused, and main does not move.
    work = tmp_path / "work"
    git("clone", "-q", str(root / "hooked.git"), str(work))
    head = git("rev-parse", "main", cwd=root / "hooked.git")
    commit(work, {"logo.png": PNG}, "logo")
    assert "logo.png: invalid_file" in _push_refused(work)
    assert git("rev-parse", "main", cwd=root / "hooked.git") == head
    fsck(root / "hooked.git")


def _push_refused(work: Path, target: str = "HEAD:main") -> str:
    import subprocess

    done = subprocess.run(["git", "push", "origin", target], cwd=work, capture_output=True, text=True)
    assert done.returncode != 0
    return done.stderr


def test_forget_names_the_remotes_and_reaches_them_after_the_local_forget(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    forge = tmp_path / "forge" / "team.git"
    git("init", "-q", "--bare", "-b", "main", str(forge))
    assert gitmem(root, "init", "team").returncode == 0
    mount = root / "team.git"
    assert gitmem(root, "write", "team", "notes/keep.md", "--create", stdin="a note to keep\n").returncode == 0
    assert gitmem(root, "write", "team", "people/dana.md", "--create", stdin="Dana's home address\n").returncode == 0
    blob = git("rev-parse", "main:people/dana.md", cwd=mount)
    assert gitmem(root, "remote", "add", "team", "origin", str(forge)).returncode == 0
    assert gitmem(root, "push", "team").returncode == 0
    stale = tmp_path / "stale"
    git("clone", "-q", str(mount), str(stale))  # a clone made before the erasure

    done = gitmem(root, "forget", "team", "people/dana.md", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert as_json(done)["remotes_may_hold"] == ["origin"]
    text = gitmem(root, "forget", "team", "notes/keep.md", "--yes")  # a second forget, in text form
    assert f"origin ({forge})" in text.stdout and "gitmem forget team --remotes --yes" in text.stdout
    assert not has_object(mount, blob)
    assert blob in git("rev-list", "--all", "--objects", cwd=forge)  # the remote still holds the text

    # After the local forget: by PATH (the ledger knows it was erased) ...
    done = gitmem(root, "forget", "team", "people/dana.md", "--remotes", "--yes", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert as_json(done)["remotes"] == [{"remote": "origin", "clean": True, "holding": [], "error": None}]
    assert blob not in git("rev-list", "--all", "--objects", cwd=forge)
    assert git("rev-parse", "main", cwd=forge) == git("rev-parse", "main", cwd=mount)
    # ... or with no PATH at all; a path never forgotten is still not_found.
    assert "origin: clean" in gitmem(root, "forget", "team", "--remotes", "--yes").stdout
    done = gitmem(root, "forget", "team", "people/nobody.md", "--remotes", "--yes")
    assert done.returncode == 1 and "not_found" in done.stderr
    assert gitmem(root, "forget", "team", "--remotes").returncode == 2  # --yes still required
    fsck(forge)
    fsck(mount)

    # The forge now carries the erasure ledger, so `gitmem check` there refuses the text coming back.
    person = tmp_path / "person"
    git("clone", "-q", str(forge), str(person))
    commit(person, {"people/dana.md": "Dana's home address\n"}, "put it back")
    git("push", "-q", "origin", "HEAD:refs/heads/revived", cwd=person)  # a plain forge takes anything
    out = as_json(gitmem(root, "check", str(forge), "main..revived", "--json"))
    assert [(r["path"], r["rule"]) for r in out["refused"]] == [("people/dana.md", "erased")]

    # The stale clone cannot put the erased text back: the memory's own hooks refuse it.
    git("config", "user.name", "Ann", cwd=stale)
    (stale / "people" / "dana.md").write_text("Dana's home address\n")
    git("add", "-A", cwd=stale)
    git("commit", "-qm", "again", "--allow-empty", cwd=stale)
    head = git("rev-parse", "main", cwd=mount)
    assert "erased" in _push_refused(stale, "HEAD:refs/heads/revived")  # a branch beside main: no fast-forward rule
    assert git("rev-parse", "main", cwd=mount) == head and not has_object(mount, blob)
    assert git("for-each-ref", "refs/heads/revived", cwd=mount) == ""


def test_the_way_forward_from_a_refused_commit_on_the_forge(tmp_path: Path) -> None:
    """The path docs/forge.md gives: rewrite once with import --rewrite, publish, every root pulls."""
    forge = tmp_path / "forge" / "team.git"
    git("init", "-q", "--bare", "-b", "main", str(forge))
    person = tmp_path / "person"
    git("clone", "-q", str(forge), str(person))
    git("checkout", "-q", "-b", "main", cwd=person)
    commit(person, {"notes/a.md": "alpha\n"}, "alpha")
    git("push", "-q", "origin", "main", cwd=person)
    # A root joins the forge's memory and works.
    ann = tmp_path / "ann"
    assert gitmem(ann, "import", "team", "--history", str(forge), "--create").returncode == 0
    assert gitmem(ann, "remote", "add", "team", "origin", str(forge)).returncode == 0
    joined = git("rev-parse", "main", cwd=ann / "team.git")
    # Someone pushes a binary to the forge's main and removes it in the next commit.
    bad = commit(person, {"logo.png": PNG}, "logo")
    commit(person, {"logo.png": None, "notes/b.md": "beta\n"}, "remove logo, add beta")
    git("push", "-q", "origin", "main", cwd=person)
    logo = git("rev-parse", f"{bad}:logo.png", cwd=person)
    check = as_json(gitmem(ann, "check", str(forge), "--json"))
    assert check["refused_commits"] == [bad]
    refused = gitmem(ann, "pull", "team")
    assert refused.returncode == 1 and git("rev-parse", "main", cwd=ann / "team.git") == joined

    # One person rewrites the forge's history with gitmem and publishes it to a new repository.
    admin = tmp_path / "admin"
    done = gitmem(admin, "import", "fixed", "--history", str(forge), "--rewrite", "--create", "--json")
    assert done.returncode == 0, done.stderr
    assert [d["path"] for d in as_json(done)["left_out"]] == ["logo.png"]
    fresh = tmp_path / "forge" / "team-v2.git"
    git("init", "-q", "--bare", "-b", "main", str(fresh))
    assert gitmem(admin, "remote", "add", "fixed", "origin", str(fresh)).returncode == 0
    assert gitmem(admin, "push", "fixed").returncode == 0
    assert gitmem(admin, "check", str(fresh)).returncode == 0

    # Every root pulls from it: its main is part of the rewritten history, so this is a fast-forward.
    assert gitmem(ann, "remote", "add", "team", "v2", str(fresh)).returncode == 0
    done = gitmem(ann, "pull", "team", "v2", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert git("rev-parse", "main", cwd=ann / "team.git") == git("rev-parse", "main", cwd=fresh)
    assert git("show", "main:notes/b.md", cwd=ann / "team.git") == "beta"
    for repo in (ann / "team.git", admin / "fixed.git", fresh):
        assert not has_object(repo, logo)
        fsck(repo)
    fsck(forge)
