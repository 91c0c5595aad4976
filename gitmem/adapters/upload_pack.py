"""``git-upload-pack`` for ``gitmem serve``: a bad fetch request is answered the way git answers it.

dulwich's upload-pack raised on requests git itself answers, and the server
turned each into HTTP 500 with a traceback in its log:

- a ``want`` of an object no ref reaches (or the memory lacks). git answers
  ``ERR upload-pack: not our ref <id>`` as a pkt-line; so does this handler,
  before any pack work starts (the wants come from the request, read before
  dulwich sees it, and the refs include the commits some ref still reaches:
  :mod:`gitmem.adapters.fetchwants`);
- a request without ``side-band-64k``, ``thin-pack`` or ``ofs-delta``. dulwich
  insists on all three; git requires none of them. Without side-band the pack
  is sent bare after the negotiation, as git does. dulwich never makes a thin
  pack here (a delta it reuses always has its base in the same pack), so a
  client that did not ask for ``thin-pack`` gets a pack it can index alone;
- anything else a hand-built request gets wrong (a malformed line, a protocol
  v2 command: this server speaks v0/v1 and its advertisement says so, so real
  clients fall back) is answered ``ERR upload-pack: <what was wrong>``.

Each answer is HTTP 200 with the error in the body, like ``git http-backend``,
so git shows the client ``remote error: upload-pack: not our ref …``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from dulwich.errors import GitProtocolError, HangupException
from dulwich.protocol import SIDE_BAND_CHANNEL_FATAL
from dulwich.server import UploadPackHandler

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 200
"""The most of dulwich's own words about a bad request that reach the client (they can quote it)."""


class GuardedUploadPack(UploadPackHandler):
    """dulwich's upload-pack, with git's answers to wants it cannot serve and to bad requests.

    ``wants`` are the ids on the request's ``want`` lines, read by the server
    before the handler runs (``()`` for the ref advertisement).
    """

    def __init__(self, *args: Any, wants: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wants = tuple(wants)
        self._sending = False

    @classmethod
    def required_capabilities(cls) -> tuple[bytes, ...]:
        """None, as for git: side-band, thin packs and offset deltas are the client's choice."""
        return ()

    def _start_pack_send_phase(self) -> None:
        super()._start_pack_send_phase()
        self._sending = True
        if not self.has_capability(b"side-band-64k"):
            # A bare pack ends with its own checksum; git sends nothing after it, and
            # a client reading the pack with index-pack takes a flush-pkt for junk.
            write_pkt_line = self.proto.write_pkt_line

            def no_trailing_flush(line: bytes | None) -> None:
                if line is not None:
                    write_pkt_line(line)

            self.proto.write_pkt_line = no_trailing_flush  # type: ignore[method-assign]

    def handle(self) -> None:
        if not self.advertise_refs:
            tips = {bytes(sha) for sha in self.repo.get_refs().values()}
            for want in self.wants:
                if want.encode("ascii") not in tips:
                    self._refuse(f"not our ref {want}")
                    return
        try:
            super().handle()
        except HangupException:
            log.info("upload-pack refused a request that ended early")
            self._refuse("protocol error: the request ended early")
        except (GitProtocolError, ValueError) as exc:
            # ValueError: a line dulwich could not parse (``deepen zz``, a short id).
            log.info("upload-pack refused a request: %s", exc)
            text = str(exc)
            if len(text) > MAX_ERROR_CHARS:
                text = text[:MAX_ERROR_CHARS] + "…"
            self._refuse(f"protocol error: {text}")

    def _refuse(self, reason: str) -> None:
        """Tell the client ``reason`` as git's ``upload-pack`` does: an ``ERR`` line, or side-band's error channel."""
        message = f"upload-pack: {reason}"
        if self._sending and self.has_capability(b"side-band-64k"):
            self.proto.write_sideband(SIDE_BAND_CHANNEL_FATAL, (message + "\n").encode("utf-8", "replace"))
            return
        self.proto.write_pkt_line(b"ERR " + message.encode("utf-8", "replace"))
