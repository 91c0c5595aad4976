"""A hostile remote's one big or deep commit cannot hold a pull for minutes or crash it.

The rules a pull applies read each new commit's trees and message. A ``move``
commit of 20,000 files named in 20,000 ``Path``/``From`` pairs had each path looked
up by scanning its whole tree (and the message scanned once per changed path):
20,000 squared steps, more than ten minutes of a ``gitmem pull`` holding the
mount's writer lock. A folder nested 1,500 deep (git's strict checks let it
through) made the rules' tree walks recurse past Python's limit: ``RecursionError``
instead of a refusal. Here the pull, a real ``gitmem`` process (the quick pull,
then the store's pull it hands the refusal to), answers within two minutes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from serve.support import GITMEM, fsck_clean, git, hosted

from gitmem import Root, remotes
from gitmem.remotes import MergeRefused

FILES = 20_000


def plumb(repo: Path, *args: str, given: str) -> str:
    """``git ARGS`` in ``repo`` with ``given`` on its stdin; its output's one line."""
    done = subprocess.run(["git", *args], cwd=repo, input=given, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def pull_of_a_folder_is_refused(tmp_path: Path, build: Callable[[Path], str], code: str) -> str:
    """The remote's ``main`` gains folder ``d`` (the tree ``build`` makes in the hosting repository):
    the CLI's pull and the library's refuse it with ``code``, and nothing changes. The CLI's stderr."""
    root, store, hosting = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
    head = store.sync.head()
    seed = plumb(hosting, "ls-tree", "main", given="")
    tree = plumb(hosting, "mktree", given=f"{seed}\n040000 tree {build(hosting)}\td\n")
    git("update-ref", "refs/heads/main", plumb(hosting, "commit-tree", tree, "-p", head, given="x\n"), cwd=hosting)
    done = subprocess.run(
        [*GITMEM, "--root", str(root.path), "pull", "user", "origin"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and code in done.stderr and "Traceback" not in done.stderr, done.stderr
    with pytest.raises(MergeRefused, match=code):
        remotes.pull(store, "origin")
    assert store.sync.head() == head
    fsck_clean(store.path)
    return done.stderr


def test_a_pull_of_a_move_commit_of_many_files_is_answered_in_time(tmp_path: Path) -> None:
    root, store, hosting = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
    head = store.sync.head()

    blob = plumb(hosting, "hash-object", "-w", "--stdin", given="a note\n")
    entries = "".join(f"100644 blob {blob}\tn{i:06d}.md\n" for i in range(FILES))
    folder = plumb(hosting, "mktree", given=entries)
    tree = plumb(hosting, "mktree", given=f"040000 tree {folder}\tnotes\n")
    pairs = "".join(f"Gitmem-Path: notes/n{i:06d}.md\nGitmem-From: old/o{i:06d}.md\n" for i in range(FILES))
    # seed.md goes unnamed: the pull is refused (provenance), after every rule read the whole commit.
    bad = plumb(hosting, "commit-tree", tree, "-p", head, given=f"move many\n\nGitmem-Op: move\n{pairs}")
    git("update-ref", "refs/heads/main", bad, cwd=hosting)

    done = subprocess.run(
        [*GITMEM, "--root", str(root.path), "pull", "user", "origin"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "provenance" in done.stderr, done.stderr
    assert store.sync.head() == head
    fsck_clean(store.path)


def test_a_pull_of_a_tree_nested_past_pythons_recursion_limit_is_refused_not_crashed(tmp_path: Path) -> None:
    # git's strict checks let a 1,500-deep folder through; the rules' tree walks recursed once per
    # level and the pull died with RecursionError (quick and store pull alike) instead of refusing.
    def deep(hosting: Path) -> str:
        blob = plumb(hosting, "hash-object", "-w", "--stdin", given="x")
        tree = plumb(hosting, "mktree", given=f"100644 blob {blob}\tf.md\n")
        for _ in range(1500):
            tree = plumb(hosting, "mktree", given=f"040000 tree {tree}\td\n")
        return tree

    pull_of_a_folder_is_refused(tmp_path, deep, "invalid_path")


def loose(repo: Path, kind: bytes, raw: bytes) -> str:
    """Write one loose object into ``repo`` (thousands of ``git mktree`` processes would take minutes)."""
    body = b"%s %d\x00" % (kind, len(raw)) + raw
    oid = hashlib.sha1(body).hexdigest()
    folder = repo / "objects" / oid[:2]
    folder.mkdir(exist_ok=True)
    (folder / oid[2:]).write_bytes(zlib.compress(body, 1))
    return oid


MEASURED = [  # the CLI's pull in one process (the quick path, which hands a refusal to the store's pull), its peak memory
    sys.executable,
    "-c",
    "import sys\n"
    "from gitmem.adapters.cli.quick import run\n"
    "code = run(sys.argv[1:], entry=False)\n"
    # VmHWM, not ru_maxrss: the latter keeps the peak of the process that forked this one (a test
    # process grown to hundreds of MB by the tests before it), the former is this program's own
    "hwm = [line for line in open('/proc/self/status') if line.startswith('VmHWM:')][0].split()[1]\n"
    "print('peak-kb', hwm, file=sys.stderr)\n"
    "sys.exit(code)",
]


def test_a_pull_of_a_tree_nested_thousands_deep_is_refused_without_holding_a_path_per_level(tmp_path: Path) -> None:
    # The list of a commit's changes (the rules, the merge) named each changed path with every folder
    # above it, and held the path of every level on its way down: 20,000 levels of "d/" held 800 MB
    # (quadratic in the depth) before any rule looked at the first path; 12,000 levels peaked at 330 MB.
    root, store, hosting = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
    head = store.sync.head()
    tree = loose(hosting, b"tree", b"100644 f.md\x00" + bytes.fromhex(loose(hosting, b"blob", b"x")))
    for _ in range(12_000):
        tree = loose(hosting, b"tree", b"40000 d\x00" + bytes.fromhex(tree))
    seed = plumb(hosting, "ls-tree", "main", given="")
    top = plumb(hosting, "mktree", given=f"{seed}\n040000 tree {tree}\td\n")
    git("update-ref", "refs/heads/main", plumb(hosting, "commit-tree", top, "-p", head, given="x\n"), cwd=hosting)
    done = subprocess.run(
        [*MEASURED, "--root", str(root.path), "pull", "user", "origin"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "invalid_path" in done.stderr and "Traceback" not in done.stderr, done.stderr
    peak = int(done.stderr.rsplit("peak-kb", 1)[1].split()[0])
    assert peak < 150 * 1024, f"the pull peaked at {peak // 1024} MB"
    assert store.sync.head() == head
    fsck_clean(store.path)


@pytest.mark.parametrize("planted", ["refs/gitmem/erasures", "refs/heads/proposals/x", "packed-refs"])
def test_a_fifo_planted_among_the_refs_makes_a_pull_unavailable_not_hang(tmp_path: Path, planted: str) -> None:
    # The pull's git fetch runs in a quarantine that borrows the mount's objects, and git reads
    # every ref of a repository it borrows from (blocking): a FIFO there hung gitmem pull for good.
    root, store, _ = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
    head = store.sync.head()
    fifo = Path(store.path) / planted
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    done = subprocess.run(
        [*GITMEM, "--root", str(root.path), "pull", "user", "origin"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "unavailable" in done.stderr and planted in done.stderr, done.stderr
    fifo.unlink()
    assert Root(root.path).mount("user").sync.head() == head
    fsck_clean(store.path)


def test_a_pull_of_a_commit_declaring_a_domain_name_encoding_is_refused_in_time(tmp_path: Path) -> None:
    # Python decodes punycode (and idna) in time quadratic in the text: a 400 KB message declared
    # punycode held the identity rule ~35 s per reading, the quick pull's and the store pull's. git's
    # iconv knows neither (git log shows such a message as stored), so no reading is shared anyway.
    root, store, hosting = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
    head = store.sync.head()
    tree = plumb(hosting, "rev-parse", "main^{tree}", given="")
    message = "a" * 200_000 + "-" + "b" * 200_000  # decodes: no line break at its end
    done = subprocess.run(
        ["git", "-c", "i18n.commitEncoding=punycode", "commit-tree", tree, "-p", head],
        cwd=hosting, input=message, capture_output=True, text=True, check=True,
    )  # fmt: skip
    git("update-ref", "refs/heads/main", done.stdout.strip(), cwd=hosting)
    assert "encoding punycode" in git("cat-file", "commit", "main", cwd=hosting).stdout
    began = time.monotonic()
    done = subprocess.run(
        [*GITMEM, "--root", str(root.path), "pull", "user", "origin"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "identity" in done.stderr and "punycode" in done.stderr, done.stderr
    assert time.monotonic() - began < 15
    assert store.sync.head() == head
    fsck_clean(store.path)


def test_a_pull_of_a_tree_reaching_one_folder_at_millions_of_paths_is_refused_in_time(tmp_path: Path) -> None:
    # Each of 24 levels names the folder below twice: 50 objects, 2 ** 25 files. The rules and the
    # merge's list of changes read a commit path by path: the pull (its writer lock held) ran for hours.
    def bomb(hosting: Path) -> str:
        blob = plumb(hosting, "hash-object", "-w", "--stdin", given="x\n")
        tree = plumb(hosting, "mktree", given=f"100644 blob {blob}\ta.md\n100644 blob {blob}\tb.md\n")
        for _ in range(24):
            tree = plumb(hosting, "mktree", given=f"040000 tree {tree}\ta\n040000 tree {tree}\tb\n")
        return tree

    assert "1000000 files" in pull_of_a_folder_is_refused(tmp_path, bomb, "memory_full")


def test_a_pull_of_a_tree_reaching_one_empty_folder_at_millions_of_paths_is_refused_in_time(tmp_path: Path) -> None:
    # The same bomb without a file: 2 ** 25 folder paths and no file at all. Counting files alone
    # found none to refuse, and the list of changes then walked every folder path (hours, locked).
    def bomb(hosting: Path) -> str:
        tree = plumb(hosting, "mktree", given="")
        for _ in range(25):
            tree = plumb(hosting, "mktree", given=f"040000 tree {tree}\ta\n040000 tree {tree}\tb\n")
        return tree

    pull_of_a_folder_is_refused(tmp_path, bomb, "memory_full")
