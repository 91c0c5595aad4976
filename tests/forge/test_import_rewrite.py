"""`gitmem import --history --rewrite`: a real notes vault's history comes in whole.

The vault holds what a memory refuses (a PNG, a password line, a link, an
executable script, `.obsidian/`), and plain edits before and after each. Rewritten,
every plain edit comes in with its author, date and message, each rewritten commit
names its original, commits before the first refused entry keep their ids, and no
dropped blob reaches the memory's object store.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .support import GITMEM, as_json, commit, fsck, git, gitmem, has_object

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
SECRET = "password: hunter2hunter2\n"


class Vault:
    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "vault"
        git("init", "-q", "-b", "main", str(self.path))
        p = self.path
        self.ids = [commit(p, {"daily/mon.md": "monday\n"}, "monday", "2024-01-01T09:00:00Z")]
        self.ids.append(commit(p, {"daily/tue.md": "tuesday\n"}, "tuesday", "2024-01-02T09:00:00Z"))
        self.ids.append(
            commit(
                p,
                {".obsidian/app.json": "{}\n", "daily/mon.md": "monday, edited\n"},
                "obsidian",
                "2024-01-03T09:00:00Z",
            )
        )
        self.ids.append(
            commit(p, {"assets/logo.png": PNG, "daily/wed.md": "wednesday\n"}, "logo", "2024-01-04T09:00:00Z")
        )
        (p / "daily" / "link.md").symlink_to("mon.md")
        (p / "tool.md").write_text("# a script kept as text\n")
        (p / "tool.md").chmod(0o755)
        self.ids.append(commit(p, {"daily/thu.md": "thursday\n"}, "link and tool", "2024-01-05T09:00:00Z"))
        self.ids.append(commit(p, {"keys.md": SECRET, "daily/fri.md": "friday\n"}, "keys", "2024-01-06T09:00:00Z"))
        self.ids.append(
            commit(
                p, {".obsidian/app.json": '{"theme": 1}\n', "daily/sat.md": "saturday\n"}, "sat", "2024-01-07T09:00:00Z"
            )
        )
        self.ids.append(commit(p, {"keys.md": None, "assets/logo.png": None}, "cleanup", "2024-01-08T09:00:00Z"))
        self.ids.append(
            commit(
                p,
                {"daily/sun.md": "sunday\n"},
                "sunday\n\nSigned-off-by: Ann Notes <ann@example.com>",
                "2024-01-09T09:00:00Z",
            )
        )
        self.logo = git("rev-parse", f"{self.ids[3]}:assets/logo.png", cwd=p)
        self.secret = git("rev-parse", f"{self.ids[5]}:keys.md", cwd=p)
        self.obsidian = git("rev-parse", f"{self.ids[6]}:.obsidian/app.json", cwd=p)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path)


def _log(repo: Path) -> list[tuple[str, str, str, str]]:
    out = git("log", "--reverse", "--format=%an|%ae|%aI|%s", "main", cwd=repo)
    return [tuple(line.split("|")) for line in out.splitlines()]  # type: ignore[misc]


def test_without_rewrite_every_refused_commit_is_listed_and_rewrite_is_offered(vault: Vault, tmp_path: Path) -> None:
    root = tmp_path / "mem"
    done = gitmem(root, "import", "notes", "--history", str(vault.path), "--create", "--json")
    assert done.returncode == 0, done.stderr
    out = as_json(done)
    refused = {(r["commit"], r["path"], r["rule"]) for r in out["refused"]}
    assert (vault.ids[3], "assets/logo.png", "invalid_file") in refused
    assert (vault.ids[4], "daily/link.md", "file_mode") in refused and (vault.ids[4], "tool.md", "file_mode") in refused
    assert (vault.ids[5], "keys.md", "secret:password_assignment") in refused  # past the first refused commit
    assert out["head"] == vault.ids[2] and out["rewritten"] == [] and out["left_out"] == []
    text = gitmem(root, "import", "again", "--history", str(vault.path), "--create")
    assert "--rewrite brings every commit in" in text.stdout


def test_rewrite_brings_every_plain_edit_with_author_date_message_and_the_original_id(
    vault: Vault, tmp_path: Path
) -> None:
    root = tmp_path / "mem"
    done = gitmem(
        root,
        "import",
        "notes",
        "--history",
        str(vault.path),
        "--create",
        "--rewrite",
        "--exclude",
        ".obsidian/",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    out = as_json(done)
    mount = root / "notes.git"
    # Every commit came in, in order, with its author, date and message.
    assert _log(mount) == _log(vault.path)
    assert len(out["imported"]) == len(vault.ids) and out["refused"] == []
    # Every plain edit, also those after each refused entry.
    listed = git("ls-tree", "-r", "--name-only", "main", cwd=mount).splitlines()
    assert listed == [f"daily/{d}.md" for d in ("fri", "mon", "sat", "sun", "thu", "tue", "wed")] + ["tool.md"]
    assert git("show", "main:daily/mon.md", cwd=mount) == "monday, edited"
    assert git("ls-tree", "main", "tool.md", cwd=mount).startswith("100644 ")  # executable text kept as a plain file
    # Commits before the first dropped entry keep their ids; every other names its original.
    rewritten = {r["from"]: r["to"] for r in out["rewritten"]}
    assert set(rewritten) == set(vault.ids[2:])
    for original in vault.ids[:2]:
        assert has_object(mount, original) and git("merge-base", "--is-ancestor", original, "main", cwd=mount) == ""
    for original, new in rewritten.items():
        trailers = git("log", "-1", "--format=%(trailers:key=Imported-From,valueonly)", new, cwd=mount)
        assert trailers.strip() == original
    sunday = git("log", "-1", "--format=%B", "main", cwd=mount)
    assert sunday.endswith(f"Signed-off-by: Ann Notes <ann@example.com>\nImported-From: {vault.ids[-1]}")
    # What was left out is listed once, with its commit and rule, and is not in the memory at all.
    left = {(d["commit"], d["path"], d["rule"]) for d in out["left_out"]}
    assert (vault.ids[2], ".obsidian/", "excluded") in left
    assert (vault.ids[3], "assets/logo.png", "invalid_file") in left
    assert (vault.ids[4], "daily/link.md", "file_mode") in left
    assert (vault.ids[5], "keys.md", "secret:password_assignment") in left
    for blob in (vault.logo, vault.secret, vault.obsidian):
        assert not has_object(mount, blob)
    assert not git("rev-list", "--all", "--objects", cwd=mount).count(vault.logo)
    fsck(mount)
    assert gitmem(root, "fsck", "notes").returncode == 0


def test_gitignore_of_each_commit_leaves_paths_out(vault: Vault, tmp_path: Path) -> None:
    commit(vault.path, {"scratch.tmp": "draft\n"}, "a draft")  # tracked before the .gitignore came
    commit(vault.path, {".gitignore": "*.tmp\n.obsidian/\n", "daily/mon.md": "monday!\n"}, "ignore")
    root = tmp_path / "mem"
    out = as_json(
        gitmem(root, "import", "notes", "--history", str(vault.path), "--create", "--rewrite", "--gitignore", "--json")
    )
    mount = root / "notes.git"
    listed = git("ls-tree", "-r", "--name-only", "main", cwd=mount).splitlines()
    assert "scratch.tmp" not in listed and ".gitignore" in listed and not any(p.startswith(".obsidian") for p in listed)
    assert any(d["path"] == "scratch.tmp" and d["rule"] == "excluded" for d in out["left_out"])
    # Before the .gitignore existed, .obsidian/ was plain content and came in (then it left with the rule).
    assert git("ls-tree", "-r", "--name-only", out["rewritten"][0]["to"], cwd=mount).count(".obsidian/app.json") == 1
    fsck(mount)


def test_importing_again_rewrites_only_what_is_new_and_main_moves_forward(vault: Vault, tmp_path: Path) -> None:
    root = tmp_path / "mem"
    args = ("import", "notes", "--history", str(vault.path), "--rewrite", "--exclude", ".obsidian/", "--json")
    first = as_json(gitmem(root, *args, "--create"))
    commit(vault.path, {"daily/next.md": "next week\n", "photo.png": PNG}, "next")
    again = as_json(gitmem(root, *args))
    assert [r["from"] for r in again["rewritten"]] == [git("rev-parse", "HEAD", cwd=vault.path)]
    mount = root / "notes.git"
    assert git("merge-base", "--is-ancestor", first["head"], again["head"], cwd=mount) == ""
    assert git("show", "main:daily/next.md", cwd=mount) == "next week"
    fsck(mount)


def test_rewrite_flags_are_usage_errors_where_they_do_not_apply(vault: Vault, tmp_path: Path) -> None:
    root = tmp_path / "mem"
    done = gitmem(root, "import", "notes", "--history", str(vault.path), "--create", "--exclude", ".obsidian/")
    assert done.returncode == 2 and "--rewrite" in done.stderr
    (tmp_path / "folder").mkdir()
    done = gitmem(root, "import", "notes", str(tmp_path / "folder"), "--create", "--rewrite")
    assert done.returncode == 2
    assert not (root / "notes.git").exists()  # nothing half-made by a usage error


def test_a_refused_import_leaves_the_memory_unchanged(vault: Vault, tmp_path: Path) -> None:
    root = tmp_path / "mem"
    assert gitmem(root, "init", "notes").returncode == 0
    mount = root / "notes.git"
    assert gitmem(root, "write", "notes", "own.md", "--create", stdin="my own note\n").returncode == 0
    head = git("rev-parse", "main", cwd=mount)
    tree = git("rev-parse", "main^{tree}", cwd=mount)
    done = gitmem(root, "import", "notes", "--history", str(vault.path), "--rewrite")
    assert done.returncode == 1 and "version_mismatch" in done.stderr  # its own history: not overwritten
    assert (git("rev-parse", "main", cwd=mount), git("rev-parse", "main^{tree}", cwd=mount)) == (head, tree)
    assert not has_object(mount, vault.logo)
    fsck(mount)
    assert not [n for n in os.listdir(mount / "gitmem") if n.startswith("quarantine")]


@pytest.mark.parametrize("leaf", ["files", "empty folder"])
def test_a_rewrite_of_a_tree_reaching_one_folder_at_millions_of_paths_is_refused_in_time(
    tmp_path: Path, leaf: str
) -> None:
    # Each of 24 levels names the folder below twice: 2 ** 25 files in 50 objects. The rewrite
    # walked each commit's tree path by path and never finished; the plain import refused it.
    # With an empty folder at the bottom there is no file to count, and as many paths to walk.
    source = tmp_path / "source"
    git("init", "-q", "-b", "main", str(source))

    def plumb(*args: str, given: str = "") -> str:
        out = subprocess.run(["git", *args], cwd=source, input=given, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    blob = plumb("hash-object", "-w", "--stdin", given="x\n")
    files = f"100644 blob {blob}\ta.md\n100644 blob {blob}\tb.md\n"
    tree = plumb("mktree", given=files if leaf == "files" else "")
    for _ in range(24):
        tree = plumb("mktree", given=f"040000 tree {tree}\ta\n040000 tree {tree}\tb\n")
    seed = git("commit-tree", plumb("mktree", given=f"100644 blob {blob}\tseed.md\n"), "-m", "seed", cwd=source)
    top = plumb("mktree", given=f"100644 blob {blob}\tseed.md\n040000 tree {tree}\tbomb\n")
    git("update-ref", "refs/heads/main", git("commit-tree", top, "-p", seed, "-m", "many", cwd=source), cwd=source)
    root = tmp_path / "mem"
    done = subprocess.run(
        [GITMEM, "import", "notes", "--history", str(source), "--create", "--rewrite"],
        capture_output=True, text=True, env={**os.environ, "GITMEM_ROOT": str(root)}, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "memory_full" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (root / "notes.git").exists()  # --create made nothing: the import was refused whole


def test_a_historys_gitignore_leaves_out_what_git_leaves_out_in_that_commit(vault: Vault, tmp_path: Path) -> None:
    # A pushed or imported history brings its own .gitignore: "\f" is no line end to git, so
    # "keep\fme" names one file and neither "keep" nor "me"; "x[ab" is an unclosed class git
    # matches nothing with; "\u00e9?" is the two bytes of "\u00e9" and one more (git matches bytes).
    names = ["keep", "me", "x[ab", "\u00e9a", "\u00e9"]
    (vault.path / ".gitignore").write_text("keep\fme\nx[ab\n\u00e9?\n")
    for name in names:
        (vault.path / name).write_text("text\n")
    git("add", "-f", "--", ".gitignore", *names, cwd=vault.path)  # tracked whatever the rules say
    git("commit", "-qm", "odd lines", cwd=vault.path)
    ignored = {
        n
        for n in names
        if subprocess.run(["git", "check-ignore", "-q", "--no-index", n], cwd=vault.path).returncode == 0
    }
    assert ignored == {"\u00e9a"}  # git's verdict
    root = tmp_path / "mem"
    done = gitmem(
        root, "import", "notes", "--history", str(vault.path), "--create", "--rewrite", "--gitignore", "--json"
    )
    assert done.returncode == 0, done.stderr
    listed = set(
        git("-c", "core.quotePath=false", "ls-tree", "-r", "--name-only", "main", cwd=root / "notes.git").split("\n")
    )
    assert {n for n in names if n not in listed} == ignored, sorted(listed)
