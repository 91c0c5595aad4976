"""Which browsers' pages may talk to ``gitmem serve``: the ``Origin`` and ``Host`` check of every request.

A web page can make a browser send requests to any address, ``127.0.0.1``
included, and with DNS rebinding a name the attacker controls can point at the
server while the browser believes it talks to the attacker's own site. The MCP
specification therefore asks servers to refuse unexpected origins. Every request
``gitmem serve`` answers - ``/mcp`` and git's endpoints alike, since a page could
read a ``--public-read`` memory through them - passes :class:`OriginGate` first:

- **Origin.** A request without one passes: git, MCP clients and scripts send
  none, and a browser always sends one with a cross-site or ``POST`` request.
  One that is present passes only when it is listed (``--allow-origin``,
  compared as scheme, host and port), or names the server itself: one of its
  own names (below) with the port it listens on, or a name given with
  ``--allow-host`` (any port: a reverse proxy's public name). ``null`` (a
  sandboxed page, a local file) passes only when listed.
- **Host.** On a server bound to a loopback address, or when ``--allow-host``
  names are given, the ``Host`` header must name the server: a loopback name
  (``localhost``, ``127.0.0.1``, ``[::1]``), the address it is bound to, or an
  ``--allow-host`` name (any port). A rebinding page sends its own name there,
  so this refuses it even for the requests that carry no ``Origin``. A server
  bound to every address (``0.0.0.0``) is reached under names it cannot know,
  so without ``--allow-host`` its ``Host`` is not checked.

A refused request gets 403 with a plain-text body naming the header and the
option that would allow it; nothing else of the server runs for it.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SHOWN = 200  # the most of a refused header a reply or log line repeats


def _name(host: str) -> str:
    """A host name as compared: lower case, no trailing dot, IPv6 without brackets."""
    host = host.strip().lower().rstrip(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def is_loopback(host: str) -> bool:
    name = _name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case without a default port, or ``None`` when it is not one.

    ``null`` stays ``null``. A path, query, user or fragment makes it no origin.
    """
    text = origin.strip()
    if text.lower() == "null":
        return "null"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    host = _name(parts.hostname)
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else "")


def _host_header(value: str) -> str | None:
    """The name of a ``Host`` header (``name``, ``name:port``, ``[v6]:port``), or ``None`` when malformed."""
    value = value.strip()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or (value[end + 1 :] and not value[end + 1 :].startswith(":")):
            return None
        return _name(value[: end + 1])
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    return _name(name) if name else None


@dataclass
class OriginGate:
    """The WSGI app that checks ``Origin`` and ``Host`` (see the module docstring) before ``app`` runs.

    ``port`` is filled in once the server listens (a server asked for port 0
    learns its port then).
    """

    app: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]
    host: str = "127.0.0.1"
    port: int = 0
    allowed_origins: Iterable[str] = ()
    allowed_hosts: Iterable[str] = ()
    _origins: frozenset[str] = field(init=False, repr=False)
    _hosts: frozenset[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        origins = set()
        for origin in self.allowed_origins:
            normal = normalize_origin(origin)
            if normal is None:
                raise ValueError(f"{origin!r} is not an origin: give scheme://host[:port], such as https://app.example")
            origins.add(normal)
        self._origins = frozenset(origins)
        self._hosts = frozenset(_name(h) for h in self.allowed_hosts if h.strip())

    # -- the server's own names --

    def own_names(self) -> frozenset[str]:
        """The names the server answers to: its address, loopback names when it listens there, ``--allow-host``."""
        bound = _name(self.host)
        names = set(self._hosts)
        if bound in WILDCARDS:
            names |= LOOPBACK_NAMES | {_name(socket.gethostname())}
        else:
            names.add(bound)
            if is_loopback(bound):
                names |= LOOPBACK_NAMES
        return frozenset(names)

    def checks_host(self) -> bool:
        return bool(self._hosts) or is_loopback(self.host)

    def refusal(self, environ: Mapping[str, Any]) -> str | None:
        """Why the request must be refused, or ``None`` when it may go on."""
        own = self.own_names()
        host = environ.get("HTTP_HOST")
        if host is not None and self.checks_host():
            name = _host_header(str(host))
            if name is None or name not in own:
                shown = str(host)[:_SHOWN]
                return (
                    f"Host {shown!r} is not a name of this server; "
                    "start gitmem serve with --allow-host NAME to answer to it (e.g. behind a reverse proxy)"
                )
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            return None
        normal = normalize_origin(str(origin))
        if normal is not None and self._origin_allowed(normal, own):
            return None
        shown = str(origin)[:_SHOWN]
        return (
            f"Origin {shown!r} may not use this server (a web page's requests are refused unless its origin is "
            "allowed); start gitmem serve with --allow-origin ORIGIN to allow it"
        )

    def _origin_allowed(self, origin: str, own: frozenset[str]) -> bool:
        if origin in self._origins:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        host = _name(parts.hostname or "")
        if parts.scheme not in _DEFAULT_PORTS:
            return False
        if host in self._hosts:
            return True
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
        return host in own and port == self.port

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        reason = self.refusal(environ)
        if reason is None:
            return self.app(environ, start_response)
        log.warning("refused %s %s: %s", environ.get("REQUEST_METHOD"), str(environ.get("PATH_INFO"))[:_SHOWN], reason)
        body = (reason + "\n").encode("utf-8", "replace")
        start_response(
            "403 Forbidden", [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
        )
        return [body]
