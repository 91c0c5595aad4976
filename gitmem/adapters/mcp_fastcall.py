"""A plain tool call on an open ``/mcp`` session, answered on the request's own thread without the SDK.

Nearly every request an agent sends over ``/mcp`` is ``tools/call``. Through
the SDK's transport one costs two thread hops (waitress's worker to the bridge's
event loop, the loop to a worker thread for the tool) and a pydantic round trip
of the message and of the result, about as much CPU as the tool's own work for
a read (``docs/benchmarks.md``, "gitmem serve against a bare MCP server"). So
:func:`tool_call` answers the common shape itself, on the waitress thread that
holds the request, with the very :meth:`~gitmem.adapters.mcp_server.MemoryMcpServer.answer`
the SDK path runs, and returns the JSON-RPC response the SDK would have sent.

It answers only what it can answer exactly as the SDK does, and hands
everything else back (``None``) for the SDK to answer: another method, a batch,
a notification, a tool the server does not have, an envelope or parameters with
fields it does not know, a ``Content-Type`` other than JSON, an ``Accept`` that
refuses JSON, or a protocol version other than those whose tool results carry
``structuredContent`` (``MCP-Protocol-Version``, which clients send on every
request after the handshake). What runs before it is unchanged: the bearer
token against the token file as it is now, the session's owner and grant, the
body's size cap, and (in front of the app) the ``Origin`` and ``Host`` checks;
the tool's arguments are checked by the registry as on every path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from gitmem.adapters.mcp_server import MemoryMcpServer
from gitmem.errors import MemoryStoreError
from gitmem.localfile import parse_json

VERSIONS: Final = frozenset({"2025-06-18", "2025-11-25"})
"""Protocol versions answered here: those whose ``CallToolResult`` has ``structuredContent``."""
_ENVELOPE: Final = frozenset({"jsonrpc", "id", "method", "params"})
_PARAMS: Final = frozenset({"name", "arguments", "_meta"})


def tool_call(server: MemoryMcpServer, environ: Mapping[str, Any], body: bytes) -> bytes | None:
    """The JSON-RPC response to a plain ``tools/call`` of ``server``'s session; ``None``: the SDK answers."""
    if environ.get("HTTP_MCP_PROTOCOL_VERSION") not in VERSIONS or b'"tools/call"' not in body:
        return None
    if not _is_json(str(environ.get("CONTENT_TYPE", ""))) or not _accepts_json(str(environ.get("HTTP_ACCEPT", ""))):
        return None
    try:
        message = parse_json(body, what="the MCP request")
    except MemoryStoreError:  # not JSON, or nested past the bound: the SDK answers (and says why)
        return None
    if not isinstance(message, dict) or message.keys() - _ENVELOPE or message.get("jsonrpc") != "2.0":
        return None
    if b"\\u" in body and not _unicode_text(message):  # a lone surrogate escape: the SDK refuses it as a parse error
        return None
    request_id, params = message.get("id"), message.get("params")
    if message.get("method") != "tools/call" or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    if not isinstance(params, dict) or params.keys() - _PARAMS or not isinstance(params.get("_meta", {}), dict):
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or server.registry.get(name) is None:
        return None
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        return None
    payload = server.answer(name, arguments, request_id)
    return response(request_id, payload)


def response(request_id: int | str, payload: Mapping[str, Any]) -> bytes:
    """The JSON-RPC response carrying ``payload`` as a tool result: as text and as structured content.

    The payload is encoded once and its JSON put in both places (the text is that
    JSON as a string): the same bytes as encoding the whole response, without
    encoding the payload a second time.
    """
    text = json.dumps(payload, ensure_ascii=False)
    failed = "true" if "error" in payload else "false"
    return (
        f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id, ensure_ascii=False)}, "result": {{"content": '
        f'[{{"type": "text", "text": {json.dumps(text, ensure_ascii=False)}}}], "structuredContent": {text}, '
        f'"isError": {failed}}}}}'
    ).encode()


def _unicode_text(message: object) -> bool:
    """Whether every string of ``message`` is text UTF-8 can carry (Python's ``json`` lets ``\\ud800`` through)."""
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_json(content_type: str) -> bool:
    """The SDK's test, to the letter: one of the comma-separated types before any ``;`` is ``application/json``."""
    return any(part.strip() == "application/json" for part in content_type.split(";")[0].split(","))


def _accepts_json(accept: str) -> bool:
    """The SDK's test: a type (parameters dropped, any case) is JSON or a wildcard covering it."""
    kinds = (part.strip().split(";")[0].strip().lower() for part in accept.split(","))
    return any(kind in ("application/json", "application/*", "*/*") for kind in kinds)
