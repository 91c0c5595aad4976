"""A push larger than the 8 MiB every other request is held to still lands, with a token that may push.

The server decides from a request's headers which bodies it reads past 8 MiB:
only a push whose token may push. git sends a large pack chunked (no length in
the headers, after a probe request) with the token as the HTTP password, to
whichever worker takes the connection; a ``propose`` token's proposal and a
``write`` token's push to ``refs/for/main`` must both get the push's cap
(64 MiB), not 413.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from gitmem import Root
from gitmem.adapters.tokens import token_entry

from .support import fsck_clean, git, seed, serving

PAT = "tok-pat-largepush-0123456789abcdef"
ALICE = "tok-alice-largepush-0123456789abcd"
#: Files of 48 KB of base64 text (what a memory file may hold): their pack is past 8 MiB.
FILES = 300


def _fill(work: Path, tag: str) -> None:
    for i in range(FILES):
        text = base64.b64encode(os.urandom(36 * 1024)).decode()
        (work / f"{tag}{i:03d}.md").write_text("\n".join(text[j : j + 76] for j in range(0, len(text), 76)) + "\n")


def test_a_proposal_and_a_queued_push_past_eight_mib_land_through_two_workers(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    seed(root.mount("notes", create=True))
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(token_entry(PAT, "pat", ["notes"], "propose") + token_entry(ALICE, "alice", ["notes"], "write"))
    with serving(root.path, tokens, "--workers", "2") as served:
        base = str(served.info["url"])
        for who, token, ref in [("pat", PAT, "proposals/pat/big"), ("alice", ALICE, "refs/for/main")]:
            work = tmp_path / who
            git("clone", "-q", f"{base.replace('://', f'://{who}:{token}@', 1)}/notes.git", str(work))
            _fill(work, who)
            git("add", "-A", cwd=work)
            git("commit", "-q", "-m", f"{who}: many notes", cwd=work, env={"GIT_AUTHOR_NAME": who})
            size = sum(p.stat().st_size for p in (work / ".git" / "objects").rglob("*") if p.is_file())
            assert size > 9 * 1024 * 1024  # the pack sent is past the 8 MiB cap of other requests
            pushed = git("push", "origin", f"HEAD:{ref}", cwd=work, check=False)
            assert pushed.returncode == 0, pushed.stderr
    mount = root.mount("notes")
    assert mount.sync.read("alice000.md").text == (tmp_path / "alice" / "alice000.md").read_text()
    fsck_clean(Path(mount.path))
