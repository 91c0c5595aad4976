"""grep without an index from the lines ``git grep`` prints: the scan's answer, byte for byte.

:class:`gitmem.index.fallback.GitLines` (the CLI's grep of ``main``) never reads a tree or a blob in Python;
each line git prints is decoded and decided by the scan's own rule. Here it is
held to :func:`gitmem.grep.scan` over every file of a repository built with git
itself (so it can hold what gitmem would never write: bytes that are not UTF-8,
NULs, links), under a config that would change git grep's output if it were read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.fileformat import decode_stored
from gitmem.git import gitgrep
from gitmem.git.peek import Peek
from gitmem.git.repo import GitRepo
from gitmem.grep import Matcher, compile_pattern, scan, split_lines
from gitmem.index import fallback
from gitmem.index.needles import Lit, Need, literal_need, regex_need
from gitmem.model import SearchResult

LONG = b"x" * 300_000 + b" zeppelin at the end of a long line\n"  # arrives in many pipe reads
FILES: dict[str, bytes] = {
    "crlf.md": b"Zeppelin one\r\nzeppelin two\r\nnothing\r\n",
    "no-newline.md": b"first\nlast ZEPPELIN line",
    "frontmatter.md": b"---\ntitle: Zeppelin notes\ntags: [zeppelin]\n---\nthe zeppelin body\n",
    "nul.md": b"before\0zeppelin after a NUL\nok\n",
    "bad-utf8.md": b"\xff zeppelin \xfe\nzep\xc3pelin\nabc\xe2\x82\nzeppelin after a cut sequence\n",
    "fold/strasse.md": "Hauptstra\u00dfe 5, STRASSE 6\n".encode(),
    "fold/kelvin.md": "300 \u212aelvin, 4 kelvin\n".encode(),
    "fold/ligature.md": "a \ufb01le of the zeppelin \ufb02eet\n".encode(),
    "fold/dotted.md": "\u0130stanbul zeppel\u0130n\n".encode(),
    "sp ace/f\u00fc.md": b"zeppelin in a folder with a space\n",
    "new\nline.md": b"zeppelin in a file whose name holds a newline\n",
    "\u98de\u8247/\u8bb0\u5f55.md": "\u98de\u8247 zeppelin \u8bb0\u5f55\n".encode(),
    "long.md": LONG,
    "many.md": b"".join(b"zeppelin %d\n" % i for i in range(50)),
    "empty.md": b"",
}
LINKS = {"link.md": b"zeppelin.md"}  # a link's target is not a file's text: never searched
PATTERNS: list[tuple[str, dict[str, bool]]] = [
    ("zeppelin", {}),
    ("ZEPPELIN", {"case_sensitive": True}),
    ("strasse", {}),
    ("kelvin", {}),
    ("file of", {}),
    ("fleet", {}),
    ("istanbul", {}),
    ("one\r", {}),  # git sees the \r, the scan's line has lost it
    ("after", {}),
    ("zeppelin (one|two|at)", {"regex": True}),
    ("zeppelin \\d+$", {"regex": True}),
    ("title: .*notes", {"regex": True}),
    ("t.t", {"regex": True}),  # the index cannot narrow it: git prints every line
    ("nothing like this", {}),
]
PREFIXES = ("", "fold/", "sp ace/", "\u98de\u8247/", "nope/")


def _quote(path: str) -> str:
    return '"' + path.encode().decode("latin-1").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _build(path: Path, files: dict[str, bytes], links: dict[str, bytes] | None = None) -> str:
    """A bare repository whose ``main`` holds ``files`` (and ``links``), made by ``git fast-import``."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    with open(path / "config", "a") as config:  # each would change what git grep prints
        config.write("[grep]\n\tcolumn = true\n\tlineNumber = false\n\tthreads = 8\n\tfullName = true\n"
                     "[color]\n\tgrep = always\n\tui = always\n[submodule]\n\trecurse = true\n")  # fmt: skip
    stream = bytearray(b"commit refs/heads/main\ncommitter t <t@t> 0 +0000\ndata 2\nx\n")
    for mode, entries in (("100644", files), ("120000", links or {})):
        for name, data in entries.items():
            stream += f"M {mode} inline {_quote(name)}\ndata {len(data)}\n".encode("latin-1") + data + b"\n"
    subprocess.run(["git", f"--git-dir={path}", "fast-import", "--quiet"], input=bytes(stream), check=True)
    return Peek(str(path)).head()


