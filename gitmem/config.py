"""Where the default root of mounts lives. Only entry points call this."""

from __future__ import annotations

import os
from pathlib import Path


def default_root() -> Path:
    """``$GITMEM_ROOT``, else ``$XDG_DATA_HOME/gitmem``, else ``~/.local/share/gitmem``."""
    explicit = os.environ.get("GITMEM_ROOT")
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "gitmem"
