"""The store contract: two writers on one memory, and many threads on one store object."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from contract.support import Subject, error_of
from gitmem import FileText, MemoryStoreError, Origin


def test_two_writers_editing_different_files_both_remain(store: Subject) -> None:
    alice, bob = store, store.other_handle()
    store.create("prefs/language.md", "English\n")
    store.create("prefs/style.md", "short\n")
    start = store.cursor()

    lang = alice.read("prefs/language.md")
    style = bob.read("prefs/style.md")
    with ThreadPoolExecutor(2) as pool:  # both writes at once
        done = [
            pool.submit(
                alice.write, "prefs/language.md", "Chinese\n", expected=lang.version, origin=Origin(principal_id="alice")
            ),
            pool.submit(bob.write, "prefs/style.md", "long\n", expected=style.version, origin=Origin(principal_id="bob")),
        ]
        for future in done:
            future.result()
    assert store.files() == {"prefs/language.md": "Chinese\n", "prefs/style.md": "long\n"}
    assert bob.files() == store.files()
    assert store.changes(start).paths == ("prefs/language.md", "prefs/style.md")


def test_a_write_from_stale_content_fails_and_carries_the_current_file(store: Subject) -> None:
    alice, bob = store, store.other_handle()
    store.create("prefs/style.md", "- likes tea\n")
    seen_by_alice = alice.read("prefs/style.md")
    seen_by_bob = bob.read("prefs/style.md")
    new_version = alice.write("prefs/style.md", seen_by_alice.text + "- likes coffee\n", expected=seen_by_alice.version)
    exc = error_of(bob.write, "prefs/style.md", seen_by_bob.text + "- reply in Chinese\n", expected=seen_by_bob.version)
    assert exc.code == "version_mismatch"
    assert exc.current == FileText("prefs/style.md", "- likes tea\n- likes coffee\n", new_version)
    # bob redoes his edit on what he was handed, and both edits remain
    assert exc.current is not None
    bob.write("prefs/style.md", exc.current.text + "- reply in Chinese\n", expected=exc.current.version)
    assert store.read("prefs/style.md").text == "- likes tea\n- likes coffee\n- reply in Chinese\n"


def _in_threads(count: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def body(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_threads_writing_distinct_files_lose_nothing(store: Subject) -> None:
    start = store.cursor()
    per_thread = 15

    def work(i: int) -> None:
        for n in range(per_thread):
            store.create(f"t{i}/f{n:02d}.md", f"thread {i} file {n}\n")

    _in_threads(4, work)
    expected = {f"t{i}/f{n:02d}.md": f"thread {i} file {n}\n" for i in range(4) for n in range(per_thread)}
    assert store.files() == expected
    assert store.changes(start).paths == tuple(sorted(expected))
    assert store.commit_count() in (None, 1 + len(expected))


def test_threads_incrementing_one_counter_with_retry_lose_nothing(store: Subject) -> None:
    store.create("counter.txt", "0")
    acknowledged = [0] * 4

    def work(i: int) -> None:
        for _ in range(8):
            current = store.read("counter.txt")
            while True:
                try:
                    store.write("counter.txt", str(int(current.text) + 1), expected=current.version)
                except MemoryStoreError as exc:
                    assert exc.code == "version_mismatch" and exc.current is not None
                    current = exc.current
                    continue
                acknowledged[i] += 1
                break

    _in_threads(4, work)
    assert store.read("counter.txt").text == str(sum(acknowledged)) == "32"
