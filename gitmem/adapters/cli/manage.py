"""Bringing memories in and out, and looking after them: import, export, delete, status, config.

``import`` is how a team with a folder of notes starts: every file is checked by
the rules a store write applies, and the accepted ones land as ONE commit through
the store's atomic batch write (``apply``), so a failure part-way leaves nothing.
``export`` is the way back out, at any revision, as a folder or a tarball. What
either end does with hostile input (crafted trees, FIFOs, huge files) is
``gitmem/exchange.py``'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitmem.adapters.cli.app import (
    State,
    cli,
    common_options,
    confirm,
    emit,
    landed,
    origin_options,
    pass_state,
    say,
    usage_error,
)
from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:
    from gitmem.gitstore import SyncGitFileStore

#: The limit keys ``gitmem config`` reads and sets (git config of the mount), with what each bounds.
LIMIT_KEYS: dict[str, str] = {
    "gitmem.maxFileBytes": "largest file, in bytes (64k, 1m accepted)",
    "gitmem.maxFiles": "most files in the memory",
    "gitmem.maxMemoryBytes": "most bytes of all files together",
    "gitmem.maxPathBytes": "longest path, in bytes",
    "gitmem.maxDescriptionChars": "longest frontmatter description, in characters",
    "gitmem.maxFrontmatterBytes": "largest frontmatter block, in bytes",
    "gitmem.checkSecrets": "refuse files that hold a key or token (true/false)",
    "gitmem.review": "send writes that carry a run id to proposal branches (true/false)",
    "gitmem.durable": "fsync every commit before the write returns, in every process (true/false)",
}
_KEYS_BY_LOWER = {k.lower(): k for k in LIMIT_KEYS}
#: What ``status`` says of each index state: "missing" alone reads like damage on every new memory.
_INDEX_STATES = {
    "current": "index current",
    "behind": "index behind (caught up by the next search)",
    "missing": "index not built yet",
    "broken": "index unreadable (rebuilt by the next search)",
    "outdated": "index outdated (rebuilt by the next search)",
}
_REBUILT = ("missing",)


@cli.command("import")
@click.argument("name")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--history", "history", metavar="REPO", help="Bring in the commits of git repository REPO instead.")
@click.option("--rev", default="HEAD", show_default=True, help="With --history: the branch or tag of REPO.")
@click.option("--strict", is_flag=True, help="Write nothing when any file (or commit) is refused.")
@click.option(
    "--rewrite", is_flag=True, help="With --history: rewrite the commits without refused or excluded entries."
)
@click.option("--create", is_flag=True, help="Create memory NAME first when it does not exist.")
@click.option("--no-hooks", "no_hooks", is_flag=True, help="With --create: do not install gitmem's checking hooks.")
@click.option("--exclude", "exclude", multiple=True, metavar="GLOB", help="Leave out paths matching GLOB (repeatable).")
@click.option("--gitignore", is_flag=True, help="Leave out what the folder's .gitignore files ignore.")
@origin_options
@common_options
@pass_state
def import_(
    state: State,
    name: str,
    directory: Path | None,
    history: str | None,
    rev: str,
    strict: bool,
    create: bool,
    exclude: tuple[str, ...],
    gitignore: bool,
    rewrite: bool = False,
    no_hooks: bool = False,
) -> None:
    """Copy the files of DIRECTORY into memory NAME as one commit.

    Every file is checked by the rules of a store write (path, UTF-8, size,
    frontmatter, secrets); refused files are listed with the rule and skipped,
    or with --strict nothing is written. Files already in the memory are
    replaced; files only in the memory are kept. --exclude GLOB and
    --gitignore leave paths out (gitignore syntax; each one is listed).

    With --history REPO the commits of a git repository come in as they are
    (authors, dates, ids), each checked by the rules of a push; refused commits
    are listed with file and rule (every one of them), and what lands is the
    newest commit whose whole history passed (--strict: all or nothing).

    With --history REPO --rewrite every commit comes in, rewritten without the
    entries the rules refuse (binaries, secrets, links...) and those --exclude
    GLOB and --gitignore (the .gitignore files of each commit's tree) leave out:
    author, date and message stay, a rewritten commit records the original's id
    in an Imported-From trailer, and commits nothing was dropped from keep
    their ids. Each entry left out is listed with its commit and rule.
    """
    if (directory is None) == (history is None):
        raise usage_error("give a DIRECTORY to copy, or --history REPO to bring in a git history (not both)")
    if history is not None and (exclude or gitignore) and not rewrite:
        raise usage_error("--exclude and --gitignore apply to a DIRECTORY, or to a history with --rewrite")
    if history is None and rewrite:
        raise usage_error("--rewrite applies to --history REPO")
    if no_hooks and not create:
        raise usage_error("--no-hooks applies to a memory --create makes")
    with _made_for(state, name, create, hooks=not no_hooks) as store:
        if history is not None:
            _import_history(state, name, store, history, rev, strict, rewrite, exclude, gitignore)
        else:
            assert directory is not None
            _import_folder(state, name, store, directory, strict, exclude, gitignore)


@contextmanager
def _made_for(state: State, name: str, create: bool, *, hooks: bool) -> Iterator[SyncGitFileStore]:
    """Memory ``name`` (made first with ``create``); a memory made here is removed again when
    the import is refused before it wrote anything, so a refused import leaves the root as it was."""
    if not create:
        yield state.files(name)
        return
    made = not state.root.mount_path(name).exists()
    store = state.root.mount(name, create=True, kind="file", hooks=hooks).sync
    first = store.head()
    try:
        yield store
    except BaseException as exc:
        refused = not isinstance(exc, click.exceptions.Exit) or exc.exit_code != 0
        if made and refused and store.head() == first:
            state.root.remove(name)
        raise


def _import_folder(
    state: State,
    name: str,
    store: SyncGitFileStore,
    directory: Path,
    strict: bool,
    exclude: tuple[str, ...],
    gitignore: bool,
) -> None:
    """``import DIRECTORY``: the files that pass the rules in one commit, then the report."""
    from gitmem.exchange import scan_for
    from gitmem.model import ANY, Edit

    scan = scan_for(store, directory, exclude=exclude, gitignore=gitignore)
    accepted = [Edit(path, text, ANY) for path, text in scan.accepted]
    refused = [r.as_dict() for r in scan.refused]
    payload: dict[str, Any] = {
        "memory": name,
        "directory": str(directory),
        "commit": None,
        "imported": [],
        "unchanged": [],
        "refused": refused,
        "skipped": [{"path": r.path, "reason": r.message} for r in scan.skipped],
        "proposal": None,
    }

    def text_report(head: str) -> None:
        for r in refused:
            say(f"refused {r['path']} [{r['error']}]: {r['message']}", err=True)
        for skipped in payload["skipped"]:
            say(f"skipped {skipped['reason']}", err=True)
        say(head)

    if strict and refused:
        payload["message"] = f"{len(refused)} file(s) refused; nothing written (--strict)"
        emit(payload, lambda: text_report(payload["message"]))
        raise click.exceptions.Exit(1)
    before = {e.path: e.version for e in store.list()}
    if accepted:
        summary = f"import {len(accepted)} file(s) from {directory.name or directory}"[:200]
        done = store.apply(accepted, origin=state.origin, op="import", summary=summary)
        payload["commit"] = done.commit
        for edit, version in zip(accepted, done.versions, strict=True):
            key = "unchanged" if before.get(edit.path) == version else "imported"
            payload[key].append({"path": edit.path, "version": version})
        payload["proposal"] = landed(store, state) if payload["imported"] else None
    where = f" on proposal {payload['proposal']['ref']}" if payload["proposal"] else ""
    message = (
        f"imported {len(payload['imported'])} file(s) into {name!r}{where}"
        f" ({len(payload['unchanged'])} unchanged, {len(refused)} refused)"
    )
    if payload["commit"]:
        message += f": commit {payload['commit'][:12]}"
    emit(payload, lambda: text_report(message))


def _import_history(
    state: State,
    name: str,
    store: Any,
    source: str,
    rev: str,
    strict: bool,
    rewrite: bool,
    exclude: tuple[str, ...],
    gitignore: bool,
) -> None:
    """``import --history``: one call into the core, then the report (exit 1 when --strict refused)."""
    from gitmem.exchange import import_history

    done = import_history(store, source, rev=rev, strict=strict, rewrite=rewrite, exclude=exclude, gitignore=gitignore)
    refused = [
        {"commit": r.commit, "path": r.path, "rule": r.rule, "message": r.message} for r in done.refused
    ]
    payload: dict[str, Any] = {
        "memory": name,
        "source": done.source,  # credentials in a URL hidden
        "rev": rev,
        "head": done.head,
        "imported": done.imported,
        "refused": refused,
        "after_refused": done.after_refused,
        "replaced_init": done.replaced_init,
        "rewritten": [{"from": a, "to": b} for a, b in done.rewritten.items()],
        "left_out": [{"commit": d.commit, "path": d.path, "rule": d.rule, "message": d.message} for d in done.dropped],
    }
    left_out = len(done.after_refused) + len({r.commit for r in done.refused})

    def text(head: str) -> Any:
        def show() -> None:
            for d in done.dropped:
                say(f"left out {d.path} in {d.commit[:12]} [{d.rule}]: {d.message}", err=True)
            for r in done.refused:
                where = f"{r.path} in " if r.path else ""
                say(f"refused {where}{(r.commit or '')[:12]} [{r.rule}]: {r.message}", err=True)
            if done.after_refused:
                say(f"left out {len(done.after_refused)} later commit(s) that build on a refused one", err=True)
            say(head)

        return show

    if strict and left_out:
        payload["message"] = f"{left_out} commit(s) refused; nothing imported (--strict)"
        emit(payload, text(payload["message"]))
        raise click.exceptions.Exit(1)
    message = f"imported {len(done.imported)} commit(s) of {done.source} into {name!r}"
    if done.head:
        message += f": main at {done.head[:12]}"
    if done.rewritten:
        message += f"; {len(done.rewritten)} rewritten, {len(done.dropped)} entries left out"
    if left_out:
        message += f" ({left_out} commit(s) left out"
        message += ")" if rewrite else "; --rewrite brings every commit in without the refused files)"
    emit(payload, text(message))


@cli.command()
@click.argument("name")
@click.argument("destination", type=click.Path(path_type=Path))
@click.option("--rev", metavar="REV", help="Export the memory as it was at this commit (default: main).")
@common_options
@pass_state
def export(state: State, name: str, destination: Path, rev: str | None) -> None:
    """Write every file of memory NAME to DESTINATION, a new folder or a tarball.

    DESTINATION ending in .tar, .tar.gz, .tgz, .tar.bz2 or .tar.xz is a tarball;
    anything else is a folder, which must not exist or be empty.
    """
    from gitmem.exchange import TAR_SUFFIXES, export_folder, export_tar

    store = state.store(name)
    commit, files = store.snapshot(rev)
    tarball = destination.name.endswith(TAR_SUFFIXES)
    try:
        report = (export_tar if tarball else export_folder)(store, files, destination, commit=commit)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot write {destination}: {exc.strerror or exc}") from exc
    payload = {
        "memory": name,
        "rev": rev,
        "commit": commit,
        "destination": str(destination),
        "format": "tar" if tarball else "folder",
        "files": len(report.files),
        "bytes": report.bytes,
        "refused": [r.as_dict() for r in report.refused],
    }

    def text() -> None:
        for r in report.refused:
            say(f"refused {r.message} [{r.error}]", err=True)
        say(
            f"exported {len(report.files)} file(s) of {name!r} at {commit[:12]} to {destination}"
            + (f" ({len(report.refused)} refused: their paths break the rules of a write)" if report.refused else "")
        )

    emit(payload, text)


@cli.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Confirm: memory NAME and all its history are destroyed.")
@common_options
@pass_state
def delete(state: State, name: str, yes: bool) -> None:
    """Delete memory NAME: its repository and all its history.

    Clones and exports made before keep their copy. Stores that have it open
    answer memory_deleted from then on.
    """
    confirm(yes, f"deleting memory {name!r}")
    path = state.root.mount_path(name)
    state.root.remove(name)
    emit({"memory": name, "path": str(path), "deleted": True}, f"deleted memory {name!r} ({path})")


def _dir_size(path: Path) -> int:
    total = 0
    for top, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(top, f)).st_size
            except OSError:
                continue
    return total


def mount_status(state: State, name: str) -> dict[str, Any]:
    """One mount's line of ``status``: kind, head, files, sizes, review and index state."""
    store = state.store(name)
    entries = store.list()
    from gitmem import review as review_api

    index = store.index_status()
    return {
        "memory": name,
        "kind": store.kind,
        "path": store.path,
        "head": store.head(),
        "files": len(entries),
        "bytes": sum(e.size for e in entries),
        "disk_bytes": _dir_size(Path(store.path)),
        "review": review_api.enabled(store),
        "proposals": [p.run for p in review_api.proposals(store)],
        "index": index.state,
    }


@cli.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@common_options
@pass_state
def status(state: State, names: tuple[str, ...]) -> None:
    """Show the root and each memory: kind, head, size, review and index state."""
    wanted = list(names) or state.root.mounts()
    mounts = [mount_status(state, n) for n in wanted]
    payload = {"root": str(state.root.path), "mounts": mounts}

    def text() -> None:
        say(f"root {state.root.path}" + ("" if mounts else "  (no memories: `gitmem init NAME`)"))
        for m in mounts:
            review = f"review on, {len(m['proposals'])} proposal(s)" if m["review"] else "review off"
            say(
                f"{m['memory']}  {m['kind']}  head {m['head'][:12]}  {m['files']} file(s), {m['bytes']} B"
                f" ({m['disk_bytes']} B on disk)  {review}  {_INDEX_STATES.get(m['index'], 'index ' + m['index'])}"
            )
        if any(m["index"] in _REBUILT for m in mounts):
            say("(the search index is derived from git: the next `find` builds it; `gitmem index rebuild NAME` now)")

    emit(payload, text)


@cli.command()
@click.argument("name")
@click.argument("key", required=False)
@click.argument("value", required=False)
@click.option("--unset", is_flag=True, help="Remove KEY, so its default applies again.")
@common_options
@pass_state
def config(state: State, name: str, key: str | None, value: str | None, unset: bool) -> None:
    """Show or change the limits of memory NAME.

    Without KEY: every limit key and its value. With KEY: its value. With KEY
    and VALUE: set it (checked first: a value gitmem cannot read is refused).
    Keys: gitmem.maxFileBytes, maxFiles, maxMemoryBytes, maxPathBytes,
    maxDescriptionChars, maxFrontmatterBytes, checkSecrets, review (the
    `gitmem.` prefix may be left out).
    """
    store = state.store(name)
    repo = store.repo
    if key is None:
        if unset:
            raise usage_error("--unset needs a KEY")
        values = {k: repo.config_get(k) for k in LIMIT_KEYS}
        limits = _effective(store)

        def text() -> None:
            for k, v in values.items():
                say(f"{k} = {v if v is not None else _default_text(limits[k])}")

        emit({"memory": name, "config": values, "limits": limits}, text)
        return
    full = _KEYS_BY_LOWER.get(key.lower()) or _KEYS_BY_LOWER.get(f"gitmem.{key}".lower())
    if full is None:
        raise usage_error(f"{key!r} is not a gitmem setting; use one of: {', '.join(LIMIT_KEYS)}")
    if unset or value is not None:
        if unset and value is not None:
            raise usage_error("pass either VALUE or --unset, not both")
        old = repo.config_get(full)
        if unset:
            _config_unset(repo, full)
        else:
            _config_check_set(repo, full, value or "")
        payload: dict[str, Any] = {"memory": name, "key": full, "value": None if unset else value, "previous": old}
        emit(payload, f"{full} = {value}" if not unset else f"unset {full} {_default_text(_effective(store)[full])}")
        return
    now, effective = repo.config_get(full), _effective(store)[full]
    emit(
        {"memory": name, "key": full, "value": now, "effective": effective},
        str(now if now is not None else _default_text(effective)),
    )


def _default_text(value: object) -> str:
    return "(default: no limit)" if value is None else f"(default {value})"


def _read_format(path: str) -> Any:
    """The limits as a newly opened store reads them from the config (what every command will apply)."""
    from gitmem.gitstore import SyncGitFileStore

    return SyncGitFileStore.open(path).format


def _effective(store: Any) -> dict[str, Any]:
    """The value each key has in force (the default where the config holds none)."""
    from gitmem import review as review_api

    fmt = _read_format(store.path)
    return {
        "gitmem.maxFileBytes": fmt.max_file_bytes,
        "gitmem.maxFiles": fmt.max_files,
        "gitmem.maxMemoryBytes": fmt.max_memory_bytes,
        "gitmem.maxPathBytes": fmt.max_path_bytes,
        "gitmem.maxDescriptionChars": fmt.max_description_chars,
        "gitmem.maxFrontmatterBytes": fmt.max_frontmatter_bytes,
        "gitmem.checkSecrets": fmt.check_secrets,
        "gitmem.review": review_api.enabled(store),
        "gitmem.durable": store.repo.durable(),
    }


def _config_check_set(repo: Any, key: str, value: str) -> None:
    """Set ``key`` only when every command can read the result (else ``invalid_file``, nothing set)."""

    booleans = ("true", "false", "yes", "no", "on", "off", "1", "0")
    if key in ("gitmem.checkSecrets", "gitmem.review", "gitmem.durable"):
        if value.strip().lower() not in booleans:
            raise MemoryStoreError("invalid_file", f"{key} is true or false, not {value!r}")
        if key == "gitmem.durable":
            repo.set_durable(value.strip().lower() in ("true", "yes", "on", "1"))
        else:
            repo.config_set(key, value.strip().lower())
        return
    old = repo.config_get(key)
    repo.config_set(key, value)
    try:
        _read_format(repo.path)
    except (MemoryStoreError, ValueError, TypeError) as exc:
        if old is None:
            _config_unset(repo, key)
        else:
            repo.config_set(key, old)
        message = exc.message if isinstance(exc, MemoryStoreError) else str(exc)
        raise MemoryStoreError("invalid_file", f"{key} = {value!r} refused: {message}") from None


def _config_unset(repo: Any, key: str) -> None:
    if key == "gitmem.durable":
        repo.set_durable(False)  # the git CLI's fsync setting goes with it
    try:
        cfg = repo.repo.config
        if key in cfg:
            del cfg[key]
    except Exception as exc:  # pygit2.GitError derives from Exception only; the CLI may not import pygit2
        raise MemoryStoreError("unavailable", f"cannot change the config of {repo.path}: {exc}") from exc
