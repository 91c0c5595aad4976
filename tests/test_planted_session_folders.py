"""A session's binding records live under ``<mount>/gitmem``; a link planted there is not written through.

The hooks log, the ledger, the semantic index and the vector tables refuse a link anywhere from
the mount down (``localfile.local_folder``). The binding records of a session memory and of a
durable repository made their folder with ``os.makedirs``, which follows a link: with
``<mount>/gitmem`` planted as one, a resumed session wrote its record wherever it pointed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from gitmem.errors import MemoryStoreError


def planted(mount: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(mount / "gitmem", ignore_errors=True)
    (mount / "gitmem").symlink_to(outside)
    return outside


def test_a_session_memory_does_not_record_a_binding_through_a_planted_link(tmp_path: Path) -> None:
    from gitmem.session.resume import SCHEMA, SessionBindings

    mount = tmp_path / "m.git"
    mount.mkdir()
    outside = planted(mount, tmp_path)
    records = SessionBindings.of_store(SimpleNamespace(path=str(mount)))
    with pytest.raises(MemoryStoreError) as refused:
        records.resume("s1", {"schema": SCHEMA, "durable": []})
    assert refused.value.code == "unavailable"
    assert list(outside.rglob("*")) == []


def test_a_durable_repository_does_not_bind_a_session_through_a_planted_link(tmp_path: Path) -> None:
    from gitmem.durable.repository import DurableRepository
    from gitmem.durable.sessions import BINDING_SCHEMA

    repo = DurableRepository.open(tmp_path / "root", "rules", create=True)
    outside = planted(tmp_path / "root" / "rules.git", tmp_path)
    with pytest.raises(MemoryStoreError) as refused:
        repo.sessions.bind("s1", {"schema": BINDING_SCHEMA})
    assert refused.value.code == "unavailable"
    assert list(outside.rglob("*")) == []
