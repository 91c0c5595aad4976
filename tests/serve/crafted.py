"""Hand-made git objects and packs, and a raw receive-pack request: what a hostile client sends.

The real git client refuses to build most malformed objects, so these tests write
them byte by byte (the formats are git's: ``Documentation/gitformat-pack.txt``) and
speak the smart HTTP receive-pack protocol themselves.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

_TYPES = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
_REF_DELTA = 7
ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def oid(kind: str, raw: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(raw)}\0".encode() + raw).hexdigest()


def tree(*entries: tuple[bytes, bytes, str]) -> bytes:
    """A raw tree from ``(mode, name, id)`` entries, in the order given (git wants them sorted)."""
    return b"".join(mode + b" " + name + b"\0" + bytes.fromhex(ident) for mode, name, ident in entries)


def commit(
    tree_id: str,
    parents: Sequence[str],
    message: bytes = b"crafted\n",
    *,
    committer: bytes = b"Mallory <m@example.com> 1700000000 +0000",
    author: bytes | None = None,
) -> bytes:
    head = f"tree {tree_id}\n".encode() + b"".join(f"parent {p}\n".encode() for p in parents)
    return head + b"author " + (author or committer) + b"\ncommitter " + committer + b"\n\n" + message


def _header(kind: int, size: int) -> bytes:
    byte = (kind << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def pack(
    objects: Sequence[tuple[str, bytes]], *, count: int | None = None, deltas: Sequence[str] = (), level: int = 6
) -> bytes:
    """A version-2 pack of whole objects; ``count`` overrides the header, ``deltas`` adds a REF_DELTA per base id."""
    total = len(objects) + len(deltas) if count is None else count
    out = bytearray(b"PACK" + (2).to_bytes(4, "big") + total.to_bytes(4, "big"))
    for kind, raw in objects:
        out += _header(_TYPES[kind], len(raw)) + zlib.compress(raw, level)
    for base in deltas:
        delta = bytes([5, 5, 0x90, 5])  # source 5, target 5 bytes, copy 5 bytes from offset 0
        out += _header(_REF_DELTA, len(delta)) + bytes.fromhex(base) + zlib.compress(delta)
    out += hashlib.sha1(out).digest()
    return bytes(out)


def pkt(line: bytes) -> bytes:
    return f"{len(line) + 4:04x}".encode() + line


@dataclass
class Report:
    """What the server answered: HTTP status, the unpack line, one status per command, remote messages."""

    http: int
    unpack: str | None
    refs: list[tuple[str, str]]
    messages: str

    def status(self, ref: str) -> list[str]:
        return [s for r, s in self.refs if r == ref]


def _pkt_lines(data: bytes) -> list[bytes | None]:
    lines: list[bytes | None] = []
    pos = 0
    while pos + 4 <= len(data):
        size = int(data[pos : pos + 4], 16)
        if size == 0:
            lines.append(None)
            pos += 4
            continue
        lines.append(data[pos + 4 : pos + size])
        pos += size
    return lines


def receive_pack(
    base_url: str,
    name: str,
    token: str,
    commands: Sequence[tuple[str, str, str]],
    body_pack: bytes | None,
    *,
    shallow: Sequence[str] = (),
    atomic: bool = False,
    gzip_body: bool = False,
) -> Report:
    """POST one receive-pack request (report-status, side-band-64k) and parse the answer."""
    body = request_body(commands, body_pack, shallow=shallow, atomic=atomic)
    headers = {
        "Content-Type": "application/x-git-receive-pack-request",
        "Authorization": "Basic " + base64.b64encode(f"agent:{token}".encode()).decode(),
    }
    if gzip_body:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    request = urllib.request.Request(
        f"{base_url}/{name}.git/git-receive-pack", data=body, method="POST", headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            code, data = answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        code, data = exc.code, exc.read()
        exc.close()
    return parse_report(code, data)


def request_body(
    commands: Sequence[tuple[str, str, str]],
    body_pack: bytes | None,
    *,
    shallow: Sequence[str] = (),
    atomic: bool = False,
) -> bytes:
    """A receive-pack request: shallow lines, commands (capabilities on the first), flush, pack."""
    caps = b"report-status side-band-64k" + (b" atomic" if atomic else b"")
    body = b"".join(pkt(f"shallow {s}\n".encode()) for s in shallow)
    for i, (old, new, ref) in enumerate(commands):
        line = f"{old} {new} {ref}".encode()
        body += pkt(line + (b"\0" + caps if i == 0 else b"") + b"\n")
    return body + b"0000" + (body_pack or b"")


def parse_report(code: int, data: bytes) -> Report:
    """The side-band answer of receive-pack: report-status lines and remote messages."""
    report = b""
    messages = b""
    for line in _pkt_lines(data):
        if line is None or not line:
            continue
        if line[0] == 1:
            report += line[1:]
        elif line[0] in (2, 3):
            messages += line[1:]
    unpack = None
    refs: list[tuple[str, str]] = []
    for line in _pkt_lines(report):
        if line is None:
            continue
        text = line.decode("utf-8", "replace").rstrip("\n")
        if text.startswith("unpack "):
            unpack = text[7:]
        elif text.startswith(("ok ", "ng ")):
            ref, _, why = text[3:].partition(" ")
            refs.append((ref, "ok" if text.startswith("ok ") else why))
    return Report(code, unpack, refs, messages.decode("utf-8", "replace"))
