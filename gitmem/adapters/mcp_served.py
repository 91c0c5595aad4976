"""What one token gets over ``/mcp``: its memories, its run, and replies that say where a write went.

:func:`served_server` builds the MCP server of one client session of
``gitmem serve`` (:mod:`gitmem.adapters.mcp_http` routes requests to it), every
kind the token reaches at the access it has:

- file and record memories, read-only for ``read``; a record tool uses the
  principal's own namespace unless the call names one of the token's granted
  ``namespaces`` (any other is ``forbidden``);
- the first session memory it reaches (:func:`_session_tools`);
- the first durable memory it reaches (:func:`_durable_tools`), bound to the
  namespace ``(tenant, principal, scope)``: the token's ``tenant`` (default: the
  memory's name), its principal (``default`` for a plain token) and the scope
  the request that opens the session names in ``Gitmem-Scope`` (``default``).

The tool registry decides the tools; this module only chooses the memories, the
access and the identity. What each access gets of each kind:

=========  ===============  ======================  ===========================  ====================
access     file / record    session                 durable                      where writes go
=========  ===============  ======================  ===========================  ====================
read       read tools       recall, recent, tags    recall, log                  nowhere
propose    every tool       recall, recent, tags    recall, log, propose         the proposal branch
write      every tool       + remember, dry prune   recall, log, propose         main (proposal if gated)
admin      every tool       + prune                 + activate, approve          main (proposal if gated)
=========  ===============  ======================  ===========================  ====================

A reviewer's ``durable_activate`` and ``durable_approve`` land on ``main`` even
on a review-gated memory (a decision is not proposed again), and ``durable_approve``
activates every candidate the approved run brought, whatever its tenant, scope or
principal: what is merged is what is activated, as ``gitmem durable approve`` does.

**One proposal per principal and topic.** Every change is committed with run
``<principal>/<topic>``: the topic is ``mcp`` unless the request that opens the
session names another in the ``Gitmem-Topic`` header. Where a change lands on a
proposal (always for a ``propose`` token, and for any token on a review-gated
memory), all of a principal's sessions on one topic so share one proposal branch,
``proposals/<principal>/<topic>``, which a reviewer approves once, rather than a
branch per session; a client that wants its own asks with its own topic.

**Where a write went.** A write tool's reply over ``/mcp`` carries ``branch``:
``main``, or the proposal branch (``proposals/alice/mcp``) it landed on, so a
``propose`` token's agent is never told only ``"appended"``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.tokens import Grant
from gitmem.errors import MemoryStoreError
from gitmem.git.refs import MAIN
from gitmem.git.review import PROPOSALS, check_run_id, gate_enabled, principal_run
from gitmem.model import Origin
from gitmem.root import Root
from gitmem.tools.catalog import REVIEW

if TYPE_CHECKING:
    from gitmem.tools.durable import DurableTools
    from gitmem.tools.mounts import Access
    from gitmem.tools.session import SessionTools

DEFAULT_TOPIC: Final = "mcp"
TOPIC_HEADER: Final = "HTTP_GITMEM_TOPIC"
"""The WSGI name of the ``Gitmem-Topic`` request header."""
DEFAULT_SCOPE: Final = "default"
SCOPE_HEADER: Final = "HTTP_GITMEM_SCOPE"
"""The WSGI name of the ``Gitmem-Scope`` request header: the scope of the session's durable namespace."""


@dataclass(frozen=True, slots=True)
class Route:
    """What the request opening an MCP session chose: its ``topic`` (run and proposal) and durable ``scope``.

    Sessions are kept per token and route, so two scopes of one token are two sessions.
    """

    topic: str = DEFAULT_TOPIC
    scope: str = DEFAULT_SCOPE


DEFAULT_ROUTE: Final = Route()


def _header(environ: Mapping[str, Any], key: str, label: str) -> str:
    """Header ``key`` as the client sent it: UTF-8, stripped (``""`` without one).

    A WSGI server hands header bytes over decoded as latin-1 (PEP 3333), so ``café``
    arrives as ``cafÃ©``; re-encoded, they decode as the UTF-8 a client sends.
    ``forbidden`` for bytes that are not UTF-8.
    """
    raw = str(environ.get(key, ""))
    try:
        return raw.encode("latin-1").decode("utf-8").strip()
    except UnicodeError:
        raise MemoryStoreError("forbidden", f"the {label} header is not UTF-8") from None


