"""The store contract: list, read and write, including every compare-and-swap outcome."""

from __future__ import annotations

from contract.support import Subject, error_of
from gitmem import FileEntry, FileText, MemoryStoreError
from gitmem.model import blob_version


def test_a_new_memory_is_empty(store: Subject) -> None:
    assert store.list() == []
    assert store.search("anything").matches == ()


def test_create_returns_the_blob_id_and_the_file_reads_back(store: Subject) -> None:
    text = "Reply in Chinese.\n"
    version = store.write("prefs/language.md", text, expected=None)
    assert version == blob_version(text.encode())
    assert store.read("prefs/language.md") == FileText("prefs/language.md", text, version)


def test_list_gives_path_version_size_and_description_in_path_order(store: Subject) -> None:
    v1 = store.create("b.md", "---\ndescription: The b file\n---\nbody\n")
    v2 = store.create("a/z.md", "\n\n  first line  \nsecond\n")
    v3 = store.create("a/y.md", "")
    v4 = store.create("c.md", "héllo wörld\n")
    assert store.list() == [
        FileEntry("a/y.md", v3, 0, None),
        FileEntry("a/z.md", v2, len("\n\n  first line  \nsecond\n"), "first line"),
        FileEntry("b.md", v1, len("---\ndescription: The b file\n---\nbody\n"), "The b file"),
        FileEntry("c.md", v4, len("héllo wörld\n".encode()), "héllo wörld"),
    ]


def test_read_of_a_missing_file_or_a_folder_is_not_found(store: Subject) -> None:
    store.create("notes/a.md", "a\n")
    assert error_of(store.read, "nope.md").code == "not_found"
    assert error_of(store.read, "notes").code == "not_found"
    assert error_of(store.read, "notes/a.md/deeper").code == "not_found"


def test_cas_edit_succeeds_at_the_current_version(store: Subject) -> None:
    v1 = store.create("a.md", "one\n")
    v2 = store.write("a.md", "two\n", expected=v1)
    assert v2 != v1
    assert store.read("a.md") == FileText("a.md", "two\n", v2)


def test_stale_expected_fails_and_carries_the_current_file(store: Subject) -> None:
    v1 = store.create("a.md", "one\n")
    v2 = store.write("a.md", "two\n", expected=v1)
    exc = error_of(store.write, "a.md", "three\n", expected=v1)
    assert exc.code == "version_mismatch"
    assert exc.current == FileText("a.md", "two\n", v2)
    assert store.read("a.md").text == "two\n"


def test_create_over_an_existing_file_fails_with_the_current_file(store: Subject) -> None:
    v1 = store.create("a.md", "one\n")
    exc = error_of(store.write, "a.md", "other\n", expected=None)
    assert exc.code == "already_exists"
    assert exc.current == FileText("a.md", "one\n", v1)


def test_expecting_a_version_of_a_missing_file_is_not_found(store: Subject) -> None:
    exc = error_of(store.write, "a.md", "x\n", expected=blob_version(b"x\n"))
    assert exc.code == "not_found"
    assert exc.current is None
    assert store.list() == []


def test_a_deleted_file_cannot_be_edited_at_its_old_version(store: Subject) -> None:
    v1 = store.create("a.md", "one\n")
    store.delete("a.md", expected=v1)
    exc = error_of(store.write, "a.md", "two\n", expected=v1)
    assert exc.code == "not_found" and exc.current is None


def test_writing_the_same_content_is_a_no_op(store: Subject) -> None:
    v1 = store.create("a.md", "same\n")
    cursor = store.cursor()
    head = store.head()
    assert store.write("a.md", "same\n", expected=v1) == v1
    assert store.cursor() == cursor
    assert store.head() == head  # git: no empty commit
    assert store.changes(cursor).paths == ()


def test_each_change_is_one_commit(git_store: Subject) -> None:
    store = git_store
    v = store.create("a.md", "1\n")
    v = store.write("a.md", "2\n", expected=v)
    v = store.move("a.md", "b.md", expected=v)
    store.delete("b.md", expected=v)
    assert store.commit_count() == 5  # the root commit and four changes


def test_a_version_that_is_not_a_string_is_a_mismatch(store: Subject) -> None:
    store.create("a.md", "1\n")
    exc = error_of(store.write, "a.md", "2\n", expected=12345)  # type: ignore[arg-type]
    assert exc.code == "version_mismatch"
    assert exc.current is not None and exc.current.text == "1\n"


def test_paths_are_stored_in_nfc(store: Subject) -> None:
    decomposed = "cafe\u0301.md"
    version = store.create(decomposed, "x\n")
    assert [e.path for e in store.list()] == ["caf\u00e9.md"]
    assert store.read("caf\u00e9.md").version == version
    assert store.read(decomposed).path == "caf\u00e9.md"


def test_file_and_folder_cannot_share_a_path(store: Subject) -> None:
    store.create("notes/a.md", "a\n")
    store.create("top.md", "t\n")
    assert error_of(store.write, "notes", "x\n", expected=None).code == "invalid_path"
    assert error_of(store.write, "top.md/child.md", "x\n", expected=None).code == "invalid_path"
    assert [e.path for e in store.list()] == ["notes/a.md", "top.md"]


def test_text_round_trips_exactly(store: Subject) -> None:
    text = "crlf\r\nno newline at end\ttab ✓ 𝄞 \u2028inside"
    version = store.create("t.md", text)
    assert store.read("t.md") == FileText("t.md", text, version)


def test_a_store_error_has_a_code_and_a_message(store: Subject) -> None:
    exc = error_of(store.read, "missing.md")
    assert isinstance(exc, MemoryStoreError)
    assert exc.code == "not_found" and "missing.md" in exc.message
