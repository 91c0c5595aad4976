"""The one way async code reaches the synchronous store seam: a worker thread per call.

Everything under a store blocks (pygit2, file locks, fsync), so the seam is
synchronous (:mod:`gitmem.store`) and async callers hand each call to a thread
with :func:`call` (``asyncio.to_thread``): the event loop keeps running while
git works, and calls on different mounts run in parallel.

A typed async face over a sync class is declared with :class:`threaded`, one
line per method, so its signature and docstring are the sync method's own::

    class AsyncStore(AsyncFace[SyncStore]):
        write = threaded(SyncStore.write)     # await face.write(...) runs sync.write in a thread

:class:`AsyncFileStore` is that face over any :class:`~gitmem.store.FileStore`;
:class:`gitmem.gitstore.GitFileStore` is the face of the git store.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from gitmem.store import FileStore

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


async def call(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``fn(*args, **kwargs)`` in a worker thread and await its result (errors as raised)."""
    import asyncio  # here, not at the top: the CLI imports this module and never awaits

    return await asyncio.to_thread(fn, *args, **kwargs)


def seam_of(store: FileStore | AsyncFace[Any]) -> FileStore:
    """The sync store behind an async face (``root.mount(...)``), or ``store`` itself.

    Lets the sync consumers of the seam (the tools, the Anthropic backend) take
    what :meth:`gitmem.root.Root.mount` returns.
    """
    if isinstance(store, AsyncFace):
        inner: FileStore = store.sync
        return inner
    return store


class AsyncFace(Generic[S]):
    """An async face over one synchronous object, kept as :attr:`sync` for sync callers."""

    __slots__ = ("sync",)

    def __init__(self, sync: S) -> None:
        self.sync = sync

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.sync!r})"


class threaded(Generic[S, P, R]):
    """A method of an :class:`AsyncFace` that runs the sync method of the same name in a thread.

    ``fn`` (the sync class's function) gives the name, signature, docstring and
    types; the call goes to the face's ``sync`` object, so a subclass or any
    object with that method works.
    """

    def __init__(self, fn: Callable[Concatenate[S, P], R]) -> None:
        self.fn = fn
        self.name: str = getattr(fn, "__name__", "")
        sig = inspect.signature(fn)
        self.signature = sig.replace(parameters=list(sig.parameters.values())[1:])
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} would run {self.name}; name them alike")

    @overload
    def __get__(self, face: None, owner: type[Any]) -> threaded[S, P, R]: ...

    @overload
    def __get__(self, face: AsyncFace[S], owner: type[Any]) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(
        self, face: AsyncFace[S] | None, owner: type[Any]
    ) -> threaded[S, P, R] | Callable[P, Coroutine[Any, Any, R]]:
        if face is None:
            return self
        bound: Callable[P, R] = getattr(face.sync, self.name)

        @functools.wraps(self.fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            import asyncio  # loaded by the first call that awaits, not by importing gitmem

            return await asyncio.to_thread(bound, *args, **kwargs)

        run.__signature__ = self.signature  # type: ignore[attr-defined]
        del run.__wrapped__  # the face's own signature, without ``self``
        return run


class AsyncFileStore(AsyncFace[FileStore]):
    """Any :class:`~gitmem.store.FileStore` awaited: every call runs in a worker thread."""

    __slots__ = ()

    list = threaded(FileStore.list)
    read = threaded(FileStore.read)
    write = threaded(FileStore.write)
    move = threaded(FileStore.move)
    delete = threaded(FileStore.delete)
    changes = threaded(FileStore.changes)
    head = threaded(FileStore.head)
    purge = threaded(FileStore.purge)

