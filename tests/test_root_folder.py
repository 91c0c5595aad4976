"""``Root`` names its folder as pathlib would, without importing pathlib for the usual paths.

``gitmem.root.absolute_folder`` replaces ``str(Path(p).expanduser().absolute())`` on a
CLI read's path; these tests hold the two to the same string for any path, relative
or absolute, with repeated slashes, ``.``, ``..`` and a leading ``//``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.config import default_root, default_root_folder
from gitmem.errors import MemoryStoreError
from gitmem.root import Root, absolute_folder

PARTS = st.sampled_from(["", ".", "..", "a", "b c", "x.git", "~", "~x", "é", "-", "..."])
PATHS = st.lists(PARTS, max_size=6).map("/".join) | st.lists(PARTS, max_size=6).map(lambda p: "/" + "/".join(p))


def pathlib_spelling(path: str) -> str | type[Exception]:
    try:
        return str(Path(path).expanduser().absolute())
    except RuntimeError:  # ~name of a user that does not exist
        return RuntimeError


def our_spelling(path: str) -> str | type[Exception]:
    try:
        return absolute_folder(path)
    except RuntimeError:
        return RuntimeError


@settings(max_examples=400, deadline=None)
@given(PATHS)
def test_any_path_is_spelled_as_pathlib_spells_it(path: str) -> None:
    assert our_spelling(path) == pathlib_spelling(path)


@pytest.mark.parametrize(
    "path", ["", ".", "/", "//", "///", "//a//b/", "/a/./b/../c/", "a", "./a/", "~", "~/x/../y", "../..", "a\nb"]
)
def test_edge_paths(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_folder(path) == str(Path(path).expanduser().absolute())
    root = Root(path)
    assert root.path == Path(path).expanduser().absolute()
    assert root.mount_folder("user") == str(root.mount_path("user"))
    assert repr(root) == f"Root({str(root.path)!r})"


def test_from_the_root_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    assert absolute_folder("a//b/.") == "/a/b"
    assert Root("x").mount_folder("user") == "/x/user.git"


def test_existing_folder_is_existing(tmp_path: Path) -> None:
    root = Root(tmp_path)
    root.mount("user", create=True)
    assert root.existing_folder("user") == str(root.existing("user")) == os.fspath(tmp_path / "user.git")
    with pytest.raises(MemoryStoreError) as missing:
        root.existing_folder("nope")
    assert missing.value.code == "unknown_memory" and str(tmp_path) in missing.value.message
    with pytest.raises(MemoryStoreError):
        root.existing_folder("Bad")


@pytest.mark.parametrize(
    "env",
    [{"GITMEM_ROOT": "~/mem"}, {"GITMEM_ROOT": "rel//root/"}, {"XDG_DATA_HOME": "/data/"}, {"XDG_DATA_HOME": ""}, {}],
)
def test_the_default_root_folder_is_the_default_root(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITMEM_ROOT", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert Root(default_root_folder()).path == Root(default_root()).path


def test_root_without_a_folder_is_the_clis_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from gitmem.adapters.cli import cli
    from gitmem.root import Root

    monkeypatch.setenv("GITMEM_ROOT", str(tmp_path / "env-root"))
    store = Root().mount("user", create=True)
    store.sync.write("a.md", "from python\n", expected=None)
    assert Root().path == tmp_path / "env-root"
    listed = CliRunner().invoke(cli, ["ls", "user"], catch_exceptions=False)
    assert listed.exit_code == 0 and "a.md" in listed.output
    monkeypatch.delenv("GITMEM_ROOT")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert Root().path == tmp_path / "xdg" / "gitmem"
