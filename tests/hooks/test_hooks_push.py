"""gitmem's hooks installed into a mount: the same bad pushes are refused over a file path."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from serve import crafted
from serve.support import (
    BAD_PUSHES,
    MALFORMED_KINDS,
    BadPush,
    check_refused,
    commit_all,
    fsck_clean,
    git,
    has_object,
    malformed_commit,
    seed,
    write,
)

from gitmem import GitFileStore, MemoryStoreError, hooks
from gitmem.hooks import HOOK_NAMES, hook_script, install_hooks, post_receive_main, pre_receive_main
from gitmem.index.source import INLINE_DOCS
from gitmem.model import Changes

HANG_SECONDS = 120.0
REPO_HOOKS = Path(__file__).resolve().parents[2] / "hooks"


@pytest.fixture
def mount(tmp_path: Path) -> GitFileStore:
    store = GitFileStore.init(tmp_path / "user.git")
    install_hooks(store.path)
    return store


def clone(mount: GitFileStore, tmp_path: Path) -> Path:
    git("clone", "-q", mount.path, str(tmp_path / "work"))
    return tmp_path / "work"


def test_a_valid_push_over_a_file_path_lands(mount: GitFileStore, tmp_path: Path) -> None:
    before = seed(mount)
    work = clone(mount, tmp_path)
    write(work, "notes/today.md", "a person's note\n")
    pushed = commit_all(work, "note")
    git("push", "-q", "origin", "main", cwd=work)
    assert mount.sync.head() == pushed
    assert mount.sync.changes(before) == Changes(pushed, ("notes/today.md",))
    fsck_clean(mount.path)


@pytest.mark.parametrize("bad", BAD_PUSHES, ids=[b.id for b in BAD_PUSHES])
def test_the_hooks_refuse_the_same_bad_pushes(mount: GitFileStore, tmp_path: Path, bad: BadPush) -> None:
    head = seed(mount)
    work = clone(mount, tmp_path)
    refspec = bad.make(work)
    pushed = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    done = git("push", *bad.flags, str(Path(mount.path)), refspec, cwd=work, check=False)
    check_refused(bad, done, Path(mount.path), head, pushed)
    assert "pre-receive hook declined" in done.stderr
    assert "remote: gitmem:   refs/heads/main: " in done.stderr


def test_installing_keeps_a_foreign_hook_unless_forced(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git")
    own = Path(store.path) / "hooks" / "pre-receive"
    own.parent.mkdir(exist_ok=True)
    own.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(MemoryStoreError) as caught:
        install_hooks(store.path)
    assert caught.value.code == "already_exists"
    assert own.read_text() == "#!/bin/sh\nexit 0\n"
    written = install_hooks(store.path, force=True)
    assert [p.name for p in written] == list(HOOK_NAMES)
    for path in written:
        assert os.access(path, os.X_OK)
        assert path.read_text() == hook_script(path.name, sys.executable)
    install_hooks(store.path)  # re-installing gitmem's own hooks needs no force
    with pytest.raises(MemoryStoreError) as missing:
        install_hooks(tmp_path / "nothing.git")
    assert missing.value.code == "not_found"


def test_the_repository_hooks_folder_holds_the_installed_scripts() -> None:
    for name in HOOK_NAMES:
        path = REPO_HOOKS / name
        assert path.read_text() == hook_script(name), f"hooks/{name} is out of date with gitmem.hooks"
        assert os.access(path, os.X_OK)


def test_the_hook_functions_read_git_input(mount: GitFileStore, tmp_path: Path) -> None:
    head = seed(mount)
    env = {"GIT_DIR": mount.path}
    err = io.StringIO()
    line = f"{head} {'0' * 40} refs/heads/main\n"
    assert pre_receive_main(io.StringIO(line), err, env) == 1
    assert "refs/heads/main: delete_main: " in err.getvalue()
    assert pre_receive_main(io.StringIO(""), io.StringIO(), env) == 0
    assert post_receive_main(io.StringIO(f"{'0' * 40} {head} refs/heads/other\n"), env) == 0
    broken = io.StringIO()
    assert pre_receive_main(io.StringIO(line), broken, {"GIT_DIR": str(tmp_path / "gone.git")}) == 1
    assert "cannot check this push" in broken.getvalue()


def test_refusals_the_hook_relays_show_escape_sequences_as_text(mount: GitFileStore, tmp_path: Path) -> None:
    seed(mount)
    work = clone(mount, tmp_path)
    write(work, "notes/\x1b[2J\x1b]0;owned\x07.md", "hostile name\n")
    commit_all(work, "a hostile file name")
    done = git("push", str(Path(mount.path)), "main", cwd=work, check=False)
    assert "pre-receive hook declined" in done.stderr
    assert any(line.startswith("remote:") and "\\x1b[2J" in line for line in done.stderr.splitlines()), done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    # The hook function itself, fed a ref name git would never send: what it prints is escaped
    # whatever git does with it (the refusal quotes the ref).
    err = io.StringIO()
    line = f"{'0' * 40} {mount.sync.head()} refs/\x1b[2J\x1b]0;owned\x07x\n"
    assert pre_receive_main(io.StringIO(line), err, {"GIT_DIR": mount.path}) == 1
    assert "\\x1b[2J" in err.getvalue() and "\x1b" not in err.getvalue() and "\x07" not in err.getvalue()


def test_post_receive_refreshes_the_index_only_when_main_moved(
    mount: GitFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = seed(mount)
    calls: list[str] = []
    monkeypatch.setattr(hooks, "catch_up", calls.append)
    env = {"GIT_DIR": mount.path}
    assert post_receive_main(io.StringIO(f"{'0' * 40} {head} refs/heads/other\n"), env, background=False) == 0
    assert calls == []
    assert post_receive_main(io.StringIO(f"{'0' * 40} {head} refs/heads/main\n"), env, background=False) == 0
    assert calls == [os.path.abspath(mount.path)]

    def broken(path: str) -> None:
        raise RuntimeError("index is corrupt")

    monkeypatch.setattr(hooks, "catch_up", broken)
    main_moved = io.StringIO(f"{'0' * 40} {head} refs/heads/main\n")
    assert post_receive_main(main_moved, env, background=False) == 0  # never fails a push


def test_after_a_push_the_installed_hook_brings_the_real_index_up_to_date(mount: GitFileStore, tmp_path: Path) -> None:
    seed(mount)
    work = clone(mount, tmp_path)
    write(work, "notes/indexed.md", "findable words\n")
    pushed = commit_all(work, "note")
    git("push", "-q", "origin", "main", cwd=work)  # returns before the index work is done
    deadline = time.monotonic() + HANG_SECONDS  # a liveness guard, not a speed bound
    status = mount.sync.index_status()
    while not (status.state == "current" and status.commit == pushed) and time.monotonic() < deadline:
        time.sleep(0.1)
        status = mount.sync.index_status()
    assert (status.state, status.commit) == ("current", pushed)


def wait_for_index(mount: GitFileStore, commit: str) -> None:
    deadline = time.monotonic() + HANG_SECONDS  # a liveness guard, not a speed bound
    status = mount.sync.index_status()
    while not (status.state == "current" and status.commit == commit) and time.monotonic() < deadline:
        time.sleep(0.1)
        status = mount.sync.index_status()
    log = Path(mount.path) / "gitmem" / "hooks.log"
    said = log.read_text() if log.exists() else "(no hooks.log)"
    assert (status.state, status.commit) == ("current", commit), said


def test_every_push_refreshes_the_index_once_it_exists(mount: GitFileStore, tmp_path: Path) -> None:
    # The mount's own gitmem/ folder (index, lock) must never stand in for the gitmem package.
    seed(mount)
    assert mount.sync.search("hello") is not None  # builds the index: <mount>/gitmem/index exists now
    assert (Path(mount.path) / "gitmem" / "index").is_dir()
    work = clone(mount, tmp_path)
    for i in range(2):
        write(work, f"notes/n{i}.md", f"pushed words number {i}\n")
        pushed = commit_all(work, f"note {i}")
        git("push", "-q", "origin", "main", cwd=work)
        wait_for_index(mount, pushed)


def test_a_failed_index_refresh_is_logged_where_an_admin_looks(mount: GitFileStore, tmp_path: Path) -> None:
    seed(mount)
    log = Path(mount.path) / "gitmem" / "hooks.log"
    pid = hooks.refresh_index_detached(str(tmp_path / "no-such-mount.git"), log_file=str(log))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1
    text = log.read_text()
    assert "no-such-mount.git" in text and "failed" in text, text


def test_the_detached_refresh_does_a_long_catch_up_itself(tmp_path: Path) -> None:
    # More files than a request indexes inline: the detached refresh (already off the push's path)
    # must index them itself, where its failures reach hooks.log, not hand them to yet another process.
    store = GitFileStore.init(tmp_path / "plain.git")  # no hooks: only the refresh below touches the index
    seed(store)
    assert store.sync.search("hello") is not None  # the index exists, at the seed
    work = clone(store, tmp_path)
    for i in range(INLINE_DOCS + 20):
        write(work, f"notes/n{i}.md", f"pushed words number {i}\n")
    pushed = commit_all(work, "many notes")
    git("push", "-q", "origin", "main", cwd=work)
    pid = hooks.refresh_index_detached(store.path)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    state = store.sync.index_status()  # as the refresh left it: nothing else indexes this mount
    assert (state.state, state.commit) == ("current", pushed), state


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_objects_git_refuses_are_refused_by_the_hook(mount: GitFileStore, tmp_path: Path, kind: str) -> None:
    head = seed(mount)
    work = clone(mount, tmp_path)
    pushed = malformed_commit(work, kind)
    done = git("push", str(Path(mount.path)), "main", cwd=work, check=False)
    assert done.returncode != 0 and "pre-receive hook declined" in done.stderr, done.stderr
    assert "invalid_object" in done.stderr, done.stderr
    assert mount.sync.head() == head
    assert not has_object(mount.path, pushed)
    fsck_clean(mount.path)


def test_objects_no_pushed_ref_reaches_are_refused_by_the_hook(mount: GitFileStore, tmp_path: Path) -> None:
    # git's receive-pack moves its whole quarantine in once the hooks accept; a crafted pack
    # can carry objects no ref reaches, which would then stay readable unchecked.
    head = seed(mount)
    seed_blob = git("rev-parse", f"{head}:seed.md", cwd=mount.path).stdout.strip()
    new = b"a fine new note\n"
    raw_tree = crafted.tree((b"100644", b"new.md", crafted.oid("blob", new)), (b"100644", b"seed.md", seed_blob))
    raw_commit = crafted.commit(crafted.oid("tree", raw_tree), [head])
    secret = b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    objects = [("blob", new), ("tree", raw_tree), ("commit", raw_commit)]
    pushed = crafted.oid("commit", raw_commit)

    def receive(with_secret: bool) -> crafted.Report:
        data = crafted.pack([*objects, ("blob", secret)] if with_secret else objects)
        body = crafted.request_body([(head, pushed, "refs/heads/main")], data)
        done = subprocess.run(
            ["git", "receive-pack", "--stateless-rpc", mount.path], input=body, capture_output=True, timeout=60
        )
        return crafted.parse_report(done.returncode, done.stdout)

    report = receive(with_secret=True)
    assert report.status("refs/heads/main") == ["pre-receive hook declined"], report
    assert "none of its refs reaches" in report.messages
    assert mount.sync.head() == head
    assert not has_object(mount.path, crafted.oid("blob", secret)) and not has_object(mount.path, pushed)
    fsck_clean(mount.path)
    # The same push without the stowaway lands.
    assert receive(with_secret=False).status("refs/heads/main") == ["ok"]
    assert mount.sync.head() == pushed
