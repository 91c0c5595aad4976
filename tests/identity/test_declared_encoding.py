"""A commit's ``encoding`` header cannot make gitmem's gates and its readers see two messages.

``git log`` and pygit2 (what ``gitmem log`` reads) show a commit that declares an
``encoding`` re-encoded from it; the gates (identity and the provenance rule that a
commit with ``Gitmem-*`` trailers names every path it changes) must read the message
the same way. Two holes, each crafted as a hostile remote would serve it and pulled
by the quick CLI pull and by the store's pull, and the first also pushed to
``gitmem serve``:

- a commit that declares its encoding twice (``UTF-8``, then ``UTF-7``): git reads
  the first, libgit2 the last, so a ``Gitmem-Run`` value holding ``+AAo-`` (a line
  break in UTF-7) became a ``Gitmem-Principal`` trailer only ``gitmem log`` saw;
- a commit declaring ``ISO-8859-1`` whose trailer names ``é.md`` in UTF-8 bytes:
  the rule found the name byte for byte, but ``git log`` and ``gitmem log`` both
  read ``Ã©.md``, a file the commit never touched, and not the one it changed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest
from serve.support import fsck_clean, git, has_object, hosted, write

from gitmem import Root, remotes
from gitmem.adapters.http_front import GitHttpServer
from gitmem.adapters.http_server import GitHttpApp, load_tokens
from gitmem.adapters.tokens import token_entry
from gitmem.remotepull import pull_named
from gitmem.remotes import MergeRefused

TOKEN = "tok-alice-0123456789abcdef0123456789"


def craft(work: Path, path: str, text: str, headers: str, trailers: str | bytes) -> str:
    """A commit on ``work``'s HEAD adding ``path``, with extra raw ``headers`` lines and a trailer block, made by hand."""
    write(work, path, text)
    git("add", "-A", cwd=work)
    tree = git("write-tree", cwd=work).stdout.strip()
    parent = git("rev-parse", "HEAD", cwd=work).stdout.strip()
    raw = (
        f"tree {tree}\nparent {parent}\nauthor alice <alice@example.com> 1700000000 +0000\n"
        f"committer alice <alice@example.com> 1700000000 +0000\n{headers}\nedit {path}\n\n"
    ).encode() + (trailers if isinstance(trailers, bytes) else trailers.encode("utf-8"))
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=work, input=raw, capture_output=True
    )
    assert made.returncode == 0, made.stderr
    oid = made.stdout.decode("ascii").strip()
    git("update-ref", "HEAD", oid, cwd=work)
    return oid


DOUBLED = (
    "encoding UTF-8\nencoding UTF-7\n",
    "Gitmem-Op: edit\nGitmem-Path: {path}\nGitmem-Run: r1+AAo-Gitmem-Principal: dave\n",
)
LATIN = ("encoding ISO-8859-1\n", "Gitmem-Op: edit\nGitmem-Path: {path}\n")
#: Messages pygit2 refuses to decode (it decodes a declared encoding strictly): every later ``gitmem log`` would fail.
ASCII = ("encoding ascii\n", "Gitmem-Op: edit\nGitmem-Path: {path}\nGitmem-Run: caf\u00e9\n")
BAD_UTF8 = ("encoding UTF-8\n", "Gitmem-Op: edit\nGitmem-Path: {path}\nGitmem-Run: \udcff\n")
CASES = {
    "doubled-encoding": ("notes/doubled.md", DOUBLED, "identity"),
    "latin-1-path": ("é.md", LATIN, "provenance"),
    "ascii-undecodable": ("notes/ascii.md", ASCII, "identity"),
    "utf-8-undecodable": ("notes/utf8.md", BAD_UTF8, "identity"),
}