def session_topic(environ: Mapping[str, Any]) -> str:
    """The topic the request asks for (``Gitmem-Topic``), checked as a branch name part; ``mcp`` without one.

    ``forbidden`` (as for any run id that cannot name a proposal) for one with ``/``, spaces and the like.
    """
    topic = _header(environ, TOPIC_HEADER, "Gitmem-Topic") or DEFAULT_TOPIC
    if "/" in topic:
        raise MemoryStoreError("forbidden", f"the topic {topic[:80]!r} holds a '/': give one name such as 'billing'")
    try:
        check_run_id(principal_run("p", topic))  # as it will be, under a principal's folder
    except MemoryStoreError:
        raise MemoryStoreError(
            "forbidden",
            f"the topic {topic[:80]!r} (Gitmem-Topic) cannot name a proposal branch: "
            "use letters, digits and . _ @ + = - (no '..'), such as 'billing'",
        ) from None
    return topic


def session_route(environ: Mapping[str, Any]) -> Route:
    """The request's topic (:func:`session_topic`) and durable scope (``Gitmem-Scope``, ``default`` without one).

    A scope is checked as every durable identifier is (one line, at most 256 bytes): ``forbidden`` otherwise.
    """
    scope = _header(environ, SCOPE_HEADER, "Gitmem-Scope") or DEFAULT_SCOPE
    from gitmem.durable.namespace import check_identifier

    check_identifier("the Gitmem-Scope header", scope, code="forbidden")
    return Route(session_topic(environ), scope)


