"""A session bound to one durable namespace: recall active nodes, propose candidates.

:class:`DurableBinding` implements the two small protocols session memory
defines (:mod:`gitmem.session.binding`), so a session can be bound without
session memory knowing anything about durable memory:

- ``recall_active`` returns active nodes only, through the namespace's recall
  policy (a bad query answers nothing rather than failing the turn);
- ``propose_candidates`` writes what extraction found as **candidates**, never
  active nodes: a model's confidence does not authorise activation. Each item
  becomes a node whose id is derived from its namespace and content, so
  proposing the same text again changes nothing; its evidence is the session
  turn it came from (the uri names the session, percent-encoded; the digest is
  the redacted turn's ``turn_digest`` when extraction recorded one), and its
  source, scope, reason, tags and the relations the model suggested are kept
  as labels for the person who reviews it;
- ``admit`` re-reads the nodes a turn selected just before the model call,
  drops any that is no longer the current revision of an active node, and
  records an admission for the rest.

A binding made by :meth:`DurableBinding.for_session` also persists (see
:mod:`gitmem.durable.sessions`): its secret-free record is checked on resume
(fail closed), each model context gets a distinct persisted id
(:meth:`DurableBinding.admit_context`), and :meth:`DurableBinding.apply` fills a
change set's omitted tenant, principal and scope from the binding (explicit
ones must match it).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import quote

from gitmem.durable.changes import ChangeSet, Create, NodeDraft
from gitmem.durable.ledger import AccessEvent
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import MAX_LABEL_VALUE_BYTES, Evidence, content_digest
from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import ChangeResult, DurableRepository
from gitmem.durable.sessions import binding_record, context_id
from gitmem.errors import MemoryStoreError
from gitmem.model import Origin
from gitmem.recall.index import MAX_LIMIT
from gitmem.session.binding import ExtractedItem, RecalledNode

SCHEMA = "a3s.memory.durable.v1"


def candidate_id(namespace: Namespace, content: str) -> str:
    """The node id extraction gives ``content`` in ``namespace`` (same text, same id)."""
    key = "\x1f".join((namespace.tenant, namespace.principal, namespace.scope, " ".join(content.split()).lower()))
    return "cand-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def _label(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_LABEL_VALUE_BYTES:
        return text
    # One cut at the byte bound, moved back to a character's start, not a trim per step (an
    # extracted value of megabytes was encoded again at every step). A lone surrogate passes
    # through either way, for the node's own rule to refuse with its code.
    cut = MAX_LABEL_VALUE_BYTES
    while data[cut] & 0xC0 == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass")


class DurableBinding:
    """One namespace of a :class:`DurableRepository`, as a session sees it."""

    def __init__(
        self,
        repository: DurableRepository,
        namespace: Namespace,
        policy: RecallPolicy | None = None,
        *,
        session_id: str | None = None,
    ) -> None:
        self.repository = repository
        self.namespace = namespace
        self.policy = policy or RecallPolicy()
        self.session_id = session_id

    @classmethod
    def for_session(
        cls, repository: DurableRepository, session_id: str, namespace: Namespace, policy: RecallPolicy | None = None
    ) -> DurableBinding:
        """Bind session ``session_id`` to ``namespace``, persisting the binding's secret-free record.

        The session's first binding is recorded; binding it again (a resume, maybe in
        another process) must be equivalent - same namespace, recall policy and
        semantic identity - or fails closed with ``forbidden`` (:mod:`gitmem.durable.sessions`).
        """
        binding = cls(repository, namespace, policy, session_id=session_id)
        repository.sessions.bind(session_id, binding.record())
        return binding

    # -- the persisted binding --

    def record(self) -> dict[str, Any]:
        """This binding's secret-free record: namespace, recall policy, semantic identity."""
        p = self.policy
        policy = {
            "max_results": p.max_results,
            "min_score": float(p.min_score),
            "related_lookups": p.related_lookups,
            "semantic": p.semantic,
        }
        semantic = self.repository.semantic_recall
        return binding_record(self.namespace, policy, semantic.identity() if semantic is not None else None)

    def apply(self, change: Mapping[str, Any], *, origin: Origin | None = None) -> ChangeResult:
        """Apply a change set in this binding's namespace.

        Its omitted ``namespace`` (or omitted tenant, principal or scope) is filled
        from the binding; one it names must be the binding's (``forbidden``).
        """
        given = change.get("namespace")
        if given is None:
            given = {}
        if not isinstance(given, Mapping):
            raise MemoryStoreError("invalid_change_set", "namespace must be an object with tenant, principal and scope")
        bound = self.namespace.as_dict()
        for key, value in given.items():
            if key in bound and value != bound[key]:
                raise MemoryStoreError(
                    "forbidden", f"the change set names {key} {value!r}; this session is bound to {bound[key]!r}"
                )
        filled = dict(change)
        filled["namespace"] = {**bound, **dict(given)}
        return self.repository.apply(filled, origin=origin)

    def recall_policy(self, limit: int | None = None) -> RecallPolicy:
        """The policy one recall through this binding runs under: the host's, with at most ``limit`` results.

        Every recall made through a binding (a session turn's, the ``durable_recall``
        tool's) takes its policy here, so a caller - an agent choosing a tool
        argument - may ask for fewer results than the host's policy allows, never
        more, and never another minimum score, related reads or semantic branch.
        A limit outside 1-100 is refused (``invalid_query``) as every recall refuses
        it, never quietly raised to one.
        """
        base = self.policy
        if limit is None:
            return base
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise MemoryStoreError(
                "invalid_query", f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}"
            )
        return replace(base, max_results=min(limit, base.max_results))

    # -- gitmem.session.binding.DurableRecall --

    def recall_active(self, query: str, limit: int) -> Sequence[RecalledNode]:
        policy = self.recall_policy(limit)
        try:
            answer = self.repository.recall(self.namespace, query, policy)
        except MemoryStoreError as exc:
            if exc.code == "invalid_query":  # e.g. a prompt with no word in it: nothing to recall
                return []
            raise
        return [RecalledNode(h.node.id, h.node.revision, h.node.content, h.score) for h in answer.hits]

    # -- gitmem.session.binding.CandidateSink --

    def propose_candidates(self, items: Sequence[ExtractedItem], *, origin: Origin | None) -> Sequence[str]:
        result = self.propose(items, origin=origin)
        return [ref.rsplit("@", 1)[0] for ref in result.refs] if result is not None else []

    def propose(self, items: Sequence[ExtractedItem], *, origin: Origin | None = None) -> ChangeResult | None:
        """Write ``items`` as candidate nodes in one commit; ``None`` when every one already exists."""
        for attempt in range(3):
            ops: list[Create] = []
            seen: set[str] = set()
            for item in items:
                node_id = candidate_id(self.namespace, item.content)
                if node_id in seen or self.repository.get(self.namespace, node_id) is not None:
                    continue
                seen.add(node_id)
                ops.append(Create(self._draft(node_id, item, origin)))
            if not ops:
                return None
            # Times are left to the change set, so the same proposal replays under the same key.
            canonical = json.dumps([op.node.as_dict() for op in ops], sort_keys=True, ensure_ascii=False)
            key = "extract/" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:40]
            try:
                return self.repository.apply(ChangeSet(self.namespace, key, tuple(ops)), origin=origin)
            except MemoryStoreError as exc:
                # Another session proposed one of these texts meanwhile: skip it and try again.
                if exc.code != "already_exists" or attempt == 2:
                    raise
        return None

    def _draft(self, node_id: str, item: ExtractedItem, origin: Origin | None) -> NodeDraft:
        meta = dict(item.metadata)
        session = meta.get("session_id") or (origin.run_id if origin is not None else None) or "unknown"
        turn = meta.get("turn_id") or meta.get("turn")
        uri = f"gitmem-session:{quote(str(session), safe='')}"
        uri += (f"/turn/{quote(str(turn), safe='')}" if turn is not None else "") + f"#{node_id}"
        labels = {
            "source": _label(item.source),
            "scope": _label(item.scope),
            "reason": _label(item.reason),
            "schema": _label(meta.get("schema", SCHEMA)),
        }
        if item.tags:
            labels["tags"] = _label(",".join(item.tags))
        if item.supersedes:
            labels["proposed_supersedes"] = _label(",".join(item.supersedes))
        if item.conflicts_with:
            labels["proposed_conflicts_with"] = _label(",".join(item.conflicts_with))
        for key in ("workspace", "session_id"):
            if meta.get(key):
                labels[key] = _label(meta[key])
        # The turn's digest when extraction recorded one (the redacted turn the model
        # read), so the evidence pins where the item came from; else its own text.
        digest = meta.get("turn_digest") or content_digest(item.content)
        return NodeDraft(
            id=node_id,
            kind=item.memory_type,
            content=item.content,
            status="candidate",
            confidence=item.confidence,
            importance=item.importance,
            evidence=(Evidence(uri[:2048], str(digest), "session_turn"),),
            labels=tuple(sorted((k, v) for k, v in labels.items() if v.strip())),
        )

    # -- admission, just before the model call --

    def admit(self, recalled: Sequence[RecalledNode], *, turn_id: str) -> list[RecalledNode]:
        """The ``recalled`` nodes still current and active, each recorded as admitted for ``turn_id``."""
        admitted = []
        now = self.repository.clock()
        for item in recalled:
            node = self.repository.get(self.namespace, item.node_id)
            if node is None or node.status != "active" or node.revision != item.revision:
                continue  # stale or inactive: removed before the model sees it
            event = AccessEvent(
                f"{turn_id}/{node.ref}", self.namespace, node.id, node.revision, max(now, node.updated_at)
            )
            self.repository.record_admission(event)
            admitted.append(item)
        return admitted

    def next_context(self) -> str:
        """A new model-context id for this session, distinct across restarts (persisted counter)."""
        if self.session_id is None:
            raise MemoryStoreError(
                "forbidden", "only a session binding (DurableBinding.for_session) numbers its contexts"
            )
        return context_id(self.session_id, self.repository.sessions.next_context(self.session_id))

    def admit_context(self, recalled: Sequence[RecalledNode]) -> tuple[str, list[RecalledNode]]:
        """Admit ``recalled`` under a new context id; returns the id and what was admitted."""
        ctx = self.next_context()
        return ctx, self.admit(recalled, turn_id=ctx)

    def record_use(self, node_id: str, revision: int, *, event_id: str, at: datetime | None = None) -> bool:
        """Record that the model used ``node_id`` at ``revision`` (idempotent by ``event_id``:
        the same event, time included, again is no change; pass ``at`` when retrying)."""
        event = AccessEvent(event_id, self.namespace, node_id, revision, at or self.repository.clock())
        return self.repository.record_use(event)
