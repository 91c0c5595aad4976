"""Origin options in either position, and OS trouble reported as a store error rather than a traceback."""

from __future__ import annotations

import getpass
import shutil
import subprocess
from pathlib import Path

import pytest

from gitmem import MemoryStoreError, Root

from .conftest import Run, as_json


def trailers(root: Path, key: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root / "user.git"), "log", f"--format=%(trailers:key={key},valueonly,separator=)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


@pytest.mark.parametrize("before", [True, False], ids=["before-the-command", "after-the-command"])
def test_principal_and_run_work_on_either_side_of_the_command_name(user: Run, root: Path, before: bool) -> None:
    origin = ["--principal", "alice", "--run", "run-5"]
    command = ["write", "user", "a.md", "--create"]
    result = user(*(origin + command if before else command + origin), input="a\n")
    assert result.exit_code == 0, result.output
    assert trailers(root, "Gitmem-Principal")[0] == "alice"
    assert trailers(root, "Gitmem-Run")[0] == "run-5"


def test_a_typed_run_beats_the_environment_wherever_it_is_typed(user: Run, root: Path) -> None:
    env = {"GITMEM_RUN": "from-env", "GITMEM_PRINCIPAL": "env-person"}
    assert user("--run", "typed", "write", "user", "a.md", "--create", input="a\n", env=env).exit_code == 0
    assert trailers(root, "Gitmem-Run")[0] == "typed"
    assert trailers(root, "Gitmem-Principal")[0] == "env-person"
    assert user("write", "user", "b.md", "--create", input="b\n", env=env).exit_code == 0
    assert trailers(root, "Gitmem-Run")[0] == "from-env"


def test_a_login_name_or_principal_that_is_not_utf8_still_writes(
    user: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte that is not UTF-8 in the login name, ``$GITMEM_PRINCIPAL`` or ``--principal`` (Python
    hands it over as a lone surrogate) is written as U+FFFD: every write once failed ``unavailable``."""
    monkeypatch.setattr(getpass, "getuser", lambda: "ab\udcff")
    assert user("--json", "write", "user", "a.md", "--create", input="a\n").exit_code == 0
    typed = user(
        "--json", "write", "user", "b.md", "--create", "--principal", "z\udcfe", "--run", "r\udcfd", input="b\n"
    )
    assert typed.exit_code == 0, typed.output
    assert trailers(root, "Gitmem-Principal")[:2] == ["z\ufffd", "ab\ufffd"]
    assert trailers(root, "Gitmem-Run")[0] == "r\ufffd"


def test_approve_without_a_login_name_asks_for_principal(
    user: Run, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert user("review", "enable", "user").exit_code == 0
    assert user("write", "user", "n.md", "--create", "--run", "run-9", input="n\n").exit_code == 0

    def no_passwd_entry() -> str:
        raise KeyError("getpwuid(): uid not found: 4242")  # what Python 3.11 raises for such a user

    monkeypatch.setattr(getpass, "getuser", no_passwd_entry)
    refused = user("review", "approve", "user", "run-9")
    assert refused.exit_code == 2
    assert "--principal" in refused.output and "Traceback" not in refused.output
    approved = user("--principal", "carol", "review", "approve", "user", "run-9")
    assert approved.exit_code == 0, approved.output
    assert trailers(root, "Gitmem-Approved-By")[0] == "carol"


def test_the_demo_runs_without_the_git_command(gm: Run) -> None:
    result = gm("demo", env={"PATH": ""})
    assert result.exit_code == 0, result.output
    assert "the git command could not be run" in result.output


def test_hooks_that_cannot_be_written_are_unavailable(user: Run, root: Path) -> None:
    hooks = root / "user.git" / "hooks"
    shutil.rmtree(hooks, ignore_errors=True)
    hooks.write_text("a file where the hooks folder belongs\n")  # mkdir fails as it would on a read-only disk
    result = user("--json", "hooks", "install", "user")
    assert result.exit_code == 1
    assert as_json(result)["error"] == "unavailable" and "cannot write the hooks" in as_json(result)["message"]


def test_a_root_that_cannot_be_listed_is_unavailable(gm: Run, tmp_path: Path) -> None:
    unlistable = tmp_path / ("x" * 300)  # a name longer than the file system allows
    result = gm("--root", str(unlistable), "--json", "mounts")
    assert result.exit_code == 1
    assert as_json(result)["error"] == "unavailable"


def test_a_mount_that_cannot_be_moved_away_is_not_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = Root(tmp_path / "mem")
    root.mount("user", create=True).sync.write("a.md", "kept\n", expected=None)
    monkeypatch.setattr("os.getpid", lambda: 4242)
    blocker = root.path / ".user.git.4242.removed"  # where remove() moves the mount: occupied
    blocker.mkdir()
    (blocker / "something").write_text("x\n")
    with pytest.raises(MemoryStoreError) as caught:
        root.remove("user")
    assert caught.value.code == "unavailable"
    assert root.mount("user").sync.read("a.md").text == "kept\n"
