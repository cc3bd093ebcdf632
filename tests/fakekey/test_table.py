"""The keyspace's Table (fakekey/core/table.py): a dict's behaviour, split into shards
once it is big, so that a growth copies one shard and not the whole keyspace."""

from hypothesis import given
from hypothesis import strategies as st

from fakekey.core.table import SHARDS, SPLIT_AT, KeyHashes, Table

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


def split_tables(hashes: KeyHashes) -> tuple[Table, Table]:
    tables = Table(hashes), Table(hashes)
    for table in tables:
        for i in range(SPLIT_AT):
            table[b"fill%d" % i] = i
        assert table.one is None
    return tables


@given(st.lists(st.tuples(st.integers(0, 1), st.sampled_from(["set", "pop", "get", "in"]), keys,
                          st.integers(0, 9)), max_size=100))
def test_split_tables_sharing_one_memo_behave_as_dicts(script):
    # each request brings its own copy of a key: equal bytes, another object, which the
    # memo must not mistake for the key it last hashed (nor an equal one for another)
    tables = split_tables(KeyHashes())
    models: tuple[dict[bytes, int], dict[bytes, int]] = (
        {b"fill%d" % i: i for i in range(SPLIT_AT)}, {b"fill%d" % i: i for i in range(SPLIT_AT)})
    for which, op, key, value in script:
        table, model, key = tables[which], models[which], bytes(bytearray(key))
        if op == "set":
            table[key] = model[key] = value
        elif op == "pop":
            assert table.pop(key, None) == model.pop(key, None)
        elif op == "get":
            assert table.get(key) == model.get(key)
        else:
            assert (key in table) == (key in model)
        assert table.shard_index(key) == hash(key) & (SHARDS - 1)
    for table, model in zip(tables, models, strict=True):
        assert dict(table.items()) == model


def test_the_memo_hashes_a_key_once_and_a_new_key_again():
    hashes = KeyHashes()
    key, other = b"key:000000012345", b"key:000000054321"
    assert hashes.of(key) == hash(key) and hashes.key is key
    assert hashes.of(key) == hash(key)
    assert hashes.of(other) == hash(other) and hashes.key is other
    copy = bytes(bytearray(key))  # equal, not the same object: hashed anew, the same hash
    assert hashes.of(copy) == hash(key) and hashes.key is copy