def _scan(peek: Peek, head: str, pattern: str, prefix: str, limit: int, **options: bool) -> SearchResult:
    repo = GitRepo(peek.path)  # the store's reader: what its scan reads
    files = ((p, decode_stored(repo.blob(oid))) for p, oid in repo.files_at(head, prefix))
    return scan(files, compile_pattern(pattern, **options), limit)


def _need(pattern: str, options: dict[str, bool]) -> Need:
    if options.get("regex"):
        need = regex_need(pattern, options.get("case_sensitive", False))
    else:
        need = literal_need(pattern)
    return Lit("") if need is None else need  # as gitmem.quickread asks: every line


def _grep_lines(git_dir: str, head: str, need: Need, matcher: Matcher, prefix: str, limit: int) -> SearchResult | None:
    """What the CLI's grep does with :class:`fallback.GitLines`: ``None`` when git cannot answer."""
    lines = fallback.GitLines.start(git_dir, head, need, prefix)
    return None if lines is None else lines.answer(matcher, limit)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Peek, str]:
    path = tmp_path_factory.mktemp("gitlines") / "r.git"
    head = _build(path, FILES, LINKS)
    return Peek(str(path)), head


@pytest.mark.parametrize(("pattern", "options"), PATTERNS)
def test_the_lines_git_prints_give_the_scans_answer(repo: tuple[Peek, str], pattern: str, options: dict[str, bool]) -> None:
    peek, head = repo
    for prefix in PREFIXES:
        for limit in (1, 2, 49, 100):
            matcher = compile_pattern(pattern, **options)
            got = _grep_lines(peek.path, head, _need(pattern, options), matcher, prefix, limit)
            assert got is not None, (pattern, prefix)  # every literal here is ASCII: git answered
            assert got == _scan(peek, head, pattern, prefix, limit, **options), (pattern, prefix, limit)


def test_the_odd_files_are_found(repo: tuple[Peek, str]) -> None:
    """The comparison above is not empty-handed: each odd file gives the line it should."""
    peek, head = repo
    got = _grep_lines(peek.path, head, _need("zeppelin", {}), compile_pattern("zeppelin"), "", 1000)
    assert got is not None
    lines = {(m.path, m.line): m.text for m in got.matches}
    assert lines[("crlf.md", 1)] == "Zeppelin one"  # the \r dropped
    assert lines[("no-newline.md", 2)] == "last ZEPPELIN line"
    assert lines[("frontmatter.md", 2)] == "title: Zeppelin notes"  # frontmatter lines are lines
    assert lines[("nul.md", 1)] == "before\0zeppelin after a NUL"
    assert lines[("bad-utf8.md", 1)] == "\ufffd zeppelin \ufffd"
    assert lines[("bad-utf8.md", 4)] == "zeppelin after a cut sequence"
    assert lines[("new\nline.md", 1)].startswith("zeppelin")
    assert lines[("long.md", 1)] == LONG[:-1].decode()
    assert ("fold/ligature.md", 1) in lines and "link.md" not in {m.path for m in got.matches}
    strasse = _grep_lines(peek.path, head, _need("strasse", {}), compile_pattern("strasse"), "", 10)
    assert strasse is not None and [m.text for m in strasse.matches] == ["Hauptstra\u00dfe 5, STRASSE 6"]


def test_a_literal_that_is_not_ascii_is_not_given_to_git(repo: tuple[Peek, str]) -> None:
    peek, head = repo
    assert _grep_lines(peek.path, head, _need("\u98de\u8247 z", {}), compile_pattern("\u98de\u8247 z"), "", 10) is None


