"""Namespace folders and node files: injective, path-safe, strict on read."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from gitmem.durable.namespace import Namespace, folder_name
from gitmem.durable.node import Evidence, Node, Relation
from gitmem.durable.nodefile import DURABLE_FORMAT, KeyRecord, decode_node, encode_node, key_path, node_path
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import encode_text, validate_path

NS = Namespace("acme", "alice", "repo")
T = datetime(2026, 1, 1, tzinfo=UTC)

CRAFTED = ["..", ".", "a/b", "../../etc", ".git", "GIT~1", "_abc", "A", "a" * 41, "x" * 256, "名前", "a b", "%2e%2e"]


def make(node_id: str = "pref-tabs", ns: Namespace = NS, content: str = "Indent Go code with tabs.\n") -> Node:
    return Node(
        id=node_id,
        namespace=ns,
        revision=2,
        kind="semantic",
        status="active",
        content=content,
        confidence=0.8,
        importance=0.9,
        created_at=T,
        updated_at=T,
        revision_kind="activated",
        evidence=(Evidence("review://1", "sha256:ab", "manual", T),),
        relations=(Relation("related_to", "other"),),
        labels=(("lang", "go"),),
    )


@pytest.mark.parametrize("value", CRAFTED)
def test_crafted_identifiers_stay_inside_one_segment(value: str) -> None:
    ns = Namespace(value, value, value)
    path = node_path(ns, value)
    assert validate_path(path, DURABLE_FORMAT) == path
    assert path.count("/") == 3 and path.split("/")[1] == "nodes"
    assert all(seg not in (".", "..", ".git") for seg in path.split("/"))


def test_folder_names_are_injective_over_plain_and_hashed_forms() -> None:
    names = {folder_name(v) for v in [*CRAFTED, "acme", "Acme", "acme ", "_" + folder_name("Acme")[1:]]}
    assert len(names) == len(CRAFTED) + 4
    assert folder_name("acme") == "acme" and folder_name("Acme").startswith("_")


def test_namespaces_never_share_a_folder() -> None:
    folders = {Namespace(t, p, s).folder for t in ("a", "b") for p in ("a", "b") for s in ("a", "a/b")}
    assert len(folders) == 8
    assert Namespace("a", "b/c", "d").folder != Namespace("a/b", "c", "d").folder


def test_node_files_round_trip_and_are_valid_gitmem_files() -> None:
    for content in (
        "plain\n",
        "---\nlooks like frontmatter\n---\n",
        "no newline",
        "中文内容 with 'quotes' and \"more\"",
    ):
        node = make(content=content)
        text = encode_node(node)
        encode_text(text, DURABLE_FORMAT)
        assert decode_node(text, node_path(NS, node.id), NS) == node


def test_decode_is_strict() -> None:
    node = make()
    text = encode_node(node)
    path = node_path(NS, node.id)
    for broken in (
        text.replace("Indent", "Outdent"),  # content edited without its digest
        text.replace('"active"', '"live"'),
        text.replace("revision: 2", "revision: 0"),
        text.replace("---\n", "", 1),
        text[:-4],  # the field block is not closed
        text.replace("labels: ", "tags: "),
        "just text",
    ):
        with pytest.raises(MemoryStoreError) as info:
            decode_node(broken, path, NS)
        assert info.value.code == "invalid_file"
    with pytest.raises(MemoryStoreError, match="belongs to namespace"):
        decode_node(text, path, Namespace("acme", "bob", "repo"))
    with pytest.raises(MemoryStoreError, match="belongs at"):
        decode_node(text, node_path(NS, "other"), NS)
    elsewhere = replace(node, namespace=Namespace("acme", "bob", "repo"))
    with pytest.raises(MemoryStoreError):
        decode_node(encode_node(elsewhere), path)


def test_a_node_file_reads_as_its_content() -> None:
    node = replace(make(), relations=(Relation("related_to", "x-->y"),))
    text = encode_node(node)
    assert text.startswith("---\ngitmem: durable-node\n---\nIndent Go code with tabs.\n")
    assert text.count("-->") == 1  # a field value cannot close the comment early
    assert decode_node(text, node_path(NS, node.id)) == node


def test_key_records_round_trip() -> None:
    record = KeyRecord("turn/1", "sha256:ff", "2026-01-01T00:00:00.000000Z", ("a@1", "b@3"))
    assert KeyRecord.decode(record.encode(), "p") == record
    assert key_path(NS, "turn/1") != key_path(NS, "turn/2")
    with pytest.raises(MemoryStoreError):
        KeyRecord.decode("{}", "p")
