"""How ``gitmem serve`` holds connections: how many, which one makes room, which bodies are read.

waitress, which runs the server, is built for a trusted network behind a proxy:
it stops accepting at its connection limit, keeps a silent connection for two
minutes, skips connections with a request in flight when it looks for idle
ones, and reads a request's whole body before the app can look at its token.
Each of those let a client (without a token, or with a read token) hold what
every other client needs. :class:`gitmem.adapters.http_front.GitHttpServer`
uses what is here so that:

- past :data:`MAX_CONNECTIONS` a new connection takes the place of the one silent
  longest with nothing in flight (:func:`make_room`);
- a connection whose client stopped reading an answer is closed after
  :data:`CHANNEL_TIMEOUT`, which frees its place and any thread producing it (:func:`end_stalled`);
- only a push whose token may push may send a pack-sized body; everything else
  is refused past its cap as soon as its headers say so (:func:`channel_class`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

CHANNEL_TIMEOUT = 120
"""Seconds of silence after which a connection is closed: idle, or with an answer its client does not read."""
MAX_CONNECTIONS = 100
"""Connections one server (one worker) holds; past that a new one takes the place of the longest silent."""
HELD_BACK_POLL = 0.01
"""Seconds a worker that lets the others accept waits before it looks at their counts again."""


def make_room(channels: Iterable[Any]) -> None:
    """At the connection limit, close the connection that was quiet longest and has nothing in flight.

    waitress stops accepting at its ``connection_limit`` and keeps a connection
    that sends nothing for ``channel_timeout`` (two minutes): whoever could reach the
    port could hold every place with sockets that never finish a request, and
    token holders could not connect at all. So a new connection takes the place of
    the one that has been silent longest among those with no request being served
    and no answer being sent (an idle keep-alive, or half a request): to keep
    others out, a client must now be busier than every one of them. The connection
    is closed as waitress's own idle check closes one (``will_close``), by the loop.
    """
    idle = [
        c for c in channels
        if not c.requests and not c.total_outbufs_len and not c.will_close and not c.close_when_flushed
    ]  # fmt: skip
    if idle:
        min(idle, key=lambda c: c.last_activity).will_close = True


SMALL_BODY = 8 * 1024 * 1024
"""The largest request body read from a token the server knows, but for a push it may make (an MCP
request takes 4 MiB, a fetch request 1 MiB once decompressed)."""


def channel_class(body_cap: Callable[[str, str, str], int | None]) -> type[Any]:
    """waitress's connection, whose requests are held to what ``body_cap`` says from their headers.

    waitress reads a request's whole body, spooled to a temporary file, before the
    app sees the request and its token: with the one cap a push needs, anybody
    who could reach the port had a worker spool 64 MiB per connection (100 at
    once) before being told 401. Once a request's headers are in, ``body_cap``
    (method, path, ``Authorization``) gives its cap, ``None`` for the server's own
    (a push with a token that may push): a request without a token the server
    knows is held to what a fetch needs, any other to :data:`SMALL_BODY`. waitress
    answers 413 at once when its ``Content-Length`` says more, or as a chunked body
    passes it.
    """
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser

    class Parser(HTTPRequestParser):  # type: ignore[misc]
        adj: Any

        def parse_header(self, header_plus: bytes) -> None:
            super().parse_header(header_plus)
            cap = body_cap(str(self.command), str(self.path), str(self.headers.get("AUTHORIZATION", "")))
            if cap is not None and self.adj.max_request_body_size > cap:
                adj = copy.copy(self.adj)  # this request's own: the server's stay as they are
                adj.max_request_body_size = cap
                self.adj = adj

    class Channel(HTTPChannel):  # type: ignore[misc]
        parser_class = Parser

    return Channel


def end_stalled(channels: Iterable[Any], cutoff: float, watermark: int) -> None:
    """Close connections whose answer has waited since ``cutoff`` for its client to read it.

    Two kinds, both silent for ``channel_timeout`` with output they cannot send:

    - an answer still being produced, past ``watermark`` bytes buffered
      (waitress's ``outbuf_high_watermark``, 16 MiB): the thread producing it
      waits for the client to read, and waitress's idle check skips a connection
      with a request in flight, so a client that asked for a large clone and read
      nothing held that thread for as long as it kept the socket. Its thread
      then gets ``ClientDisconnected`` and is free;
    - a whole answer (no request in flight) of which some is still unsent: a few
      MiB are past the kernel's socket buffers. waitress's idle check only marks
      it to close once its output is flushed, which never comes, and
      :func:`make_room` never picks a connection with output, so a client could
      hold a place for ever with one clone. waitress sets ``last_activity`` after
      the answer's last byte is buffered, so its silence is the client's.

    Closed at once (its socket takes no more, so waitress would never get to
    close it). An answer in flight below the watermark is left alone: its last
    bytes may have been buffered a moment ago by a request that took long to
    answer, with ``last_activity`` still from its arrival.
    Called by the loop's thread between polls only.
    """
    for c in channels:
        stuck = c.total_outbufs_len > watermark if c.requests else c.total_outbufs_len > 0
        if stuck and c.last_activity < cutoff and c.connected:
            c.handle_close()
