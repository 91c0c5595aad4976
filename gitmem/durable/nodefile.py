"""Where durable nodes and idempotency records live in the mount, and their text.

Layout of a durable mount (everything under one namespace's folder, see
:class:`~gitmem.durable.namespace.Namespace`)::

    <tenant>+<principal>+<scope>/
      nodes/<2 hex>/<node>.md     one node, current revision (older ones: git log)
      keys/<2 hex>/<key>.json     one applied change set's idempotency record

The two hex digits are the start of the SHA-256 of the id, so a folder never
holds more than a few hundred entries. A node file is Markdown that reads as the
node's content: a one-line frontmatter marking it as a durable node, the content
byte for byte, then the node's fields as ``key: <JSON value>`` lines inside an
HTML comment (invisible where Markdown is rendered, plain in ``git diff``)::

    ---
    gitmem: durable-node
    ---
    Indent Go code with tabs.
    <!-- gitmem:durable-node
    id: "pref-tabs"
    ...
    -->

The fields trail the content rather than fill the frontmatter because every
store write parses frontmatter as YAML, which costs ten times more than this
line format; the trailer is found from the end, and no line of it can look like
its opening marker, so no content can be mistaken for it. gitmem parses the file
strictly and checks that its id and namespace are the ones its path was derived
from, and that its content still has the digest it was written with.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from gitmem.durable.namespace import Namespace, folder_name
from gitmem.durable.node import Evidence, Node, Relation, check_labels, parse_time
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import KIB, FileFormat
from gitmem.localfile import parse_json

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


def node_path(namespace: Namespace, node_id: str) -> str:
    fan = hashlib.sha256(node_id.encode("utf-8")).hexdigest()[:2]
    return f"{namespace.folder}{NODES}{fan}/{folder_name(node_id)}.md"


def nodes_prefix(namespace: Namespace) -> str:
    return namespace.folder + NODES


def key_path(namespace: Namespace, key: str) -> str:
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return f"{namespace.folder}{KEYS}{digest[:2]}/{digest[:40]}.json"


HEADER: Final = "---\ngitmem: durable-node\n---\n"
MARKER: Final = "\n<!-- gitmem:durable-node\n"
CLOSER: Final = "-->\n"


_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))


def _dump(value: object) -> str:
    # "-->" can only occur inside a JSON string here; escaping it keeps the comment whole.
    return _ENCODER.encode(value).replace("-->", "--\\u003e")


def encode_node(node: Node) -> str:
    """The node file's text (see the module docstring)."""
    values = node.as_dict()  # the content goes between the markers, the rest in _FIELDS' order
    fields = "".join(f"{key}: {_dump(values[key])}\n" for key in _FIELDS)
    return f"{HEADER}{node.content}{MARKER}{fields}{CLOSER}"


def _corrupt(path: str, why: str) -> MemoryStoreError:
    return MemoryStoreError("invalid_file", f"{path} is not a durable node file: {why}")


def decode_node(text: str, path: str, namespace: Namespace | None = None) -> Node:
    """Parse a node file; ``invalid_file`` when it is malformed or not where it belongs."""
    if not text.startswith(HEADER):
        raise _corrupt(path, "it does not open with the durable-node frontmatter")
    end = text.rfind(MARKER)
    if end < len(HEADER) - 1 or not text.endswith(CLOSER):
        raise _corrupt(path, "its field block is missing or not closed")
    fields: dict[str, Any] = {}
    try:
        for line in text[end + len(MARKER) : -len(CLOSER)].split("\n")[:-1]:
            key, sep, raw = line.partition(": ")
            if not sep or key not in _FIELDS or key in fields:
                raise _corrupt(path, f"unexpected field line {line[:60]!r}")
            fields[key] = parse_json(raw, what=f"{path} field {key}")
        if set(fields) != set(_FIELDS):
            raise _corrupt(path, f"missing {', '.join(sorted(set(_FIELDS) - set(fields)))}")
        content = text[len(HEADER) : end]
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
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
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
            data = parse_json(text, what=path)
            nodes = data["nodes"]
            if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
                raise ValueError("its nodes are not a list of strings")
            record = cls(str(data["key"]), str(data["digest"]), str(data["occurred_at"]), tuple(nodes))
        except MemoryStoreError as exc:
            raise MemoryStoreError("invalid_file", f"{path} is not an idempotency record: {exc.message}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryStoreError("invalid_file", f"{path} is not an idempotency record: {exc}") from None
        return record
