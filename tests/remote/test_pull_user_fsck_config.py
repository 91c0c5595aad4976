"""A user's own fetch.fsck.* settings never weaken the object checks a pull holds fetched objects to.

gitmem runs ``index-pack --strict`` itself; a fetch's ``fetch.fsckObjects`` would apply the user's
``fetch.fsck.<id>=ignore`` (``fetch.fsck.zeroPaddedFilemode = ignore`` is a common global setting).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from serve.support import git, malformed_commit

from gitmem import remotes
from remote.test_pull_push import Team, pull_refused_whole

IGNORE = {
    "zero-padded-mode": "zeroPaddedFilemode",
    "duplicate-entries": "duplicateEntries",
    "bad-time-zone": "badTimezone",
}


@pytest.mark.parametrize("kind", sorted(IGNORE))
def test_user_fetch_fsck_ignore_lets_a_pull_bring_objects_git_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    team = Team(tmp_path)
    team.person_commits("seed.md", "seed\n")
    remotes.pull(team.store, "origin")
    head = team.sync.head()
    bad = malformed_commit(team.work, kind)
    git("push", "-q", "-f", "origin", "main", cwd=team.work)
    user = tmp_path / "user.gitconfig"
    user.write_text(f'[fetch "fsck"]\n\t{IGNORE[kind]} = ignore\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    pull_refused_whole(team, head, bad)
