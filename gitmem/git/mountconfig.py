"""A mount's settings in its own git config: the codec every entry point shares.

The limits (:class:`~gitmem.fileformat.FileFormat`) and the kind of a mount live
as ``gitmem.*`` keys in the bare repository's ``config``, so the store, the CLI,
the server hooks and ``gitmem serve`` read the same values from the repo itself
rather than from options each one must be given. A bad hand-edited value is
``unavailable`` naming the key, never a crash.
"""

from __future__ import annotations

from gitmem.errors import MemoryStoreError

TYPE_CHECKING = False
if TYPE_CHECKING:  # the values load when a format or kind is made: a push only checks the config
    from typing import Final, Protocol

    from gitmem.fileformat import FileFormat
    from gitmem.model import MountKind

    class ConfigSource(Protocol):
        """Where a mount's settings are read: a :class:`~gitmem.git.repo.GitRepo`, or the
        libgit2-free :class:`~gitmem.git.peek.Peek` of a read-only CLI call."""

        @property
        def path(self) -> str: ...

        def config_get(self, key: str) -> str | None: ...


#: ``FileFormat`` field -> config key.
CONFIG_KEYS: Final[dict[str, str]] = {
    "max_file_bytes": "gitmem.maxFileBytes",
    "max_description_chars": "gitmem.maxDescriptionChars",
    "max_frontmatter_bytes": "gitmem.maxFrontmatterBytes",
    "max_path_bytes": "gitmem.maxPathBytes",
    "check_secrets": "gitmem.checkSecrets",
    "max_files": "gitmem.maxFiles",
    "max_memory_bytes": "gitmem.maxMemoryBytes",
}
#: What the mount holds (:data:`gitmem.model.MountKind`), written once at init.
KIND_KEY: Final = "gitmem.kind"

_UNITS: Final = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def new_mount_config(fmt: FileFormat, kind: MountKind) -> dict[str, str]:
    """The config of a new mount: its kind, and each limit that differs from the default."""
    from gitmem.fileformat import DEFAULT_FORMAT
    from gitmem.model import MOUNT_KINDS

    if kind not in MOUNT_KINDS:
        raise MemoryStoreError(
            "invalid_path", f"{kind!r} is not a kind of memory: use one of {', '.join(MOUNT_KINDS)}"
        )
    out: dict[str, str] = {KIND_KEY: kind}
    for field, key in CONFIG_KEYS.items():
        value = getattr(fmt, field)
        if value is not None and value != getattr(DEFAULT_FORMAT, field):
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _config_int(repo: ConfigSource, key: str, raw: str) -> int:
    """A positive whole number as ``git config --int`` reads it (``64k``, ``1m`` too)."""
    text = raw.strip().lower()
    scale = _UNITS.get(text[-1:], 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isascii() or not digits.isdigit() or int(digits) < 1:
        raise MemoryStoreError(
            "unavailable", f"{key} = {raw!r} in the config of {repo.path} is not a positive whole number"
        )
    return int(digits) * scale


def format_from_repo(repo: ConfigSource) -> FileFormat:
    """The limits saved in the mount's config; ``unavailable`` naming a key whose value is bad.

    Every command reads these, so a hand-edited typo must say what to fix rather
    than crash the process.
    """
    from gitmem.fileformat import FileFormat

    return FileFormat(**limit_values(repo))  # type: ignore[arg-type]


def limit_values(repo: ConfigSource) -> dict[str, object]:
    """The limits set in the mount's config, by :class:`~gitmem.fileformat.FileFormat` field, each checked
    (``unavailable`` naming a bad one): what :func:`format_from_repo` builds its format from."""
    values: dict[str, object] = {}
    for field, key in CONFIG_KEYS.items():
        raw = repo.config_get(key)
        if raw is None:
            continue
        if field == "check_secrets":
            # Only an explicit "off" turns the check off: a typo keeps secrets out.
            values[field] = raw.strip().lower() not in ("false", "no", "off", "0")
        else:
            values[field] = _config_int(repo, key, raw)
    return values


def kind_from_repo(repo: ConfigSource) -> MountKind:
    """The kind saved in the mount's config (absent: ``file``, the only kind before kinds existed)."""
    from gitmem.model import MOUNT_KINDS

    raw = repo.config_get(KIND_KEY)
    if raw is None:
        return "file"
    value = raw.strip().lower()
    for kind in MOUNT_KINDS:
        if value == kind:
            return kind
    raise MemoryStoreError(
        "unavailable", f"{KIND_KEY} = {raw!r} in the config of {repo.path} is not one of {', '.join(MOUNT_KINDS)}"
    )
