"""The erasure ledger ref takes only commits exactly as gitmem writes them.

Another copy's ``gitmem push`` sends its ledger, so the ref must take a ledger
that grew elsewhere; anything else riding on it (a second file, a header, a
rewritten entry, a merge) would reach every clone that fetches the ledger. Each
variant below differs from gitmem's own commit in one way and is refused; the
commit gitmem itself would write is taken.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitmem import GitFileStore
from gitmem.fileformat import FileFormat
from gitmem.git.erasures import LEDGER_REF, Entry, entries_at, foreign_ledger
from gitmem.git.pushcheck import RefUpdate, check_updates
from gitmem.provenance import COMMITTER_EMAIL, COMMITTER_NAME

GITMEM = f"{COMMITTER_NAME} <{COMMITTER_EMAIL}> 1700000000 +0000".encode()
COMMIT = pygit2.enums.ObjectType.COMMIT


@pytest.fixture
def ledger(tmp_path: Path) -> tuple[pygit2.Repository, str, str]:
    """A mount whose ledger has two entries: the repository, the first ledger commit and the second."""
    store = GitFileStore.init(tmp_path / "user.git")
    for name in ("a.md", "b.md"):
        store.sync.write(name, f"text of {name}\n", expected=None)
        store.sync.forget(name)
    repo = pygit2.Repository(store.path)
    tip = repo.references[LEDGER_REF].peel(pygit2.Commit)
    return repo, str(tip.parent_ids[0]), str(tip.id)


def _entry(n: int = 0) -> Entry:
    return Entry(f"feed{n:012x}", "forget", "2026-01-01T00:00:00Z", "admin", ("ab" * 32,), ("cd" * 20,), ())


def _text(entries: tuple[Entry, ...]) -> bytes:
    return "".join(e.to_json() + "\n" for e in entries).encode()


def _tree(repo: pygit2.Repository, *entries: tuple[bytes, bytes, bytes]) -> str:
    raw = b"".join(mode + b" " + name + b"\0" + repo.create_blob(data).raw for mode, name, data in entries)
    return str(repo.odb.write(pygit2.enums.ObjectType.TREE, raw))


def _commit(
    repo: pygit2.Repository, tree: str, parents: list[str], message: bytes, *, who: bytes = GITMEM, extra: bytes = b""
) -> str:
    head = f"tree {tree}\n".encode() + b"".join(f"parent {p}\n".encode() for p in parents)
    raw = head + b"author " + who + b"\ncommitter " + who + b"\n" + extra + b"\n" + message
    return str(repo.odb.write(COMMIT, raw))


def _as_gitmem_writes(repo: pygit2.Repository, parent: str, added: tuple[Entry, ...]) -> str:
    entries = (*entries_at(repo, parent), *added)
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [parent], f"erasure {added[-1].id} (forget)\n".encode())


def test_gitmem_own_ledger_and_one_grown_elsewhere_are_taken(ledger: tuple[pygit2.Repository, str, str]) -> None:
    repo, first, tip = ledger
    assert foreign_ledger(repo, None, tip) is None
    assert foreign_ledger(repo, first, tip) is None
    grown = _as_gitmem_writes(repo, tip, (_entry(),))
    assert foreign_ledger(repo, tip, grown) is None
    verdict = check_updates(repo.path, [RefUpdate(LEDGER_REF, tip, grown)], FileFormat())
    assert verdict[LEDGER_REF] == []


def _extra_file(repo: pygit2.Repository, tip: str) -> str:
    entries = (*entries_at(repo, tip), _entry())
    tree = _tree(repo, (b"100644", b"dana.md", b"the erased text\n"), (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode())


def _extra_header(repo: pygit2.Repository, tip: str) -> str:
    entries = (*entries_at(repo, tip), _entry())
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode(), extra=b"x-note the erased text\n")


def _other_author(repo: pygit2.Repository, tip: str) -> str:
    entries = (*entries_at(repo, tip), _entry())
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode(), who=b"Mallory <m@x> 1 +0000")


def _other_message(repo: pygit2.Repository, tip: str) -> str:
    entries = (*entries_at(repo, tip), _entry())
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], b"erasure feed (forget)\n\nthe erased text\n")


def _two_entries(repo: pygit2.Repository, tip: str) -> str:
    return _as_gitmem_writes(repo, tip, (_entry(1), _entry(2)))


def _rewritten_entry(repo: pygit2.Repository, tip: str) -> str:
    old = entries_at(repo, tip)
    changed = Entry(old[0].id, old[0].kind, old[0].at, "someone else", old[0].names, (), old[0].tips)
    entries = (changed, *old[1:], _entry())
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode())


def _merge(repo: pygit2.Repository, tip: str) -> str:
    side = _as_gitmem_writes(repo, tip, (_entry(1),))
    entries = (*entries_at(repo, side), _entry(2))
    tree = _tree(repo, (b"100644", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [side, tip], f"erasure {_entry(2).id} (forget)\n".encode())


def _executable(repo: pygit2.Repository, tip: str) -> str:
    entries = (*entries_at(repo, tip), _entry())
    tree = _tree(repo, (b"100755", b"entries.jsonl", _text(entries)))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode())


def _loose_json(repo: pygit2.Repository, tip: str) -> str:
    spaced = json.dumps(json.loads(_entry().to_json()), sort_keys=True)  # ", " and ": ", not gitmem's separators
    text = _text(entries_at(repo, tip)) + spaced.encode() + b"\n"
    tree = _tree(repo, (b"100644", b"entries.jsonl", text))
    return _commit(repo, tree, [tip], f"erasure {_entry().id} (forget)\n".encode())


def _duplicate_id(repo: pygit2.Repository, tip: str) -> str:
    again = entries_at(repo, tip)[0]
    return _as_gitmem_writes(repo, tip, (again,))


VARIANTS: list[Callable[[pygit2.Repository, str], str]] = [
    _extra_file,
    _extra_header,
    _other_author,
    _other_message,
    _two_entries,
    _rewritten_entry,
    _merge,
    _executable,
    _loose_json,
    _duplicate_id,
]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.__name__.strip("_") for v in VARIANTS])
def test_a_ledger_commit_unlike_gitmem_own_is_refused(
    ledger: tuple[pygit2.Repository, str, str], variant: Callable[[pygit2.Repository, str], str]
) -> None:
    repo, _, tip = ledger
    made = variant(repo, tip)
    assert foreign_ledger(repo, tip, made) is not None
    (refusal,) = check_updates(repo.path, [RefUpdate(LEDGER_REF, tip, made)], FileFormat())[LEDGER_REF]
    assert refusal.rule == "erasure_ledger"


def test_fsck_erasures_names_the_ledger_ref_when_an_erased_version_rides_on_it(tmp_path: Path) -> None:
    """Planted by plain git, past every gate: ``fsck --erasures`` must say which ref reaches it, not "unreachable"."""
    store = GitFileStore.init(tmp_path / "user.git")
    store.sync.write("keep.md", "keep\n", expected=None)
    erased = store.sync.write("people/dana.md", "Dana's phone is 555 0142\n", expected=None)
    store.sync.forget("people/dana.md")
    assert store.sync.check_erasures().ok
    repo = pygit2.Repository(store.path)
    tip = str(repo.references[LEDGER_REF].target)
    entries = _text(entries_at(repo, tip))
    tree = _tree(repo, (b"100644", b"dana.md", b"Dana's phone is 555 0142\n"), (b"100644", b"entries.jsonl", entries))
    repo.references[LEDGER_REF].set_target(_commit(repo, tree, [tip], b"erasure planted (forget)\n"))

    audit = store.sync.check_erasures()
    assert not audit.ok
    (line,) = [h for h in audit.holders if erased in h]
    assert line.endswith(f"reachable from {LEDGER_REF}"), line
