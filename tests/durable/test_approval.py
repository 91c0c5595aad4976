"""The human path: a run's candidates go to a proposal; approving it activates them on evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import review
from gitmem.durable import DurableBinding, DurableRepository, approve_candidates
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import Origin
from gitmem.session.binding import ExtractedItem

from .support import NS, fsck, git

pytestmark = pytest.mark.skipif(not hasattr(SyncGitFileStore, "apply"), reason="the git store has no atomic batch yet")


def item(content: str) -> ExtractedItem:
    return ExtractedItem(
        content, "semantic", "decision", "workspace", "Later work must follow this decision.", (), 0.9, 0.9
    )


def test_approving_a_proposal_of_candidates_activates_them_with_manual_evidence(tmp_path: Path) -> None:
    repo = DurableRepository.open(tmp_path, "durable", create=True)
    review.enable(repo.store, True)  # type: ignore[arg-type]
    run = repo.for_run("run-7")
    ids = DurableBinding(run, NS).propose_candidates(
        [item("We ship on Tuesdays only."), item("Database migrations run before deploys.")],
        origin=Origin(run_id="run-7", principal_id="agent"),
    )
    assert len(ids) == 2
    assert all(repo.get(NS, i) is None for i in ids)  # main does not have them yet
    assert {run.node(NS, i).status for i in ids} == {"candidate"}  # the run sees its proposal

    outcome = approve_candidates(repo, "run-7", approver="carol@example.com")
    (activation,) = outcome.activations
    assert sorted(r.split("@")[0] for r in activation.refs) == sorted(ids)
    for node_id in ids:
        node = repo.node(NS, node_id)
        assert (node.status, node.revision) == ("active", 2)
        manual = [e for e in node.evidence if e.kind == "manual"]
        assert [e.uri for e in manual] == [f"gitmem:commit/{outcome.approval}"]
    where = repo.store.path  # type: ignore[attr-defined]
    last = git(where, "log", "-1", "--format=%an%n%(trailers:key=Gitmem-Approved-By,valueonly)")
    assert last.split() == ["carol@example.com", "carol@example.com"]
    approval = git(where, "log", "-1", "--format=%(trailers:key=Gitmem-Approved-By,valueonly)", outcome.approval)
    assert approval.strip() == "carol@example.com"
    assert review.proposals(repo.store) == []  # type: ignore[arg-type]
    fsck(where)
