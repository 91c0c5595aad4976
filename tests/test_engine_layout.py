"""A write becomes a commit in one module: ``gitmem/git/engine.py``, reached from the store in one call.

Read with ``ast`` (nothing imported): the store calls the engine, the engine
moves ``main`` by the hand-made compare-and-swap (which only the ref module
makes), and the repository handle never imports the engine
(imports run one way: engine -> repo, snapshot, packwrite, refs).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitmem"


def _calls(path: Path) -> set[str]:
    """Every ``name`` and ``obj.name`` called in a module, as written."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                found.add(func.attr)
                if isinstance(func.value, ast.Name):
                    found.add(f"{func.value.id}.{func.attr}")
    return found


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_every_store_write_reaches_the_engine_in_one_call() -> None:
    calls = _calls(PACKAGE / "gitstore.py")
    assert "engine.commit_batch" in calls
    assert "transact" not in calls


def test_the_engine_moves_main_by_the_hand_made_swap_and_only_refs_makes_it() -> None:
    swappers = {
        path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py") if "swap_loose_ref" in _calls(path)
    }
    # refs.swap_ref for every store write; the CLI's fast-forward pull, which loads no libgit2, directly.
    assert swappers == {"git/refs.py", "remotepull.py"}
    moves = [
        node
        for node in ast.walk(ast.parse((PACKAGE / "git" / "engine.py").read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "swap_ref"
    ]
    assert moves and all("durable" in {k.arg for k in node.keywords} for node in moves)  # else the transaction


def test_the_repository_handle_does_not_import_the_engine() -> None:
    for module in ("repo.py", "snapshot.py", "packwrite.py", "refs.py", "locks.py", "treeedit.py"):
        assert not {name for name in _imports(PACKAGE / "git" / module) if name.startswith("gitmem.git.engine")}, module


def test_restore_and_revert_commit_through_the_engine() -> None:
    assert "engine.transact" in _calls(PACKAGE / "git" / "history.py")


def _settings_in_child(env_value: str | None) -> str:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GITMEM_PYGIT2_DEFAULTS"}
    if env_value is not None:
        env["GITMEM_PYGIT2_DEFAULTS"] = env_value
    code = "import pygit2; before = pygit2.settings.mwindow_file_limit; import gitmem.gitstore; print(before, pygit2.settings.mwindow_file_limit)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=PACKAGE.parent, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_host_can_keep_libgit2s_defaults() -> None:
    before, after = _settings_in_child(None).split()
    assert after == "256" and before != after  # gitmem's settings, by default
    kept_before, kept_after = _settings_in_child("1").split()
    assert kept_before == kept_after  # untouched when the host asks
