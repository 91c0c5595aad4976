"""A3S ``durable-memory-product-v1``, the capture half (the task arms are in
``test_a3s_product_multi_agent_eval.py``).

One finished turn whose prompt holds a pasted credential (``api_key=…``) goes
through a real :class:`SessionRunner` with session memory and a durable binding.
A deterministic client plays both model calls: the main answer, then extraction,
which proposes the fixture's three items: a correction that conflicts with an
existing session memory, a low-confidence claim and a workflow carrying an
``sk-…`` key. The frozen gates:

- **write precision** 1.0: exactly the correction is stored in session memory and
  proposed as the one durable candidate; both invalid items are refused;
- **evidence fidelity** 1.0: the candidate's single ``session_turn`` evidence has
  the digest of the exact (redacted) turn the extraction model read and a uri
  naming the session, and nothing of the candidate holds the credential;
- **conflict preservation**: the old memory stays and the correction names it in
  ``conflicts_with``;
- **redaction**: the extraction input shows ``[redacted sensitive value]``,
  never the credential;
- exactly ``maximum_capture_model_calls`` (2) model calls.

A3S digests its own turn-evidence payload (schema ``a3s.code.memory.turn-evidence.v1``,
camelCase keys, its prompt section names); gitmem's is
``gitmem.session.turn-evidence.v1`` over the same four fields (session id, prompt,
response, transcript), recomputed here independently from what the extractor read.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from gitmem.durable import DurableRepository, Namespace, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.session.extraction import INSTRUCTIONS, ExtractionRequest, render_turn
from gitmem.session.location import open_session_memory
from gitmem.session.runner import SessionRunner, TurnContext

from .test_a3s_product_multi_agent_eval import tokens

SECRETS = ("fixture-secret-value-1234", "sk-fixture-secret-1234567890")
REDACTED = "[redacted sensitive value]"


def fixture() -> dict[str, Any]:
    from .a3s_evals import fixture as load

    return load("durable-memory-product-v1")


class CaptureClient:
    """Both model calls of a turn: the main answer, then the extraction answer."""

    def __init__(self, main_response: str, items: list[dict[str, Any]], old_id: str) -> None:
        self.main_response = main_response
        self.items = items
        self.old_id = old_id
        self.calls: list[tuple[int, int]] = []  # (input tokens, output tokens) per call
        self.requests: list[ExtractionRequest] = []

    def __call__(self, context: TurnContext) -> str:
        self.calls.append((tokens(context.prompt) + tokens(context.memory_block), tokens(self.main_response)))
        return self.main_response

    def extract(self, request: ExtractionRequest) -> object:
        self.requests.append(request)
        items = []
        for item in self.items:
            proposed = {k: v for k, v in item.items() if k != "expected_accepted"}
            proposed["conflicts_with"] = [self.old_id if c == "$OLD_MEMORY_ID" else c for c in item["conflicts_with"]]
            items.append(proposed)
        answer = json.dumps({"items": items})
        self.calls.append((tokens(INSTRUCTIONS) + tokens(render_turn(request)), tokens(answer)))
        return answer


def turn_digest(request: ExtractionRequest) -> str:
    """The evidence digest, computed here without the package's helper."""
    payload = {
        "schema": "gitmem.session.turn-evidence.v1",
        "session_id": request.session_id,
        "prompt": request.prompt,
        "response": request.response,
        "transcript": "\n".join(request.tool_context),
    }
    data = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def run_capture(tmp_path: Path, *, recall_limit: int = 5) -> dict[str, Any]:
    fx = fixture()
    capture, gates = fx["capture"], fx["thresholds"]
    memory = open_session_memory(tmp_path / "session")
    old_fx = capture["old_memory"]
    old = memory.remember(
        old_fx["content"],
        importance=old_fx["importance"],
        tags=old_fx["tags"],
        memory_type="semantic",
        metadata={"source": "project_fact"},
    )
    ns = Namespace("capture-tenant", "capture-principal", "capture-workspace")
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    binding = DurableBinding.for_session(repo, capture["session_id"], ns, RecallPolicy(8, 0.0))
    client = CaptureClient(capture["main_response"], capture["items"], old.id)
    runner = SessionRunner(
        memory,
        client,
        workspace="/w",
        session_id=capture["session_id"],
        extractor=client,
        durable=binding,
        candidates=binding,
        admission=binding,
        recall_limit=recall_limit,
    )
    result = runner.turn(capture["prompt"])
    assert result.response == capture["main_response"]
    assert result.extraction is not None
    outcome = result.extraction.result()
    assert runner.close() == 0

    stored = memory.items()
    accepted = [i for i in stored if i.id != old.id]
    expected = {i["content"] for i in capture["items"] if i["expected_accepted"]}
    correct = [i for i in accepted if i.content in expected]
    replacement = correct[0] if correct else None
    conflict_preserved = (
        any(i.id == old.id and i.content == old_fx["content"] for i in stored)
        and replacement is not None
        and replacement.ids_in("conflicts_with") == (old.id,)
    )

    candidates = repo.nodes(ns, ["candidate"])
    (request,) = client.requests
    extraction_input = INSTRUCTIONS + "\n\n" + render_turn(request)
    digest = turn_digest(request)
    session_in_uri = quote(capture["session_id"], safe="")

    def faithful(node: Any) -> bool:
        text = repr(node)  # every field, evidence and labels included
        return (
            replacement is not None
            and node.content == replacement.content
            and node.status == "candidate"
            and len(node.evidence) == 1
            and node.evidence[0].kind == "session_turn"
            and node.evidence[0].digest == digest
            and session_in_uri in node.evidence[0].uri
            and not any(s in text for s in SECRETS)
        )

    written = [i.content + json.dumps(i.metadata, default=str) for i in stored]
    written += [repr(n) for n in candidates]
    calls = client.calls
    input_tokens = sum(c[0] for c in calls)
    output_tokens = sum(c[1] for c in calls)
    price_in, price_out = gates["input_usd_per_million_tokens"], gates["output_usd_per_million_tokens"]
    return {
        "proposed_items": len(capture["items"]),
        "accepted_session_items": len(accepted),
        "durable_candidates": len(candidates),
        "expected_accepted": len(expected),
        "write_precision": len(correct) / max(1, len(accepted)),
        "evidence_fidelity": sum(map(faithful, candidates)) / max(1, len(candidates)),
        "conflict_preserved": conflict_preserved,
        "rejected": sorted((r.index, r.reason) for r in outcome.rejected),
        "extraction_input_redacted": REDACTED in extraction_input and not any(s in extraction_input for s in SECRETS),
        "secret_written": any(s in w for w in written for s in SECRETS),
        "model_calls": len(calls),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "estimated_model_cost_usd": (input_tokens * price_in + output_tokens * price_out) / 1_000_000,
    }


