"""`gitmem import --history`: an existing notes repository comes in with its commits, each checked.

And `--exclude` / `--gitignore` for a folder import (an Obsidian vault's `.obsidian/`).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from gitmem.ignorerules import ignored_by, parse

from .conftest import Run, as_json

PERSON = {
    "GIT_AUTHOR_NAME": "Ann Notes",
    "GIT_AUTHOR_EMAIL": "ann@example.com",
    "GIT_COMMITTER_NAME": "Ann Notes",
    "GIT_COMMITTER_EMAIL": "ann@example.com",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env={**os.environ, **(env or {})}
    )
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str, date: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message, env={**PERSON, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    repo = tmp_path / "notes-src"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"people/bob.md": "---\ndescription: Bob\n---\nlikes tea\n"}, "bob", "2023-05-01T09:00:00Z")
    commit(repo, {"people/bob.md": "likes green tea\n", "a.md": "alpha\n"}, "more notes", "2023-06-01T09:00:00Z")
    return repo


def log(repo: Path, rev: str = "main") -> str:
    return git(repo, "log", "--format=%H %an <%ae> %aI %s", rev)


def fsck(repo: Path) -> None:
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_history_comes_in_as_it_is_with_no_unrelated_root(gm: Run, root: Path, source: Path) -> None:
    done = gm("import", "team", "--history", str(source), "--create", "--json")
    assert done.exit_code == 0, done.output
    out = as_json(done)
    mount = root / "team.git"
    assert log(mount) == log(source)  # ids, authors and dates kept
    assert git(mount, "rev-list", "--max-parents=0", "main") == git(source, "rev-list", "--max-parents=0", "main")
    assert out["replaced_init"] is True and out["refused"] == [] and len(out["imported"]) == 2
    assert gm("cat", "team", "people/bob.md").stdout == "likes green tea\n"
    fsck(mount)
    # The source and the memory now share history: what the source gains later comes in as a fast-forward.
    commit(source, {"b.md": "beta\n"}, "beta", "2023-07-01T09:00:00Z")
    again = as_json(gm("import", "team", "--history", str(source), "--json"))
    assert again["replaced_init"] is False and len(again["imported"]) == 1 and log(mount) == log(source)
    fsck(mount)


def test_a_refused_commit_is_listed_with_file_and_rule_and_what_builds_on_it_stays_out(
    gm: Run, root: Path, source: Path
) -> None:
    good = git(source, "rev-parse", "HEAD")
    bad = commit(source, {"keys.md": "aws key AKIAIOSFODNN7EXAMPLE\n"}, "oops", "2023-08-01T09:00:00Z")
    later = commit(source, {"c.md": "gamma\n"}, "gamma", "2023-09-01T09:00:00Z")
    assert gm("init", "team").exit_code == 0
    mount = root / "team.git"
    before = (git(mount, "rev-parse", "main"), git(mount, "rev-parse", "main^{tree}"))
    strict = gm("import", "team", "--history", str(source), "--strict", "--json")
    assert strict.exit_code == 1 and "nothing imported" in as_json(strict)["message"]
    assert (git(mount, "rev-parse", "main"), git(mount, "rev-parse", "main^{tree}")) == before
    done = gm("import", "team", "--history", str(source))
    assert done.exit_code == 0, done.output
    assert f"refused keys.md in {bad[:12]} [secret:" in done.stderr
    assert "left out 1 later commit(s)" in done.stderr
    assert git(mount, "rev-parse", "main") == good and log(mount) == log(source, good)
    out = as_json(gm("import", "team", "--history", str(source), "--json"))  # again: nothing new lands
    assert out["head"] == good and out["after_refused"] == [later]
    assert [(r["commit"], r["path"]) for r in out["refused"]] == [(bad, "keys.md")]
    fsck(mount)


def test_a_memory_with_its_own_history_is_not_overwritten(gm: Run, root: Path, source: Path) -> None:
    assert gm("init", "team").exit_code == 0
    assert gm("write", "team", "mine.md", "--create", input="mine\n").exit_code == 0
    mount = root / "team.git"
    head = git(mount, "rev-parse", "main")
    done = gm("import", "team", "--history", str(source), "--json")
    assert done.exit_code == 1 and as_json(done)["error"] == "version_mismatch"
    assert git(mount, "rev-parse", "main") == head
    missing = gm("import", "team", "--history", str(root / "nowhere"), "--json")
    assert missing.exit_code == 1 and as_json(missing)["error"] == "not_found"
    assert gm("import", "team").exit_code == 2  # a DIRECTORY or --history
    fsck(mount)


def test_a_history_over_the_memory_limits_is_refused_whole(gm: Run, root: Path, source: Path) -> None:
    assert gm("init", "team").exit_code == 0
    assert gm("config", "team", "gitmem.maxFiles", "1").exit_code == 0
    head = git(root / "team.git", "rev-parse", "main")
    done = gm("import", "team", "--history", str(source), "--json")
    assert done.exit_code == 1 and as_json(done)["error"] == "memory_full"
    assert git(root / "team.git", "rev-parse", "main") == head


def vault(tmp_path: Path) -> Path:
    folder = tmp_path / "vault"
    (folder / ".obsidian").mkdir(parents=True)
    (folder / ".obsidian" / "workspace.json").write_text('{"open": []}\n')
    (folder / "daily").mkdir()
    (folder / "daily" / "2024-01-01.md").write_text("standup\n")
    (folder / "daily" / "scratch.tmp").write_text("scratch\n")
    (folder / "drafts").mkdir()
    (folder / "drafts" / "idea.md").write_text("idea\n")
    (folder / "index.md").write_text("home\n")
    (folder / "board.canvas").write_text("{}\n")
    (folder / ".gitignore").write_text("# editor state\n*.tmp\n/drafts/\n")
    return folder


def test_import_exclude_and_gitignore_leave_paths_out_and_list_them(gm: Run, root: Path, tmp_path: Path) -> None:
    folder = vault(tmp_path)
    assert gm("init", "vault").exit_code == 0
    done = gm("import", "vault", str(folder), "--exclude", ".obsidian/", "--exclude", "*.canvas", "--gitignore", "--json")
    assert done.exit_code == 0, done.output
    out = as_json(done)
    assert sorted(f["path"] for f in out["imported"]) == [".gitignore", "daily/2024-01-01.md", "index.md"]
    skipped = {s["path"]: s["reason"] for s in out["skipped"]}
    assert skipped == {
        ".obsidian/": ".obsidian/: left out by --exclude (.obsidian/)",
        "board.canvas": "board.canvas: left out by --exclude (*.canvas)",
        "daily/scratch.tmp": "daily/scratch.tmp: left out by .gitignore (*.tmp)",
        "drafts/": "drafts/: left out by .gitignore (/drafts/)",
    }
    fsck(root / "vault.git")


IGNORE_CASES = [
    ("*.tmp", "a/b/c.tmp", False, True),
    ("*.tmp", "a/b/c.md", False, False),
    ("/drafts/", "drafts", True, True),
    ("/drafts/", "drafts", False, False),  # folders only
    ("/drafts/", "a/drafts", True, False),  # anchored
    ("drafts/", "a/drafts", True, True),
    ("docs/*.md", "docs/a.md", False, True),
    ("docs/*.md", "docs/x/a.md", False, False),  # * does not cross /
    ("docs/**/a.md", "docs/x/y/a.md", False, True),
    ("**/cache", "x/cache", True, True),
    ("a?.md", "ab.md", False, True),
    ("[ab].md", "b.md", False, True),
    ("[!ab].md", "b.md", False, False),
    ("\\#hash.md", "#hash.md", False, True),
]


@pytest.mark.parametrize(("pattern", "path", "is_dir", "ignored"), IGNORE_CASES)
def test_ignore_rules_follow_gitignore(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert (ignored_by(parse([pattern]), path, is_dir) is not None) is ignored


def test_a_negated_line_keeps_a_path_and_the_last_line_wins() -> None:
    rules = parse(["*.md", "!keep.md", "# a comment", ""])
    assert ignored_by(rules, "x.md", False) is not None and ignored_by(rules, "keep.md", False) is None
    nested = parse(["*.log"], base="sub/")
    assert ignored_by(nested, "sub/a.log", False) is not None and ignored_by(nested, "a.log", False) is None


def test_ignore_rules_match_what_git_ignores(tmp_path: Path) -> None:
    # Each pattern through git check-ignore too, on a real work tree of its own.
    for n, (pattern, path, is_dir, _) in enumerate(IGNORE_CASES + MIXED_CASES):
        repo = tmp_path / f"w{n}"
        repo.mkdir()
        git(repo, "init", "-q")
        (repo / ".gitignore").write_text(pattern + "\n")
        target = repo / path
        if is_dir:
            target.mkdir(parents=True)
            (target / "f").write_text("x\n")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("x\n")
        shown = path + ("/" if is_dir else "")
        done = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", "--", shown], capture_output=True)
        assert (done.returncode == 0) is (ignored_by(parse([pattern]), path, is_dir) is not None), (pattern, path)


def test_rev_names_a_branch_of_the_source(gm: Run, root: Path, source: Path) -> None:
    main = git(source, "rev-parse", "main")
    git(source, "checkout", "-q", "-b", "drafts")
    drafts = commit(source, {"draft.md": "a draft\n"}, "draft", "2023-10-01T09:00:00Z")
    git(source, "checkout", "-q", "main")
    assert as_json(gm("import", "one", "--history", str(source), "--create", "--json"))["head"] == main
    out = as_json(gm("import", "two", "--history", str(source), "--rev", "drafts", "--create", "--json"))
    assert out["head"] == drafts and log(root / "two.git") == log(source, "drafts")
    for bad in ("main:x", "--upload-pack=x", "main~1", "nope"):
        refused = gm("import", "two", "--history", str(source), "--rev", bad, "--json")
        assert refused.exit_code == 1 and as_json(refused)["error"] == "not_found", bad
    assert git(root / "two.git", "rev-parse", "main") == drafts


def test_a_refused_import_leaves_no_memory_behind(gm: Run, root: Path, source: Path, tmp_path: Path) -> None:
    # Every way the command can refuse, found before or after --create made the memory:
    # the root is as it was, and a second try with the mistake fixed starts clean.
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "key.md").write_text("aws AKIAABCDEFGHIJKLMNOP\n")
    for args, code, exit_code in [
        (("--history", str(source), "--exclude", "drafts/*"), "usage", 2),  # --exclude needs --rewrite
        (("--history", str(tmp_path / "nowhere")), "not_found", 1),
        (("--history", str(source), "--rev", "no-such-branch"), "not_found", 1),
        ((str(tmp_path / "notes"), "--strict"), None, 1),  # every file refused, nothing written
    ]:
        result = gm("import", "notes", *args, "--create", "--json")
        assert result.exit_code == exit_code, (args, result.output)
        if code is not None:
            assert as_json(result)["error"] == code, args
        assert not (root / "notes.git").exists(), args
        assert as_json(gm("mounts", "--json"))["mounts"] == []
    missing = as_json(gm("import", "notes", "--history", str(tmp_path / "nowhere"), "--create", "--json"))
    assert "--history REPO" in missing["hint"], missing
    no_hooks = gm("import", "notes", "--history", str(source), "--no-hooks")
    assert no_hooks.exit_code == 2 and "--no-hooks" in no_hooks.stderr
    # A memory that was there before a refused import stays.
    assert gm("init", "kept").exit_code == 0
    assert gm("import", "kept", "--history", str(tmp_path / "nowhere"), "--create").exit_code == 1
    assert as_json(gm("mounts", "--json"))["mounts"] == ["kept"]


def test_a_gitignore_line_of_many_wildcards_costs_time_in_proportion_to_the_path(gm: Run, tmp_path: Path) -> None:
    # A folder (or a history) handed to import brings its own .gitignore: a line of stars
    # that cannot match made a backtracking matcher try every split of a long name, so
    # 100 bytes of .gitignore held an import for hours. The answer must not change.
    line = "*a" * 12 + "*b"
    rules = parse([line, "**/" * 12 + "z", "a**a**a**a**a**a**a**a**a**b"])
    started = time.process_time()
    for name in ("a" * 250, "a/" * 120 + "a" * 30, "x" * 250):
        assert ignored_by(rules, name, False) is None
    assert ignored_by(rules, "a" * 12 + "b", False) is not None
    assert time.process_time() - started < 2
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / ".gitignore").write_text(line + "\n")
    (folder / ("a" * 200)).write_text("kept\n")
    (folder / ("a" * 199 + "b")).write_text("left out\n")
    done = gm("import", "notes", str(folder), "--create", "--gitignore", "--json")
    assert done.exit_code == 0, done.output
    out = as_json(done)
    assert sorted(f["path"] for f in out["imported"]) == [".gitignore", "a" * 200]
    assert [s["path"] for s in out["skipped"]] == ["a" * 199 + "b"]


MIXED_CASES = [
    ("a*b*c", "axb/yc", False, False),
    ("**/a*/**/b*", "x/ay/z/bq", False, True),
    ("a/**/b", "a/b", False, True),
    ("**/x*/**/y", "q/xa/b/c/y", False, True),
    ("*/**/y", "a/y", False, True),
    ("x/**", "x/a/b", False, True),
]


@pytest.mark.parametrize(("pattern", "path", "is_dir", "ignored"), MIXED_CASES)
def test_stars_of_both_kinds_mix_as_gitignore_says(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert (ignored_by(parse([pattern]), path, is_dir) is not None) is ignored
