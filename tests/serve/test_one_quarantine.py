"""Every way objects enter a mount goes through one quarantine: what is refused never lands.

A mount forgets a file (its text is erased), and then each way in tries to bring
that text back beside a note only the attempt carries: a push to ``main`` over
``gitmem serve``, a push there to ``refs/for/main`` (merged by the server), a push
to the erasure ledger with the text in a file beside ``entries.jsonl`` (over
``gitmem serve`` and over a file path with the hooks installed), a push to another
ref gitmem owns, ``import --history`` of a source where a good commit is followed
by a refused one (a link, a ``.git`` folder, the erased text), and a pull of a
refused commit. A pull that is accepted while its remote's ledger carries the text
beside its entries is one more: it lands, and the ledger's extra file stays out.

After each: none of the objects only the refused part carried are in the mount's
object store (``git cat-file -e``), ``main`` and its tree are what they were (or,
for the import, the last good commit), no quarantine folder is left, ``git fsck
--strict`` is clean and ``fsck --erasures`` finds nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gitmem import exchange, remotes
from gitmem.git.erasures import LEDGER_REF
from gitmem.git.quarantine import PREFIX
from gitmem.hooks import install_hooks
from gitmem.model import Origin
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME
from gitmem.remotes import MergeRefused

from .support import Mount, Served, commit_all, fsck_clean, git, has_object, write

SECRET = "Dana's home address is 4 Elm Road\n"
GITMEM_ID = {
    "GIT_AUTHOR_NAME": COMMITTER_NAME,
    "GIT_AUTHOR_EMAIL": COMMITTER_EMAIL,
    "GIT_COMMITTER_NAME": COMMITTER_NAME,
    "GIT_COMMITTER_EMAIL": COMMITTER_EMAIL,
}


@dataclass
class Attempt:
    """What one way in tried: the objects only its refused part carried, and where ``main`` must be."""

    carried: list[str]
    head: str
    landed: list[str] = field(default_factory=list)


def _hash(cwd: Path | str, data: bytes, kind: str = "blob") -> str:
    done = subprocess.run(
        ["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"],
        cwd=cwd, input=data, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.decode().strip()


def _tree(cwd: Path | str, *entries: tuple[str, str, str]) -> str:
    raw = b"".join(
        f"{mode} {name}".encode() + b"\0" + bytes.fromhex(oid)
        for mode, name, oid in sorted(entries, key=lambda e: e[1])
    )
    return _hash(cwd, raw, "tree")


def _unique() -> str:
    """The text of a note no one else has: only the attempt that carries it can bring its blob."""
    return f"a note only this attempt carries {secrets.token_hex(8)}\n"


def _refused_commit(work: Path) -> tuple[str, list[str]]:
    """A commit on ``work``'s main that brings the erased text back beside a unique note; its new objects."""
    text = _unique()
    write(work, "people/dana.md", SECRET)
    write(work, "notes/unique.md", text)
    pushed = commit_all(work, "bring it back")
    note = git("rev-parse", f"{pushed}:notes/unique.md", cwd=work).stdout.strip()
    tree = git("rev-parse", f"{pushed}^{{tree}}", cwd=work).stdout.strip()
    return pushed, [pushed, tree, note]


