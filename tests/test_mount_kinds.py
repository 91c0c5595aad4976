"""A mount's kind is chosen once, at init, and kept in its config for every process."""

from __future__ import annotations

import subprocess

import pytest

from gitmem import MemoryStoreError, Root
from gitmem.gitstore import GitFileStore


def test_a_new_mount_is_a_file_mount_and_says_so_in_its_config(tmp_path):
    root = Root(tmp_path)
    store = root.mount("notes", create=True)
    assert store.kind == "file"
    assert root.kind("notes") == "file"
    got = subprocess.run(
        ["git", "config", "--file", str(tmp_path / "notes.git" / "config"), "gitmem.kind"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert got.stdout.strip() == "file"


@pytest.mark.parametrize("kind", ["record", "session", "durable"])
def test_the_kind_given_at_creation_is_kept_and_checked_on_open(tmp_path, kind):
    root = Root(tmp_path)
    assert root.mount("m", create=True, kind=kind).kind == kind
    assert Root(tmp_path).mount("m", kind=kind).kind == kind  # a fresh handle reads it back
    with pytest.raises(MemoryStoreError) as err:
        root.mount("m", kind="file")
    assert err.value.code == "wrong_kind"
    assert f"m is a {kind} memory" in err.value.message
    # Opening without a kind opens any kind; create=True never changes an existing kind.
    assert root.mount("m").kind == kind
    with pytest.raises(MemoryStoreError) as err:
        root.mount("m", create=True, kind="file")
    assert err.value.code == "wrong_kind"


def test_a_mount_made_before_kinds_existed_is_a_file_mount(tmp_path):
    root = Root(tmp_path)
    root.mount("old", create=True)
    subprocess.run(["git", "config", "--file", str(tmp_path / "old.git" / "config"), "--unset", "gitmem.kind"], check=True)
    assert root.mount("old", kind="file").kind == "file"


def test_an_unknown_kind_is_refused_at_init_and_a_bad_config_value_is_named(tmp_path):
    with pytest.raises(MemoryStoreError) as err:
        GitFileStore.init(tmp_path / "x.git", kind="folder")  # type: ignore[arg-type]
    assert err.value.code == "invalid_path"
    root = Root(tmp_path)
    root.mount("m", create=True)
    subprocess.run(["git", "config", "--file", str(tmp_path / "m.git" / "config"), "gitmem.kind", "recrod"], check=True)
    with pytest.raises(MemoryStoreError) as err:
        root.mount("m").kind  # noqa: B018
    assert err.value.code == "unavailable"
    assert "recrod" in err.value.message
