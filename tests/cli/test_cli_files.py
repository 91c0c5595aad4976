"""init, mounts, ls, cat, write, edit, mv, rm, changes: what a user sees and gets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitmem import Root
from gitmem.adapters.cli.files import EDIT_RETRIES
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import Origin

from .conftest import Run, as_json


def version_of(gm: Run, name: str, path: str) -> str:
    result = gm("cat", name, path, "--json")
    assert result.exit_code == 0, result.output
    return str(as_json(result)["version"])


def test_init_is_idempotent_and_mounts_lists_it(gm: Run, root: Path) -> None:
    first = gm("init", "user", "--json")
    assert first.exit_code == 0
    assert as_json(first)["created"] is True
    again = as_json(gm("init", "user", "--json"))
    assert again["created"] is False and again["head"] == as_json(first)["head"]
    gm("init", "team")
    assert gm("mounts").stdout.split() == ["team", "user"]
    assert as_json(gm("mounts", "--json")) == {"root": str(root.absolute()), "mounts": ["team", "user"]}


def test_bad_mount_name_is_refused_with_exit_1(gm: Run) -> None:
    result = gm("init", "User_1")
    assert result.exit_code == 1
    assert "error [invalid_path]" in result.stderr


def test_write_from_stdin_then_cat_and_ls(user: Run) -> None:
    assert user("cat", "user", "prefs/style.md").stdout.endswith("- reply in English\n")
    listing = as_json(user("ls", "user", "--json"))
    assert listing["directory"] == ""
    [entry] = listing["files"]
    assert entry["path"] == "prefs/style.md" and entry["description"] == "How to answer"
    assert entry["version"] == version_of(user, "user", "prefs/style.md")
    text = user("ls", "user", "prefs").stdout
    assert "prefs/style.md" in text and entry["version"][:12] in text and "How to answer" in text


def test_write_reads_raw_utf8_bytes_from_stdin(gm: Run) -> None:
    gm("init", "user")
    body = "Réponds en français.\n中文\n"
    result = gm("write", "user", "lang.md", "--create", "--json", input=body.encode("utf-8"))
    assert result.exit_code == 0
    assert as_json(result)["changed"] is True
    assert as_json(gm("cat", "user", "lang.md", "--json"))["content"] == body
    bad = gm("write", "user", "bin.md", "--create", input=b"\xff\xfe")
    assert bad.exit_code == 1 and "invalid_file" in bad.stderr


def test_write_with_expect_replaces_and_same_content_changes_nothing(user: Run, root: Path) -> None:
    v1 = version_of(user, "user", "prefs/style.md")
    replaced = as_json(user("write", "user", "prefs/style.md", "--expect", v1, "--json", input="new\n"))
    assert replaced["previous"] == v1 and replaced["changed"] is True
    head = Root(root).mount("user").sync.head()
    same = as_json(user("write", "user", "prefs/style.md", "--expect", replaced["version"], "--json", input="new\n"))
    assert same["changed"] is False
    assert Root(root).mount("user").sync.head() == head  # no empty commit


def test_write_accepts_the_abbreviated_version_ls_prints(user: Run) -> None:
    v1 = version_of(user, "user", "prefs/style.md")
    result = user("write", "user", "prefs/style.md", "--expect", v1[:12], input="short\n")
    assert result.exit_code == 0, result.output
    assert user("cat", "user", "prefs/style.md").stdout == "short\n"


def test_stale_write_is_a_conflict_naming_the_current_version(user: Run) -> None:
    v1 = version_of(user, "user", "prefs/style.md")
    user("write", "user", "prefs/style.md", "--expect", v1, input="someone else\n")
    v2 = version_of(user, "user", "prefs/style.md")
    result = user("write", "user", "prefs/style.md", "--expect", v1, input="mine\n")
    assert result.exit_code == 1
    assert "error [version_mismatch]" in result.stderr
    assert f"--expect {v2}" in result.stderr  # says how to retry
    assert user("cat", "user", "prefs/style.md").stdout == "someone else\n"  # nothing lost

    as_script = user("write", "user", "prefs/style.md", "--expect", v1, "--json", input="mine\n")
    assert as_script.exit_code == 1
    err = as_json(as_script)
    assert set(err) == {"error", "message", "hint", "current"}
    assert err["error"] == "version_mismatch"
    assert err["current"] == {"path": "prefs/style.md", "version": v2, "size": 13, "content": "someone else\n"}


def test_create_over_an_existing_file_is_refused(user: Run) -> None:
    result = user("write", "user", "prefs/style.md", "--create", "--json", input="x\n")
    refused = as_json(result)
    assert result.exit_code == 1 and refused["error"] == "already_exists"
    version = refused["current"]["version"]
    assert "gitmem edit user prefs/style.md" in refused["hint"] and f"--expect {version}" in refused["hint"]


@pytest.mark.parametrize(
    "args",
    [
        ("write", "user", "a.md"),  # neither --create nor --expect
        ("write", "user", "a.md", "--create", "--expect", "abc"),
        ("rm", "user", "a.md"),  # --expect is required
        ("edit", "user", "a.md", "--new", "x"),
        ("edit", "user", "a.md", "--old", "", "--new", "x"),
        ("nosuchcommand",),
        ("grep", "user", "x", "--limit", "0"),
    ],
)
def test_usage_mistakes_exit_2(user: Run, args: tuple[str, ...]) -> None:
    result = user(*args, input="ignored\n")
    assert result.exit_code == 2, result.output


def test_edit_replaces_exactly_once_with_provenance(user: Run, root: Path) -> None:
    result = user(
        "edit", "user", "prefs/style.md", "--old", "English", "--new", "Chinese",
        "--principal", "alice", "--run", "run-7", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "reply in Chinese" in user("cat", "user", "prefs/style.md").stdout
    log = subprocess.run(
        ["git", "-C", str(root / "user.git"), "log", "-1",
         "--format=%an|%(trailers:key=Gitmem-Run,valueonly,separator=)|%(trailers:key=Gitmem-Tool-Call,valueonly,separator=)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert log.stdout.strip() == "alice|run-7|cli"


def test_origin_comes_from_the_environment_too(user: Run, root: Path) -> None:
    env = {"GITMEM_PRINCIPAL": "bob", "GITMEM_RUN": "nightly"}
    user("write", "user", "b.md", "--create", input="b\n", env=env)
    log = subprocess.run(
        ["git", "-C", str(root / "user.git"), "log", "-1", "--author=bob", "--format=%s"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert log.stdout.strip() == "create b.md"


@pytest.mark.parametrize(("old", "code"), [("nothing like this", "no_match"), ("- ", "ambiguous_match")])
def test_edit_needs_a_unique_match(user: Run, old: str, code: str) -> None:
    result = user("edit", "user", "prefs/style.md", "--old", old, "--new", "x", "--json")
    assert result.exit_code == 1
    err = as_json(result)
    assert err["error"] == code and "likes tea" in err["current"]["content"]


def test_edit_counts_overlapping_occurrences_as_ambiguous(gm: Run) -> None:
    gm("init", "user")
    gm("write", "user", "a.md", "--create", input="aaa\n")
    assert gm("edit", "user", "a.md", "--old", "aa", "--new", "b").exit_code == 1


def test_edit_rereads_after_a_concurrent_write(user: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Root(root).mount("user").sync
    real_write = SyncGitFileStore.write
    raced: list[str] = []

    def racing_write(
        self: SyncGitFileStore, path: str, text: str, *, expected: str | None, origin: Origin | None = None
    ) -> str:
        if not raced:  # another writer commits between the edit's read and its write
            raced.append(real_write(store, path, store.read(path).text + "- short answers\n", expected=expected))
        return real_write(self, path, text, expected=expected, origin=origin)

    monkeypatch.setattr(SyncGitFileStore, "write", racing_write)
    result = user("edit", "user", "prefs/style.md", "--old", "likes tea", "--new", "likes coffee", "--json")
    monkeypatch.undo()
    assert result.exit_code == 0, result.output
    assert raced  # the race did happen
    text = store.read("prefs/style.md").text
    assert "likes coffee" in text and "- short answers" in text  # both changes kept
    assert as_json(result)["version"] == store.read("prefs/style.md").version


def test_edit_gives_up_after_its_retries(user: Run, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Root(root).mount("user").sync
    real_write = SyncGitFileStore.write
    attempts = [0]

    def always_beaten(
        self: SyncGitFileStore, path: str, text: str, *, expected: str | None, origin: Origin | None = None
    ) -> str:
        attempts[0] += 1
        real_write(store, path, store.read(path).text + f"- note {attempts[0]}\n", expected=expected)
        return real_write(self, path, text, expected=expected, origin=origin)

    monkeypatch.setattr(SyncGitFileStore, "write", always_beaten)
    result = user("edit", "user", "prefs/style.md", "--old", "likes tea", "--new", "likes coffee", "--json")
    monkeypatch.undo()
    assert result.exit_code == 1 and attempts[0] == 1 + EDIT_RETRIES
    err = as_json(result)
    assert err["error"] == "conflict_retries_exhausted" and "- note 4" in err["current"]["content"]
    assert "likes tea" in store.read("prefs/style.md").text  # the edit wrote nothing


def test_mv_uses_the_version_just_read_and_refuses_an_existing_destination(user: Run) -> None:
    user("write", "user", "other.md", "--create", input="o\n")
    clash = user("mv", "user", "prefs/style.md", "other.md")
    assert clash.exit_code == 1 and "error [already_exists]" in clash.stderr
    moved = as_json(user("mv", "user", "prefs/style.md", "archive/style.md", "--json"))
    assert moved["destination"] == "archive/style.md"
    paths = [f["path"] for f in as_json(user("ls", "user", "--json"))["files"]]
    assert paths == ["archive/style.md", "other.md"]
    stale = user("mv", "user", "other.md", "x.md", "--expect", "0" * 40)
    assert stale.exit_code == 1 and "version_mismatch" in stale.stderr


def test_rm_needs_the_current_version(user: Run) -> None:
    v1 = version_of(user, "user", "prefs/style.md")
    assert user("rm", "user", "prefs/style.md", "--expect", "0" * 40).exit_code == 1
    done = as_json(user("rm", "user", "prefs/style.md", "--expect", v1, "--json"))
    assert done == {"memory": "user", "path": "prefs/style.md", "version": v1, "deleted": True, "proposal": None}
    gone = user("cat", "user", "prefs/style.md")
    assert gone.exit_code == 1 and "error [not_found]" in gone.stderr
    assert user("ls", "user", "prefs").exit_code == 1  # the folder went with its last file


def test_cat_at_an_older_revision(user: Run) -> None:
    first = as_json(user("changes", "user", "--json"))["cursor"]
    v1 = version_of(user, "user", "prefs/style.md")
    user("write", "user", "prefs/style.md", "--expect", v1, input="later\n")
    old = as_json(user("cat", "user", "prefs/style.md", "--rev", first, "--json"))
    assert old["version"] == v1 and old["rev"] == first
    assert user("cat", "user", "prefs/style.md", "--rev", "nope").exit_code == 1


def test_changes_gives_a_cursor_then_the_changed_paths(user: Run) -> None:
    start = as_json(user("changes", "user", "--json"))
    assert start["kind"] == "full_resync" and start["paths"] is None
    user("write", "user", "notes/a.md", "--create", input="a\n")
    delta = as_json(user("changes", "user", "--since", start["cursor"], "--json"))
    assert delta["kind"] == "changes" and delta["paths"] == ["notes/a.md"]
    text = user("changes", "user", "--since", delta["cursor"]).stdout
    assert text.strip() == f"cursor {delta['cursor']}"


def test_unknown_memory_is_unknown_memory(gm: Run) -> None:
    result = gm("ls", "nobody", "--json")
    assert result.exit_code == 1
    assert as_json(result)["error"] == "unknown_memory" and "gitmem mounts" in as_json(result)["hint"]


def test_options_work_before_the_command_too(user: Run) -> None:
    assert as_json(user("--json", "mounts"))["mounts"] == ["user"]


def test_secrets_are_refused(user: Run) -> None:
    result = user("write", "user", "k.md", "--create", input="aws AKIAABCDEFGHIJKLMNOP\n")
    assert result.exit_code == 1 and "error [invalid_file]" in result.stderr and "nothing was written" in result.stderr
