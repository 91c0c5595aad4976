"""Ranking files no index holds (``find`` without an index, or on a proposal) touches no shared folder.

Whoosh's in-memory index used to write its temporary column files to
``<tmp>/MAIN.tmp``, one folder for every process on the machine, deleted by
whichever writer ended first: two ``find`` calls at once failed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gitmem.index import engine

FILES = [(f"d/n{i}.md", f"{i:040x}", f"zeppelin note {i} ticket\n" * 3) for i in range(300)]


def test_ranking_writes_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_folder))  # any temporary folder would fail here
    ranked = engine.rank_files(FILES, ["zeppelin", "ticket"], "", 5)
    assert len(ranked) == 5 and all(path.startswith("d/n") for path, _oid, _score in ranked)


def test_two_processes_rank_at_once(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from gitmem.index import engine\n"
        "from tests.index.test_index_rank_memory import FILES\n"
        "for _ in range(int(sys.argv[1])):\n"
        "    assert engine.rank_files(FILES, ['zeppelin'], '', 5)\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path))
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen([sys.executable, "-c", code, "25"], env=env, cwd=root, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errors = [proc.communicate(timeout=300)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errors
    assert list(tmp_path.iterdir()) == []
