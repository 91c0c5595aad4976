"""The async faces (``gitmem.aio``) offer exactly the sync seam, so the two cannot drift apart."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path

import pytest

from gitmem import AsyncFileStore, FileStore, GitFileStore, InMemoryFileStore, MemoryStoreError, SyncGitFileStore
from gitmem.aio import AsyncFace, seam_of, threaded
from gitmem.model import Edit

# Members of the sync store that are no calls to run in a thread: attributes,
# constructors, and the run view (the face wraps the view it returns instead).
NOT_THREADED = {"init", "open", "for_run", "proposing", "path", "format", "kind", "index", "repo", "run"}


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    out = {}
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or name in NOT_THREADED or not inspect.isfunction(member):
            continue
        sig = inspect.signature(member)
        out[name] = sig.replace(parameters=list(sig.parameters.values())[1:])
    return out


def test_the_git_face_offers_every_public_sync_method_with_the_same_signature(tmp_path: Path) -> None:
    face = GitFileStore.init(tmp_path / "m.git")
    sync = public_methods(SyncGitFileStore)
    assert {"write", "read", "apply", "move_many", "log", "head", "purge"} <= set(sync)
    for name, signature in sync.items():
        member = inspect.getattr_static(GitFileStore, name, None)
        assert isinstance(member, threaded), f"GitFileStore.{name} is not the threaded sync method"
        assert inspect.signature(getattr(face, name)) == signature, name
        assert inspect.iscoroutinefunction(getattr(face, name)), name
    extra = {n for n, m in vars(GitFileStore).items() if isinstance(m, threaded)} - set(sync)
    assert extra == set(), f"the face offers calls the sync store lacks: {extra}"
    for name in ("path", "format", "kind", "for_run", "proposing", "init", "open"):
        assert hasattr(GitFileStore, name), name


def test_the_file_store_face_covers_the_protocol() -> None:
    wanted = {n for n in vars(FileStore) if not n.startswith("_") and callable(vars(FileStore)[n])}
    assert wanted == {n for n, m in vars(AsyncFileStore).items() if isinstance(m, threaded)}


def test_a_face_call_runs_in_a_worker_thread_and_raises_store_errors(tmp_path: Path) -> None:
    seen: list[str] = []

    class Spy(InMemoryFileStore):
        def list(self):  # type: ignore[no-untyped-def]
            seen.append(threading.current_thread().name)
            return super().list()

    face = AsyncFileStore(Spy())

    async def script() -> None:
        version = await face.write("a.md", "a\n", expected=None)
        assert (await face.read("a.md")).version == version
        assert [e.path for e in await face.list()] == ["a.md"]
        with pytest.raises(MemoryStoreError) as caught:
            await face.write("a.md", "b\n", expected=None)
        assert caught.value.code == "already_exists"

    asyncio.run(script())
    assert seen and seen[0] != threading.main_thread().name


def test_the_git_face_runs_batches_and_history(tmp_path: Path) -> None:
    face = GitFileStore.init(tmp_path / "m.git")

    async def script() -> list[str]:
        done = await face.apply([Edit("a.md", "a\n"), Edit("b.md", "b\n")], op="import")
        assert done.commit == await face.head()
        assert (await face.read("a.md", rev=done.commit)).text == "a\n"
        return [e.op for e in await face.log()]

    assert asyncio.run(script()) == ["import", "init"]


def test_seam_of_unwraps_a_face_only() -> None:
    store = InMemoryFileStore()
    assert seam_of(store) is store
    assert seam_of(AsyncFileStore(store)) is store
    assert isinstance(AsyncFileStore(store), AsyncFace)


def test_a_threaded_method_must_keep_its_name() -> None:
    with pytest.raises((TypeError, RuntimeError)):  # 3.11 wraps errors from __set_name__

        class Wrong(AsyncFace[InMemoryFileStore]):
            reader = threaded(InMemoryFileStore.read)
