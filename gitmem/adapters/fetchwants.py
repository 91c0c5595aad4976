"""Fetches that want a commit ``main`` moved past: served when some ref still reaches it.

dulwich's upload-pack takes only wants equal to a ref's current value. Smart
HTTP reads the refs and asks for the pack in two requests, so an agent write in
between failed the clone or fetch ("Client wants invalid object", HTTP 500).
``gitmem serve`` reads the wanted commits from the request before dulwich does
(:func:`wanted`), asks :func:`gitmem.git.reach.reachable_wants` which some ref
still reaches, and shows dulwich those as hidden refs
(:func:`serve_reachable_wants`).
"""

from __future__ import annotations

import io

from dulwich.errors import GitProtocolError
from dulwich.objects import ObjectID
from dulwich.protocol import Protocol
from dulwich.refs import Ref
from dulwich.repo import Repo

from gitmem.model import is_object_id

_REACHABLE_PREFIX = b"refs/gitmem-reachable/"
"""Names of the refs a fetch request sees for its wanted, reachable commits (never advertised)."""


def serve_reachable_wants(repo: Repo, reachable: set[str]) -> None:
    """Let dulwich's upload-pack take wanted commits that some ref reaches, not only ref tips.

    dulwich refuses a ``want`` that is not the value of a ref ("Client wants
    invalid object"): when ``main`` moved between the ref listing and the pack
    request, every clone and fetch of that moment failed with HTTP 500. The
    pack request's refs gain one hidden ref per such commit; the advertisement
    is a separate request and never shows them.
    """
    extra = {Ref(_REACHABLE_PREFIX + sha.encode()): ObjectID(sha.encode()) for sha in reachable}
    if not extra:
        return
    get_refs, get_peeled = repo.get_refs, repo.get_peeled

    def refs() -> dict[Ref, ObjectID]:
        return {**get_refs(), **extra}

    def peeled(ref: Ref) -> ObjectID:
        return extra[ref] if ref in extra else get_peeled(ref)

    repo.get_refs = refs  # type: ignore[method-assign]
    repo.get_peeled = peeled  # type: ignore[method-assign]


def wanted(body: bytes) -> list[str]:
    """The hex ids on the ``want`` lines of a fetch request (pkt-lines; anything malformed ends the scan)."""
    lines = Protocol(io.BytesIO(body).read, lambda data: None)
    out: list[str] = []
    while True:
        try:
            payload = lines.read_pkt_line()
        except GitProtocolError:  # the end of the body (HangupException) or a malformed line
            return out
        if payload is not None and payload.startswith(b"want "):
            sha = payload[5:45].decode("ascii", "replace")
            if is_object_id(sha):
                out.append(sha)
