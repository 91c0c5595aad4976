"""A remote URL in a memory's config that reads as an option is never handed to git as one.

``gitmem remote add`` refuses a URL starting with ``-``, but the config is a file
anyone with access to the folder can edit (or a clone can bring). Every git
command gitmem runs with a URL puts ``--`` before it, so ``--upload-pack=CMD`` or
``--receive-pack=CMD`` is a repository git cannot find, never a command it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem import MemoryStoreError, Root, remotes


def _planted(tmp_path: Path, option: str) -> tuple[Root, Path]:
    root = Root(tmp_path / "mem")
    store = root.mount("m", create=True, hooks=False)
    store.sync.write("a.md", "a\n", expected=None)
    marker = tmp_path / "ran"
    url = f"--{option}=touch {marker}; false"
    subprocess.run(
        ["git", "--git-dir", str(tmp_path / "mem" / "m.git"), "config", "remote.origin.url", url], check=True
    )
    return root, marker


@pytest.mark.parametrize(("command", "option"), [("pull", "upload-pack"), ("push", "receive-pack")])
def test_the_cli_refuses_the_remote_and_runs_no_command(tmp_path: Path, command: str, option: str) -> None:
    root, marker = _planted(tmp_path, option)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITMEM_")}
    done = subprocess.run(
        [sys.executable, "-m", "gitmem.adapters.cli", "--root", str(root.path), command, "m"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error [" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("option", ["upload-pack", "receive-pack"])
def test_the_library_refuses_the_remote_and_runs_no_command(tmp_path: Path, option: str) -> None:
    root, marker = _planted(tmp_path, option)
    store = root.mount("m")
    for call in (remotes.pull, remotes.push):
        with pytest.raises(MemoryStoreError):
            call(store, "origin")
    assert not marker.exists()
    assert remotes.list_remotes(store)[0].url.startswith("--")  # shown as it is, never run
