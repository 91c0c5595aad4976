"""Properties of ``validate_path``: what it accepts is normal, stable, and acceptable to git."""

from __future__ import annotations

import tempfile
import unicodedata
from pathlib import Path

from contract.support import assert_fsck_clean, git
from hypothesis import example, given
from hypothesis import strategies as st

from gitmem import FileFormat, GitFileStore, MemoryStoreError, validate_path
from gitmem.fileformat import DEFAULT_FORMAT, validate_directory

# Names git treats specially: .git and the .gitmodules/.gitattributes family, under
# NTFS short names (gitmod~1, gi7eba~1), NTFS trailing dots/spaces and ':' streams,
# HFS-ignorable code points and any letter case.
SPECIAL = [
    ".git",
    "git~1",
    ".gitmodules",
    "gitmod~1",
    "gitmod~4",
    "gitmod~5",
    "gi7eba~1",
    "gi7eb~12",
    "gi~1234",
    ".gitattributes",
    "gitatt~2",
    "gi7d29~9",
    ".gitignore",
    "git",
    ".gi",
    "gitmodules",
]
IGNORABLE = ["\u200c", "\u200d", "\u200e", "\u202a", "\u206a", "\u206f", "\ufeff"]


@st.composite
def special_segment(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(SPECIAL))
    if draw(st.booleans()):
        name = name.upper()
    if draw(st.booleans()):
        at = draw(st.integers(0, len(name)))
        name = name[:at] + draw(st.sampled_from(IGNORABLE)) + name[at:]
    tail = draw(st.lists(st.sampled_from([".", " ", ":", "x", "$DATA", "~", "1"]), max_size=3))
    return name + "".join(tail)


PIECES = ["x", "é", "e\u0301", "-", "_", ".", " ", "~", "\\", "\x00", "\n", "\x7f", "/", "\u2028"]
segment = st.one_of(
    special_segment(),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
    st.text(min_size=1, max_size=12),
)
raw_path = st.lists(segment, min_size=1, max_size=3).map("/".join)


def _refused(path: object, fmt: FileFormat = DEFAULT_FORMAT) -> bool:
    try:
        validate_path(path, fmt)
    except MemoryStoreError as exc:
        assert exc.code == "invalid_path"
        return True
    return False


@given(raw_path)
@example("a/./b")
@example("e\u0301/x")
def test_an_accepted_path_is_nfc_and_follows_every_rule(path: str) -> None:
    try:
        norm = validate_path(path)
    except MemoryStoreError as exc:
        assert exc.code == "invalid_path"
        return
    assert norm == unicodedata.normalize("NFC", path)
    assert validate_path(norm) == norm  # stable
    assert not norm.startswith("/") and not norm.endswith("/")
    assert "\\" not in norm
    assert all(unicodedata.category(c) != "Cc" for c in norm)
    assert len(norm.encode()) <= 256
    segments = norm.split("/")
    assert all(s not in ("", ".", "..") for s in segments)
    assert all(s.lower().rstrip(". ") != ".git" for s in segments)
    assert validate_directory(norm + "/") == norm + "/"


@given(raw_path)
def test_refusal_does_not_depend_on_normal_form(path: str) -> None:
    nfc = unicodedata.normalize("NFC", path)
    nfd = unicodedata.normalize("NFD", path)
    assert _refused(nfc) == _refused(nfd)
    if not _refused(nfd):
        assert validate_path(nfd) == validate_path(nfc)


@given(st.text(max_size=40), st.integers(min_value=1, max_value=64))
def test_the_byte_limit_counts_utf8_bytes(path: str, limit: int) -> None:
    fmt = FileFormat(max_path_bytes=limit)
    if not _refused(path, FileFormat(max_path_bytes=10_000)):
        assert _refused(path, fmt) == (len(unicodedata.normalize("NFC", path).encode()) > limit)


@given(st.lists(raw_path, min_size=1, max_size=6))
def test_paths_accepted_here_pass_git_fsck_strict(paths: list[str]) -> None:
    accepted = []
    for p in paths:
        if not _refused(p):
            accepted.append(validate_path(p))
    if not accepted:
        return
    with tempfile.TemporaryDirectory() as tmp:
        store = GitFileStore.init(Path(tmp) / "m.git", FileFormat(check_secrets=False)).sync
        committed = set()
        # each name once as a file and once as a folder, as far as the tree allows;
        # the .gitmodules checks only bite on hostile content, so write some
        hostile = '[submodule "x"]\n\tpath = -x\n\turl = -x\n' + "a" * 3000 + "\n"
        for p in accepted:
            for candidate, text in ((p, hostile), (f"{p}/inner", "x\n")):
                try:
                    store.write(candidate, text, expected=None)
                except MemoryStoreError as exc:
                    assert exc.code in ("invalid_path", "already_exists"), exc
                else:
                    committed.add(candidate)
        listed = git(Path(tmp) / "m.git", "ls-tree", "-r", "-z", "--name-only", "main").stdout.split("\0")
        assert set(filter(None, listed)) == committed
        assert_fsck_clean(Path(tmp) / "m.git")
