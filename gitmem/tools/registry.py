"""One tool shape for every memory kind, and the one place a tool call is checked and run.

File, record, session and durable memory each offer their tools as :class:`Tool`
values: the name a model calls, the permission id a host's rules name
(``memory.file.history``), the description, the JSON Schema made from the
tool's pydantic model, the access it needs and the handler. A
:class:`ToolRegistry` holds the tools of any mix of kinds in the order a model
sees them; the capabilities, the MCP server and the ``gitmem tools`` listing all
iterate that one list.

:meth:`ToolRegistry.run` is the only path from a call to a handler: the tool is
looked up (by name or permission id), the memory it names is checked, and the
arguments are validated against the tool's model *before* the handler runs, so
a call the schema refuses (60,000 tags where the schema says at most 64) never
reaches the core. :meth:`ToolRegistry.call` answers every failure in the one
JSON shape ``{"error", "message", "current"}``.

It is also where what a reply repeats of its call is bounded: a message or hint
that quotes an argument (a grep's pattern, a refused path) quotes at most
:data:`MAX_ECHO` characters of it, whichever tool and code built the text, so a
1 MB pattern does not come back as a 1 MB hint (:func:`bound_echoes`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, Generic, Literal, Protocol, TypeVar

from gitmem.errors import MemoryStoreError, MemoryToolError, situation
from gitmem.model import Origin
from gitmem.tools.mounts import check_tool_names
from gitmem.tools.schemas import schema_of, validate, with_memories

log = logging.getLogger("gitmem.tools")

Kind = Literal["file", "record", "session", "durable"]
Effect = Literal["read", "write"]
#: Every kind, in the order a model is shown their tools.
KINDS: Final[tuple[Kind, ...]] = ("file", "record", "session", "durable")

Payload = dict[str, Any]
Handler = Callable[[Any, Origin], Payload]

MAX_ECHO: Final = 200
"""The most characters of one argument a reply's message or hint repeats."""
MAX_REPLY_TEXT: Final = 2000
"""The longest message or hint a reply carries (whatever it holds: a last bound)."""
_TEXT_FIELDS: Final = ("message", "hint")
_MAX_WALK: Final = 10_000  # argument values looked at for long strings (a call's size is bounded upstream)


def _long_strings(arguments: object) -> list[str]:
    """The strings of ``arguments`` (values and keys, nested) longer than :data:`MAX_ECHO`, longest first."""
    found: set[str] = set()
    stack: list[object] = [arguments]
    seen = 0
    while stack and seen < _MAX_WALK:
        value = stack.pop()
        seen += 1
        if isinstance(value, str):
            if len(value) > MAX_ECHO:
                found.add(value)
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return sorted(found, key=len, reverse=True)


