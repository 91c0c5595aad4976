"""A folder import after ``forget``: the file holding erased text is refused and listed, the rest comes in.

The write refuses erased content for the whole batch; an import checks each file first
(:func:`gitmem.exchange.scan_for`), so one erased note among many is handled as every
other refused file is: listed with its rule, left out, everything else imported (with
``--strict``: nothing written, and the memory is exactly as it was).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import Run, as_json

ERASED = "Dana's phone: 555-0142\n"


def git(mount: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={mount}", *args], capture_output=True, text=True, check=True).stdout


def forgot(gm: Run) -> None:
    assert gm("init", "user").exit_code == 0
    assert gm("write", "user", "people/dana.md", "--create", input=ERASED).exit_code == 0
    assert gm("write", "user", "notes/old.md", "--create", input="old\n").exit_code == 0
    assert gm("forget", "user", "people/dana.md", "--yes").exit_code == 0


def folder(tmp_path: Path) -> Path:
    top = tmp_path / "vault"
    (top / "people").mkdir(parents=True)
    (top / "people" / "dana.md").write_text(ERASED)  # the erased text at its old path
    (top / "copy-of-dana.md").write_text(ERASED)  # and under another name: refused by content
    (top / "people" / "erin.md").write_text("Erin likes tea\n")
    (top / "a.md").write_text("alpha\n")
    (top / "key.md").write_text("AKIAABCDEFGHIJKLMNOP\n")  # refused by another rule, as before
    return top


def test_the_erased_file_is_refused_and_listed_and_the_rest_is_imported(gm: Run, root: Path, tmp_path: Path) -> None:
    forgot(gm)
    done = gm("import", "user", str(folder(tmp_path)), "--json")
    assert done.exit_code == 0, done.output
    out = as_json(done)
    refused = {r["path"]: r for r in out["refused"]}
    assert set(refused) == {"people/dana.md", "copy-of-dana.md", "key.md"}
    for path in ("people/dana.md", "copy-of-dana.md"):
        assert refused[path]["error"] == "forbidden" and "erased" in refused[path]["message"]
    assert sorted(i["path"] for i in out["imported"]) == ["a.md", "people/erin.md"]
    assert gm("cat", "user", "people/erin.md").stdout == "Erin likes tea\n"
    assert gm("cat", "user", "people/dana.md").exit_code == 1
    assert gm("cat", "user", "copy-of-dana.md").exit_code == 1
    mount = root / "user.git"
    assert ERASED.strip() not in git(mount, "log", "--all", "-p")
    assert subprocess.run(["git", f"--git-dir={mount}", "fsck", "--strict"]).returncode == 0


def test_the_text_report_lists_the_erased_file(gm: Run, tmp_path: Path) -> None:
    forgot(gm)
    done = gm("import", "user", str(folder(tmp_path)))
    assert done.exit_code == 0
    assert "refused copy-of-dana.md [forbidden]: copy-of-dana.md: erased:" in done.stderr
    assert "refused people/dana.md [forbidden]" in done.stderr
    assert "imported 2 file(s) into 'user' (0 unchanged, 3 refused)" in done.stdout


def test_strict_writes_nothing_and_the_memory_stays_as_it_was(gm: Run, root: Path, tmp_path: Path) -> None:
    forgot(gm)
    mount = root / "user.git"
    before = git(mount, "rev-parse", "main", "main^{tree}")
    done = gm("import", "user", str(folder(tmp_path)), "--strict", "--json")
    assert done.exit_code == 1
    assert {r["path"] for r in as_json(done)["refused"]} == {"people/dana.md", "copy-of-dana.md", "key.md"}
    assert git(mount, "rev-parse", "main", "main^{tree}") == before
    assert subprocess.run(["git", f"--git-dir={mount}", "fsck", "--strict"]).returncode == 0


def test_a_folder_holding_only_erased_text_changes_nothing(gm: Run, root: Path, tmp_path: Path) -> None:
    forgot(gm)
    mount = root / "user.git"
    before = git(mount, "rev-parse", "main", "main^{tree}")
    only = tmp_path / "only"
    only.mkdir()
    (only / "dana.md").write_text(ERASED)
    done = gm("import", "user", str(only), "--json")
    assert done.exit_code == 0
    out = as_json(done)
    assert out["commit"] is None and out["imported"] == [] and [r["path"] for r in out["refused"]] == ["dana.md"]
    assert git(mount, "rev-parse", "main", "main^{tree}") == before