def _ledger_with_a_passenger(repo: Path | str) -> tuple[str, list[str]]:
    """A ledger commit on ``repo``'s ledger: gitmem's entries plus one, and the erased text in a second file."""
    parent = git("rev-parse", LEDGER_REF, cwd=repo).stdout.strip()
    lines = git("show", f"{LEDGER_REF}:entries.jsonl", cwd=repo).stdout
    entry = {"at": "2026-01-01T00:00:00Z", "blobs": [], "by": "mallory", "id": secrets.token_hex(8),
             "kind": "forget", "names": [], "tips": []}  # fmt: skip
    entries = _hash(repo, (lines + json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode())
    note = _hash(repo, _unique().encode())
    secret = _hash(repo, SECRET.encode())
    tree = _tree(repo, ("100644", "entries.jsonl", entries), ("100644", "dana.md", secret), ("100644", "note.md", note))
    message = f"erasure {entry['id']} (forget)\n"
    done = subprocess.run(
        ["git", "commit-tree", tree, "-p", parent], cwd=repo, input=message, text=True,
        capture_output=True, check=True, env={**os.environ, **GITMEM_ID}, timeout=60,
    )  # fmt: skip
    made = done.stdout.strip()
    return made, [made, tree, note, entries]


# --- the ways in ---------------------------------------------------------------------------


def _clone(served: Served, mount: Mount, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    git("clone", "-q", served.url(mount.name), str(work))
    return work


def push_main(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    head = mount.store.sync.head()
    work = _clone(served, mount, tmp_path)
    _, carried = _refused_commit(work)
    done = git("push", "origin", "HEAD:main", cwd=work, check=False)
    assert done.returncode != 0 and "erased" in done.stderr, done.stderr
    return Attempt(carried, head)


def push_queue(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    work = _clone(served, mount, tmp_path)
    mount.store.sync.write("agent.md", "an agent wrote meanwhile\n", expected=None)  # so the server must merge
    _, carried = _refused_commit(work)
    done = git("push", "origin", "HEAD:refs/for/main", cwd=work, check=False)
    assert done.returncode != 0 and "erased" in done.stderr, done.stderr
    return Attempt(carried, mount.store.sync.head())


def push_ledger(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    head = mount.store.sync.head()
    work = _clone(served, mount, tmp_path)
    git("fetch", "-q", "origin", f"{LEDGER_REF}:{LEDGER_REF}", cwd=work)
    made, carried = _ledger_with_a_passenger(work)
    done = git("push", "origin", f"{made}:{LEDGER_REF}", cwd=work, check=False)
    assert done.returncode != 0 and "erasure_ledger" in done.stderr, done.stderr
    return Attempt(carried, head)


def push_ledger_over_hooks(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    head = mount.store.sync.head()
    install_hooks(mount.store.path)
    work = tmp_path / "work"
    git("clone", "-q", str(mount.path), str(work))
    git("fetch", "-q", "origin", f"{LEDGER_REF}:{LEDGER_REF}", cwd=work)
    made, carried = _ledger_with_a_passenger(work)
    done = git("push", "origin", f"{made}:{LEDGER_REF}", cwd=work, check=False)
    assert done.returncode != 0 and "erasure_ledger" in done.stderr, done.stderr
    return Attempt(carried, head)


def push_owned_ref(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    head = mount.store.sync.head()
    work = _clone(served, mount, tmp_path)
    _, carried = _refused_commit(work)
    done = git("push", "origin", "HEAD:refs/gitmem/reviews", cwd=work, check=False)
    assert done.returncode != 0 and "ref_name" in done.stderr, done.stderr
    return Attempt(carried, head)


def import_history(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    source = tmp_path / "source"
    git("clone", "-q", str(mount.path), str(source))
    write(source, "notes/good.md", "a good note\n")
    good = commit_all(source, "a good note")
    # The refused commit: a link, a ".git" folder and the erased text, which plain git never commits itself.
    note = _hash(source, _unique().encode())
    link = _hash(source, b"../../../etc/passwd")
    config = _hash(source, b"[core]\n\thooksPath = /tmp\n")
    dotgit = _tree(source, ("100644", "config", config))
    people = _tree(source, ("100644", "dana.md", _hash(source, SECRET.encode())))
    base = git("rev-parse", "HEAD^{tree}", cwd=source).stdout.strip()
    listed = [line.split(None, 3) for line in git("ls-tree", base, cwd=source).stdout.splitlines()]
    kept = [(mode, name, oid) for mode, _, oid, name in listed if name != "people"]
    tree = _tree(source, *kept, ("040000", ".git", dotgit), ("120000", "link.md", link),
                 ("100644", "unique.md", note), ("040000", "people", people))  # fmt: skip
    bad = git("commit-tree", tree, "-p", good, "-m", "bring it back", cwd=source).stdout.strip()
    git("update-ref", "refs/heads/main", bad, cwd=source)
    report = exchange.import_history(mount.store.sync, str(source), rev="main")
    assert report.head == good and {r.rule for r in report.refused} >= {"erased", "file_mode", "invalid_path"}
    return Attempt([bad, tree, dotgit, config, link, note], good, landed=[good])


def pull_refused(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    head = mount.store.sync.head()
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(mount.store, "origin", str(hosting))
    remotes.push(mount.store, "origin")
    work = tmp_path / "work"
    git("clone", "-q", str(hosting), str(work))
    _, carried = _refused_commit(work)
    git("push", "-q", "origin", "main", cwd=work)
    with pytest.raises(MergeRefused) as caught:
        remotes.pull(mount.store, "origin")
    assert caught.value.code == "forbidden" and "erased" in caught.value.message
    return Attempt(carried, head)


def pull_with_a_crafted_ledger(served: Served, mount: Mount, tmp_path: Path) -> Attempt:
    """Accepted: the remote's main lands, its ledger's entries are adopted, its ledger's extra file stays out."""
    hosting = tmp_path / "hosting.git"
    git("init", "-q", "--bare", "-b", "main", str(hosting))
    remotes.add(mount.store, "origin", str(hosting))
    remotes.push(mount.store, "origin")  # main and the ledger
    made, carried = _ledger_with_a_passenger(hosting)
    git("update-ref", LEDGER_REF, made, cwd=hosting)  # a plain hosting repository checks nothing
    work = tmp_path / "work"
    git("clone", "-q", str(hosting), str(work))
    write(work, "notes/merged.md", "merged there\n")
    good = commit_all(work, "merged through a pull request")
    git("push", "-q", "origin", "main", cwd=work)
    result = remotes.pull(mount.store, "origin")
    assert result.after == good
    entries = carried[-1]
    # The adopted entry is in the mount's own ledger, written by gitmem (so its blob is the crafted one's
    # text); the crafted commit, its tree and the passenger are not.
    return Attempt([c for c in carried if c != entries], good, landed=[good])


WAYS_IN: list[Callable[[Served, Mount, Path], Attempt]] = [
    push_main,
    push_queue,
    push_ledger,
    push_ledger_over_hooks,
    push_owned_ref,
    import_history,
    pull_refused,
    pull_with_a_crafted_ledger,
]


@pytest.mark.parametrize("way_in", WAYS_IN, ids=[w.__name__ for w in WAYS_IN])
def test_nothing_refused_enters_the_mount_by_any_way_in(
    served: Served, mount: Mount, tmp_path: Path, way_in: Callable[[Served, Mount, Path], Attempt]
) -> None:
    sync = mount.store.sync
    sync.write("keep.md", "keep\n", expected=None)
    erased = sync.write("people/dana.md", SECRET, expected=None)
    sync.forget("people/dana.md", origin=Origin(principal_id="admin"))
    assert not has_object(mount.path, erased)

    attempt = way_in(served, mount, tmp_path)

    assert sync.head() == attempt.head
    tree = git("rev-parse", f"{attempt.head}^{{tree}}", cwd=mount.path).stdout.strip()
    assert git("rev-parse", "main^{tree}", cwd=mount.path).stdout.strip() == tree
    for oid in [erased, *attempt.carried]:
        assert not has_object(mount.path, oid), f"{oid} entered the mount"
    for oid in attempt.landed:
        assert has_object(mount.path, oid)
    assert not [n for n in os.listdir(mount.path / "gitmem") if n.startswith((PREFIX, "scratch-"))]
    assert not [n for n in os.listdir(mount.path / "objects") if n.startswith("tmp_objdir")]
    fsck_clean(mount.path)
    audit = sync.check_erasures()
    assert audit.ok, audit.holders


# --- the next way in --------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[2] / "gitmem"
MOVERS = {"install_pack", "index_pack", "only_needed", "pack_reachable"}
"""What puts objects into an object folder: only the quarantine may call them."""
TRANSFERS = {"fetch", "clone", "index-pack", "unpack-objects", "receive-pack"}
"""git commands that bring objects in: a module running one must hold a quarantine for it."""


def test_no_module_brings_objects_in_beside_the_quarantine() -> None:
    """Read with ``ast``: a new way in that skips the quarantine fails here, before any hostile test finds it."""
    import ast

    movers: list[str] = []
    transfers: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
        }
        if rel not in ("gitmem/git/packs.py", "gitmem/git/quarantine.py") and names & MOVERS:
            movers.append(rel)
        exported = {  # names a module exports (``__all__``) are not git commands
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
        }
        listed = {
            e.value
            for n in ast.walk(tree)
            if isinstance(n, ast.List) and id(n) not in exported
            for e in n.elts
            if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
        if listed & TRANSFERS and rel != "gitmem/git/packs.py" and "open_quarantine" not in names:
            transfers.append(rel)
    assert movers == [], f"objects moved into a mount outside gitmem/git/quarantine.py: {movers}"
    assert transfers == [], f"git transfers without a quarantine: {transfers}"


def test_on_a_durable_mount_what_is_admitted_is_on_disk_before_main_moves(
    served: Served, mount: Mount, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitmem.git import packwrite

    synced: list[tuple[list[str], str]] = []

    def fsync_together(paths: list[str]) -> None:
        assert all(os.path.exists(p) for p in paths)
        synced.append((paths, mount.store.sync.head()))

    monkeypatch.setattr(packwrite, "fsync_together", fsync_together)  # what Quarantine.admit calls
    before = mount.store.sync.head()
    mount.store.sync.repo.config_set("gitmem.durable", "true")
    work = _clone(served, mount, tmp_path)
    write(work, "notes/pushed.md", "pushed\n")
    pushed = commit_all(work, "a push")
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    assert mount.store.sync.head() == pushed
    ((paths, head_then),) = synced
    assert head_then == before, "main moved before the admitted pack was on disk"
    assert paths[-1] == str(mount.path / "objects" / "pack") and any(p.endswith(".pack") for p in paths)
    fsck_clean(mount.path)
