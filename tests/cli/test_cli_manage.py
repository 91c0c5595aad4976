"""import, export, delete, status, config, --version: a memory's way in and out, and its settings."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from .conftest import Run, as_json

SECRET = "aws key AKIAIOSFODNN7EXAMPLE\n"


def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "people").mkdir(parents=True)
    (folder / "a.md").write_text("alpha\n")
    (folder / "people" / "bob.md").write_text("---\ndescription: Bob\n---\nlikes tea\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # a clone's metadata is skipped
    return folder


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root / "user.git"), *args], capture_output=True, text=True)


def test_import_is_one_commit_and_lists_refused_files_with_their_rule(user: Run, root: Path, tmp_path: Path) -> None:
    folder = notes(tmp_path)
    (folder / "key.md").write_text(SECRET)
    (folder / "blob.bin").write_bytes(b"\xff\xfe\x00")
    before = git(root, "rev-list", "--count", "main").stdout
    result = user("import", "user", str(folder), "--json")
    assert result.exit_code == 0, result.output
    out = as_json(result)
    assert sorted(f["path"] for f in out["imported"]) == ["a.md", "people/bob.md"]
    assert {r["path"]: r["error"] for r in out["refused"]} == {"blob.bin": "invalid_file", "key.md": "invalid_file"}
    assert all(r["path"] in r["message"] for r in out["refused"])
    assert int(git(root, "rev-list", "--count", "main").stdout) == int(before) + 1
    assert "Gitmem-Op: import" in git(root, "log", "-1", "--format=%B").stdout
    assert user("cat", "user", "people/bob.md").stdout.endswith("likes tea\n")
    assert user("cat", "user", ".git/HEAD").exit_code == 1
    assert git(root, "fsck", "--strict").returncode == 0
    again = as_json(user("import", "user", str(folder), "--json"))
    assert again["imported"] == [] and len(again["unchanged"]) == 2 and again["commit"] is None


def test_import_strict_writes_nothing_when_any_file_is_refused(user: Run, root: Path, tmp_path: Path) -> None:
    folder = notes(tmp_path)
    (folder / "key.md").write_text(SECRET)
    head = git(root, "rev-parse", "main").stdout
    result = user("import", "user", str(folder), "--strict")
    assert result.exit_code == 1
    assert "key.md [invalid_file]" in result.stderr and "nothing written" in result.stdout
    assert git(root, "rev-parse", "main").stdout == head


def test_import_over_the_file_limit_changes_nothing(user: Run, root: Path, tmp_path: Path) -> None:
    folder = notes(tmp_path)
    assert user("config", "user", "gitmem.maxFiles", "2").exit_code == 0
    head = git(root, "rev-parse", "main").stdout
    result = user("import", "user", str(folder))
    assert result.exit_code == 1 and "[memory_full]" in result.stderr
    assert "gitmem config user gitmem.maxFiles" in result.stderr
    assert git(root, "rev-parse", "main").stdout == head


def test_import_create_makes_the_memory(gm: Run, tmp_path: Path) -> None:
    folder = notes(tmp_path)
    assert gm("import", "fresh", str(folder)).exit_code == 1  # no such memory
    assert gm("import", "fresh", str(folder), "--create").exit_code == 0
    assert gm("cat", "fresh", "a.md").stdout == "alpha\n"


def test_export_folder_and_tarball_at_any_revision(user: Run, tmp_path: Path) -> None:
    user("write", "user", "later.md", "--create", input="later\n")
    out = tmp_path / "out"
    done = as_json(user("export", "user", str(out), "--json"))
    assert done["files"] == 2 and done["format"] == "folder"
    assert (out / "later.md").read_text() == "later\n"
    assert (out / "prefs" / "style.md").read_text().endswith("reply in English\n")
    assert user("export", "user", str(out)).exit_code == 1  # not an empty folder: refused
    tgz = tmp_path / "old.tar.gz"
    assert user("export", "user", str(tgz), "--rev", "main~1").exit_code == 0
    with tarfile.open(tgz) as tar:
        assert tar.getnames() == ["prefs/style.md"]
    bad = user("export", "user", str(tmp_path / "x"), "--rev", "nope")
    assert bad.exit_code == 1 and "gitmem log user" in bad.stderr


def test_export_copies_bytes_a_text_read_would_replace(user: Run, root: Path, tmp_path: Path) -> None:
    # A file pushed with plain git need not be UTF-8; export goes through the store's byte
    # seam (snapshot + raw), so the copy is exact, not the replacement characters `cat` shows.
    raw = b"caf\xe9 latin-1\n"
    (root / "user.git" / "hooks" / "pre-receive").unlink()  # as a memory made with --no-hooks
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(root / "user.git"), str(clone)], check=True)
    (clone / "latin.md").write_bytes(raw)
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "-C", str(clone), *ident, "add", "latin.md"], check=True)
    subprocess.run(["git", "-C", str(clone), *ident, "commit", "-qm", "latin"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"], check=True)
    out = tmp_path / "out"
    done = as_json(user("export", "user", str(out), "--json"))
    assert (out / "latin.md").read_bytes() == raw
    assert done["bytes"] == sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    tar = tmp_path / "out.tar"
    assert as_json(user("export", "user", str(tar), "--json"))["bytes"] == done["bytes"]
    with tarfile.open(tar) as archive:
        member = archive.extractfile("latin.md")
        assert member is not None and member.read() == raw


def test_export_then_import_round_trips(user: Run, gm: Run, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    user("export", "user", str(out))
    gm("init", "twin")
    gm("import", "twin", str(out))
    assert gm("cat", "twin", "prefs/style.md").stdout == user("cat", "user", "prefs/style.md").stdout


def test_delete_needs_yes(user: Run, root: Path) -> None:
    refused = user("delete", "user")
    assert refused.exit_code == 2 and (root / "user.git").is_dir()
    done = as_json(user("delete", "user", "--yes", "--json"))
    assert done["deleted"] is True and not (root / "user.git").exists()
    assert as_json(user("mounts", "--json"))["mounts"] == []


def test_status_shows_root_mounts_kind_head_size_review_index(user: Run, root: Path) -> None:
    user("review", "enable", "user")
    out = as_json(user("status", "--json"))
    assert out["root"] == str(root.absolute())
    (m,) = out["mounts"]
    assert m["memory"] == "user" and m["kind"] == "file" and m["files"] == 1
    assert m["head"] == git(root, "rev-parse", "main").stdout.strip()
    assert m["review"] is True and m["proposals"] == [] and m["index"] in ("missing", "current", "behind")
    text = user("status").stdout
    assert "user  file  head" in text and "review on" in text
    assert user("init", "fresh").exit_code == 0  # a new memory: no search yet, so no index
    fresh = user("status", "fresh").stdout
    assert "index not built yet" in fresh and "the next `find` builds it" in fresh
    user("find", "user", "tea")  # the first ranked search builds it
    assert as_json(user("status", "user", "--json"))["mounts"][0]["index"] == "current"
    text = user("status", "user").stdout
    assert "index current" in text and "next `find` builds" not in text


def test_config_reads_sets_checks_and_unsets_limits(user: Run) -> None:
    shown = as_json(user("config", "user", "--json"))
    assert shown["limits"]["gitmem.maxFileBytes"] == 65536 and shown["config"]["gitmem.maxFileBytes"] is None
    assert user("config", "user", "maxFileBytes", "20").exit_code == 0
    assert user("config", "user", "gitmem.maxFileBytes").stdout.strip() == "20"
    big = user("write", "user", "big.md", "--create", input="x" * 30 + "\n")
    assert big.exit_code == 1 and "gitmem config user gitmem.maxFileBytes" in big.stderr
    bad = user("config", "user", "maxFileBytes", "lots")
    assert bad.exit_code == 1 and "[invalid_file]" in bad.stderr
    assert user("config", "user", "maxFileBytes").stdout.strip() == "20"  # the bad value was not kept
    assert user("config", "user", "nosuch", "1").exit_code == 2
    assert user("config", "user", "maxFileBytes", "--unset").exit_code == 0
    assert user("write", "user", "big.md", "--create", input="x" * 30 + "\n").exit_code == 0


def test_version(gm: Run) -> None:
    result = gm("--version")
    assert result.exit_code == 0 and result.stdout.startswith("gitmem ") and "gitmem-store" in result.stdout
