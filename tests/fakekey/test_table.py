"""The keyspace's Table (fakekey/core/table.py): a dict's behaviour, split into shards
once it is big, so that a growth copies one shard and not the whole keyspace."""

from hypothesis import given
from hypothesis import strategies as st

from fakekey.core.table import SHARDS, SPLIT_AT, Table

keys = st.binary(max_size=4)
ops = st.lists(st.tuples(st.sampled_from(["set", "put", "pop", "del", "get", "in"]), keys,
                         st.integers(0, 9)), max_size=200)


@given(ops)
def test_behaves_as_a_dict(script):
    table, model = Table(), {}
    for op, key, value in script:
        if op == "set":
            table[key] = model[key] = value
        elif op == "put":
            assert table.put(key, value) == model.get(key)
            model[key] = value
        elif op == "pop":
            assert table.pop(key, None) == model.pop(key, None)
        elif op == "del" and key in model:
            del table[key]
            del model[key]
        elif op == "get":
            assert table.get(key) == model.get(key)
        else:
            assert (key in table) == (key in model)
        assert len(table) == len(model) and bool(table) == bool(model)
    assert dict(table.items()) == model and sorted(table) == sorted(model)
    assert sorted(table.values()) == sorted(model.values())


def test_splits_once_big_and_every_key_stays():
    table = Table()
    for i in range(SPLIT_AT - 1):
        table[b"k%d" % i] = i
    assert len(table.shards) == 1
    table[b"last"] = -1
    assert len(table.shards) == SHARDS
    # each shard holds a share: a growth of one copies about 1/SHARDS of the keys
    assert max(map(len, table.shards)) < 4 * SPLIT_AT // SHARDS
    assert len(table) == SPLIT_AT and table[b"k7"] == 7 and table.get(b"last") == -1
    assert sum(1 for _ in table) == SPLIT_AT == len(dict(table.items()))
    for i in range(SPLIT_AT - 1):
        assert table.pop(b"k%d" % i) == i
    assert len(table) == 1 and list(table) == [b"last"]
    table.clear()
    assert len(table.shards) == 1 and not table


def test_pop_without_default_raises_as_a_dict():
    table = Table()
    try:
        table.pop(b"missing")
    except KeyError as err:
        assert err.args == (b"missing",)
    else:
        raise AssertionError("no KeyError")
    assert table.setdefault(b"a", 1) == 1 and table.setdefault(b"a", 2) == 1
