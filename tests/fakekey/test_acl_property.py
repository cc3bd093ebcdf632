"""ACL as a property: a user with random key patterns runs random commands, and an oracle
written from Valkey's rules (not from fakekey's code) says which keys it may read and
write. A refused command changes nothing; an allowed one touches only keys the oracle
allows; KEYS, SCAN and RANDOMKEY are governed by the command rules alone (Valkey does not
filter them by key pattern). Runs in-process on fakekey's ServerState."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from fakekey.core.client import Client
from fakekey.net.server import new_state
from fakekey.resp.replies import OK, ReplyError

KEYS = [b"a1", b"a2", b"b1", b"b2", b"c1", b"ab"]
PATTERNS = ["a*", "b?", "c1", "*1", "ab", "?2"]
NOPERM_KEY = b"NOPERM No permissions to access a key"


@dataclass(frozen=True)
class Rule:
    pattern: str
    read: bool
    write: bool

    def text(self) -> str:
        if self.read and self.write:
            return "~" + self.pattern
        return ("%R~" if self.read else "%W~") + self.pattern


rules = st.builds(Rule, st.sampled_from(PATTERNS), st.booleans(), st.booleans()).filter(
    lambda r: r.read or r.write)
keys = st.sampled_from(KEYS)


def oracle_allows(user_rules: list[Rule], key: bytes, read: bool, write: bool) -> bool:
    """Valkey's ACLSelectorCheckKey: one pattern must grant every access asked for. Rules
    on the same pattern merge their access (ACL SETUSER keeps one entry per pattern)."""
    merged: dict[str, tuple[bool, bool]] = {}
    for rule in user_rules:
        old = merged.get(rule.pattern, (False, False))
        merged[rule.pattern] = (old[0] or rule.read, old[1] or rule.write)
    return any((r or not read) and (w or not write) and fnmatch.fnmatchcase(key.decode(), p)
               for p, (r, w) in merged.items())


# (argv, [(key, read, write)]): the access Valkey 9.1.2's key specs ask for, probed with
# ACL DRYRUN (EXISTS, TYPE, STRLEN, OBJECT ask for neither; SET without GET only writes).
def commands(a: bytes, b: bytes) -> list[tuple[list[bytes], list[tuple[bytes, bool, bool]]]]:
    return [
        ([b"GET", a], [(a, True, False)]),
        ([b"SET", a, b"v"], [(a, False, True)]),
        ([b"SET", a, b"v", b"GET"], [(a, True, True)]),
        ([b"INCR", a], [(a, True, True)]),
        ([b"APPEND", a, b"v"], [(a, False, True)]),
        ([b"DEL", a, b], [(a, False, True), (b, False, True)]),
        ([b"EXISTS", a], [(a, False, False)]),
        ([b"TYPE", a], [(a, False, False)]),
        ([b"OBJECT", b"ENCODING", a], [(a, False, False)]),
        ([b"STRLEN", a], [(a, False, False)]),
        ([b"MGET", a, b], [(a, True, False), (b, True, False)]),
        ([b"MSET", a, b"1", b, b"2"], [(a, False, True), (b, False, True)]),
        ([b"COPY", a, b, b"REPLACE"], [(a, True, False), (b, False, True)]),
        ([b"RENAME", a, b], [(a, True, True), (b, False, True)]),
        ([b"BITFIELD", a, b"GET", b"u8", b"0"], [(a, True, False)]),
        ([b"BITFIELD", a, b"SET", b"u8", b"0", b"1"], [(a, True, True)]),
        # declared keys of EVAL are read-write; the script's own GET then reads
        ([b"EVAL", b"return redis.call('GET', KEYS[1])", b"1", a], [(a, True, True)]),
        # a key the script never declared is still checked by redis.call
        ([b"EVAL", b"return redis.call('SET', ARGV[1], 'x')", b"0", a], [(a, False, True)]),
    ]


def new_user(rules_: list[Rule], drop: list[bytes]) -> tuple[Client, Client]:
    """An admin client and one logged in (through AUTH) as user `u`."""
    state = new_state()
    admin, user = Client(state), Client(state)
    state.add_client(admin)
    state.add_client(user)
    setup = [b"ACL", b"SETUSER", b"u", b"on", b">pw", b"+@all", b"&*"]
    setup += [b"-" + name for name in drop] + [r.text().encode() for r in rules_]
    assert state.call(admin, setup) == OK
    assert state.call(user, [b"AUTH", b"u", b"pw"]) == OK
    for key in KEYS:
        state.call(admin, [b"SET", key, key])
    return admin, user


def snapshot(admin: Client) -> dict[bytes, object]:
    return {k: bytes(v) if isinstance(v, bytearray) else v for k, v in admin.db.data.items()}


@given(st.lists(rules, max_size=4), keys, keys, st.data())
def test_a_user_touches_only_the_keys_its_patterns_allow(user_rules, a, b, data):
    admin, user = new_user(user_rules, [])
    argv, touched = data.draw(st.sampled_from(commands(a, b)))
    allowed = all(oracle_allows(user_rules, k, r, w) for k, r, w in touched)
    before = snapshot(admin)
    reply = user.state.call(user, argv)
    refused = isinstance(reply, ReplyError) and b"No permissions to access a key" in reply.message
    assert refused == (not allowed), (argv, user_rules, reply)
    changed = {k for k in set(before) | set(snapshot(admin)) if before.get(k) != snapshot(admin).get(k)}
    if refused:
        assert not changed
    else:
        assert all(oracle_allows(user_rules, k, False, True) for k in changed), changed


@given(st.lists(rules, max_size=3), st.lists(st.sampled_from([b"keys", b"scan", b"randomkey"]), unique=True))
def test_key_listing_follows_the_command_rules_only(user_rules, dropped):
    """KEYS, SCAN and RANDOMKEY mention no key: Valkey checks only whether the user may
    run them, and then they see the whole keyspace."""
    _, user = new_user(user_rules, dropped)
    for argv in ([b"KEYS", b"*"], [b"SCAN", b"0", b"COUNT", b"100"], [b"RANDOMKEY"]):
        reply = user.state.call(user, argv)
        name = argv[0].lower()
        if name in dropped:
            assert isinstance(reply, ReplyError)
            assert reply.message == f"NOPERM User u has no permissions to run the '{name.decode()}' command".encode()
        else:
            assert not isinstance(reply, ReplyError)
    if b"keys" not in dropped:
        assert sorted(user.state.call(user, [b"KEYS", b"*"])) == sorted(KEYS)


@given(st.lists(rules, max_size=4), keys)
def test_dryrun_agrees_with_running(user_rules, a):
    admin, user = new_user(user_rules, [])
    for argv, _ in commands(a, b"b1"):
        verdict = admin.state.call(admin, [b"ACL", b"DRYRUN", b"u", *argv])
        reply = user.state.call(user, argv)
        refused = isinstance(reply, ReplyError) and reply.message.startswith(b"NOPERM")
        if argv[0] == b"EVAL" and b"ARGV" in argv[1]:
            continue  # DRYRUN sees the declared keys only, as Valkey's does
        assert refused == (verdict != OK), (argv, verdict, reply)
