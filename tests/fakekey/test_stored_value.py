"""Every container type satisfies the StoredValue contract (fakekey/types/value.py), and
names itself as TYPE answers."""

from __future__ import annotations

import pytest

from fakekey.net.server import new_state
from fakekey.types.hash import HashValue
from fakekey.types.list import ListValue
from fakekey.types.set import SetValue
from fakekey.types.stream import StreamValue
from fakekey.types.value import StoredValue
from fakekey.types.zset import ZSet


@pytest.mark.parametrize(("make", "type_name"), [
    (HashValue, "hash"), (ListValue, "list"), (SetValue, "set"), (ZSet, "zset"), (StreamValue, "stream"),
])
def test_each_type_is_a_stored_value(make, type_name) -> None:
    value = make()
    assert isinstance(value, StoredValue)
    assert type_name == value.TYPE_NAME
    assert len(value) == 0
    twin = value.copy()
    assert twin is not value and type(twin) is type(value)
    assert isinstance(value.encoding(new_state()), bytes)


def test_strings_are_not_containers() -> None:
    assert not isinstance(b"text", StoredValue)