def test_without_git_there_is_no_answer_from_git(repo: tuple[Peek, str], monkeypatch: pytest.MonkeyPatch) -> None:
    peek, head = repo
    monkeypatch.setattr(gitgrep, "available", lambda: False)
    assert _grep_lines(peek.path, head, _need("zeppelin", {}), compile_pattern("zeppelin"), "", 10) is None


def test_git_failing_gives_no_answer(repo: tuple[Peek, str]) -> None:
    peek, _head = repo
    missing = "1" * 40
    assert _grep_lines(peek.path, missing, _need("zeppelin", {}), compile_pattern("zeppelin"), "", 10) is None
    lines = gitgrep.matching_lines(peek.path, missing, ["-e", "zeppelin"])
    assert lines is not None
    with pytest.raises(gitgrep.GitGrepFailed):
        list(lines)


def test_an_answer_known_early_stops_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def popen(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        proc: subprocess.Popen[bytes] = real(*args, **kwargs)  # type: ignore[call-overload]
        started.append(proc)
        return proc

    files = {f"n/{i:05}.md": b"zeppelin\n" * 200 for i in range(400)}  # ~1.3 MB of output
    head = _build(tmp_path / "big.git", files)
    monkeypatch.setattr(gitgrep.subprocess, "Popen", popen)
    got = _grep_lines(str(tmp_path / "big.git"), head, _need("zeppelin", {}), compile_pattern("zeppelin"), "", 3)
    assert got is not None and got.truncated and [(m.path, m.line) for m in got.matches] == [
        ("n/00000.md", 1), ("n/00000.md", 2), ("n/00000.md", 3),
    ]  # fmt: skip
    assert len(started) == 1 and started[0].returncode is not None  # ended (killed) before the function returned
    assert started[0].stdout is not None and started[0].stdout.closed


def test_the_parser_takes_records_cut_anywhere() -> None:
    lead = len("c" * 40) + 1
    records = [("a.md", 1, b"zeppelin"), ("new\nline/\u00fc.md", 12, b"x\0y\rzeppelin\r"), ("b", 3, b"")]
    out = b"".join(b"c" * 40 + b":" + p.encode() + b"\0%d\0" % n + line + b"\n" for p, n, line in records)
    for size in (1, 2, 3, 7, 64, len(out)):
        parser = gitgrep._Records(lead)
        got = [r for at in range(0, len(out), size) for r in parser.feed(out[at : at + size])]
        assert got == records and not parser.partial(), size
    parser = gitgrep._Records(lead)
    assert list(parser.feed(out[:-1])) == records[:2] and parser.partial()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_decoding_line_by_line_is_decoding_the_file(data: bytes) -> None:
    """What :class:`fallback.GitLines` relies on: ``\\n`` never sits inside a UTF-8 sequence."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    by_line = [decode_stored(piece) for piece in pieces]
    assert [line[:-1] if line.endswith("\r") else line for line in by_line] == split_lines(decode_stored(data))


def test_the_quick_paths_index_folder_is_the_index_s(tmp_path: Path) -> None:
    from gitmem import quickread
    from gitmem.index import mount

    assert os.path.join(str(tmp_path), quickread.INDEX_DIR) == mount.index_folder(str(tmp_path))


def test_the_fallback_does_not_load_the_index_module() -> None:
    """The first grep starts git before :mod:`gitmem.index.mount` (and ``logging``) load."""
    code = "import sys, gitmem.index.fallback; print(sorted({'gitmem.index.mount', 'logging'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_git_is_found_where_shutil_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    plain, runnable, empty = tmp_path / "plain", tmp_path / "runnable", tmp_path / "empty"
    for folder in (plain, runnable, empty):
        folder.mkdir()
    (plain / "git").write_text("")
    (runnable / "git").write_text("#!/bin/sh\n")
    (runnable / "git").chmod(0o755)
    (empty / "git").mkdir()  # a folder named git is not a command
    for path in (f"{plain}:{empty}", f"{plain}:{runnable}", str(empty), "", os.environ.get("PATH", "")):
        monkeypatch.setenv("PATH", path)
        gitgrep.available.cache_clear()
        assert gitgrep.available() == (shutil.which("git") is not None), path
    gitgrep.available.cache_clear()
