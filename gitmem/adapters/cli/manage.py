"""Bringing memories in and out, and looking after them: import, export, delete, status, config.

``import`` is how a team with a folder of notes starts: every file is checked by
the rules a store write applies, and the accepted ones land as ONE commit through
the store's atomic batch write (``apply``), so a failure part-way leaves nothing.
``export`` is the way back out, at any revision, as a folder or a tarball.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitmem.adapters.cli.app import (
    State,
    cli,
    common_options,
    emit,
    landed,
    origin_options,
    pass_state,
    say,
    usage_error,
)
from gitmem.errors import MemoryStoreError

if TYPE_CHECKING:  # the store loads when a command opens a memory
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
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_SKIP_DIRS = {".git"}


def _walk(folder: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``folder`` as ``(posix path relative to it, absolute path)``, sorted.

    ``.git`` folders are skipped (a clone's metadata is not memory); symbolic links
    are not followed, and are reported by the caller like any other refused file.
    """
    out: list[tuple[str, Path]] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in files:
            full = Path(top) / name
            out.append((full.relative_to(folder).as_posix(), full))
    return sorted(out)


def _check(store: Any, rel: str, full: Path) -> tuple[str | None, dict[str, str] | None]:
    """The file's text when it passes the store's rules, else a refusal ``{path, error, message}``."""
    from gitmem.fileformat import encode_text, validate_path

    try:
        if full.is_symlink() or not full.is_file():
            raise MemoryStoreError("invalid_file", f"{rel}: not a regular file (links are not imported)")
        data = full.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryStoreError("invalid_file", f"{rel}: not UTF-8 text (byte {exc.start})") from None
        validate_path(rel, store.format)
        encode_text(text, store.format)
    except MemoryStoreError as exc:
        message = exc.message if rel in exc.message else f"{rel}: {exc.message}"
        return None, {"path": rel, "error": exc.code, "message": message}
    except OSError as exc:
        return None, {"path": rel, "error": "unavailable", "message": f"{rel}: cannot read: {exc.strerror}"}
    return text, None


@cli.command("import")
@click.argument("name")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--strict", is_flag=True, help="Write nothing when any file is refused.")
@click.option("--create", is_flag=True, help="Create memory NAME first when it does not exist.")
@origin_options
@common_options
@pass_state
def import_(state: State, name: str, directory: Path, strict: bool, create: bool) -> None:
    """Copy the files of DIRECTORY into memory NAME as one commit.

    Every file is checked by the rules of a store write (path, UTF-8, size,
    frontmatter, secrets); refused files are listed with the rule and skipped,
    or with --strict nothing is written. Files already in the memory are
    replaced; files only in the memory are kept.
    """
    from gitmem.model import ANY, Edit

    store = state.root.mount(name, create=True, kind="file").sync if create else state.files(name)
    accepted: list[Edit] = []
    refused: list[dict[str, str]] = []
    for rel, full in _walk(directory):
        text, refusal = _check(store, rel, full)
        if refusal is not None:
            refused.append(refusal)
        else:
            accepted.append(Edit(rel, text, ANY))
    payload: dict[str, Any] = {
        "memory": name,
        "directory": str(directory),
        "commit": None,
        "imported": [],
        "unchanged": [],
        "refused": refused,
        "proposal": None,
    }

    def text_report(head: str) -> None:
        for r in refused:
            say(f"refused {r['path']} [{r['error']}]: {r['message']}", err=True)
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
    store = state.store(name)
    commit, files = store.snapshot(rev)
    tarball = destination.name.endswith(_TAR_SUFFIXES)
    try:
        if tarball:
            size = _export_tar(store, files, destination)
        else:
            size = _export_folder(store, files, destination)
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot write {destination}: {exc.strerror or exc}") from exc
    payload = {
        "memory": name,
        "rev": rev,
        "commit": commit,
        "destination": str(destination),
        "format": "tar" if tarball else "folder",
        "files": len(files),
        "bytes": size,
    }
    emit(payload, f"exported {len(files)} file(s) of {name!r} at {commit[:12]} to {destination}")


def _export_folder(store: SyncGitFileStore, files: list[tuple[str, str]], destination: Path) -> int:
    """Write ``files`` under a new folder; the bytes written."""
    import shutil
    import tempfile

    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise MemoryStoreError("already_exists", f"{destination} exists and is not an empty folder")
    destination.parent.mkdir(parents=True, exist_ok=True)
    # Written to a sibling first and renamed, so a failure leaves no half-exported folder.
    tmp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    size = 0
    try:
        for path, version in files:
            target = tmp / path
            target.parent.mkdir(parents=True, exist_ok=True)
            size += target.write_bytes(store.raw(version))
        if destination.exists():
            destination.rmdir()
        os.replace(tmp, destination)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return size


def _export_tar(store: SyncGitFileStore, files: list[tuple[str, str]], destination: Path) -> int:
    """Write ``files`` into a new tarball (compressed as its suffix says); the bytes of the files."""
    import io
    import tarfile

    if destination.exists():
        raise MemoryStoreError("already_exists", f"{destination} already exists")
    suffix = destination.name.rsplit(".", 1)[-1]
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
    try:
        if suffix in ("gz", "tgz"):
            tar = tarfile.open(tmp, "w:gz")
        elif suffix == "bz2":
            tar = tarfile.open(tmp, "w:bz2")
        elif suffix == "xz":
            tar = tarfile.open(tmp, "w:xz")
        else:
            tar = tarfile.open(tmp, "w")
        size = 0
        with tar:
            for path, version in files:
                data = store.raw(version)
                info = tarfile.TarInfo(path)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
                size += len(data)
        os.replace(tmp, destination)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size


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
    if not yes:
        raise usage_error(f"deleting memory {name!r} cannot be undone; pass --yes to go ahead")
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
                f" ({m['disk_bytes']} B on disk)  {review}  index {m['index']}"
            )

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
        shown = {"memory": name, "config": values, "limits": _effective(store)}

        def text() -> None:
            for k, v in values.items():
                say(f"{k} = {v if v is not None else _default_text(_effective(store)[k])}")

        emit(shown, text)
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
    emit(
        {"memory": name, "key": full, "value": repo.config_get(full), "effective": _effective(store)[full]},
        str(repo.config_get(full) if repo.config_get(full) is not None else _default_text(_effective(store)[full])),
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
