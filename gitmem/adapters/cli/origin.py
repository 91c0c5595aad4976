"""Who a change made through the CLI is by, without click (the quick path's ``pull`` asks too).

``--principal``, else ``$GITMEM_PRINCIPAL``, else the login name: the one default
principal of every CLI change, approval and rejection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.model import Origin

#: The tool call id the CLI records on every change it makes.
CLI_TOOL_CALL = "cli"


def login_name() -> str | None:
    """The login name (``$LOGNAME``, ``$USER``, then the password database), or ``None`` when there is none."""
    import getpass

    try:
        return getpass.getuser() or None
    except (KeyError, OSError):
        return None


def cli_origin(principal: str | None, run: str | None) -> Origin:
    """The origin of a CLI change: ``principal`` (else the login name), in run ``run``."""
    from gitmem.model import Origin

    return Origin(run_id=run, principal_id=principal or login_name(), tool_call_id=CLI_TOOL_CALL)
