"""The file rules as the stores apply them: size, text, frontmatter, secrets, capacity, lowered limits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from contract.support import Subject, error_of, git, new_subject
from gitmem import FileFormat, GitFileStore
from gitmem.fileformat import KIB


def test_a_file_over_the_size_limit_is_too_large(store: Subject) -> None:
    assert store.create("max.md", "x" * (64 * KIB)) is not None
    exc = error_of(store.create, "big.md", "x" * (64 * KIB + 1))
    assert exc.code == "too_large"
    # the limit is in UTF-8 bytes, not characters
    assert error_of(store.create, "wide.md", "é" * (32 * KIB + 1)).code == "too_large"
    assert [e.path for e in store.list()] == ["max.md"]


def test_an_edit_over_the_size_limit_keeps_the_old_content(store: Subject) -> None:
    v = store.create("a.md", "small\n")
    assert error_of(store.write, "a.md", "x" * (64 * KIB + 1), expected=v).code == "too_large"
    assert store.read("a.md").text == "small\n"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nul \x00 inside", "NUL"),
        ("---\ndescription: never closed\n", "closed"),
        ("---\n- a list\n- not a mapping\n---\nbody\n", "mapping"),
        ("---\nkey: [unbalanced\n---\nbody\n", "YAML"),
        ("---\ndescription: " + "d" * 201 + "\n---\n", "201"),
        ("---\ndescription: ''\n---\n", "description"),
        ("---\ndescription: [1, 2]\n---\n", "description"),
        ("---\ndescription: |\n  two\n  lines\n---\n", "description"),
        ("---\nnote: " + "n" * 2100 + "\n---\n", "frontmatter"),
        ("lone \udc80 surrogate", "UTF-8"),
    ],
)
def test_malformed_content_is_invalid_file(store: Subject, text: str, needle: str) -> None:
    exc = error_of(store.create, "bad.md", text)
    assert exc.code == "invalid_file"
    assert needle in exc.message
    assert store.list() == []


def test_content_must_be_text(store: Subject) -> None:
    assert error_of(store.create, "bytes.md", b"raw").code == "invalid_file"


def test_good_frontmatter_is_accepted_and_described(store: Subject) -> None:
    store.create("a.md", "---\ndescription: Short summary\ntags: [x, y]\n---\nBody line\n")
    store.create("b.md", "---\n---\nFirst body line\n")
    store.create("c.md", "--- not a fence\nsecond\n")
    described = {e.path: e.description for e in store.list()}
    assert described == {"a.md": "Short summary", "b.md": "First body line", "c.md": "--- not a fence"}


def test_a_long_first_line_is_cut_in_the_description(store: Subject) -> None:
    store.create("a.md", "w" * 500 + "\n")
    assert store.list()[0].description == "w" * 200


SECRETS = {
    "private_key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----\n",
    "api_key_sk": "key: sk-proj-abcdefghijklmnopqrstuvwxyz012345\n",
    "github_token": "token ghp_" + "a1B2" * 9 + "\n",
    "aws_access_key": "id AKIAIOSFODNN7EXAMPLE here\n",
    "password_assignment": "db password = hunter2hunter2\n",
}


@pytest.mark.parametrize("rule", sorted(SECRETS))
def test_a_secret_is_refused_naming_its_rule(store: Subject, rule: str) -> None:
    exc = error_of(store.create, "creds.md", SECRETS[rule])
    assert exc.code == "invalid_file"
    assert f"'{rule}'" in exc.message
    assert store.list() == []


@pytest.mark.parametrize("rule", sorted(SECRETS))
def test_a_secret_edit_keeps_the_old_content(store: Subject, rule: str) -> None:
    v = store.create("notes.md", "harmless\n")
    assert error_of(store.write, "notes.md", "harmless\n" + SECRETS[rule], expected=v).code == "invalid_file"
    assert store.read("notes.md").text == "harmless\n"


def test_the_secret_check_can_be_turned_off(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(check_secrets=False))
    for rule, text in SECRETS.items():
        store.create(f"{rule}.md", text)
    assert store.files() == {f"{rule}.md": text for rule, text in SECRETS.items()}


def test_a_git_memory_keeps_its_limits_in_its_config(tmp_path: Path) -> None:
    first = new_subject("git", tmp_path, FileFormat(check_secrets=False, max_files=7))
    assert first.repo is not None
    reopened = GitFileStore.open(first.repo)
    assert reopened.format == FileFormat(check_secrets=False, max_files=7)
    assert git(first.repo, "config", "gitmem.checkSecrets").stdout.strip() == "false"


def test_max_files_makes_the_memory_full(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(max_files=2))
    va = store.create("a.md", "a\n")
    store.create("dir/b.md", "b\n")
    assert error_of(store.create, "c.md", "c\n").code == "memory_full"
    # editing and moving do not add a file
    va = store.write("a.md", "a2\n", expected=va)
    va = store.move("a.md", "moved.md", expected=va)
    store.delete("moved.md", expected=va)
    store.create("c.md", "c\n")
    assert sorted(store.files()) == ["c.md", "dir/b.md"]


def test_max_memory_bytes_makes_the_memory_full(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(max_memory_bytes=100))
    va = store.create("a.md", "a" * 60)
    assert error_of(store.create, "b.md", "b" * 41).code == "memory_full"
    vb = store.create("b.md", "b" * 40)
    assert error_of(store.write, "a.md", "a" * 61, expected=va).code == "memory_full"
    # shrinking one file makes room in another
    store.write("a.md", "a" * 10, expected=va)
    store.write("b.md", "b" * 90, expected=vb)
    assert sum(e.size for e in store.list()) == 100


def test_lowered_limits_keep_stored_files_readable_and_listable(store: Subject) -> None:
    long_description = "---\ndescription: " + "d" * 150 + "\n---\n" + "body\n" * 20
    store.create("big.md", "x" * 5000 + "\n")
    store.create("desc.md", long_description)
    store.create("creds-free.md", "first\n")
    strict = store.with_format(FileFormat(max_file_bytes=100, max_description_chars=20, max_frontmatter_bytes=16))
    assert strict.read("big.md").text == "x" * 5000 + "\n"
    assert strict.read("desc.md").text == long_description
    listing = {e.path: e for e in strict.list()}
    assert sorted(listing) == ["big.md", "creds-free.md", "desc.md"]
    assert listing["big.md"].size == 5001
    assert listing["big.md"].description == "x" * 20
    assert listing["desc.md"].description == "d" * 20  # the author's description, cut
    assert [m.path for m in strict.search("x" * 50).matches] == ["big.md"]
    # the file can still be replaced by content within the new limits, and deleted
    v = strict.write("big.md", "small\n", expected=listing["big.md"].version)
    strict.delete("big.md", expected=v)
    assert error_of(strict.create, "new.md", "y" * 101).code == "too_large"


def test_a_collision_is_invalid_path_even_in_a_full_memory(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(max_files=2, max_memory_bytes=10))
    store.create("a/x", "12345")
    store.create("b", "12345")
    assert error_of(store.create, "a", "1").code == "invalid_path"
    assert error_of(store.create, "b/y", "1").code == "invalid_path"
    assert error_of(store.create, "c", "1").code == "memory_full"
