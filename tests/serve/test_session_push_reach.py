"""Removing a session memory's item is a prune, an admin's, over git as over ``/mcp``.

Over ``/mcp`` a ``write`` token remembers (which may merge into an item already
there) and dry-runs a prune; only an ``admin`` token's prune removes items. A
token's reach is the same over git: a ``write`` token's push to ``main`` (or
``refs/for/main``) of a session memory that removes an item file is refused with
rule ``access`` and nothing moves; its other changes land, and an ``admin``
token's push removes items as its prune does.
"""

from __future__ import annotations

from pathlib import Path

from bench.mcp_http_client import HttpMcpClient, payload
from gitmem import Root
from gitmem.adapters.tokens import token_entry
from gitmem.session import open_session_memory

from .support import clone_as, fsck_clean, git, serving

ALICE = "tok-alice-session-push-0123456789abcdef"
DANA = "tok-dana-session-push-0123456789abcdef0"


def remove_items(work: Path, who: str) -> None:
    git("rm", "-q", "-r", "items", cwd=work)
    git("commit", "-qm", "forget", cwd=work, env={"GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who})


def test_a_write_tokens_push_cannot_remove_what_its_mcp_tools_cannot(tmp_path: Path) -> None:
    root = Root(tmp_path / "mem")
    open_session_memory(root.path, mount="notes", create=True).remember("Deploys go out on Tuesdays.")
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(ALICE, "alice", ["*"], "write") + token_entry(DANA, "dana", ["*"], "admin"))
    mount = root.mount_path("notes")
    with serving(root.path, tokens) as served:
        url = served.info["url"]
        with HttpMcpClient(url + "/mcp", ALICE) as alice:
            pruned = alice.call("memory_session_prune", dry_run=False, max_age_days=0, min_importance=1)
            assert pruned.is_error  # over /mcp a write token's prune is a dry run
        work = clone_as(url, "notes", "alice", ALICE, tmp_path / "alice")
        remove_items(work, "alice")
        before = git("rev-parse", "main", cwd=mount).stdout
        for target in ("main", "refs/for/main"):
            pushed = git("push", "origin", f"HEAD:{target}", cwd=work, check=False)
            assert pushed.returncode != 0 and "access" in pushed.stderr, pushed.stderr
            assert git("rev-parse", "main", cwd=mount).stdout == before
        with HttpMcpClient(url + "/mcp", ALICE) as alice:  # what a writer may do still lands
            assert not alice.call("memory_session_remember", content="Releases are tagged on Fridays.").is_error
            recent = payload(alice.call("memory_session_recent"))
            assert len(recent["items"]) == 2, recent
        admin = clone_as(url, "notes", "dana", DANA, tmp_path / "dana")  # a reviewer's push prunes, as its tool does
        remove_items(admin, "dana")
        assert git("push", "origin", "HEAD:main", cwd=admin, check=False).returncode == 0
        assert git("ls-tree", "-r", "--name-only", "main", cwd=mount).stdout.strip() == ""
    fsck_clean(mount)
