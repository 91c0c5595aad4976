"""The values of gitmem.model keep their identity: where they are defined is where they are imported
and pickled from, and a pickled value comes back equal (``ANY`` as the one ``ANY``)."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import gitmem
from gitmem import model
from gitmem.model import (
    ANY,
    Applied,
    Changes,
    Edit,
    FileEntry,
    FileText,
    FullResync,
    GrepMatch,
    Origin,
    SearchResult,
)

VALUES = [
    FileEntry("a.md", "0" * 40, 3, "tea"),
    FileText("a.md", "tea\n", "0" * 40),
    Origin("run-1", "alice", "call-1"),
    Changes("c" * 40, ("a.md", "b.md")),
    FullResync("c" * 40),
    Edit("a.md", "tea\n"),
    Edit("a.md", None, expected=None),
    Applied("c" * 40, ("0" * 40, None)),
    SearchResult((GrepMatch("a.md", 1, "tea"),), truncated=True),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_value_pickles_to_its_own_module_and_back(value: object) -> None:
    cls = type(value)
    assert cls.__module__ == "gitmem.model" and getattr(model, cls.__qualname__) is cls
    data = pickle.dumps(value)
    assert b"gitmem.model" in data
    assert pickle.loads(data) == value


def test_any_stays_the_one_any_through_pickle() -> None:
    assert pickle.loads(pickle.dumps(ANY)) is ANY
    assert pickle.loads(pickle.dumps(Edit("a.md", "x"))).expected is ANY


def test_every_class_of_the_package_root_says_where_it_is_defined() -> None:
    """``gitmem.X`` is the class of the module that defines it (no ``__module__`` rewritten to look elsewhere)."""
    for name in gitmem.__all__:
        value = getattr(gitmem, name)
        if isinstance(value, type):
            home = sys.modules[value.__module__]
            assert getattr(home, value.__qualname__) is value, name


def test_a_pickle_made_in_another_process_loads_here() -> None:
    code = "import pickle, sys; from gitmem.model import Edit, Origin; sys.stdout.buffer.write(pickle.dumps((Origin('r'), Edit('a', 'b'))))"
    data = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    assert pickle.loads(data) == (Origin("r"), Edit("a", "b"))
