"""export and import handed hostile input: crafted trees, links, FIFOs, sockets, huge sparse files.

Each class of input is tried end to end; afterwards the memory is unchanged (same head,
same tree) where the input was refused, and ``git fsck --strict`` is clean.
"""

from __future__ import annotations

import binascii
import json
import os
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from .conftest import Run, as_json


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def fsck(repo: Path) -> None:
    done = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def raw_tree(repo: Path, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object written as given (git's own tools refuse these names), as its hex id."""
    data = b"".join(mode.encode() + b" " + name + b"\0" + binascii.unhexlify(oid) for mode, name, oid in entries)
    return git(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=data)


def crafted_commit(repo: Path) -> tuple[str, list[str]]:
    """A commit whose tree names ``..``, ``a/../..``, ``.git`` and ``ok.md``; its id and every object it added."""
    blob = git(repo, "hash-object", "-w", "--stdin", data=b"planted\n")
    inner = raw_tree(repo, [("100644", b"x", blob)])
    up1 = raw_tree(repo, [("40000", b"..", inner)])
    up2 = raw_tree(repo, [("40000", b"..", up1)])
    dot_git = raw_tree(repo, [("100644", b"config", blob)])
    top = raw_tree(
        repo,
        [
            ("40000", b"..", inner),
            ("40000", b".git", dot_git),
            ("40000", b"a", up2),
            ("120000", b"link.md", blob),  # a symbolic link: never exported as a file or a link
            ("100644", b"ok.md", blob),
        ],
    )
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@e"
    commit = subprocess.run(
        ["git", "-C", str(repo), "commit-tree", top, "-m", "crafted"], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    return commit, [blob, inner, up1, up2, dot_git, top, commit]


def drop_objects(repo: Path, ids: list[str]) -> None:
    """Delete the crafted loose objects again, so fsck judges what gitmem wrote."""
    for oid in ids:
        (repo / "objects" / oid[:2] / oid[2:]).unlink(missing_ok=True)


def state(repo: Path) -> tuple[str, str]:
    return git(repo, "rev-parse", "main"), git(repo, "rev-parse", "main^{tree}")


@pytest.mark.parametrize("target", ["out", "out.tar", "out.tar.gz"])
def test_export_of_a_crafted_tree_writes_nothing_outside_and_lists_each_bad_entry(
    user: Run, root: Path, tmp_path: Path, target: str
) -> None:
    repo = root / "user.git"
    before = state(repo)
    commit, added = crafted_commit(repo)
    work = tmp_path / "deep" / "er"
    work.mkdir(parents=True)
    destination = work / target
    result = user("export", "user", str(destination), "--rev", commit, "--json")
    assert result.exit_code == 0, result.output
    out = as_json(result)
    assert out["files"] == 1
    refused = {r["path"]: r["error"] for r in out["refused"]}
    assert refused == {
        "'../x'": "invalid_path",
        "'.git/config'": "invalid_path",
        "'a/../../x'": "invalid_path",
        "'link.md'": "invalid_file",
    }
    # Nothing escaped: the only thing under tmp_path besides the memory is the export itself.
    assert not (work / "x").exists() and not (tmp_path / "deep" / "x").exists()
    assert sorted(p.name for p in work.iterdir()) == [target]
    if destination.is_dir():
        assert sorted(str(p.relative_to(destination)) for p in destination.rglob("*")) == ["ok.md"]
    else:
        with tarfile.open(destination) as tar:
            assert tar.getnames() == ["ok.md"]
    assert state(repo) == before
    drop_objects(repo, added)
    fsck(repo)


def test_export_refuses_a_destination_that_is_a_link(user: Run, root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "out"
    link.symlink_to(elsewhere)
    result = user("export", "user", str(link))
    assert result.exit_code == 1 and "[already_exists]" in result.stderr and "symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == [] and link.is_symlink()
    tar_link = tmp_path / "out.tar"
    tar_link.symlink_to(elsewhere / "planted.tar")
    assert user("export", "user", str(tar_link)).exit_code == 1
    assert list(elsewhere.iterdir()) == []
    # The sibling folders an export writes through are its own: nothing left over.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "mem", "out", "out.tar"]
    fsck(root / "user.git")


def run_cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI in its own process (a FIFO that blocked would time it out)."""
    code = "from gitmem.adapters.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, "--root", str(root), *args], capture_output=True, text=True, timeout=timeout
    )


def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text("alpha\n")
    (folder / "sub" / "b.md").write_text("beta\n")
    os.mkfifo(folder / "pipe")
    with open(folder / "huge.md", "wb") as f:  # 6 GiB, sparse: reading it whole would exhaust memory
        f.truncate(6 << 30)
    (folder / "link.md").symlink_to(folder / "a.md")
    (folder / "out.md").symlink_to("/etc/passwd")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return folder


def test_import_of_special_files_refuses_each_without_opening_it(user: Run, root: Path, tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock_path = folder / "sock"
    try:
        sock.bind(str(sock_path))
    except OSError:  # a path too long for AF_UNIX: the socket case is covered where it fits
        sock_path = None
    repo = root / "user.git"
    before = state(repo)
    try:
        strict = run_cli(root, "import", "user", str(folder), "--strict", "--json")
        assert strict.returncode == 1, strict.stderr
        assert state(repo) == before
        done = run_cli(root, "import", "user", str(folder), "--json")
    finally:
        sock.close()
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert sorted(f["path"] for f in out["imported"]) == ["a.md", "sub/b.md"]
    refused = {r["path"]: (r["error"], r["message"]) for r in out["refused"]}
    assert refused["huge.md"][0] == "too_large"
    assert "FIFO" in refused["pipe"][1] and "symbolic link" in refused["link.md"][1]
    assert "symbolic link" in refused["out.md"][1]
    if sock_path is not None:
        assert "socket" in refused["sock"][1]
    assert set(refused) == {"huge.md", "pipe", "link.md", "out.md"} | ({"sock"} if sock_path else set())
    assert out["skipped"] == [{"path": ".git/", "reason": ".git/: a clone's git metadata is not memory"}]
    fsck(repo)


def test_import_text_output_lists_skipped_and_refused(user: Run, root: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("alpha\n")
    os.mkfifo(folder / "pipe")
    (folder / ".git").mkdir()
    done = run_cli(root, "import", "user", str(folder))
    assert done.returncode == 0, done.stderr
    assert "refused pipe [invalid_file]: pipe: a FIFO (named pipe)" in done.stderr
    assert "skipped .git/: a clone's git metadata is not memory" in done.stderr
    assert "imported 1 file(s)" in done.stdout
    fsck(root / "user.git")


def test_import_reads_at_most_the_limit_plus_one_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file that lies about its size (it grows after the lstat) is still read no further.
    from gitmem import exchange
    from gitmem.fileformat import FileFormat

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "grows.md").write_bytes(b"x" * 5000)
    asked: list[int] = []
    real = exchange._read_bounded

    def spy(full: Path, rel: str, limit: int, seen: os.stat_result | None = None) -> bytes:
        asked.append(limit)
        return real(full, rel, limit, seen)

    monkeypatch.setattr(exchange, "_read_bounded", spy)

    scan = exchange.scan_folder(folder, FileFormat(max_file_bytes=10_000))
    assert [p for p, _ in scan.accepted] == ["grows.md"] and asked == [10_000]
    with pytest.raises(exchange.MemoryStoreError) as err:
        real(folder / "grows.md", "grows.md", 4096)
    assert err.value.code == "too_large"


def test_import_of_a_folder_nested_past_the_depth_limit_refuses_it_and_brings_the_rest(
    user: Run, root: Path, tmp_path: Path
) -> None:
    # 1,100 folders inside each other (2 bytes of path each, well within PATH_MAX): the walk
    # recursed once per level and died of a RecursionError with a traceback; a memory path
    # holds at most 128 segments, so nothing that deep could come in anyway.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("alpha\n")
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(1100):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    (folder / "e" / ("f/" * 126)).mkdir(parents=True)
    (folder / "e" / ("f/" * 126) / "o").write_text("128 segments\n")
    (folder / "e" / ("f/" * 127)).mkdir()
    (folder / "e" / ("f/" * 127) / "n").write_text("129 segments\n")
    try:
        check_deep_import(root, folder)
    finally:  # pytest's own clean-up recurses once per folder level too
        subprocess.run(["rm", "-rf", str(folder / "d")], check=True)


def check_deep_import(root: Path, folder: Path) -> None:
    repo = root / "user.git"
    before = state(repo)
    strict = run_cli(root, "import", "user", str(folder), "--strict", "--json")
    assert strict.returncode == 1, strict.stderr
    assert "Traceback" not in strict.stderr
    assert {r["error"] for r in json.loads(strict.stdout)["refused"]} == {"invalid_path"}
    assert state(repo) == before
    done = run_cli(root, "import", "user", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert sorted(f["path"] for f in out["imported"]) == ["a.md", "e/" + "f/" * 126 + "o"]
    refused = {r["path"]: r["error"] for r in out["refused"]}
    assert refused == {"d/" * 128: "invalid_path", "e/" + "f/" * 127: "invalid_path"}
    fsck(repo)
