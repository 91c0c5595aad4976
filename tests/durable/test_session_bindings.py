"""Persisted session bindings: resume fails closed, context ids outlive the process, namespaces are filled."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall
from gitmem.errors import MemoryStoreError

from .support import NS, OTHER, create

IDENT = EmbeddingIdentity("fixture", "unit", "r1", 2)


def semantic(revision: str = "r1") -> SemanticRecall:
    return SemanticRecall(FixtureEmbedder({}, EmbeddingIdentity("fixture", "unit", revision, 2)))


def test_resume_needs_an_equivalent_binding(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True, semantic_recall=semantic())
    policy = RecallPolicy(3, 0.2, 0, semantic=True)
    DurableBinding.for_session(repo, "s-1", NS, policy)
    saved = repo.sessions.load("s-1")
    assert saved is not None and saved["semantic"]["embedding"]["revision"] == "r1"
    assert "key" not in str(saved).lower()  # identities only
    again = DurableRepository.open(tmp_path / "root", "team", semantic_recall=semantic())
    assert DurableBinding.for_session(again, "s-1", NS, policy).session_id == "s-1"  # an equivalent binding resumes
    refusals = [
        (again, OTHER, policy),  # another namespace
        (again, NS, RecallPolicy(5, 0.2, 0, semantic=True)),  # another policy
        (DurableRepository.open(tmp_path / "root", "team", semantic_recall=semantic("r2")), NS, policy),
        (DurableRepository.open(tmp_path / "root", "team"), NS, policy),  # no semantic recall supplied
    ]
    for repository, namespace, p in refusals:
        with pytest.raises(MemoryStoreError) as raised:
            DurableBinding.for_session(repository, "s-1", namespace, p)
        assert raised.value.code == "forbidden"
    assert repo.sessions.load("s-1") == saved  # nothing was changed by the refusals


def test_an_unreadable_record_fails_closed(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    DurableBinding.for_session(repo, "s-1", NS)
    (record,) = (tmp_path / "root" / "team.git" / "gitmem" / "durable-sessions").glob("*.json")
    record.write_text("{not json", encoding="utf-8")
    with pytest.raises(MemoryStoreError) as raised:
        DurableBinding.for_session(repo, "s-1", NS)
    assert raised.value.code == "forbidden"
    record.write_text('{"session_id": "s-2", "binding": {}, "contexts": 0}', encoding="utf-8")
    with pytest.raises(MemoryStoreError):
        repo.sessions.load("s-1")


def test_context_ids_stay_distinct_across_reopens(tmp_path: Path) -> None:
    ids = []
    for _ in range(3):
        repo = DurableRepository.open(tmp_path / "root", "team", create=True)
        binding = DurableBinding.for_session(repo, "s-1", NS)
        ids += [binding.next_context(), binding.next_context()]
    assert len(set(ids)) == 6
    with pytest.raises(MemoryStoreError):
        DurableBinding(DurableRepository.open(tmp_path / "root", "team"), NS).next_context()  # no session: no ids


def test_change_sets_take_the_bindings_namespace(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    binding = DurableBinding.for_session(repo, "s-1", NS)
    done = binding.apply({"idempotency_key": "k1", "operations": [create("a", "filled from the binding")]})
    assert done.refs == ("a@1",) and repo.node(NS, "a").namespace == NS
    partial = {"namespace": {"scope": NS.scope}, "idempotency_key": "k2", "operations": [create("b", "partly given")]}
    assert binding.apply(partial).refs == ("b@1",)
    head = repo.store.head()
    for given in ({"principal": "mallory"}, {"tenant": "other", "principal": NS.principal, "scope": NS.scope}):
        with pytest.raises(MemoryStoreError) as raised:
            binding.apply({"namespace": given, "idempotency_key": "k3", "operations": [create("c", "refused")]})
        assert raised.value.code == "forbidden"
    assert repo.store.head() == head and repo.get(Namespace(NS.tenant, "mallory", NS.scope), "c") is None


@pytest.mark.parametrize("on_disk", [True, False])
def test_a_session_id_that_is_no_text_is_invalid_query_for_every_record_call(tmp_path: Path, on_disk: bool) -> None:
    from gitmem.durable.sessions import SessionBindings

    records = SessionBindings(str(tmp_path / "sessions") if on_disk else None)
    for call in (records.load, records.next_context):
        with pytest.raises(MemoryStoreError) as raised:
            call("s-\ud800")
        assert raised.value.code == "invalid_query", call


def test_a_label_of_megabytes_is_cut_once_at_the_byte_bound_on_a_character_start() -> None:
    """An extracted value is cut to the label bound in one step, not trimmed and re-encoded per step."""
    from gitmem.durable.binding import _label
    from gitmem.durable.node import MAX_LABEL_VALUE_BYTES

    value = "é" * (4 << 20)  # 8 MiB of two-byte characters; the bound falls on a character's start or inside one
    started = time.process_time()
    for shift in ("", "a"):
        label = _label(shift + value)
        data = label.encode("utf-8")
        assert MAX_LABEL_VALUE_BYTES - 1 <= len(data) <= MAX_LABEL_VALUE_BYTES
        assert (shift + value).startswith(label)
    assert time.process_time() - started < 5.0  # the old trim took minutes
    assert _label({"b": 1, "a": "x  y"}) == '{"a": "x y", "b": 1}'
