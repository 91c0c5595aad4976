"""Where the default root of mounts lives. Only entry points call this."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def default_root() -> Path:
    """``$GITMEM_ROOT``, else ``$XDG_DATA_HOME/gitmem``, else ``~/.local/share/gitmem``."""
    from pathlib import Path

    explicit = os.environ.get("GITMEM_ROOT")
    if explicit:
        return Path(explicit).expanduser()
    return Path(default_root_folder())


def default_root_folder() -> str:
    """:func:`default_root` as a string, for :class:`~gitmem.root.Root` (which makes it absolute,
    ``~`` expanded) without :mod:`pathlib`: the CLI's quick reads do not load it."""
    explicit = os.environ.get("GITMEM_ROOT")
    if explicit:
        return explicit
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "gitmem")


#: The name gitmem is published under (``gitmem`` itself is another project's on the package index).
#: The import name and the command stay ``gitmem``.
DISTRIBUTION = "gitmem-store"


def install_hint(extra: str) -> str:
    """How to add optional dependency group ``extra``, right for a source checkout and for an install.

    A checkout installed with ``pip install -e .`` has its ``pyproject.toml`` one
    folder above the package; everything else came from the package index.
    """
    from pathlib import Path

    checkout = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if checkout.is_file():
        return f"pip install -e '{checkout.parent}[{extra}]'"
    return f"pip install '{DISTRIBUTION}[{extra}]'"
