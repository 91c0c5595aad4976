"""`gitmem import --history` against real processes: a writer at the same time, and SIGKILL mid-import.

The import moves ``main`` only by compare-and-swap under the writer lock, after it
checked that ``main`` is still the commit it planned on; so a concurrent writer's
commits are never lost, and a killed import leaves ``main`` where it was or where
the import put it, with ``git fsck --strict`` clean.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = "from gitmem.adapters.cli import main; main()"


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Ann",
        "GIT_AUTHOR_EMAIL": "ann@example.com",
        "GIT_COMMITTER_NAME": "Ann",
        "GIT_COMMITTER_EMAIL": "ann@example.com",
    }
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def gitmem(root: Path, *args: str, **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, "--root", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,  # type: ignore[call-overload]
    )


def init(root: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CLI, "--root", str(root), "init", "team"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def source(tmp_path: Path) -> Path:
    repo = tmp_path / "src"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for n in range(30):
        (repo / f"n{n % 7}.md").write_text(f"note {n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"note {n}")
    return repo


def fsck(repo: Path) -> None:
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


WRITER = """
import json, sys
from gitmem import Root
store = Root(sys.argv[1]).mount("team").sync
done = []
for n in range(int(sys.argv[2])):
    try:
        store.write(f"agent/w{n}.md", f"agent {n}\\n", expected=None)
        done.append(f"agent/w{n}.md")
    except Exception as exc:
        print(json.dumps({"error": repr(exc)}), flush=True)
print(json.dumps({"written": done}), flush=True)
"""


def test_an_import_racing_a_writer_loses_none_of_its_writes(tmp_path: Path, source: Path) -> None:
    root = tmp_path / "root"
    init(root)
    for _attempt in range(3):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        importer = gitmem(root, "import", "team", "--history", str(source), "--json")
        out, err = importer.communicate(timeout=120)
        written_out, written_err = writer.communicate(timeout=120)
        assert writer.returncode == 0, written_err
        if importer.returncode != 0:  # main moved under it: refused whole, nothing half-done
            assert json.loads(out)["error"] == "version_mismatch", out + err
        written = json.loads(written_out.strip().splitlines()[-1])["written"]
        files = set(git(root / "team.git", "ls-tree", "-r", "--name-only", "main").split())
        assert set(written) <= files  # every acknowledged write is still on main
        fsck(root / "team.git")


def test_a_killed_import_leaves_main_before_or_after_and_fsck_clean(tmp_path: Path, source: Path) -> None:
    tip = git(source, "rev-parse", "HEAD").strip()
    rng = random.Random(23)
    for n in range(6):
        root = tmp_path / f"root{n}"
        init(root)
        before = git(root / "team.git", "rev-parse", "main").strip()
        importer = gitmem(root, "import", "team", "--history", str(source), start_new_session=True)
        time.sleep(rng.uniform(0.05, 0.9))
        os.killpg(importer.pid, signal.SIGKILL)
        importer.communicate(timeout=30)
        after = git(root / "team.git", "rev-parse", "main").strip()
        assert after in (before, tip)
        fsck(root / "team.git")
        # Whatever the kill left, the import can be run again and lands the whole history.
        again = gitmem(root, "import", "team", "--history", str(source))
        _out, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert git(root / "team.git", "rev-parse", "main").strip() == tip
        fsck(root / "team.git")
