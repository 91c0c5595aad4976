"""forget against git's own history rewrite, on a history made with plain git: merges, tips, signatures.

forget orders the commits itself and copies each byte for byte but its tree and
parent lines (a signature dropped: it cannot sign the new content). ``git
filter-branch`` removing the file from every commit's index does the same to a
history whose messages never name the file, so every rewritten commit must get
the very id filter-branch gives it. A commit put before one of its parents, a
parent line lost or reordered, or a header changed shows as a different id.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from gitmem import SyncGitFileStore

from .conftest import Git


def _commit(worktree: Callable[..., str], files: dict[str, str], message: str, *flags: str) -> None:
    root = Path(worktree.path)  # type: ignore[attr-defined]
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        worktree("add", name)
    worktree("commit", "-q", *flags, "-m", message)


def _merge(worktree: Callable[..., str], *branches: str) -> None:
    # -s ours: never a conflict, and the merge's tree is the first parent's (secret.md in it)
    worktree("merge", "-q", "--no-ff", "-s", "ours", "-m", f"merge {' '.join(branches)}", *branches)


def test_forget_gives_each_commit_of_a_plain_git_history_the_id_filter_branch_gives_it(
    store: SyncGitFileStore, git: Git, worktree: Callable[..., str], tmp_path: Path
) -> None:
    store.write("readme.md", "start\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    key = tmp_path / "signing"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    worktree("config", "gpg.format", "ssh")
    worktree("config", "user.signingkey", str(key))

    _commit(worktree, {"secret.md": "token 0\n"}, "first token")
    for side in ("a", "b", "c"):
        worktree("checkout", "-q", "-b", side, "main")
        _commit(worktree, {f"{side}.md": f"{side}\n", "secret.md": f"token {side}\n"}, f"on {side}")
        _commit(worktree, {f"{side}.md": f"{side} again\n"}, f"{side} again", "-S")  # signed
    worktree("checkout", "-q", "a")
    _merge(worktree, "b")  # a criss-cross: a merges b, then b merges a's parent
    worktree("checkout", "-q", "b")
    _merge(worktree, "a~1")
    _commit(worktree, {"secret.md": "token b2\n"}, "b later")
    worktree("checkout", "-q", "main")
    _commit(worktree, {"main.md": "main\n"}, "main moves on")
    _merge(worktree, "a", "b", "c")  # an octopus of three
    _commit(worktree, {"secret.md": "token last\n"}, "last token", "-S")
    worktree("tag", "on-c", "c~1")  # a tip that is also an ancestor of a branch
    worktree("tag", "merged", "main~1")
    worktree("push", "-q", "origin", "main", "a", "b", "c", "on-c", "merged")
    assert len(git("rev-list", "--merges", "--all").stdout.split()) == 3

    oracle = tmp_path / "oracle.git"
    shutil.copytree(store.path, oracle, symlinks=True)
    subprocess.run(
        ["git", f"--git-dir={oracle}", "filter-branch", "-f", "--index-filter",
         "git rm -q --cached --ignore-unmatch secret.md", "--", "--all"],
        check=True, capture_output=True, env={"FILTER_BRANCH_SQUELCH_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip

    def at(repo: str | Path, rev: str) -> str:
        done = subprocess.run(["git", f"--git-dir={repo}", "rev-parse", rev], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    store.forget("secret.md")

    assert at(store.path, "main^") == at(oracle, "main")  # main's tip is forget's own commit
    for rev in ("a", "b", "c", "on-c", "merged"):
        assert at(store.path, rev) == at(oracle, rev), rev
    mine = git("rev-list", "--parents", "--exclude=refs/gitmem/*", "--all", "^main").stdout.splitlines()
    mine += git("rev-list", "--parents", "main^").stdout.splitlines()
    theirs = subprocess.run(
        ["git", f"--git-dir={oracle}", "rev-list", "--parents", "main", "a", "b", "c"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert sorted(set(mine)) == sorted(theirs)  # the same commits with the same parents, forget's own aside
    assert git("fsck", "--strict", "--no-dangling").returncode == 0
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", store.path, str(clone)], check=True)
    assert at(clone, "b") == at(oracle, "b")
