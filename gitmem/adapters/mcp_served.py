"""What one token gets over ``/mcp``: its memories, its run, and replies that say where a write went.

:func:`served_server` builds the MCP server of one client session of
``gitmem serve`` (:mod:`gitmem.adapters.mcp_http` routes requests to it): the
file and record memories the token reaches, read-only for ``read``; records in
the principal's own namespace; and the first session memory it reaches
(:func:`_session_tools`). The tool registry decides the tools; this module
only chooses the memories and the identity.

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
from typing import TYPE_CHECKING, Any, Final

from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.adapters.tokens import Grant
from gitmem.errors import MemoryStoreError
from gitmem.git.refs import MAIN
from gitmem.git.review import PROPOSALS, check_run_id, gate_enabled, principal_run
from gitmem.model import Origin
from gitmem.root import Root

if TYPE_CHECKING:
    from gitmem.tools.mounts import Access
    from gitmem.tools.session import SessionTools

DEFAULT_TOPIC: Final = "mcp"
TOPIC_HEADER: Final = "HTTP_GITMEM_TOPIC"
"""The WSGI name of the ``Gitmem-Topic`` request header."""


def session_topic(environ: Mapping[str, Any]) -> str:
    """The topic the request asks for (``Gitmem-Topic``), checked as a branch name part; ``mcp`` without one.

    ``forbidden`` (as for any run id that cannot name a proposal) for one with ``/``, spaces and the like.
    """
    topic = str(environ.get(TOPIC_HEADER, "")).strip() or DEFAULT_TOPIC
    if "/" in topic:
        raise MemoryStoreError("forbidden", f"the topic {topic[:80]!r} holds a '/': give one name such as 'billing'")
    check_run_id(principal_run("p", topic))
    return topic


class ServedMcpServer(MemoryMcpServer):
    """A :class:`MemoryMcpServer` whose write replies say which branch the change landed on."""

    def __init__(self, *args: Any, targets: Mapping[str, Callable[[], str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.targets = dict(targets)

    def answer(self, name: str, arguments: Mapping[str, Any], request_id: object) -> dict[str, Any]:
        data = super().answer(name, arguments, request_id)
        tool = self.registry.get(name)
        memory = arguments.get("memory")
        target = self.targets.get(memory) if isinstance(memory, str) else None
        if "error" in data or tool is None or tool.effect == "read" or target is None:
            return data
        return {**data, "branch": target()}


def served_server(root: Root, grant: Grant, topic: str = DEFAULT_TOPIC, *, watched: bool = True) -> ServedMcpServer:
    """A fresh MCP server over the file and record memories ``grant`` reaches, committing as its principal.

    A record memory is offered in the principal's own namespace (``default`` for a
    token without one), so each person's records stay theirs in a shared memory.
    ``watched``: the server offers ``resources/subscribe`` (its client has a GET
    event stream to be told on). ``not_found`` when the token reaches no such memory.
    """
    from gitmem.records import RecordStore
    from gitmem.tools import FileMemoryCapability, FileMount
    from gitmem.tools.records import RecordMemoryCapability, RecordMount

    tag = secrets.token_hex(4)
    run = principal_run(grant.principal, topic) if grant.principal else None
    access: Access = "read" if grant.access == "read" else "write"
    files: list[FileMount] = []
    records: list[RecordMount] = []
    sessions: list[str] = []
    targets: dict[str, Callable[[], str]] = {}
    for name in root.mounts():
        if not grant.reaches(name):
            continue
        try:
            store = root.mount(name)
            kind = store.kind
        except MemoryStoreError:
            continue  # removed meanwhile, or not readable: not offered
        if kind == "session":
            sessions.append(name)
            continue
        if kind not in ("file", "record"):
            continue
        seam: Any = store.sync
        proposing = grant.access == "propose" and run is not None
        if proposing:
            seam = seam.proposing(run)
        targets[name] = _target(seam, run, proposing)
        if kind == "file":
            files.append(FileMount(name, seam, access))
        else:
            records.append(RecordMount(name, RecordStore(seam, grant.principal or "default"), access))
    session = _session_tools(root, sorted(sessions), grant)
    if not files and not records and session is None:
        raise MemoryStoreError("not_found", "this token reaches no file, record or session memory on this server")
    return ServedMcpServer(
        FileMemoryCapability(files) if files else None,
        records=RecordMemoryCapability(records) if records else None,
        session=session,
        origin=Origin(run_id=run, principal_id=grant.principal),
        session_tag=tag,  # every tool call id names this session: mcp-<tag>-<request id>
        watch_root=root if watched else None,
        targets=targets,
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
    except MemoryStoreError:
        return None  # removed meanwhile, or not readable: not offered
    if grant.access in ("read", "propose"):
        return SessionTools(memory, tools=[PREFIX + tool for tool in sorted(READ)])
    return SessionTools(memory, allow_prune=grant.access == "admin")


def _target(seam: Any, run: str | None, proposing: bool) -> Callable[[], str]:
    """Where the next write through ``seam`` lands: its proposal, or ``main`` (the gate is read when asked)."""
    branch = (PROPOSALS + run)[len("refs/heads/") :] if run is not None else None
    main = MAIN[len("refs/heads/") :]

    def where() -> str:
        if branch is None:
            return main
        return branch if proposing or gate_enabled(seam.repo) else main

    return where
