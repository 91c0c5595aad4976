"""forget removes an erased path's name from every commit and tag message, in every form a message carries it.

The rule (:class:`gitmem.git.erasurenames.NameScrub`): the path, any trailing part of it
down to the file's own name, that name without its extension (from three characters),
each also as git quotes a path, percent-encoded and decomposed (NFD), in any letter
case, as a whole token. Words that merely contain a name, and other files' names, stay.
"""

from __future__ import annotations

import subprocess
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from gitmem import SyncGitFileStore
from gitmem.git.erasurenames import MARKER, NameScrub

from .conftest import Git

Worktree = Callable[..., str]


def _commit(worktree: Worktree, files: dict[str, str], message: str) -> None:
    root = Path(worktree.path)  # type: ignore[attr-defined]
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        worktree("add", "--", name)
    worktree("commit", "-q", "--allow-empty", "-m", message)


def _messages(git: Git) -> str:
    return git("log", "--all", "--format=%B%n---").stdout + "".join(
        git("cat-file", "-p", tag).stdout for tag in git("tag").stdout.split()
    )


def _fsck(git: Git) -> None:
    done = git("fsck", "--strict", "--no-dangling", check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# Each form a message may carry ``people/Dana Smöre.md`` in, and one message each.
PATH = "people/Dana Smöre.md"
FORMS = {
    "full path": PATH,
    "basename": "Dana Smöre.md",
    "stem": "Dana Smöre",
    "other case": "DANA SMÖRE",
    "git-quoted": '"people/Dana Sm\\303\\266re.md"',
    "percent-encoded link": "[notes](people/Dana%20Sm%C3%B6re.md)",
    "spaces encoded only": "Dana%20Smöre.md",
    "decomposed (NFD)": unicodedata.normalize("NFD", "Dana Smöre.md"),
}
KEPT = "keep: the danasmörebröd recipe, people/erin.md and a.md stay as they are"


@pytest.fixture
def history(store: SyncGitFileStore, worktree: Worktree) -> None:
    store.write("readme.md", "start\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    _commit(worktree, {PATH: "phone 555-0142\n", "people/erin.md": "erin\n"}, "add two people")
    for i, (what, form) in enumerate(FORMS.items()):
        _commit(worktree, {"a.md": f"edit {i}\n"}, f"edit {i}\n\nabout {form}: {what}\n{KEPT}")
    worktree("tag", "-a", "noted", "-m", f"tagged while {FORMS['basename']} was there")
    _commit(worktree, {PATH: "phone 555-0199\n"}, f"update {FORMS['stem'].lower()}'s phone")
    worktree("push", "-q", "origin", "main", "noted")


def test_every_form_of_the_erased_name_is_gone_and_every_other_word_stays(
    store: SyncGitFileStore, git: Git, history: None
) -> None:
    before = _messages(git)
    assert all(form in before for form in FORMS.values())
    report = store.forget(PATH)
    after = _messages(git)
    folded = after.casefold()
    for what, form in FORMS.items():
        assert form.casefold() not in folded, what
    assert "dana sm" not in folded and "dana%20" not in folded and "sm%c3%b6re" not in folded and "303\\266" not in folded
    for what in FORMS:  # only the name went, the rest of the line stays
        lines = [line for line in after.splitlines() if line.startswith("about ") and line.endswith(f": {what}")]
        assert len(lines) == 1 and MARKER in lines[0], what
    assert after.count(KEPT) == len(FORMS)  # a longer word, other files' names: kept
    assert f"update {MARKER}'s phone" in after and f"tagged while {MARKER} was there" in after
    assert report.commits_rewritten >= len(FORMS) + 2
    assert "555-01" not in git("log", "--all", "-p").stdout
    _fsck(git)


def test_a_forgotten_folder_takes_the_names_of_the_files_below_it(
    store: SyncGitFileStore, git: Git, worktree: Worktree
) -> None:
    store.write("readme.md", "start\n", expected=None)
    worktree("pull", "-q", "--ff-only", "origin", "main")
    _commit(worktree, {"people/team/erin-wu.md": "erin\n"}, "add people\n\nerin-wu.md: Erin Wu's notes (see team/erin-wu.md)")
    _commit(worktree, {"other.md": "x\n"}, "other\n\nnothing about people here")
    worktree("push", "-q", "origin", "main")
    store.forget("people")
    after = _messages(git)
    assert "erin-wu" not in after.lower() and f"{MARKER}: Erin Wu's notes (see {MARKER})" in after
    assert f"nothing about {MARKER} here" in after  # the folder's own name, as the path it is
    _fsck(git)


@pytest.mark.parametrize(
    ("erased", "message", "scrubbed"),
    [
        ("a.md", b"add a note to a.md", b"add a note to [erased]"),  # a one-letter stem is a word
        ("ops/wifi.md", b"wifi password in WIFI.MD, see ops/wifi.md", b"[erased] password in [erased], see [erased]"),
        ("ops/wifi.md", b"wifiless, mywifi, wifi_2 and wifi-2", b"wifiless, mywifi, wifi_2 and [erased]-2"),
        (".env", b"drop .env and my.env", b"drop [erased] and my.env"),
        ("notes/q&a.md", b"fix notes/q%26a.md", b"fix [erased]"),
        ("x/tab\there.md", b'see "x/tab\\there.md"', b'see "[erased]"'),
        ("r/a.md", b"\xff\xfe latin-1 bytes kept, a.md gone", b"\xff\xfe latin-1 bytes kept, [erased] gone"),
    ],
)
def test_the_rule(erased: str, message: bytes, scrubbed: bytes) -> None:
    scrub = NameScrub([erased])
    assert scrub(message) == scrubbed
    assert scrub.names(message) == (scrubbed != message)


def test_a_forgotten_folder_of_many_records_takes_each_id_out() -> None:
    """20k record files below a forgotten folder: each id is found through its first word, not 20k scans."""
    ids = [f"ns/{i:026d}.json" for i in range(20_000)]
    scrub = NameScrub(ids)
    message = b"remember 00000000000000000000019999 and 12 other things\n" * 4
    assert scrub(message).count(MARKER.encode()) == 4
    assert not scrub.names(b"an unrelated message about 123\n")


def test_a_rewritten_history_passes_a_bare_clone(store: SyncGitFileStore, git: Git, history: None, tmp_path: Path) -> None:
    store.forget(PATH)
    clone = tmp_path / "clone.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--no-local", store.path, str(clone)], check=True)
    done = subprocess.run(["git", f"--git-dir={clone}", "log", "--all", "--format=%B"], capture_output=True, text=True)
    assert "dana smöre" not in done.stdout.lower() and MARKER in done.stdout
    _fsck(git)
