"""Where durable nodes and idempotency records live in the mount, and their text.

Layout of a durable mount (everything under one namespace's folder, see
:class:`~gitmem.durable.namespace.Namespace`)::

    ns/<tenant>/<principal>/<scope>/
      nodes/<2 hex>/<node>.md     one node, current revision (older ones: git log)
      keys/<2 hex>/<key>.json     one applied change set's idempotency record

The two hex digits are the start of the SHA-256 of the id, so a folder never
holds more than a few hundred entries. A node file is Markdown: a frontmatter
block of ``key: <JSON value>`` lines (JSON is YAML, so git hosts and gitmem's
own ``describe`` read it), then the node's content byte for byte. People can
read, diff and blame it; gitmem parses it strictly and checks that its id and
namespace are the ones its path was derived from.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from gitmem.durable.namespace import Namespace, folder_name
from gitmem.durable.node import Evidence, Node, Relation, check_labels, format_time, parse_time
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import KIB, FileFormat

#: Limits a durable mount is created with: a node holds up to 64 KiB of content
#: plus its evidence, relations and labels, all in the frontmatter.
DURABLE_FORMAT: Final = FileFormat(max_file_bytes=1024 * KIB, max_frontmatter_bytes=1024 * KIB)

NODES: Final = "nodes/"
KEYS: Final = "keys/"
_FIELDS: Final = (
    "id",
    "namespace",
    "revision",
    "kind",
    "status",
    "confidence",
    "importance",
    "created_at",
    "updated_at",
    "revision_kind",
    "content_digest",
    "evidence",
    "relations",
    "labels",
)


def _fan(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:2]


def node_path(namespace: Namespace, node_id: str) -> str:
    return f"{namespace.folder}{NODES}{_fan(node_id)}/{folder_name(node_id)}.md"


def nodes_prefix(namespace: Namespace) -> str:
    return namespace.folder + NODES


def key_path(namespace: Namespace, key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return f"{namespace.folder}{KEYS}{digest[:2]}/{digest[:40]}.json"


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def encode_node(node: Node) -> str:
    """The node file's text (see the module docstring)."""
    values: dict[str, object] = {
        "id": node.id,
        "namespace": node.namespace.as_dict(),
        "revision": node.revision,
        "kind": node.kind,
        "status": node.status,
        "confidence": node.confidence,
        "importance": node.importance,
        "created_at": format_time(node.created_at),
        "updated_at": format_time(node.updated_at),
        "revision_kind": node.revision_kind,
        "content_digest": node.digest,
        "evidence": [e.as_dict() for e in node.evidence],
        "relations": [r.as_dict() for r in node.relations],
        "labels": dict(node.labels),
    }
    head = "".join(f"{key}: {_dump(values[key])}\n" for key in _FIELDS)
    return f"---\n{head}---\n{node.content}"


def _corrupt(path: str, why: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_file", f"{path} is not a durable node file: {why}")


def decode_node(text: str, path: str, namespace: Namespace | None = None) -> Node:
    """Parse a node file; ``invalid_file`` when it is malformed or not where it belongs."""
    if not text.startswith("---\n"):
        raise _corrupt(path, "it does not open with a frontmatter block")
    end = text.find("\n---\n", 3)
    if end == -1:
        raise _corrupt(path, "its frontmatter is never closed")
    fields: dict[str, Any] = {}
    try:
        for line in text[4:end].split("\n"):
            key, sep, raw = line.partition(": ")
            if not sep or key not in _FIELDS or key in fields:
                raise _corrupt(path, f"unexpected frontmatter line {line[:60]!r}")
            fields[key] = json.loads(raw)
        if set(fields) != set(_FIELDS):
            raise _corrupt(path, f"missing {', '.join(sorted(set(_FIELDS) - set(fields)))}")
        content = text[end + 5 :]
        node = Node(
            id=fields["id"],
            namespace=Namespace.from_dict(fields["namespace"]),
            revision=fields["revision"],
            kind=fields["kind"],
            status=fields["status"],
            content=content,
            confidence=fields["confidence"],
            importance=fields["importance"],
            created_at=parse_time("created_at", fields["created_at"]),
            updated_at=parse_time("updated_at", fields["updated_at"]),
            revision_kind=fields["revision_kind"],
            evidence=tuple(Evidence.from_dict(e) for e in fields["evidence"]),
            relations=tuple(Relation.from_dict(r) for r in fields["relations"]),
            labels=check_labels(fields["labels"]),
        ).validate()
    except (ValueError, TypeError, AttributeError) as exc:
        raise _corrupt(path, str(exc)) from None
    except MemoryStoreError as exc:
        if exc.code == "invalid_file":
            raise
        raise _corrupt(path, exc.message) from None
    if fields["content_digest"] != node.digest:
        raise _corrupt(path, "its content does not match its content_digest (edited by hand?)")
    if namespace is not None and node.namespace != namespace:
        raise _corrupt(path, f"it belongs to namespace {node.namespace.label()}, not {namespace.label()}")
    if node_path(node.namespace, node.id) != path:
        raise _corrupt(path, f"node {node.id!r} belongs at {node_path(node.namespace, node.id)}")
    return node


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """What an applied change set left behind under its idempotency key.

    ``digest`` pins the change set's content; ``nodes`` are the ``id@revision``
    references it produced, in the order of the change. A replay with the same
    digest answers with these; another digest is ``idempotency_conflict``.
    """

    key: str
    digest: str
    occurred_at: str
    nodes: tuple[str, ...]

    def encode(self) -> str:
        data = {"key": self.key, "digest": self.digest, "occurred_at": self.occurred_at, "nodes": list(self.nodes)}
        return json.dumps(data, ensure_ascii=False, indent=1) + "\n"

    @classmethod
    def decode(cls, text: str, path: str) -> KeyRecord:
        try:
            data = json.loads(text)
            record = cls(
                str(data["key"]), str(data["digest"]), str(data["occurred_at"]), tuple(map(str, data["nodes"]))
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryStoreError("invalid_file", f"{path} is not an idempotency record: {exc}") from None
        return record
