"""``gitmem push`` and ``gitmem pull`` without click: what their click commands and the quick path both run.

A push or a pull is a whole process, and its own work (one ``git push``, one
fetch and its checks) is about what starting click costs, so the plain forms go
through :mod:`.quick`, which calls these functions; the click commands in
:mod:`.remote` call them too, so both print the same bytes by construction.
Each returns the exit code; a refusal from the store (a
:class:`~gitmem.errors.MemoryStoreError` other than a refused merge) is raised
for the caller to show as every command shows one.
"""

from __future__ import annotations

from gitmem.adapters.cli.output import EXIT_OK, EXIT_REFUSED, error_json, say, say_json, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.model import Origin
    from gitmem.remotes import MergeRefused, MergeResult
    from gitmem.root import Root


def push(root: Root, name: str, remote_name: str, *, proposals: bool, as_json: bool) -> int:
    """Push ``main`` of memory ``name`` (and with ``proposals`` every review proposal) to ``remote_name``."""
    from gitmem import remotepush

    pushed = remotepush.push_named(root, name, remote_name, proposals=proposals)
    if as_json:
        refs = [{"ref": p.ref, "status": p.status, "summary": p.summary} for p in pushed]
        say_json({"memory": name, "remote": remote_name, "refs": refs})
        return EXIT_OK
    for item in pushed:
        say(f"{item.ref}\t{item.status.replace('_', ' ')}\t{item.summary}")
    if not pushed:
        say("nothing to push")
    return EXIT_OK


def refused(exc: MergeRefused, hint: str, *, as_json: bool) -> int:
    """A refused merge (pull, clone, approve): the code, every conflicting file or broken rule, what to do."""
    if as_json:
        say_json({**error_json(exc, hint), "paths": list(exc.paths), "reasons": list(exc.reasons)})
    else:
        say(f"error [{exc.code}]: {exc.message}", err=True)
        for line in exc.reasons:
            say(f"  {line}", err=True)
        say(f"  what to do: {hint}", err=True)
    return EXIT_REFUSED


def pull(root: Root, name: str, remote_name: str, *, origin: Origin, propose: bool, as_json: bool) -> int:
    """Bring ``main`` of ``remote_name`` into memory ``name``, and say how ``main`` moved (or why not)."""
    from gitmem import remotepull

    try:
        result = remotepull.pull_named(root, name, remote_name, origin=origin, propose=propose)
    except remotepull.MergeRefused as exc:
        return refused(exc, _pull_hint(exc, name, remote_name), as_json=as_json)
    if result.kind == "conflict":
        return _conflict(name, remote_name, result, as_json=as_json)
    if as_json:
        say_json(
            {
                "memory": name,
                "remote": remote_name,
                "result": result.kind,
                "before": result.before,
                "after": result.after,
                "paths": list(result.paths),
                "closed": list(result.closed),
                "abandoned": list(result.abandoned),
            }
        )
        return EXIT_OK
    if result.kind == "up_to_date":
        message = f"{name} is up to date with {remote_name}/main ({short(result.after)})"
    else:
        how = {"fast_forward": "fast-forward", "joined": "joined its history"}.get(result.kind, "merge commit")
        files = f"{len(result.paths)} file{'' if len(result.paths) == 1 else 's'} changed"
        message = f"{name}: main {short(result.before)} -> {short(result.after)} ({how}); {files}"
        for path in result.paths:
            message += f"\n  {path}"
    if result.closed:
        message += f"\nreview proposals merged upstream and closed: {', '.join(result.closed)}"
    for run in result.abandoned:
        message += (
            f"\nproposal {run} was closed on {remote_name} without being merged; "
            f"reject it here with `gitmem review reject {name} {run}` (or push it again to reopen it)"
        )
    say(message, multiline=True)
    return EXIT_OK


def _pull_hint(exc: MergeRefused, name: str, remote_name: str) -> str:
    if exc.code == "version_mismatch" and exc.paths:
        return (
            f"main was not changed; run `gitmem pull {name} {remote_name} --propose` to open conflict "
            f"proposal merge-{remote_name} holding both versions, settle each file with `gitmem review resolve`, "
            f"approve it, then push"
        )
    if exc.code == "version_mismatch":
        return (
            f"main was not changed; {remote_name}/main shares no history with this memory "
            f"(join it with `gitmem clone URL` into a new memory)"
        )
    if any(rule in ("identity", "provenance") for rule in exc.rules):
        return (
            f"main was not changed; a commit message on {remote_name} repeats or misplaces Gitmem-* lines, so who or "
            "what it names could be read two ways. A forge's squash merge does this with its default message (every "
            "squashed commit's lines, one after the other): squash with the pull request's title as the message "
            f"(docs/forge.md), and rewrite that commit on {remote_name}"
        )
    return f"main was not changed; fix the listed files on {remote_name} (rewrite the commits that add them) and pull again"


def _conflict(name: str, remote_name: str, result: MergeResult, *, as_json: bool) -> int:
    """A pull --propose that met a conflict: main did not move; the proposal and the way to finish it."""
    run = result.proposal
    steps = [
        f"gitmem review show {name} {run}",
        *(f"gitmem review resolve {name} {run} {p} --ours | --theirs | --file MERGED" for p in result.paths),
        f"gitmem review approve {name} {run}",
        f"gitmem push {name} {remote_name}",
    ]
    if as_json:
        say_json(
            {
                "memory": name,
                "remote": remote_name,
                "result": "conflict",
                "before": result.before,
                "after": result.after,
                "paths": list(result.paths),
                "proposal": run,
                "next": steps,
            }
        )
    else:
        say(f"{name} and {remote_name}/main both changed {', '.join(result.paths)}; main was not changed", err=True)
        say(f"conflict proposal {run} holds both versions; finish with:", err=True)
        for step in steps:
            say(f"  {step}", err=True)
    return EXIT_REFUSED
