"""An import's ``--gitignore`` leaves out exactly what git ignores: the real ``git`` decides, on real folders.

The folder (or history) handed to import brings its own ``.gitignore`` files, so every
line is input: its classes, escapes, stars, spaces, line ends and bytes that are not
ASCII must be read as git reads them, or files git keeps are dropped (or files git
ignores come in). Each case writes the ``.gitignore`` and the files, asks
``git ls-files --others --exclude-standard`` what it keeps, and compares that with
what :func:`gitmem.exchange.scan_folder` keeps.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.exchange import scan_folder
from gitmem.fileformat import FileFormat


def _git_kept(root: Path) -> set[str]:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "core.excludesFile=/dev/null", "ls-files", "-o", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    )
    return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}


def _gitmem_kept(root: Path, files: set[str]) -> set[str]:
    scan = scan_folder(root, FileFormat(), gitignore=True)
    left = [s.path.rstrip("/") for s in scan.skipped]
    return {f for f in files if not any(f == out or f.startswith(out + "/") for out in left)}


def _compare(gitignore: bytes, files: list[str], below: bytes | None = None) -> None:
    """``gitignore`` at the top (and ``below`` in folder ``a``) over ``files``: git and gitmem keep the same."""
    with tempfile.TemporaryDirectory() as where:
        root = Path(where)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".gitignore").write_bytes(gitignore)
        every = {*files, ".gitignore"}
        if below is not None:
            files = [name for name in files if name != "a"]  # "a" is the folder
            every = {*files, ".gitignore"}
            (root / "a").mkdir(exist_ok=True)
            (root / "a" / ".gitignore").write_bytes(below)
            every.add("a/.gitignore")
        for name in files:
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x\n")
        assert _gitmem_kept(root, every) == _git_kept(root), (gitignore, below, sorted(files))


# Each of these was read otherwise than git reads it: a file git keeps left out, or the reverse.
CASES: list[tuple[bytes, list[str]]] = [
    (b"a[b\n", ["a[b", "ab"]),  # an unclosed class: git's line matches nothing
    (b"x[[:alpha:]]\n", ["xa", "x[", "x:", "x1"]),  # a POSIX class
    (b"x[[:digit:][:upper:]]y\n", ["x1y", "xAy", "xay"]),
    (b"x[[:nope:]]\n", ["xn", "x]"]),  # a class git does not know: the line matches nothing
    (b"x[[:alpha]\n", ["xa", "x[", "x:"]),  # no ":]": a plain set holding "["
    (b"a[\\]]\n", ["a]", "a\\"]),  # a backslash in a class escapes the next character
    (b"a[\\a-c]\n", ["ab", "a\\"]),
    (b"foo\\\n", ["foo\\", "foo"]),  # a last lone backslash: the line matches nothing
    (b"foo\x0cbar\n", ["foo", "bar", "foo\x0cbar"]),  # only "\n" ends a line
    ("foo\u2028bar\n".encode(), ["foo", "bar", "foo\u2028bar"]),
    (b"foo\rbar\n", ["foo", "bar", "foo\rbar"]),
    (b"cr\r\r\n", ["cr", "cr\r"]),  # one "\r" before the "\n" goes, no more
    ("\ufeffbom\n".encode(), ["bom"]),  # a byte-order mark at the start is no part of the first line
    (b"[]\n[!]\n", ["[]", "[!]", "x"]),
    (b"?.md\n", ["\u00e9.md", "a.md"]),  # git matches bytes: "?" is one byte of "\u00e9"
    (b"??.md\n", ["\u00e9.md", "ab.md", "a.md"]),
    ("[\u00e9].md\n".encode(), ["\u00e9.md", "e.md"]),
    (b"a\\\\ \n", ["a\\", "a\\ "]),  # the space after an escaped backslash is trailing
    (b"b\\  \n", ["b ", "b", "b\\"]),  # an escaped space stays, the one after it goes
    (b"dir//\n", ["dir/f", "x/dir/f"]),  # one trailing "/" is taken off, no more
    (b"//top\n", ["top", "x/top"]),  # one leading "/" too
    (b"**\\/b\n", ["b", "x/b", "x/y/b"]),  # "**" before an escaped "/" crosses folders
    (b"a/**\\/b\n", ["a/b", "a/x/b", "a/x/y/b"]),
]


@pytest.mark.parametrize(("gitignore", "files"), CASES)
def test_a_gitignore_leaves_out_what_git_leaves_out(gitignore: bytes, files: list[str]) -> None:
    _compare(gitignore, files)


_PATTERN_PIECES = [
    "a", "b", "\u00e9", "*", "**", "?", "[", "]", "!", "^", "-", "/", "\\", " ", ":", "[:alpha:]", "\r", "\x0c", "#",
    "[!", "\\/", "**/", "/**", "\\\\",
]  # fmt: skip
_NAME_PIECES = ["a", "b", "\u00e9", "-", "[", "]", "*", "\\", " ", "!", ":", "#", "1", "A"]

_lines = st.lists(st.lists(st.sampled_from(_PATTERN_PIECES), min_size=1, max_size=7).map("".join), max_size=3)
_names = st.lists(st.sampled_from(_NAME_PIECES), min_size=1, max_size=4).map("".join)
_paths = st.lists(st.lists(_names, min_size=1, max_size=3).map("/".join), min_size=1, max_size=6)


def _tree(paths: list[str]) -> list[str]:
    """The paths that can all be files at once (none is a folder of another), ``.gitignore`` left out."""
    kept: list[str] = []
    for path in paths:
        parts = path.split("/")
        if ".gitignore" in parts or any(p in (".", "..", ".git") for p in parts):
            continue
        clash = any(k == path or k.startswith(path + "/") or path.startswith(k + "/") for k in kept)
        if not clash:
            kept.append(path)
    return kept


@given(lines=_lines, below=st.none() | _lines, paths=_paths)
def test_any_gitignore_leaves_out_what_git_leaves_out(
    lines: list[str], below: list[str] | None, paths: list[str]
) -> None:
    # Lines of the top .gitignore, and maybe of one in folder "a", over a few files.
    text = "".join(line + "\n" for line in lines).encode()
    _compare(text, _tree(paths), None if below is None else "".join(line + "\n" for line in below).encode())
