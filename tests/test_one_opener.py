"""Every file under a mount is opened and parsed through ONE module, read from the source with ``ast``.

``gitmem/localfile.py`` is the opener: regular files only, no link followed,
never blocking, bounded size, JSON nesting bounded (``parse_json``), files
created without following links (``open_private``) and SQLite databases opened
with their links refused (``connect_local_sqlite``). This test parses every
module under ``gitmem/`` and fails when code anywhere else opens a file,
``json.load``s one, parses JSON text, or connects to a database any other way:
a new kind, adapter or cache cannot add a way in that skips the gate.

The allow-list below names the few calls that provably touch no path under a
mount, each with its reason. An entry that no longer matches a call fails the
test too, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitmem"
THE_OPENER = "gitmem/localfile.py"

#: Modules whose ``load``/``loads``/``connect`` read a file or parse its text.
PARSER_MODULES = {
    "json": ("load", "loads"),
    "tomllib": ("load", "loads"),
    "pickle": ("load", "loads"),
    "marshal": ("load", "loads"),
    "yaml": ("load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all"),
    "numpy": ("load", "fromfile", "loadtxt", "genfromtxt", "memmap"),
    "sqlite3": ("connect",),
    "lancedb": ("connect",),
    "shelve": ("open",),
    "dbm": ("open",),
    "io": ("open",),
    "codecs": ("open",),
    "builtins": ("open",),
    "os": ("open",),
    "tarfile": ("open",),
    "zipfile": ("ZipFile",),
}
#: Methods that open the file a path object names.
PATH_METHODS = ("open", "read_text", "read_bytes", "write_text", "write_bytes")

# (module, enclosing function, call) -> why this call touches no file under a mount.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("gitmem/git/cli.py", "own_group", "os.open"): (
        "/dev/tty, the process's controlling terminal, opened (O_NOCTTY|O_NONBLOCK) only to learn whether "
        "there is one, closed at once, nothing read"
    ),
    ("gitmem/exchange.py", "_write_new", "os.open"): (
        "export writes a new folder at the user's destination, outside any mount: each segment O_NOFOLLOW "
        "under a folder descriptor, each file O_CREAT|O_EXCL|O_NOFOLLOW"
    ),
    ("gitmem/exchange.py", "export_folder", "os.open"): (
        "the export's own temporary folder (mkdtemp beside the user's destination), opened O_NOFOLLOW as dir_fd"
    ),
    ("gitmem/exchange.py", "export_tar", "tarfile.open"): (
        "writes the export archive into a descriptor from mkstemp beside the user's destination (fileobj=)"
    ),
    ("gitmem/fileformat.py", "parse_frontmatter", "yaml.load"): (
        "frontmatter text already read through the store, at most max_frontmatter_bytes; libyaml's safe loader "
        "refuses deep flow and block nesting itself ('while increasing flow level', tested below)"
    ),
    ("gitmem/adapters/tokens.py", "token_entries", "tomllib.loads"): (
        "a token file's text already read through localfile.read_control (bounded, no link, never blocking); "
        "tomllib's nesting errors are caught and refuse the file"
    ),
    ("gitmem/adapters/lance_vectors.py", "LanceVectorIndex._connect", "lancedb.connect"): (
        "LanceDB (Rust) opens its dataset folder itself; in a mount that folder and every folder above it "
        "up to the mount are made and checked by localfile.local_folder first (no link on the way)"
    ),
    ("gitmem/recall/embed.py", "EmbeddingBranch._load_cache", "numpy.load"): (
        "the caller's own vector cache file (cache_file, documented as theirs; a rebuild after an erasure rewrites it "
        "without the erased texts' vectors), "
        "loaded with allow_pickle=False"
    ),
}


class _Finder(ast.NodeVisitor):
    """Every call that opens or parses a file, as ``(enclosing function, call)`` labels."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # local name -> module it names (import json as j: j -> json)
        self.functions: dict[str, str] = {}  # local name -> "module.function" (from json import loads)
        self.scope: list[str] = []
        self.found: list[tuple[str, str, int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            self.modules[alias.asname or top] = alias.name if alias.asname else top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            for alias in node.names:
                self.functions[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        label = self._label(node)
        if label is not None:
            self.found.append((".".join(self.scope), label, node.lineno))
        self.generic_visit(node)

    def _label(self, node: ast.Call) -> str | None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "open" and func.id not in self.functions:
                return "open"
            target = self.functions.get(func.id)
            if target is not None:
                module, _, name = target.rpartition(".")
                if name in PARSER_MODULES.get(module.split(".")[0], ()):
                    return target if not _in_memory(node) else None
            return None
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id in self.modules:
            module = self.modules[owner.id].split(".")[0]
            if func.attr in PARSER_MODULES.get(module, ()):
                return None if _in_memory(node) else f"{module}.{func.attr}"
            return None
        if func.attr in PATH_METHODS:
            if func.attr == "open" and isinstance(owner, ast.Name) and owner.id[:1].isupper():
                return None  # a class's constructor (GitRepo.open, DurableRepository.open), not a file
            return f"Path.{func.attr}"
        return None


def _in_memory(node: ast.Call) -> bool:
    """``sqlite3.connect(":memory:")``: a database with no file at all."""
    first = node.args[0] if node.args else None
    return isinstance(first, ast.Constant) and first.value == ":memory:"


def opening_calls() -> tuple[tuple[str, str, str, int], ...]:
    return _scanned()


@functools.cache
def _scanned() -> tuple[tuple[str, str, str, int], ...]:
    return tuple(_scan())


def _scan() -> Iterator[tuple[str, str, str, int]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()
        if module == THE_OPENER:
            continue
        finder = _Finder()
        finder.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        for scope, label, line in finder.found:
            yield module, scope, label, line


def test_nothing_outside_the_opener_opens_or_parses_a_file() -> None:
    stray = [
        f"{module}:{line} in {scope or '<module>'}: {label}"
        for module, scope, label, line in opening_calls()
        if (module, scope, label) not in ALLOWED
    ]
    assert not stray, (
        "files under a mount are opened and parsed only through gitmem/localfile.py "
        "(open_local/read_local*, load_local_json*, parse_json, open_private, connect_local_sqlite); "
        "these calls go around it:\n  " + "\n  ".join(stray)
    )


def test_every_allowed_call_still_exists_and_says_why() -> None:
    present = {(module, scope, label) for module, scope, label, _ in opening_calls()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"allow-list entries that match no call any more (remove them): {stale}"
    assert all(len(reason) >= 15 for reason in ALLOWED.values())


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("open(p)", ["open"]),
        ("import os\nos.open(p, 0)", ["os.open"]),
        ("import json as j\nj.loads(t)", ["json.loads"]),
        ("from json import load\nload(f)", ["json.load"]),
        ("import sqlite3\nsqlite3.connect(p)", ["sqlite3.connect"]),
        ("import sqlite3\nsqlite3.connect(':memory:')", []),
        ("import tomllib\ntomllib.loads(t)", ["tomllib.loads"]),
        ("from pathlib import Path\nPath(p).read_text()", ["Path.read_text"]),
        ("p.read_bytes()", ["Path.read_bytes"]),
        ("p.open('rb')", ["Path.open"]),
        ("GitRepo.open(p)", []),
        ("import io\nio.open(p)", ["io.open"]),
        ("def f():\n    class C:\n        def g(self):\n            open(p)", ["open"]),
    ],
)
def test_the_finder_sees_each_way_to_open(source: str, found: list[str]) -> None:
    """The scan itself can fail: each way of opening or parsing a file is reported, a class constructor is not."""
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert [label for _, label, _ in finder.found] == found


def test_frontmatter_nesting_is_refused_by_the_yaml_loader() -> None:
    """Why fileformat's yaml.load may stay: deep nesting ends in invalid_file, not RecursionError."""
    from gitmem.errors import MemoryStoreError
    from gitmem.fileformat import FileFormat, parse_frontmatter

    roomy = FileFormat(max_frontmatter_bytes=1 << 22)
    for block in (
        "x: " + "[" * 30_000 + "]" * 30_000,
        "".join(" " * i + "a:\n" for i in range(1200)) + " " * 1200 + "b: 1",
    ):
        with pytest.raises(MemoryStoreError) as refused:
            parse_frontmatter(f"---\n{block}\n---\nbody", roomy)
        assert refused.value.code == "invalid_file"


#: pygit2 calls that make an object database over a folder: each lists its ``objects/pack`` (and opens every
#: index there on a lookup, blocking), so they are made only in THE_DB_MAKER, after the folder is checked.
DB_MAKERS = ("Repository", "Odb", "OdbBackendPack", "OdbBackendLoose", "init_repository", "clone_repository")
THE_DB_MAKER = "gitmem/git/loose.py"
# (module, enclosing function, call) -> why this one may stay outside loose.py.
DB_ALLOWED: dict[tuple[str, str, str], str] = {
    ("gitmem/git/repo.py", "GitRepo.init", "pygit2.init_repository"): (
        "makes a new repository; check_packs_of runs right after, before its first write lists the pack folder"
    ),
}


class _DbFinder(ast.NodeVisitor):
    """Every call of a pygit2 object-database maker, and every class built on one, as ``(scope, label)``."""

    def __init__(self) -> None:
        self.aliases: set[str] = set()  # local names of the pygit2 module
        self.names: dict[str, str] = {}  # local name -> maker imported from pygit2
        self.scope: list[str] = []
        self.found: list[tuple[str, str, int]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "pygit2":
                self.aliases.add(alias.asname or "pygit2")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "pygit2":
            for alias in node.names:
                if alias.name in DB_MAKERS:
                    self.names[alias.asname or alias.name] = alias.name

    def _maker(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            return f"pygit2.{node.attr}" if node.attr in DB_MAKERS else None
        if isinstance(node, ast.Name) and node.id in self.names:
            return f"pygit2.{self.names[node.id]}"
        return None

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _scoped

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            label = self._maker(base)
            if label is not None:
                self.found.append((".".join(self.scope), f"class {node.name}({label})", node.lineno))
        self._scoped(node)

    def visit_Call(self, node: ast.Call) -> None:
        label = self._maker(node.func)
        if label is not None:
            self.found.append((".".join(self.scope), label, node.lineno))
        self.generic_visit(node)


def _db_makers(source: str) -> list[tuple[str, str, int]]:
    finder = _DbFinder()
    finder.visit(ast.parse(source))
    return finder.found


def test_only_loose_makes_an_object_database() -> None:
    """A pack reader, object database or repository handle made anywhere else would skip the pack-folder check."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()
        for scope, label, line in _db_makers(path.read_text(encoding="utf-8")):
            if module != THE_DB_MAKER:
                found.append((module, scope, label, line))
    stray = [f"{m}:{n} in {s or '<module>'}: {label}" for m, s, label, n in found if (m, s, label) not in DB_ALLOWED]
    assert not stray, (
        "pygit2 handles, object databases and pack readers are made only in gitmem/git/loose.py "
        "(open_repository, object_db, pack_backend), after the pack folder is checked:\n  " + "\n  ".join(stray)
    )
    stale = sorted(set(DB_ALLOWED) - {(m, s, label) for m, s, label, _ in found})
    assert not stale, f"allow-list entries that match no call any more (remove them): {stale}"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import pygit2\npygit2.OdbBackendPack(p)", ["pygit2.OdbBackendPack"]),
        ("import pygit2 as g\ng.Odb(p)", ["pygit2.Odb"]),
        ("from pygit2 import OdbBackendLoose as L\nL(p, 0, False)", ["pygit2.OdbBackendLoose"]),
        ("import pygit2\nclass H(pygit2.Repository):\n    pass", ["class H(pygit2.Repository)"]),
        ("import pygit2\npygit2.Oid(hex=h)", []),
        ("odb.Odb(p)", []),
    ],
)
def test_the_db_finder_sees_each_way_to_make_one(source: str, found: list[str]) -> None:
    assert [label for _, label, _ in _db_makers(source)] == found
