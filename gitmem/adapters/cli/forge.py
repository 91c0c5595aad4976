"""``gitmem check``: the memory rules as a forge's required status check (see docs/forge.md).

One call into :func:`gitmem.hooks.check_repository` (:mod:`gitmem.git.forgecheck`), which judges every commit with the
checks a push to gitmem meets; this module only renders the verdict. Exit code 0
when every commit passes, 1 when one is refused (or the repository cannot be
read), 2 for a usage mistake: what a CI job needs to fail the status.
"""

from __future__ import annotations

from typing import Any

import click

from gitmem.adapters.cli.app import EXIT_REFUSED, State, cli, common_options, emit, pass_state, say


@cli.command()
@click.argument("repository", metavar="REPO", default=".")
@click.argument("rev_range", metavar="[REV-RANGE]", default="HEAD")
@common_options
@pass_state
def check(state: State, repository: str, rev_range: str) -> None:
    """Check the commits of git repository REPO against the memory rules.

    REPO is any plain git repository: a CI checkout (a work tree) or a bare
    repository (default: the current folder). REV-RANGE is BASE..TIP (the
    commits TIP adds to BASE; a BASE of all zeros or none means TIP's whole
    history) or one revision (its whole history; default HEAD). Every commit is
    held to the rules a push to gitmem meets (paths, plain text files, size,
    frontmatter, secrets, trailers; the memory's limits at TIP), with the limits
    in REPO's gitmem.* config. Prints one line per refused commit with each file
    and rule; exit code 0 when all hold, 1 when any is refused.
    """
    from gitmem.hooks import check_repository

    report = check_repository(repository, rev_range)
    groups = report.refused_commits()
    payload: dict[str, Any] = {
        "repository": repository,
        "range": rev_range,
        "base": report.base,
        "tip": report.tip,
        "commits": report.commits,
        "ok": report.ok,
        "refused": [{"commit": r.commit, "path": r.path, "rule": r.rule, "message": r.message} for r in report.refused],
        "refused_commits": [commit for commit, _ in groups],
    }

    def text() -> None:
        for commit, found in groups:
            files = "; ".join(f"{r.path or '(message)'} [{r.rule}] {r.message}" for r in found)
            say(f"refused {commit}: {files}")
        if report.ok:
            say(f"ok: {report.commits} commit(s) of {rev_range} hold the memory rules")
        else:
            say(f"{len(groups)} of {report.commits} commit(s) of {rev_range} refused", err=True)

    emit(payload, text)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_REFUSED)