def test_product_v1_capture(tmp_path: Path) -> None:
    gates = fixture()["thresholds"]
    report = run_capture(tmp_path)
    print("GITMEM_A3S_PRODUCT_CAPTURE=" + json.dumps(report, sort_keys=True))
    assert report["accepted_session_items"] == report["durable_candidates"] == report["expected_accepted"] == 1
    assert report["write_precision"] >= gates["minimum_write_precision"] == 1.0
    assert report["evidence_fidelity"] >= gates["minimum_evidence_fidelity"] == 1.0
    assert gates["require_conflict_preservation"] and report["conflict_preserved"]
    assert report["rejected"] == [(1, "confidence_too_low"), (2, "secret")]
    assert report["extraction_input_redacted"]
    assert not report["secret_written"]
    assert report["model_calls"] == gates["maximum_capture_model_calls"] == 2
    assert report["estimated_model_cost_usd"] <= gates["maximum_estimated_model_cost_usd_per_task"]


# -- the gates can fail: switch off one mechanism and the gate it guards breaks ---------


def test_without_redaction_the_model_reads_the_credential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ExtractionRequest, "redacted", lambda self: self)
    report = run_capture(tmp_path)
    assert not report["extraction_input_redacted"]


def test_with_the_old_sk_rule_the_key_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The earlier ``sk-`` rule wanted a last segment of 20+ characters; the fixture's
    ``sk-fixture-secret-1234567890`` slipped past it, and past the store's own check."""
    import gitmem.secrets as secrets

    old = re.compile(r"(?<![A-Za-z0-9])sk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{20,}")
    rules = tuple(replace(r, pattern=old) if r.name == "api_key_sk" else r for r in secrets.SECRET_RULES)
    monkeypatch.setattr(secrets, "SECRET_RULES", rules)
    report = run_capture(tmp_path)
    assert report["write_precision"] == 0.5 < fixture()["thresholds"]["minimum_write_precision"]
    assert report["durable_candidates"] == 2 and report["secret_written"]


def test_evidence_pinned_to_the_text_alone_is_not_faithful(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ExtractionRequest, "evidence_digest", lambda self: None)
    report = run_capture(tmp_path)
    assert report["durable_candidates"] == 1 and report["evidence_fidelity"] == 0.0


def test_without_the_old_memory_shown_the_conflict_is_not_preserved(tmp_path: Path) -> None:
    report = run_capture(tmp_path, recall_limit=0)  # the correction's conflicts_with names an unseen id
    assert not report["conflict_preserved"]
    assert (0, "unknown_relation") in report["rejected"]
