"""A session bound to a durable namespace, end to end: real session memory, real durable mount.

Extraction proposes candidates (never active); recall brings durable nodes only
once a person activated them, and the same text is then shown once, as the
durable node; admission drops a node that changed after recall.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.durable import DurableRepository, Evidence, RecallPolicy
from gitmem.durable.binding import DurableBinding
from gitmem.session.extraction import LessonExtractor
from gitmem.session.location import open_session_memory
from gitmem.session.runner import ModelReply, SessionRunner, TurnContext

from .support import NS

LESSON = "releases need PROVIDER_BASE_URL set before verification"


class Model:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.seen: list[TurnContext] = []

    def __call__(self, context: TurnContext) -> str | ModelReply:
        self.seen.append(context)
        return self.answers.pop(0)


def test_candidates_from_extraction_reach_the_model_only_after_activation(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path / "root", "team", create=True)
    binding = DurableBinding(repo, NS, RecallPolicy(max_results=5, min_score=0.3))
    model = Model(f"The release failed.\nLesson: {LESSON}", "ok", "ok")
    runner = SessionRunner(
        open_session_memory(tmp_path / "session"),
        model,
        workspace="/repo",
        session_id="s-1",
        extractor=LessonExtractor(),
        durable=binding,
        candidates=binding,
    )
    first = runner.turn("run the release")
    assert first.extraction is not None
    (node_id,) = first.extraction.result().candidates
    node = repo.node(NS, node_id)
    assert (node.status, node.content) == ("candidate", LESSON)
    assert dict(node.labels)["session_id"] == "s-1"

    second = runner.turn("release provider verification")
    assert [m.layer for m in second.recall.memories] == ["session"]  # the candidate is not recalled

    repo.activate(NS, node_id, 1, [Evidence("review://lesson", "sha256:1", "manual")])
    third = runner.turn("release provider verification")
    assert [(m.layer, m.id, m.revision) for m in third.recall.memories] == [("durable", node_id, 2)]  # shown once
    assert f"durable {node_id} r2" in model.seen[2].memory_block
    assert runner.close() == 0

    # the host admits what it selected, just before the model call: a node revised since is dropped
    recalled = binding.recall_active("release provider verification", 5)
    assert binding.admit(recalled, turn_id="t3") == list(recalled)
    repo.apply(
        {
            "namespace": NS.as_dict(),
            "idempotency_key": "corroborate",
            "operations": [
                {
                    "op": "corroborate",
                    "node_id": node_id,
                    "expected_revision": 2,
                    "evidence": [{"uri": "ci://9", "digest": "sha256:2", "kind": "verification"}],
                }
            ],
        }
    )
    assert binding.admit(recalled, turn_id="t4") == []
    assert repo.usage(NS, node_id).admissions == 1
