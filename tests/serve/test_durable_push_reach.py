"""A durable memory's activation is a reviewer's decision over git as over ``/mcp``.

Over ``/mcp`` a ``write`` token proposes candidates and nothing more: activating,
retiring or otherwise deciding on a node is offered to ``admin`` tokens only. A
token's reach is the same over git, so a ``write`` token's push to ``main`` (or
``refs/for/main``) of a durable memory that activates a node, or changes one that
was reviewed, is refused with rule ``access`` and nothing moves; candidates and
other files still land, and an ``admin`` token's push decides as its
``durable_activate`` does.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.tokens import token_entry
from gitmem.durable import DurableRepository
from gitmem.durable.node import Evidence
from gitmem.durable.nodefile import decode_node, encode_node
from tests.durable.support import ITEM

from .support import clone_as, fsck_clean, git, serving, write

ALICE = "tok-alice-durable-push-0123456789abcdef"
DANA = "tok-dana-durable-push-0123456789abcdef0"
QUERY = "make itest release"


def commit(work: Path, who: str, message: str) -> None:
    git("commit", "-qam", message, cwd=work, env={"GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who})


def activate_in(work: Path, who: str) -> None:
    """Mark the clone's one node active, as a reviewer's activation writes it, and commit."""
    (path,) = [p for p in work.rglob("*.md") if p.parent.parent.name == "nodes"]
    node = decode_node(path.read_text(encoding="utf-8"), path.relative_to(work).as_posix())
    now = datetime.now(UTC)
    evidence = Evidence("gitmem-mcp:activate/me/now", "sha256:" + "0" * 64, "manual", now)
    active = dataclasses.replace(node, status="active", revision=node.revision + 1, revision_kind="activated",
                                 evidence=(*node.evidence, evidence), updated_at=now)  # fmt: skip
    path.write_text(encode_node(active), encoding="utf-8")
    commit(work, who, "activate")


def test_a_write_tokens_push_cannot_activate_what_its_mcp_tools_cannot(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    DurableRepository.open(root.path, "decisions", create=True)
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["*"], "write") + token_entry(DANA, "dana", ["*"], "admin"))
    mount = root.mount_path("decisions")
    with serving(root.path, tokens) as served:
        url = served.info["url"]
        with HttpMcpClient(url + "/mcp", ALICE) as alice:
            assert "durable_activate" not in alice.tool_names()
            assert payload(alice.call("durable_propose", items=[ITEM]))["status"] == "candidate"
        work = clone_as(url, "decisions", "alice", ALICE, tmp_path / "alice")
        activate_in(work, "alice")
        before = git("rev-parse", "main", cwd=mount).stdout
        for target in ("main", "refs/for/main"):
            pushed = git("push", "origin", f"HEAD:{target}", cwd=work, check=False)
            assert pushed.returncode != 0 and "access" in pushed.stderr, pushed.stderr
            assert git("rev-parse", "main", cwd=mount).stdout == before
        with HttpMcpClient(url + "/mcp", ALICE) as alice:
            assert payload(alice.call("durable_recall", query=QUERY))["memories"] == []
        git("reset", "-q", "--hard", "origin/main", cwd=work)  # what a writer may push still lands
        write(work, "README.md", "Reviewed facts of the team.\n")
        git("add", "-A", cwd=work)
        commit(work, "alice", "readme")
        assert git("push", "origin", "HEAD:main", cwd=work, check=False).returncode == 0
        # A reviewer's push decides, as its tool does.
        admin = clone_as(url, "decisions", "dana", DANA, tmp_path / "dana")
        activate_in(admin, "dana")
        assert git("push", "origin", "HEAD:main", cwd=admin, check=False).returncode == 0
        with HttpMcpClient(url + "/mcp", ALICE) as alice:
            assert [m["content"] for m in payload(alice.call("durable_recall", query=QUERY))["memories"]] == [
                ITEM["content"]
            ]
    fsck_clean(mount)