def test_the_crafted_commits_do_read_two_ways(tmp_path: Path) -> None:
    # What the test relies on: libgit2 reads the hidden principal, git the raw line; git log re-encodes é.md.
    work = tmp_path / "w"
    git("init", "-q", "-b", "main", str(work))
    write(work, "seed.md", "seed\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "seed", cwd=work)
    path, (headers, trailers), _ = CASES["doubled-encoding"]
    oid = craft(work, path, "x\n", headers, trailers.format(path=path))
    assert "Gitmem-Principal: dave" in pygit2.Repository(str(work))[oid].peel(pygit2.Commit).message
    assert "dave" not in git("log", "-1", "--format=%(trailers:key=Gitmem-Principal)", oid, cwd=work).stdout
    path, (headers, trailers), _ = CASES["latin-1-path"]
    oid = craft(work, path, "x\n", headers, trailers.format(path=path))
    assert "Gitmem-Path: Ã©.md" in git("log", "-1", "--format=%B", oid, cwd=work).stdout


class Hosting:
    """A mount pushed to a plain bare repository (a forge that checks nothing), and a clone of that."""

    def __init__(self, tmp_path: Path) -> None:
        self.root, self.store, self.hosting = hosted(tmp_path, {"seed.md": "seed\n"}, hooks=False)
        self.work = tmp_path / "work"
        git("clone", "-q", str(self.hosting), str(self.work))


@pytest.mark.parametrize("quick", [True, False], ids=["quick-pull", "store-pull"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pull_refuses_a_commit_whose_declared_encoding_changes_what_it_says(
    tmp_path: Path, case: str, quick: bool
) -> None:
    team = Hosting(tmp_path)
    path, (headers, trailers), rule = CASES[case]
    bad = craft(team.work, path, "a note\n", headers, trailers.format(path=path).encode("utf-8", "surrogateescape"))
    git("push", "-q", "origin", "HEAD:main", cwd=team.work)
    head = team.store.sync.head()
    with pytest.raises(MergeRefused) as caught:
        if quick:
            pull_named(team.root, "user", "origin")
        else:
            remotes.pull(team.store, "origin")
    assert rule in caught.value.message, caught.value.message
    assert team.store.sync.head() == head
    assert not has_object(team.store.path, bad)
    fsck_clean(team.store.path)


def test_a_served_push_with_a_doubled_encoding_is_refused(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("notes", create=True)
    store.sync.write("seed.md", "seed\n", expected=None)
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(TOKEN, "alice", ["notes"], "write"), encoding="utf-8")
    server = GitHttpServer(GitHttpApp(root, tokens=load_tokens(tokens, env={})), "127.0.0.1", 0).start()
    try:
        work = tmp_path / "work"
        git("clone", "-q", f"http://alice:{TOKEN}@127.0.0.1:{server.port}/notes.git", str(work))
        path, (headers, trailers), _ = CASES["doubled-encoding"]
        head = store.sync.head()
        bad = craft(work, path, "a note\n", headers, trailers.format(path=path))
        done = git("push", "origin", "HEAD:main", cwd=work, check=False)
    finally:
        server.stop()
    assert done.returncode != 0 and "identity" in done.stderr, done.stderr
    assert store.sync.head() == head
    assert not has_object(store.path, bad)
    fsck_clean(store.path)


def test_the_provenance_rule_reads_a_big_commit_once_not_once_per_path() -> None:
    # A commit of 20,000 changed files and a 2 MB message: the rule scanned the message once per
    # path (14 s of CPU; 100,000 files and 10 MB: minutes, while a pull holds the writer lock).
    import time

    from gitmem.git.claims import unnamed_changes

    paths = [f"notes/n{i}.md" for i in range(20_000)]
    named = "".join(f"Gitmem-Path: {p}\n" for p in paths[1:])
    data = f"tree {'a' * 40}\n\nsummary\n\nGitmem-Op: edit\n{'x' * (2 << 20)}\n{named}".encode()
    started = time.process_time()
    assert unnamed_changes(data, paths) == paths[:1]
    assert time.process_time() - started < 2
