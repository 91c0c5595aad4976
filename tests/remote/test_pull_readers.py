"""One rule code, two object readers: libgit2's and the peek's give the same verdict on every hostile commit.

A CLI fast-forward pull checks the new commits without libgit2
(:class:`gitmem.git.peekreader.PeekReader` over :mod:`gitmem.git.peek`); every other
check reads through libgit2. The rules are the same code; these tests hold that the
two readers feed it the same values, so the verdicts are the same, refusal for refusal.
And a real ``gitmem pull`` process against a plain git repository: a fast-forward
answered without loading pygit2, a hostile one refused exactly as the full path refuses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from serve.support import BAD_PUSHES, BadPush, commit_all, fsck_clean, git, has_object, malformed_commit, seed, write

from gitmem import Root
from gitmem.fileformat import FileFormat
from gitmem.git.packs import pack_ids
from gitmem.git.peek import Peek
from gitmem.git.peekreader import PeekReader
from gitmem.git.pushcheck import RefUpdate, check_updates

MAIN = "refs/heads/main"
#: Cases that are not a fast-forward of main: the peek reader leaves them to libgit2.
NOT_FORWARD = ("non-fast-forward", "delete-main")
FMT = FileFormat(max_file_bytes=64_000)


def _executable(work: Path) -> str:
    write(work, "run.md", "echo hi\n")
    os.chmod(work / "run.md", 0o755)
    commit_all(work, "an executable")
    return "main"


def _merge_of_two(work: Path) -> str:
    """Two new lines of history, one with a binary file, merged: the walk meets a merge of new commits."""
    git("checkout", "-q", "-b", "side", cwd=work)
    write(work, "side.md", b"\x00binary\n")
    commit_all(work, "side")
    git("checkout", "-q", "main", cwd=work)
    write(work, "main.md", "plain\n")
    commit_all(work, "main line")
    git("merge", "-q", "--no-edit", "side", cwd=work)
    return "main"


EXTRA = [
    BadPush("executable", "file_mode", "run.md", _executable),
    BadPush("merge-of-new-lines", "invalid_file", "side.md", _merge_of_two),
]
CASES = [case for case in [*BAD_PUSHES, *EXTRA] if case.id not in NOT_FORWARD]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_both_readers_give_the_same_verdict(tmp_path: Path, case: BadPush) -> None:
    store = Root(tmp_path / "root").mount("m", create=True, hooks=False)
    head = seed(store)
    mount = Path(store.sync.repo.path)
    work = tmp_path / "work"
    git("clone", "-q", str(mount), str(work))
    new = git("rev-parse", case.make(work), cwd=work).stdout.strip()
    objects = str(work / ".git" / "objects")
    update = [RefUpdate(MAIN, head, new)]

    by_libgit2 = check_updates(str(mount), update, FMT, object_dirs=[objects])[MAIN]
    reader = PeekReader(Peek(str(mount), extra_objects=[objects]), head)
    by_peek = check_updates(str(mount), update, FMT, object_dirs=[objects], reader=reader)[MAIN]

    assert by_libgit2, f"{case.id}: libgit2's reader let it through"
    assert case.rule in {r.rule for r in by_libgit2}
    assert by_peek == by_libgit2


def test_both_readers_pass_a_clean_history(tmp_path: Path) -> None:
    store = Root(tmp_path / "root").mount("m", create=True, hooks=False)
    head = seed(store)
    mount = Path(store.sync.repo.path)
    work = tmp_path / "work"
    git("clone", "-q", str(mount), str(work))
    for i in range(5):
        write(work, f"notes/n{i}.md", f"note {i}\n")
        commit_all(work, f"note {i}")
    new = git("rev-parse", "main", cwd=work).stdout.strip()
    objects = str(work / ".git" / "objects")
    update = [RefUpdate(MAIN, head, new)]
    seen_libgit2: dict[str, set[bytes]] = {}
    seen_peek: dict[str, set[bytes]] = {}
    reader = PeekReader(Peek(str(mount), extra_objects=[objects]), head)
    assert check_updates(str(mount), update, FMT, object_dirs=[objects], reached=seen_libgit2)[MAIN] == []
    assert check_updates(str(mount), update, FMT, object_dirs=[objects], reached=seen_peek, reader=reader)[MAIN] == []
    assert seen_peek == seen_libgit2  # what decides whether the fetched pack moves in as it is


# --- real processes against a plain git repository --------------------------------------------


def _gitmem(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from gitmem.adapters.cli import main; sys.argv[0] = 'gitmem'; main()"
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "--root", str(root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.fixture
def forge(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A plain bare repository holding a memory, a gitmem root that cloned it, a person's git clone."""
    hosting = tmp_path / "forge.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    first = Root(tmp_path / "first").mount("team", create=True, hooks=False)
    seed(first)
    git("push", "-q", str(hosting), "main", cwd=first.sync.repo.path)
    root = tmp_path / "root"
    done = _gitmem(root, "clone", str(hosting), "team")
    assert done.returncode == 0, done.stderr
    work = tmp_path / "work"
    git("clone", "-q", str(hosting), str(work))
    return hosting, root, work


