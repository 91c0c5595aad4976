"""The spool's encoding: every request and answer shape survives a round trip; nothing else is acted on.

Requests and answers cross processes through slot files (:mod:`gitmem.git.spool`),
encoded by :mod:`gitmem.git.spoolcodec` instead of pickle. Round trips are
property tests over every shape; garbage and crafted documents are refused as
``Malformed`` (never any other error); and a crafted slot in a live repository's
spool (a pickle that would run code, a request for a path gitmem never writes)
is refused by the holder's round without a side effect, its state ``refused``.
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from race_support import assert_fsck_clean, commit_count

from gitmem import GitFileStore, MemoryStoreError
from gitmem.errors import STORE_ERROR_CODES, TOOL_ERROR_CODES, MemoryToolError
from gitmem.fileformat import FileFormat
from gitmem.git import spool, spoolcodec
from gitmem.git.batch import BatchSpec
from gitmem.git.locks import process_token
from gitmem.git.repo import Done
from gitmem.model import ANY, FileText, Origin
from gitmem.store import Batch, Decision, Effect, Move, Step

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
paths = st.lists(_word, min_size=1, max_size=4).map(lambda parts: "/".join([*parts[:-1], parts[-1] + ".md"]))
versions = st.text(alphabet="0123456789abcdef", min_size=40, max_size=40)
expected = st.one_of(st.none(), st.just(ANY), versions, st.just(""))
texts = st.text(st.characters(blacklist_categories=()), max_size=200)  # any code point, lone surrogates and NUL included
data = st.one_of(st.none(), texts.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=200))
line = st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and not any(c in t for c in "\r\n\x00"))
formats = st.builds(
    FileFormat,
    max_file_bytes=st.integers(1, 1 << 40),
    max_description_chars=st.integers(1, 10_000),
    max_frontmatter_bytes=st.integers(1, 1 << 20),
    max_path_bytes=st.integers(64, 4096),
    check_secrets=st.booleans(),
    max_files=st.one_of(st.none(), st.integers(1, 1 << 30)),
    max_memory_bytes=st.one_of(st.none(), st.integers(1, 1 << 50)),
)
origins = st.builds(Origin, st.one_of(st.none(), texts), st.one_of(st.none(), texts), st.one_of(st.none(), texts))
batches = st.builds(
    Batch,
    steps=st.lists(st.builds(Step, paths, data, expected), max_size=4).map(tuple),
    moves=st.lists(st.builds(Move, paths, paths, expected), max_size=3).map(tuple),
    op=st.one_of(st.none(), _word),
    summary=st.one_of(st.none(), line),
    trailers=st.lists(st.tuples(_word.map(lambda w: f"Gitmem-{w}"), line), max_size=3).map(tuple),
)
specs = st.builds(BatchSpec, formats, batches, origins)
files = st.builds(FileText, paths, texts.map(lambda t: t.encode("utf-8", "surrogatepass").decode("utf-8", "replace")), versions)
store_errors = st.builds(
    MemoryStoreError, st.sampled_from(sorted(STORE_ERROR_CODES)), line, st.one_of(st.none(), files)
)
tool_errors = st.builds(
    MemoryToolError, st.sampled_from(sorted(TOOL_ERROR_CODES)), line, st.one_of(st.none(), files)
)
decisions = st.builds(
    lambda vs, op, ps: Decision(tuple(Effect(p, None, None, None) for p in ps), tuple(vs), op, tuple(ps)),
    st.lists(st.one_of(st.none(), versions), max_size=4),
    _word,
    st.lists(paths, max_size=4),
)
oks = st.tuples(st.builds(Done, st.one_of(st.none(), versions), st.one_of(st.none(), decisions)), st.none())
errors = st.tuples(st.none(), st.one_of(store_errors, tool_errors))


@settings(max_examples=300, deadline=None)
@given(st.lists(specs, min_size=1, max_size=4))
def test_every_request_shape_survives_a_round_trip(sent: list[BatchSpec]) -> None:
    got = spoolcodec.decode_request(spoolcodec.encode_request(sent))
    assert got == sent
    assert all(type(spec) is BatchSpec for spec in got)
    for a, b in zip(got, sent, strict=True):
        assert [s.expected is ANY for s in a.batch.steps] == [s.expected is ANY for s in b.batch.steps]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(oks, errors), min_size=1, max_size=6))
def test_every_answer_shape_survives_a_round_trip(sent: list[tuple[object, BaseException | None]]) -> None:
    got = spoolcodec.decode_answer(spoolcodec.encode_answer(sent))
    assert len(got) == len(sent)
    for (value, error), (v0, e0) in zip(got, sent, strict=True):
        if e0 is None:
            assert error is None and isinstance(value, Done) and isinstance(v0, Done)
            assert value.commit == v0.commit
            if v0.result is None:
                assert value.result is None
            else:  # what a caller reads of a decision; the effects' bytes stay in the commit
                assert isinstance(value.result, Decision)
                assert (value.result.versions, value.result.op, value.result.paths) == (
                    v0.result.versions,
                    v0.result.op,
                    v0.result.paths,
                )
                assert value.result.effects == ()
        else:
            assert value is None and type(error) is type(e0)
            assert isinstance(error, MemoryStoreError) and isinstance(e0, MemoryStoreError)
            assert (error.code, error.message, error.current) == (e0.code, e0.message, e0.current)


def test_an_error_that_is_not_a_store_error_crosses_as_unavailable() -> None:
    [(value, error)] = spoolcodec.decode_answer(spoolcodec.encode_answer([(None, RuntimeError("disk on fire"))]))
    assert value is None and isinstance(error, MemoryStoreError) and error.code == "unavailable"
    assert "disk on fire" in error.message


def test_values_outside_the_shapes_are_not_encoded() -> None:
    odd = BatchSpec(FileFormat(), Batch((Step("a.md", b"x", 42),)), Origin())  # type: ignore[arg-type]
    with pytest.raises(spoolcodec.Malformed):
        spoolcodec.encode_request([odd])
    with pytest.raises(spoolcodec.Malformed):
        spoolcodec.encode_answer([("a plan's own result", None)])


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=300))
def test_garbage_bytes_are_malformed_never_anything_else(raw: bytes) -> None:
    for decode in (spoolcodec.decode_request, spoolcodec.decode_answer):
        with pytest.raises(spoolcodec.Malformed):
            decode(raw)


_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 1 << 70), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda inner: st.lists(inner, max_size=7),
    max_leaves=40,
)


@settings(max_examples=500, deadline=None)
@given(_json, _json)
def test_crafted_documents_decode_to_the_known_shapes_or_are_malformed(body: object, inner: object) -> None:
    """Well-formed JSON of the right envelope but any content: a request only of known shapes, or refused."""
    for doc in (["gitmem-request", 2, body], ["gitmem-request", 2, [body]], ["gitmem-request", 2, [[inner, body, inner]]]):
        try:
            got = spoolcodec.decode_request(json.dumps(doc).encode())
        except spoolcodec.Malformed:
            continue
        assert all(type(s) is BatchSpec and type(s.batch) is Batch and type(s.fmt) is FileFormat for s in got)
    for doc in (["gitmem-answer", 2, body], ["gitmem-answer", 2, [body, inner]]):
        try:
            answers = spoolcodec.decode_answer(json.dumps(doc).encode())
        except spoolcodec.Malformed:
            continue
        for value, error in answers:
            assert (isinstance(value, Done) and error is None) or (value is None and isinstance(error, MemoryStoreError))


def test_another_format_version_is_malformed() -> None:
    raw = spoolcodec.encode_request([BatchSpec(FileFormat(), Batch((Step("a.md", b"x", None),)), Origin())])
    old = raw.replace(b'"gitmem-request",2,', b'"gitmem-request",1,')
    with pytest.raises(spoolcodec.Malformed):
        spoolcodec.decode_request(old)
    with pytest.raises(spoolcodec.Malformed):  # a path gitmem would never write is not a request
        spoolcodec.decode_request(raw.replace(b'"a.md"', b'"../a.md"'))


# -- a crafted slot in a real spool --

MARKER = "pwned"


class _Boom:
    def __reduce__(self) -> tuple[object, ...]:
        return (os.mkdir, (MARKER,))


def _plant(repo: Path, payload: bytes, tmp: Path) -> tuple[Path, int]:
    """A slot that looks queued by a live process (this one holds its ``.live`` flock)."""
    folder = Path(spool.spool_dir(str(repo)))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = f"{spool.VERSION}-999999-{process_token()}x"
    live = os.open(folder / f"{name}.live", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(live, fcntl.LOCK_EX)
    header = spool._encode(spool.Header("queued", 1, len(payload), zlib.crc32(payload), 0, 0, ""))
    (folder / f"{name}.slot").write_bytes(header.ljust(spool._HEADER, b"\0") + payload)
    spool.announce(str(folder))  # as a publisher rings it
    return folder / f"{name}.slot", live


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps([_Boom()]),  # what the old format would have run
        b"\x00\xff garbage",
        json.dumps(["gitmem-request", 2, [[[65536, 200, 2048, 256, True, None, None], [[[".git/config", "x", None]], [], None, None, []], [None, None, None]]]]).encode(),
    ],
    ids=["pickle", "garbage", "bad-path"],
)
def test_a_crafted_slot_is_refused_without_side_effects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: bytes
) -> None:
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    slot, live = _plant(repo, payload, tmp_path)
    try:
        before = commit_count(repo)
        store.write("mine.md", "mine\n", expected=None)  # this round reads the spool
        assert commit_count(repo) == before + 1  # our own write, nothing else
        assert not (tmp_path / MARKER).exists()
        assert [p for p, _ in store.repo.files_at(store.repo.head())] == ["mine.md"]
        header = spool._decode(slot.read_bytes()[:160])
        assert header is not None and header.state == "refused"  # never taken again; its waiter hears unavailable
        store.write("again.md", "again\n", expected=None)
        assert spool._decode(slot.read_bytes()[:160]) == header
    finally:
        os.close(live)
    assert_fsck_clean(repo)


def test_a_refused_request_is_answered_unavailable() -> None:
    """The waiter's side of a refused slot: no commit of its own, no silent success."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "m.git"
        GitFileStore.init(repo)
        own = spool.own_slot(str(repo))
        assert own is not None
        assert own.publish([BatchSpec(FileFormat(), Batch((Step("a.md", b"x\n", None),)), Origin())])
        own.mark("refused")
        with pytest.raises(MemoryStoreError) as refused:
            own.collect(lambda header: False)
        assert refused.value.code == "unavailable"
        assert own.header() is not None and own.header().state == "empty"  # type: ignore[union-attr]


def test_an_older_gitmems_slot_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A v1 slot (pickled request, text header) is neither run nor touched: its own waiter commits it."""
    monkeypatch.chdir(tmp_path)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    folder = Path(spool.spool_dir(str(repo)))
    folder.mkdir(mode=0o700, parents=True)
    payload = pickle.dumps([_Boom()])
    body = f"GMSPOOL1 queued 1 {len(payload)} {zlib.crc32(payload)} 0 0 -"
    header = f"{body} {zlib.crc32(body.encode())}".encode().ljust(159) + b"\n"
    live = os.open(folder / "v1-4242-abc.live", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(live, fcntl.LOCK_EX)
    slot = folder / "v1-4242-abc.slot"
    slot.write_bytes(header + payload)
    spool.announce(str(folder))
    try:
        store.write("mine.md", "mine\n", expected=None)
        assert slot.read_bytes() == header + payload
        assert not (tmp_path / MARKER).exists()
        assert [p for p, _ in store.repo.files_at(store.repo.head())] == ["mine.md"]
    finally:
        os.close(live)
    assert_fsck_clean(repo)