class ServedMcpServer(MemoryMcpServer):
    """A :class:`MemoryMcpServer` whose write replies say which branch the change landed on.

    ``targets`` by memory name; the durable tools name none, so theirs is ``durable_target``.
    """

    session_binds_durable = False  # a run <principal>/<topic> spans every Gitmem-Scope its sessions open

    def __init__(
        self,
        *args: Any,
        targets: Mapping[str, Callable[[], str]],
        durable_target: Callable[[], str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.targets = dict(targets)
        self.durable_target = durable_target

    def answer(self, name: str, arguments: Mapping[str, Any], request_id: object) -> dict[str, Any]:
        data = super().answer(name, arguments, request_id)
        tool = self.registry.get(name)
        memory = arguments.get("memory")
        target = self.targets.get(memory) if isinstance(memory, str) else None
        if tool is not None and tool.kind == "durable":  # a reviewer's decision always lands on main
            target = _on_main if name.removeprefix("durable_") in REVIEW else self.durable_target
        if "error" in data or tool is None or tool.effect == "read" or target is None:
            return data
        return {**data, "branch": target()}


def served_server(
    root: Root, grant: Grant, route: Route | str = DEFAULT_ROUTE, *, watched: bool = True
) -> ServedMcpServer:
    """A fresh MCP server over every memory ``grant`` reaches, committing as its principal (see the module).

    A record memory is offered in the principal's own namespace (``default`` for a
    token without one), so each person's records stay theirs in a shared memory,
    and in the namespaces the token is granted besides. ``route`` (or a topic alone):
    the session's topic and durable scope. ``watched``: the server offers
    ``resources/subscribe`` (its client has a GET event stream to be told on).
    ``not_found`` when the token reaches no memory of any kind.
    """
    if isinstance(route, str):
        route = Route(route)
    topic = route.topic
    from gitmem.records import RecordStore
    from gitmem.tools import FileMemoryCapability, FileMount
    from gitmem.tools.records import RecordMemoryCapability, RecordMount

    tag = secrets.token_hex(4)
    run = principal_run(grant.principal, topic) if grant.principal else None
    access: Access = "read" if grant.access == "read" else "write"
    files: list[FileMount] = []
    records: list[RecordMount] = []
    sessions: list[str] = []
    durables: list[tuple[str, Any]] = []
    targets: dict[str, Callable[[], str]] = {}
    for name in root.mounts():
        if not grant.reaches(name):
            continue
        try:
            store = root.mount(name)
            kind = store.kind
        except MemoryStoreError as exc:
            _unless_gone(exc)
            continue  # removed meanwhile: not offered
        if kind == "session":
            sessions.append(name)
            continue
        if kind not in ("file", "record", "durable"):
            continue
        seam: Any = store.sync
        proposing = grant.access == "propose" and run is not None
        if proposing:
            seam = seam.proposing(run)
        if kind == "durable":
            durables.append((name, seam))
            continue
        targets[name] = _target(seam, run, proposing)
        if kind == "file":
            files.append(FileMount(name, seam, access))
        else:
            own, *others = grant.record_namespaces()
            granted = tuple((ns, RecordStore(seam, ns)) for ns in others)
            records.append(RecordMount(name, RecordStore(seam, own), access, granted=granted))
    session = _session_tools(root, sorted(sessions), grant)
    durable = _durable_tools(sorted(durables, key=lambda pair: pair[0]), grant, route.scope)
    durable_target = None
    if durable is not None:
        durable_target = _target(durable[1], run, grant.access == "propose" and run is not None)
    if not files and not records and session is None and durable is None:
        raise MemoryStoreError("not_found", "this token reaches no memory on this server")
    return ServedMcpServer(
        FileMemoryCapability(files) if files else None,
        records=RecordMemoryCapability(records) if records else None,
        session=session,
        durable=durable[0] if durable is not None else None,
        origin=Origin(run_id=run, principal_id=grant.principal),
        session_tag=tag,  # every tool call id names this session: mcp-<tag>-<request id>
        watch_root=root if watched else None,
        targets=targets,
        durable_target=durable_target,
    )


def _session_tools(root: Root, names: list[str], grant: Grant) -> SessionTools | None:
    """The ``memory_session_*`` tools over the first session memory ``grant`` reaches, at its access.

    A session memory has no proposal path, so ``read`` and ``propose`` tokens get its
    read tools (recall, recent, tags) only; ``write`` also remembers and dry-runs a
    prune, ``admin`` prunes. Its tools take no memory name: one session memory per
    MCP server, the first by name when a token reaches several.
    """
    if not names:
        return None
    from gitmem.session import open_session_memory
    from gitmem.tools.session import PREFIX, READ, SessionTools

    try:
        memory = open_session_memory(root.path, mount=names[0], create=False)
    except MemoryStoreError as exc:
        _unless_gone(exc)
        return None  # removed meanwhile: not offered
    if grant.access in ("read", "propose"):
        return SessionTools(memory, tools=[PREFIX + tool for tool in sorted(READ)])
    return SessionTools(memory, allow_prune=grant.access == "admin")


def _durable_tools(memories: list[tuple[str, Any]], grant: Grant, scope: str) -> tuple[DurableTools, Any] | None:
    """The durable tools over the first durable memory ``grant`` reaches, and its store, at its access.

    The namespace is ``(tenant, principal, scope)`` (see the module docstring), so
    a token reads and proposes only in its own principal's namespaces. ``read``
    gets recall and log; ``propose`` and ``write`` propose candidates too (a
    ``propose`` token's land on its proposal branch); ``admin``, a reviewer with a
    principal, also activates (a colleague's candidates of its tenant and scope too)
    and approves. One durable memory per MCP server, as
    for session memory: the first by name.
    """
    if not memories:
        return None
    from gitmem.durable import DurableBinding, DurableRepository, Namespace
    from gitmem.tools.durable import DurableTools

    name, seam = memories[0]
    try:
        namespace = Namespace(grant.tenant or name, grant.own_namespace, scope)
        repository = DurableRepository(seam)
    except MemoryStoreError as exc:
        _unless_gone(exc)
        return None  # removed meanwhile: not offered
    tools = ["recall", "log"] if grant.access == "read" else None
    reviewer = grant.access == "admin" and grant.principal is not None
    return DurableTools(DurableBinding(repository, namespace), tools=tools, allow_activate=reviewer), seam


def _on_main() -> str:
    return MAIN[len("refs/heads/") :]


#: The codes that say a memory is not (or no longer) there: such a memory is simply not offered.
_GONE: Final = frozenset({"unknown_memory", "not_found", "memory_deleted"})


def _unless_gone(exc: MemoryStoreError) -> None:
    """Raise ``exc`` unless it says the memory is gone.

    Any other failure (a transient ``unavailable``, a namespace the token's tenant
    cannot name) surfaces, rather than the token's session silently offering less.
    """
    if exc.code not in _GONE:
        raise exc


def _target(seam: Any, run: str | None, proposing: bool) -> Callable[[], str]:
    """Where the next write through ``seam`` lands: its proposal, or ``main`` (the gate is read when asked)."""
    branch = (PROPOSALS + run)[len("refs/heads/") :] if run is not None else None
    main = MAIN[len("refs/heads/") :]

    def where() -> str:
        if branch is None:
            return main
        return branch if proposing or gate_enabled(seam.repo) else main

    return where