def _objects(mount: Path) -> tuple[set[str], set[str]]:
    """The mount's loose objects and pack indexes."""
    objects = mount / "objects"
    loose = {f"{d.name}{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}
    return loose, {p.name for p in (objects / "pack").glob("*.idx")}


def _stripped(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


def test_a_fast_forward_pull_loads_no_libgit2(forge: tuple[Path, Path, Path]) -> None:
    _hosting, root, work = forge
    write(work, "notes/new.md", "from the forge\n")
    pushed = commit_all(work, "a person's note")
    git("push", "-q", "origin", "main", cwd=work)
    mount = root / "team.git"
    before = _objects(mount)
    done = _gitmem(root, "pull", "team")
    assert done.returncode == 0, done.stderr
    assert "fast-forward" in done.stdout and "notes/new.md" in done.stdout
    assert "pygit2" not in done.stderr  # -X importtime lists every module loaded
    after = _objects(mount)
    assert after[0] == before[0]  # nothing loose: what was fetched came in as one pack
    (added,) = after[1] - before[1]  # the fetched pack, moved in as it is once checked
    assert bytes.fromhex(pushed) in pack_ids(str(mount / "objects" / "pack" / added))
    assert git("rev-parse", "main", cwd=mount).stdout.strip() == pushed
    fsck_clean(mount)
    again = _gitmem(root, "pull", "team")
    assert again.returncode == 0 and "up to date" in again.stdout
    assert "pygit2" not in again.stderr


@pytest.mark.parametrize(
    "case", [c for c in BAD_PUSHES if c.id in ("binary", "symlink", "private-key")], ids=lambda case: case.id
)
def test_a_hostile_pull_is_refused_as_the_full_path_refuses_it(forge: tuple[Path, Path, Path], case: BadPush) -> None:
    _hosting, root, work = forge
    mount = root / "team.git"
    before = git("rev-parse", "main", cwd=mount).stdout.strip()
    case.make(work)
    git("push", "-q", "origin", "main", cwd=work)
    quick = _gitmem(root, "pull", "team")
    full = _gitmem(root, "pull", "team", env={"GITMEM_FULL_PULL": "1"})
    assert quick.returncode == full.returncode == 1
    assert (quick.stdout, _stripped(quick.stderr)) == (full.stdout, _stripped(full.stderr))
    assert case.rule in quick.stderr
    assert git("rev-parse", "main", cwd=mount).stdout.strip() == before
    fsck_clean(mount)


def test_a_users_fetch_fsck_settings_do_not_weaken_a_quick_pull(forge: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _hosting, root, work = forge
    mount = root / "team.git"
    before = git("rev-parse", "main", cwd=mount).stdout.strip()
    bad = malformed_commit(work, "zero-padded-mode")
    git("push", "-q", "-f", "origin", "main", cwd=work)
    user = tmp_path / "user.gitconfig"
    user.write_text('[fetch "fsck"]\n\tzeroPaddedFilemode = ignore\n')
    done = _gitmem(root, "pull", "team", env={"GIT_CONFIG_GLOBAL": str(user)})
    assert done.returncode == 1 and "git's object checks refuse" in done.stderr, _stripped(done.stderr)
    assert git("rev-parse", "main", cwd=mount).stdout.strip() == before
    assert not has_object(mount, bad)
    fsck_clean(mount)
