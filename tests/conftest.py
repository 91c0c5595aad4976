from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from bench.gitenv import dev_null_is_device, isolated_git_env

# Tests drive the real git CLI; give it an identity and keep the user's and the machine's
# config out: global and system config are a fresh empty file in a temporary HOME (never
# /dev/null, which a `git config --global` would replace with a regular file).
os.environ.setdefault("GIT_AUTHOR_NAME", "tester")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tester@example.com")
os.environ.setdefault("GIT_COMMITTER_NAME", "tester")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tester@example.com")
os.environ.update(isolated_git_env())

# Hypothesis profiles, chosen with HYPOTHESIS_PROFILE: "ci" (the default) is derandomised
# and small so every run checks the same examples quickly; "dev" explores more, randomly;
# "deep" is a long hunt before a release. No deadlines: timing on a shared machine says
# nothing about correctness.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=40,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _scratch_in_memory() -> None:
    """Every test's folders (and its child processes' temporary files) on tmpfs, unless TMPDIR says where.

    gitmem syncs what it writes, and the tests make and delete many small files. On
    a disk that other jobs keep busy, each sync and deletion waits in their queue:
    here (ext4 with online discard, shared) a file and its folder took 2.5-13 ms to
    sync against 0.02 ms on tmpfs, and 347 tests of history, records, erasure and
    review took 124-154 s on disk against 55-72 s on tmpfs in the same minutes (on
    a calm disk, 37-60 s either way: within noise). No test asserts what a disk
    keeps after a power cut (a killed process leaves the page cache as it was);
    the tests that check *which* fsyncs happen see them on tmpfs too. A run with
    ``TMPDIR`` set keeps its scratch there (``TMPDIR=/mnt/ext4 pytest`` runs the
    suite on a journaling file system); without a roomy ``/dev/shm`` (a
    container's is often 64 MB) nothing changes.
    """
    if os.environ.get("TMPDIR"):
        return
    try:
        room = os.statvfs("/dev/shm")
        folder = f"/dev/shm/gitmem-tests-{os.getuid()}"
        if room.f_bavail * room.f_frsize < 2 << 30:  # 605 of the tests left 62 MB: the suite, ~0.5 GB
            return
        os.makedirs(folder, mode=0o711, exist_ok=True)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o066:
            return  # not a folder of ours that only we list and write: leave the default
        # others may pass through to a test's own folder, as through /tmp (root's tests that act as `nobody`)
        os.chmod(folder, 0o711)
    except OSError:
        return
    os.environ["TMPDIR"] = folder  # child processes (gitmem serve's session books, git) follow
    tempfile.tempdir = folder  # pytest's tmp_path and tempfile in this process


_scratch_in_memory()

# gitmem's own settings must come from each test, never from the machine running it.
for _name in [n for n in os.environ if n.startswith("GITMEM_")] + ["XDG_DATA_HOME"]:
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _no_default_root(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test that forgets --root writes under a temporary home, not the real one."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg")))


@pytest.fixture(autouse=True)
def _libgit2_fsync_as_a_new_process_has_it() -> Iterator[None]:
    """Each test starts with libgit2's fsync switch off, as a new process does.

    The switch is process-wide and gitmem turns it on (and never off) once a process
    opens a durable mount; left on, every later test's pygit2 write would wait for the
    disk (7-11 ms a loose object here, against 0.3), and which tests paid depended on
    which ran first. A test that opens a durable mount turns it on again itself;
    what libgit2 fsyncs is checked in child processes (``tests/races/test_durable_mount.py``).
    """
    yield
    gitrepo = sys.modules.get("gitmem.git.repo")
    if gitrepo is not None and gitrepo._libgit2_fsync[0]:
        import pygit2

        pygit2.settings.enable_fsync_gitdir(False)
        gitrepo._libgit2_fsync[0] = False


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run loudly if something in it replaced the machine's /dev/null."""
    if not dev_null_is_device():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        raise pytest.UsageError(
            f"{os.devnull} is no longer a character device: a command in this run replaced it "
            "(a git config write pointed at it?); every later git call on this machine will fail"
        )
