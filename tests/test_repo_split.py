"""The write round, the snapshot values and the folds live outside ``gitmem/git/repo.py``.

Imports run one way (``repo`` imports them, never the reverse: read with
``ast``, nothing imported), and the names callers, tests and benchmarks reach
into ``repo`` for still work there, the switches included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gitmem import GitFileStore
from gitmem.git import repo as gitrepo
from gitmem.git import snapshot, spool, writeround

GIT = Path(__file__).resolve().parent.parent / "gitmem" / "git"
BELOW_REPO = ("writeround", "snapshot", "folds", "spool", "group", "locks", "handoff", "spoolcodec")


def _imports(module: str) -> set[str]:
    tree = ast.parse((GIT / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("module", [m for m in BELOW_REPO if (GIT / f"{m}.py").exists()])
def test_the_split_modules_never_import_the_repository_handle(module: str) -> None:
    assert not {name for name in _imports(module) if name.startswith("gitmem.git.repo")}


def test_repo_builds_on_the_split_modules() -> None:
    assert {"gitmem.git.writeround", "gitmem.git.folds", "gitmem.git.snapshot"} <= _imports("repo")


def test_callers_names_are_still_in_repo() -> None:
    for name in ("GROUP_COMMIT", "CROSS_PROCESS", "MAX_PACKS", "HARD_MAX_PACKS", "MAX_ATTEMPTS", "PACK_EDITS", "EMPTY_TREE", "cli"):
        assert hasattr(gitrepo, name), name
    assert gitrepo.Snapshot is snapshot.Snapshot and gitrepo.Plan is snapshot.Plan and gitrepo.Done is snapshot.Done
    assert gitrepo.MAX_ATTEMPTS == writeround.MAX_ATTEMPTS
    assert gitrepo.GitRepo.pack_writes is True
    assert callable(gitrepo.set_durable) and callable(gitrepo._bump)


def test_the_cross_process_switch_in_repo_still_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``repo.CROSS_PROCESS`` is read at each round (the benchmark sets it after import)."""
    seen: list[bool] = []
    original = writeround.run_round

    def spy(writer: writeround.Writer, requests: list, *, cross: bool, durable: bool) -> list:  # type: ignore[type-arg]
        seen.append(cross)
        return original(writer, requests, cross=cross, durable=durable)

    monkeypatch.setattr(writeround, "run_round", spy)
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a.md", "a\n", expected=None)
    monkeypatch.setattr(gitrepo, "CROSS_PROCESS", False)
    store.write("b.md", "b\n", expected=None)
    assert seen == [True, False]
    assert not Path(spool.spool_dir(str(tmp_path / "m.git"))).exists()  # nobody waited: no slot was made
