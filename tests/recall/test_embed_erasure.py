"""A rebuild after a forget keeps no vector, query or word of the erased text, in memory or under the mount."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np

from gitmem import derived
from gitmem.recall import RecallDoc, RecallIndex, StoreRecall
from gitmem.recall.embed import EmbeddingBranch, digest
from gitmem.recall.stemming import memo_size

from .support import git_store, item, to_doc
from .test_embed import ConceptEmbedder

SECRET = "hunter2swordfish ship the release"  # the concept words give it a vector of its own
KEPT = "prefer compact responses"


def _files_holding(root: str, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                if needle in fh.read():
                    found.append(os.path.relpath(path, root))
    return found


def test_a_rebuild_after_a_forget_keeps_no_vector_of_the_erased_text(tmp_path: Path) -> None:
    store = git_store(tmp_path)
    store.write("items/kept.json", item(KEPT, 1.0), expected=None)
    store.write("items/secret.json", item(SECRET, 2.0), expected=None)
    model = ConceptEmbedder()
    cache = Path(store.path) / "gitmem" / "derived" / "vectors.npz"  # beside the mount's other derived state
    branch = EmbeddingBranch(model, background=False, cache_file=cache)
    recall = StoreRecall(store, to_doc, prefix="items", semantic=branch, stamp=derived.stamp_of(store))
    recall.refresh()
    assert branch.drain() and cache.is_file()
    assert [h.id for h in recall.search("release it", ranking="fused")][:1] == ["secret"]
    vector = branch._cache[digest(SECRET)].tobytes()
    assert _files_holding(store.path, vector) == ["gitmem/derived/vectors.npz"]

    store.forget("items/secret.json")
    recall.refresh()  # the rebuild a forget's new history asks for
    assert recall.full_rebuilds == 2 and "secret" not in recall.index
    store.write("items/later.json", item("database schema migration", 3.0), expected=None)
    assert recall.search("schema", ranking="fused")[0].id == "later"
    assert branch.drain() and cache.is_file()  # the new vector is saved: the file is back

    caches = [v for v in vars(branch).values() if isinstance(v, dict)]  # every map the branch keeps
    assert not [k for c in caches for k in c if k in (digest(SECRET), SECRET, "release it")]
    assert not [v for c in caches for v in c.values() if isinstance(v, np.ndarray) and v.tobytes() == vector]
    for needle in (SECRET.encode(), digest(SECRET).encode(), vector):
        assert _files_holding(store.path, needle) == []
    assert sum(KEPT in c for c in model.calls) == 1  # the rebuild embedded what it kept from the cache
    git = ["git", f"--git-dir={store.path}", "fsck", "--strict", "--no-dangling"]
    assert subprocess.run(git, capture_output=True, check=False).returncode == 0

    again = EmbeddingBranch(ConceptEmbedder(), background=False, cache_file=cache)
    assert digest(SECRET) not in again._cache and len(again._cache) == 2


def test_a_rebuild_leaves_no_erased_word_in_the_stemmer() -> None:
    index = RecallIndex(profile="conversation")
    index.upsert(RecallDoc("s", "hunter2swordfish passwords", 1.0))
    assert memo_size() > 0
    index.clear()
    assert memo_size() == 0
    index.upsert(RecallDoc("k", "keep the lockfile", 2.0))
    assert [h.id for h in index.search("lockfile")] == ["k"]


def test_vectors_of_a_cleared_index_are_kept_for_its_texts_only(tmp_path: Path) -> None:
    model = ConceptEmbedder()
    branch = EmbeddingBranch(model, background=False, cache_file=tmp_path / "v.npz")
    index = RecallIndex(branch)
    index.upsert(RecallDoc("a", KEPT, 1.0))
    index.upsert(RecallDoc("b", SECRET, 2.0))
    assert branch.drain()
    index.clear()
    index.upsert(RecallDoc("a", KEPT, 1.0))
    index.rebuilt()
    assert branch.status().pending == 0 and list(branch._cache) == [digest(KEPT)] and not branch._previous
    with np.load(tmp_path / "v.npz", allow_pickle=False) as saved:
        assert saved["keys"].tolist() == [digest(KEPT)]
