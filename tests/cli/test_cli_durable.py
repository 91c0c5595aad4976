"""`gitmem durable`: change sets from files or stdin, show, log, recall, activate, approve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmem.gitstore import SyncGitFileStore

from .conftest import Run, as_json

pytestmark = pytest.mark.skipif(not hasattr(SyncGitFileStore, "apply"), reason="the git store has no atomic batch yet")

NS = ["-n", "acme", "alice", "repo"]
CHANGE = {
    "namespace": {"tenant": "acme", "principal": "alice", "scope": "repo"},
    "idempotency_key": "turn-1",
    "operations": [
        {
            "op": "create",
            "node": {
                "id": "pref-tabs",
                "kind": "semantic",
                "content": "Indent Go code with tabs.",
                "evidence": [{"uri": "turn://1", "digest": "sha256:aa", "kind": "session_turn"}],
            },
        }
    ],
}


def test_apply_show_recall_activate_log(gm: Run, tmp_path: Path) -> None:
    result = gm("durable", "apply", "mem", "--create", "--json", input=json.dumps(CHANGE))
    assert result.exit_code == 0, result.output
    assert as_json(result)["nodes"] == ["pref-tabs@1"]
    again = gm("durable", "apply", "mem", "-", "--json", input=json.dumps(CHANGE))
    assert as_json(again)["replayed"] is True
    shown = as_json(gm("durable", "show", "mem", "pref-tabs", *NS, "--json"))["node"]
    assert (shown["status"], shown["revision"]) == ("candidate", 1)
    assert as_json(gm("durable", "recall", "mem", "go tabs", *NS, "--json"))["hits"] == []
    done = gm("durable", "activate", "mem", "pref-tabs", *NS, "--revision", "1", "--principal", "alice", "--json")
    assert done.exit_code == 0, done.output
    assert as_json(done)["nodes"] == ["pref-tabs@2"]
    hits = as_json(gm("durable", "recall", "mem", "go tabs", *NS, "--json"))["hits"]
    assert [(h["node"]["id"], h["score"]) for h in hits] == [("pref-tabs", 1.0)]
    log = as_json(gm("durable", "log", "mem", "pref-tabs", *NS, "--json"))["revisions"]
    assert [(r["node"]["revision"], r["principal"]) for r in log] == [(2, "alice"), (1, None)]
    text = gm("durable", "log", "mem", "pref-tabs", *NS)
    assert "pref-tabs@2" in text.output and "activated" in text.output
    # from a file, and a refusal with its code
    path = tmp_path / "change.json"
    bad = dict(CHANGE, idempotency_key="turn-2")
    bad["operations"] = [{"op": "activate", "node_id": "pref-tabs", "expected_revision": 1, "evidence": []}]
    path.write_text(json.dumps(bad))
    refused = gm("durable", "apply", "mem", str(path), "--json")
    assert refused.exit_code == 1 and as_json(refused)["error"] == "revision_mismatch"
    assert gm("durable", "apply", "mem", input="{not json").exit_code == 2


def test_a_missing_node_and_a_wrong_kind(gm: Run) -> None:
    assert gm("durable", "apply", "mem", "--create", input=json.dumps(CHANGE)).exit_code == 0
    missing = gm("durable", "show", "mem", "nope", *NS, "--json")
    assert missing.exit_code == 1 and as_json(missing)["error"] == "node_not_found"
    assert gm("init", "files").exit_code == 0
    wrong = gm("durable", "show", "files", "x", *NS, "--json")
    assert wrong.exit_code == 1 and as_json(wrong)["error"] == "wrong_kind"