def shorten(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis and its full length, when longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def bound_echoes(text: str, arguments: object) -> str:
    """``text`` with every long argument it repeats cut to :data:`MAX_ECHO` characters, then capped whole.

    An argument is found as given, quoted as Python quotes it (``{x!r}``) or as
    JSON; a text that repeats it some other way (changed, partly) is caught by
    the overall cap of :data:`MAX_REPLY_TEXT`, which keeps its start and end.
    """
    if len(text) <= MAX_ECHO:
        return text
    import json

    for value in _long_strings(arguments):
        for form in (repr(value), json.dumps(value, ensure_ascii=False), json.dumps(value), value):
            if form in text:
                text = text.replace(form, shorten(form))
    if len(text) > MAX_REPLY_TEXT:
        marker = f"… ({len(text)} characters, most left out) …"
        keep = (MAX_REPLY_TEXT - len(marker)) // 2
        text = f"{text[:keep]}{marker}{text[-keep:]}"
    return text


def _bounded(exc: MemoryStoreError, arguments: object) -> MemoryStoreError:
    """``exc`` itself when its message is short, else the same error (class, code, file) with it bounded."""
    message = bound_echoes(exc.message, arguments)
    if message == exc.message:
        return exc
    bounded = MemoryStoreError.__new__(type(exc))
    bounded.__dict__.update(exc.__dict__)
    MemoryStoreError.__init__(bounded, exc.code, message, exc.current)  # type: ignore[arg-type]
    return bounded


def plain_failure(exc: MemoryStoreError) -> Payload:
    """The failure shape for kinds whose errors carry no file: ``current`` is null."""
    return {"error": exc.code, "message": exc.message, "current": None}


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool as a model sees it, plus what the registry needs to check and run it.

    ``parse`` turns the call's raw arguments into the validated value the
    ``handler`` takes (or raises the store error naming the bad field; a mounted
    kind's reports a wrong ``memory`` before any other problem and hands the
    handler the mount it found). ``memories`` are the mounts the tool may be used
    on (empty for kinds with no mounts). ``fail`` renders a store error in the
    JSON failure shape.
    """

    kind: Kind
    tool: str
    name: str
    permission: str
    description: str
    input_schema: dict[str, Any]
    effect: Effect
    parse: Callable[[object], Any] = field(repr=False)
    handler: Handler = field(repr=False)
    memories: tuple[str, ...] = ()
    fail: Callable[[MemoryStoreError], Payload] = field(default=plain_failure, repr=False)

    def as_json(self) -> dict[str, Any]:
        """``name``, ``description`` and ``input_schema``: the common shape of tool APIs (Anthropic's too)."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def size(self) -> int:
        """Characters of this tool's definition as a client receives it (compact JSON)."""
        import json

        return len(json.dumps(self.as_json(), ensure_ascii=False, separators=(",", ":")))


class ToolProvider(Protocol):
    """What each memory kind hands the registry: its tools and the instructions for them."""

    def offered(self) -> list[Tool]: ...

    @property
    def instructions(self) -> str: ...


def short_name(name: str, prefixes: Iterable[str], known: Iterable[str]) -> str | None:
    """``history`` for ``memory_file_history``, ``memory.file.history`` or ``history``; ``None`` otherwise."""
    for prefix in prefixes:
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name if name in set(known) else None


def chosen(names: Iterable[str] | None, known: Iterable[str], prefix: str, permission_prefix: str) -> frozenset[str]:
    """The short names out of ``known`` that ``names`` picks (any form of a name; ``None``: all of them).

    Names of other kinds' tools are ignored, so one list narrows every kind at once.
    """
    everything = frozenset(known)
    if names is None:
        return everything
    if isinstance(names, str):
        raise TypeError("tools is a collection of tool names, not one string")
    return frozenset(s for n in names if (s := short_name(n, (prefix, permission_prefix), everything)) is not None)


class ToolRegistry:
    """The tools of one agent surface, each name and permission id once, in order."""

    def __init__(self, tools: Iterable[Tool], *, instructions: str = "") -> None:
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.instructions = instructions
        self._by: dict[str, Tool] = {}
        for tool in self.tools:
            for key in (tool.name, tool.permission):
                if key in self._by:
                    raise ValueError(f"two tools are named {key!r}")
                self._by[key] = tool

    @classmethod
    def of(cls, *providers: ToolProvider | None) -> ToolRegistry:
        """The tools and instructions of every given kind (``None`` entries are skipped), in order."""
        present = [p for p in providers if p is not None]
        tools = [t for p in present for t in p.offered()]
        text = "\n\n".join(p.instructions for p in present if p.instructions)
        return cls(tools, instructions=text)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({[t.name for t in self.tools]})"

    def get(self, name: object) -> Tool | None:
        """The tool called ``name`` (its name or permission id)."""
        return self._by.get(name) if isinstance(name, str) else None

    def handles(self, name: object) -> bool:
        return self.get(name) is not None

    def size(self) -> int:
        """Characters of every definition together: what listing the tools costs a model's context."""
        return sum(t.size() for t in self.tools)

    def run(
        self,
        name: str,
        arguments: Mapping[str, Any] | object,
        *,
        tool_call_id: str | None = None,
        origin: Origin | None = None,
    ) -> Payload:
        """Check and run one call; a failure raises :class:`MemoryStoreError`.

        The order is fixed: the tool, then the memory it names (a mounted kind's
        ``parse``, :class:`MountedTools`), then every argument against the tool's
        schema, then the handler. Whatever the
        answer or the error repeats of the arguments is bounded (:func:`bound_echoes`).
        """
        try:
            payload = self._run(name, arguments, tool_call_id=tool_call_id, origin=origin)
        except MemoryStoreError as exc:
            bounded = _bounded(situation(exc), (name, arguments))
            if bounded is exc:
                raise
            raise bounded from exc.__cause__
        for key in _TEXT_FIELDS:
            text = payload.get(key)
            if isinstance(text, str) and len(text) > MAX_ECHO:
                payload[key] = bound_echoes(text, arguments)
        return payload

    def _run(
        self, name: str, arguments: Mapping[str, Any] | object, *, tool_call_id: str | None, origin: Origin | None
    ) -> Payload:
        tool = self.get(name)
        if tool is None:
            offered = ", ".join(t.name for t in self.tools) or "none"
            raise MemoryStoreError("forbidden", f"no memory tool {name!r} is offered here; the tools are {offered}")
        if isinstance(arguments, Mapping) and isinstance(arguments.get("memory"), str):
            self._check_kind(tool, arguments["memory"])  # a memory of another kind is the first thing to report
        args = tool.parse(arguments)
        who = (origin or Origin()).with_tool_call(tool_call_id)
        return tool.handler(args, who)

    def _check_kind(self, tool: Tool, memory: str) -> None:
        """``wrong_kind`` for a memory this surface serves as another kind, as the CLI and the stores say it."""
        if any(memory in t.memories for t in self.tools if t.kind == tool.kind):
            return
        other = next((t.kind for t in self.tools if memory in t.memories), None)
        if other is not None:
            raise MemoryStoreError(
                "wrong_kind",
                f"memory {memory!r} is a {other} memory; {tool.name} is a {tool.kind} tool: "
                f"use the memory_{other}_* tools for it",
            )

    def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | object,
        *,
        tool_call_id: str | None = None,
        origin: Origin | None = None,
    ) -> Payload:
        """Like :meth:`run`, but always a JSON-ready dict: failures as ``{"error", "message", "current"}``."""
        tool = self.get(name)
        fail = tool.fail if tool is not None else plain_failure
        try:
            return self.run(name, arguments, tool_call_id=tool_call_id, origin=origin)
        except MemoryStoreError as exc:
            return fail(exc)
        except Exception as exc:
            # A store outside gitmem may raise anything; the model still gets the JSON shape.
            log.warning("memory tool %s failed unexpectedly", shorten(str(name)), exc_info=exc)
            failed = MemoryStoreError("unavailable", f"the memory store failed: {type(exc).__name__}: {exc}")
            return fail(_bounded(failed, (name, arguments)))


class KindTools:
    """One memory kind's tools: which are offered, their registry (built once), and the one way a call runs.

    A kind names its tools in the order a model sees them (the keys of
    ``descriptions``), their name and permission prefixes, which of them only
    read and each one's argument model, and handles a checked call in its
    ``_<tool>`` method; every call goes through :attr:`registry`. Kinds whose
    tools act on named mounts (file, record) build on :class:`MountedTools`.
    """

    kind: ClassVar[Kind]
    prefix: ClassVar[str]
    permission_prefix: ClassVar[str]
    descriptions: ClassVar[Mapping[Any, str]]
    read: ClassVar[frozenset[str]]
    models: ClassVar[Mapping[Any, Any]]  # each tool's argument model
    tools: frozenset[str]
    _registry: ToolRegistry | None = None

    @property
    def instructions(self) -> str:
        return ""  # the tool descriptions say it all; there are no mounts to describe

    def offered(self) -> list[Tool]:
        return [self._tool(tool, ()) for tool in self.descriptions if tool in self.tools]

    def schema(self, tool: str, memories: tuple[str, ...]) -> dict[str, Any]:
        return with_memories(schema_of(self.models[tool]), memories)

    def parse(self, tool: str, arguments: object) -> Any:
        return validate(self.models[tool], arguments, label=self.prefix + tool)

    def handle(self, tool: str, args: Any, who: Origin) -> Payload:
        """Runs the kind's ``_<tool>`` method."""
        handler: Handler = getattr(self, f"_{tool}")
        return handler(args, who)

    def fail(self, exc: MemoryStoreError) -> Payload:
        return plain_failure(exc)

    def _tool(self, tool: str, memories: tuple[str, ...]) -> Tool:
        return Tool(
            kind=self.kind,
            tool=tool,
            name=self.prefix + tool,
            permission=self.permission_prefix + tool,
            description=self.descriptions[tool],
            input_schema=self.schema(tool, memories),
            effect="read" if tool in self.read else "write",
            parse=lambda arguments: self.parse(tool, arguments),
            handler=lambda args, who: self.handle(tool, args, who),
            memories=memories,
            fail=self.fail,
        )

    @property
    def registry(self) -> ToolRegistry:
        """These tools alone, as the registry that checks and runs their calls (built once)."""
        if self._registry is None:
            self._registry = ToolRegistry(self.offered(), instructions=self.instructions)
        return self._registry

    def short_name(self, name: object) -> str | None:
        """``view`` for ``memory_file_view``, ``memory.file.view`` or ``view``; ``None`` for other names."""
        if not isinstance(name, str):
            return None
        return short_name(name, (self.prefix, self.permission_prefix), self.descriptions)

    def full_name(self, name: Any) -> Any:
        """``memory_file_view`` for any name :meth:`short_name` knows; other names as they are."""
        found = self.short_name(name)
        return self.prefix + found if found is not None else name

    def handles(self, name: str) -> bool:
        return self.registry.handles(self.full_name(name))

    def call(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | object,
        *,
        tool_call_id: str | None = None,
        origin: Origin | None = None,
    ) -> Payload:
        """Run one tool call; always a JSON-ready dict, failures as ``{"error", "message", "current"}``.

        ``tool_name`` may be the tool's name, its permission id or its short name;
        the change's origin is ``origin`` with ``tool_call_id`` (default: the origin's own).
        """
        return self.registry.call(self.full_name(tool_name), arguments, **_ids(tool_call_id, origin))

    def run(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | object,
        *,
        tool_call_id: str | None = None,
        origin: Origin | None = None,
    ) -> Payload:
        """Like :meth:`call`, but a failure raises :class:`MemoryStoreError`."""
        return self.registry.run(self.full_name(tool_name), arguments, **_ids(tool_call_id, origin))


def _ids(tool_call_id: str | None, origin: Origin | None) -> dict[str, Any]:
    if tool_call_id is None and origin is not None:
        tool_call_id = origin.tool_call_id
    return {"tool_call_id": tool_call_id, "origin": origin}


class Mount(Protocol):
    """What a mounted kind needs of its mounts: a name, a store and the tools its access allows."""

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> Any: ...

    @property
    def access(self) -> str: ...

    def allows(self, tool: str) -> bool: ...


M = TypeVar("M", bound=Mount)


class MountedTools(KindTools, Generic[M]):
    """A kind whose tools act on named mounts: each tool's ``memory`` names the mounts offering it.

    :meth:`parse` looks the call's mount up once - before its other arguments, so
    a wrong memory is the first thing reported - and hands it to :meth:`handle_on`.
    """

    mounts: tuple[M, ...]

    def __init__(self, mounts: Iterable[M], tools: Iterable[str] | None) -> None:
        """``tools`` narrows the tools of every mount, by short name, tool name or permission id (unknown: ``ValueError``)."""
        if isinstance(tools, str):
            raise TypeError("tools is a collection of tool names, not one string")
        named = None if tools is None else [self.short_name(t) or t for t in tools]
        self.tools = check_tool_names(named, tuple(self.descriptions), "" if self.kind == "file" else f"{self.kind} ")
        self.mounts = tuple(mounts)
        if not self.mounts:
            raise ValueError(f"a {self.kind} memory capability needs at least one mount")
        names = [m.name for m in self.mounts]
        if len(set(names)) != len(names):
            raise ValueError(f"mount names must be unique: {names}")
        self._by_name = {m.name: m for m in self.mounts}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({[f'{m.name}:{m.access}' for m in self.mounts]})"

    def offers(self, mount: M, tool: str) -> bool:
        """Whether ``mount``'s store can serve ``tool`` at all (its access aside)."""
        return True

    def mount_tools(self, mount: M) -> tuple[str, ...]:
        return tuple(t for t in self.descriptions if t in self.tools and mount.allows(t) and self.offers(mount, t))

    def offered(self) -> list[Tool]:
        """The tools at least one mount offers; ``memory`` enumerates exactly those mounts."""
        out = []
        for tool in self.descriptions:
            memories = tuple(m.name for m in self.mounts if tool in self.mount_tools(m))
            if memories:
                out.append(self._tool(tool, memories))
        return out

    def parse(self, tool: str, arguments: object) -> tuple[Any, M]:
        memory = arguments.get("memory") if isinstance(arguments, Mapping) else None
        mount = self.mount_for(tool, memory) if isinstance(memory, str) else None
        args = super().parse(tool, arguments)
        return args, mount if mount is not None else self.mount_for(tool, args.memory)

    def handle(self, tool: str, args: Any, who: Origin) -> Payload:
        checked, mount = args
        return self.handle_on(tool, checked, mount, who)

    def handle_on(self, tool: str, args: Any, mount: M, who: Origin) -> Payload:
        raise NotImplementedError

    def mount_for(self, tool: str, memory: str) -> M:
        """The mount called ``memory``, if it holds this kind and offers ``tool``; else the error saying why not."""
        mount = self._by_name.get(memory)
        if mount is None:
            raise MemoryToolError(
                "unknown_memory", f"there is no memory {memory!r}; the memories are {', '.join(self._by_name)}"
            )
        kind = getattr(mount.store, "kind", self.kind)  # a store without kinds holds this kind
        if kind != self.kind:
            raise MemoryStoreError(
                "wrong_kind",
                f"memory {memory!r} is a {kind} memory; the {self.prefix}* tools only use {self.kind} memories",
            )
        if not mount.allows(tool):
            raise MemoryStoreError("forbidden", f"memory {memory!r} is read only; {self.prefix}{tool} cannot change it")
        if not self.offers(mount, tool):
            raise MemoryStoreError("unavailable", f"memory {memory!r} does not offer {self.prefix}{tool}")
        return mount
