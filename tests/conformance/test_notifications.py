"""Keyspace notifications: the events each command emits, their order and classes."""

import pytest

SCENARIOS = {
    "strings": ("KEA", [
        ("SET", "k", "v"), ("APPEND", "k", "x"), ("INCR", "n"), ("INCRBYFLOAT", "n", "1.5"),
        ("SETRANGE", "k", "0", "z"), ("GETDEL", "k"), ("SET", "k", "v", "EX", "100"),
        ("GETEX", "k", "PERSIST"), ("MSET", "a", "1", "b", "2"),
    ], [
        ("set", "k"), ("append", "k"), ("incrby", "n"), ("incrbyfloat", "n"), ("setrange", "k"),
        ("del", "k"), ("set", "k"), ("expire", "k"), ("persist", "k"), ("set", "a"), ("set", "b"),
    ]),
    "generic": ("KEA", [
        ("SET", "k", "v"), ("EXPIRE", "k", "100"), ("PERSIST", "k"), ("RENAME", "k", "k2"),
        ("COPY", "k2", "k3"), ("MOVE", "k3", "1"), ("DEL", "k2", "nokey"), ("SET", "t", "v"),
        ("PEXPIRE", "t", "0"),
    ], [
        ("set", "k"), ("expire", "k"), ("persist", "k"), ("rename_from", "k"), ("rename_to", "k2"),
        ("copy_to", "k3"), ("move_from", "k3"), ("move_to", "k3"), ("del", "k2"), ("set", "t"),
        ("expired", "t"),
    ]),
    "lists_only": ("KEl", [
        ("RPUSH", "l", "a", "b", "c"), ("LSET", "l", "0", "z"), ("LINSERT", "l", "BEFORE", "z", "y"),
        ("LREM", "l", "1", "y"), ("LTRIM", "l", "0", "0"), ("LPOP", "l"), ("RPUSH", "m", "1"),
        ("RPOPLPUSH", "m", "m"), ("LMPOP", "1", "m", "LEFT"),
    ], [
        ("rpush", "l"), ("lset", "l"), ("linsert", "l"), ("lrem", "l"), ("ltrim", "l"), ("lpop", "l"),
        ("rpush", "m"), ("lpush", "m"), ("rpop", "m"), ("lpop", "m"),
    ]),
    "emptied_list_is_deleted": ("KEA", [
        ("RPUSH", "src", "x"), ("LMOVE", "src", "dst", "LEFT", "RIGHT"), ("RPOP", "dst"),
    ], [
        ("rpush", "src"), ("rpush", "dst"), ("lpop", "src"), ("del", "src"), ("rpop", "dst"),
        ("del", "dst"),
    ]),
    "generic_class_only": ("KEg", [("SET", "k", "v"), ("LPUSH", "l", "a"), ("DEL", "k", "l")],
                           [("del", "k"), ("del", "l")]),
    "new_and_keymiss": ("KEnm", [
        ("GET", "nokey"), ("SET", "k", "v"), ("LPUSH", "k2", "a"), ("EXISTS", "nokey"),
        ("LLEN", "nokey"), ("LPUSH", "k2", "b"),
    ], [
        ("keymiss", "nokey"), ("new", "k"), ("new", "k2"), ("keymiss", "nokey"), ("keymiss", "nokey"),
    ]),
}


def collect(target, flags, commands, db=0):
    """Run commands with notify-keyspace-events=flags; the (event, key) pairs published on
    the keyevent channels, in order."""
    actor, listener = target.raw(2), target.raw(2)
    try:
        actor.call("CONFIG", "SET", "notify-keyspace-events", flags)
        listener.call("PSUBSCRIBE", "__key*__:*")
        for command in commands:
            actor.call(*command)
        actor.call("CONFIG", "SET", "notify-keyspace-events", "KEg")
        actor.call("SET", "zzsentinel", "1")
        actor.call("DEL", "zzsentinel")
        events, keyspace = [], []
        while True:
            _, (_, _, (_, channel), (_, message)) = listener.read()
            channel, message = channel.decode(), message.decode()
            if message == "zzsentinel" or channel.endswith(":zzsentinel"):
                break
            if channel.startswith("__keyevent@"):
                events.append((channel.split(":", 1)[1], message))
            else:
                keyspace.append((message, channel.split(":", 1)[1]))
        return events, keyspace
    finally:
        actor.call("CONFIG", "SET", "notify-keyspace-events", "")
        actor.close()
        listener.close()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_events(target, name):
    flags, commands, expected = SCENARIOS[name]
    events, keyspace = collect(target, flags, commands)
    assert events == expected
    assert keyspace == expected  # K and E announce the same events, in the same order


def test_keyspace_only_and_keyevent_only(target):
    events, keyspace = collect(target, "K$", [("SET", "k", "v")])
    assert (events, keyspace) == ([], [("set", "k")])
    events, keyspace = collect(target, "E$", [("SET", "k", "v")])
    assert (events, keyspace) == ([("set", "k")], [])
    assert collect(target, "A", [("SET", "k", "v")]) == ([], [])  # no K nor E: nothing


def test_expired_and_blocking_pop_events(target):
    other = target.raw(2)
    try:
        other.call("SET", "t", "v", "PX", "1")
        events, _ = collect(target, "KEA", [("DEBUG", "SLEEP", "0.01"), ("GET", "t")])
        assert events == [("expired", "t")]
    finally:
        other.close()


def test_channels_name_the_database(target, r2):
    listener = target.raw(2)
    try:
        r2.call("CONFIG", "SET", "notify-keyspace-events", "KE$")
        listener.call("SUBSCRIBE", "__keyspace@3__:k", "__keyevent@3__:set")
        listener.read()
        r2.call("SELECT", "3")
        r2.call("SET", "k", "v")
        assert listener.read() == ("*", [("$", b"message"), ("$", b"__keyspace@3__:k"), ("$", b"set")])
        assert listener.read() == ("*", [("$", b"message"), ("$", b"__keyevent@3__:set"), ("$", b"k")])
    finally:
        r2.call("CONFIG", "SET", "notify-keyspace-events", "")
        listener.close()
