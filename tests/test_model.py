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


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_value_is_frozen_and_compares_by_its_fields(value: object) -> None:
    cls = type(value)
    fields = cls.__match_args__  # type: ignore[attr-defined]
    again = cls(*(getattr(value, name) for name in fields))
    assert again == value and hash(again) == hash(value) and again is not value
    assert repr(value) == f"{cls.__name__}({', '.join(f'{n}={getattr(value, n)!r}' for n in fields)})"
    with pytest.raises(AttributeError):
        setattr(value, fields[0], "changed")
    with pytest.raises(AttributeError):
        delattr(value, fields[0])
    with pytest.raises(AttributeError):
        value.other = 1  # type: ignore[attr-defined]  # no __dict__: nothing else can be hung on it
    assert getattr(value, fields[0]) == getattr(again, fields[0])
    match value:
        case FileEntry(path, _, size, _):
            assert (path, size) == ("a.md", 3)


def test_replace_makes_a_copy_with_some_fields_changed() -> None:
    edit = Edit("a.md", "tea\n", expected=None)
    assert edit.replace(text="milk\n") == Edit("a.md", "milk\n", expected=None)
    assert edit.text == "tea\n"  # the original is untouched
    assert Origin("r", "alice").replace(run_id=None) == Origin(None, "alice")
    with pytest.raises(TypeError, match="no field 'colour'"):
        edit.replace(colour="red")


def test_values_of_two_classes_are_never_equal() -> None:
    assert Changes("c" * 40) != FullResync("c" * 40)
    assert FileText("a.md", "tea\n", "0" * 40) != FileEntry("a.md", "0" * 40, 4, None)
    assert Origin("r") != ("r", None, None)
    assert Changes("c" * 40).paths == () and Edit("a.md", "x").expected is ANY


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
