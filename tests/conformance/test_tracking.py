"""Client-side caching: CLIENT TRACKING (normal, OPTIN, OPTOUT, NOLOOP, BCAST, REDIRECT),
CLIENT CACHING, GETREDIR, TRACKINGINFO, and the invalidation messages: RESP3 pushes on the
connection itself, RESP2 messages on __redis__:invalidate of a redirect target."""

import time

import pytest

from fakekey.testing.raw import encode_command

INVALIDATE_CHANNEL = b"__redis__:invalidate"
PONGS = (("+", b"PONG"), ("*", [("$", b"pong"), ("$", b"")]))


def ok(reply):
    assert reply == ("+", b"OK"), reply


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def keys_payload(keys):
    return ("*", [("$", key) for key in keys])


class Cache:
    """A tracking connection and the inbox its invalidations reach: the connection itself
    in RESP3, in RESP2 a redirect target subscribed to __redis__:invalidate."""

    def __init__(self, target, proto, *options):
        self.proto = proto
        self.conn = target.raw(proto)
        redirect = ()
        if proto == 3:
            self.inbox = self.conn
        else:
            self.inbox = target.raw(2)
            redirect = ("REDIRECT", self.inbox.call("CLIENT", "ID")[1])
            self.inbox.call("SUBSCRIBE", INVALIDATE_CHANNEL)
        self.redirect = redirect  # the options that send invalidations to the inbox
        self.early = []
        ok(self.conn.call("CLIENT", "TRACKING", "on", *redirect, *options))

    def frame(self, *keys):
        """The invalidation of `keys`; none: the flush's "every key" (a null)."""
        payload = keys_payload(keys) if keys else null(self.proto)
        if self.proto == 3:
            return (">", [("$", b"invalidate"), payload])
        return ("*", [("$", b"message"), ("$", INVALIDATE_CHANNEL), payload])

    def call(self, *args):
        """A request on the tracking connection: its reply; pushes that come first wait
        in `early` for `received` (in RESP3 they share the connection with the replies)."""
        self.conn.send(*args)
        while (frame := self.conn.read())[0] == ">" and frame[1][0] == ("$", b"invalidate"):
            self.early.append(frame)
        return frame

    def received(self):
        """What reached the inbox so far."""
        early, self.early = self.early, []
        return early + received(self.inbox)

    def close(self):
        self.conn.close()
        if self.inbox is not self.conn:
            self.inbox.close()


@pytest.fixture
def cache(target, proto):
    made = []

    def make(*options):
        made.append(Cache(target, proto, *options))
        return made[-1]

    yield make
    for each in made:
        each.close()


def pushes_until(client, reply):
    """Read `client`'s frames up to `reply`: the pushes that came before it."""
    frames = []
    while (frame := client.read()) != reply:
        assert frame[0] == ">", frame
        frames.append(frame)
    return frames


def stats(client):
    text = client.call("INFO", "everything")[1]
    lines = dict(line.split(b":", 1) for line in text.split(b"\r\n") if b":" in line)
    names = (b"tracking_clients", b"tracking_total_keys", b"tracking_total_items",
             b"tracking_total_prefixes")
    return tuple(int(lines[name]) for name in names)


# --- the commands ---------------------------------------------------------------------------


def test_tracking_option_errors(r2):
    errors = [
        (("foo",), b"ERR syntax error"),
        (("on", "foo"), b"ERR syntax error"),
        (("on", "REDIRECT"), b"ERR syntax error"),
        (("on", "PREFIX"), b"ERR syntax error"),
        (("on", "REDIRECT", "x"), b"ERR value is not an integer or out of range"),
        (("on", "REDIRECT", "0"), b"ERR The client ID you want redirect to does not exist"),
        (("on", "REDIRECT", "-1"), b"ERR The client ID you want redirect to does not exist"),
        (("on", "REDIRECT", "987654"), b"ERR The client ID you want redirect to does not exist"),
        # the options are read before on|off
        (("off", "REDIRECT", "987654"), b"ERR The client ID you want redirect to does not exist"),
        (("foo", "REDIRECT", "987654"), b"ERR The client ID you want redirect to does not exist"),
        (("on", "PREFIX", "a"), b"ERR PREFIX option requires BCAST mode to be enabled"),
        (("on", "BCAST", "OPTIN"), b"ERR OPTIN and OPTOUT are not compatible with BCAST"),
        (("on", "BCAST", "optout"), b"ERR OPTIN and OPTOUT are not compatible with BCAST"),
        (("on", "OPTIN", "OPTOUT"), b"ERR You can't specify both OPTIN mode and OPTOUT mode"),
        (("on", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
         b"ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single "
         b"client must not overlap."),
        (("on", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "bc"),
         b"ERR Prefix 'b' overlaps with another provided prefix 'bc'. Prefixes for a single "
         b"client must not overlap."),
    ]
    for args, error in errors:
        assert r2.call("CLIENT", "TRACKING", *args) == ("-", error), args
    assert r2.call("CLIENT", "TRACKINGINFO")[1][1] == ("*", [("$", b"off")])
    me = r2.call("CLIENT", "ID")[1]
    assert r2.call("CLIENT", "TRACKING", "on", "REDIRECT", me, "REDIRECT", me) == (
        "-", b"ERR A client can only redirect to a single other client")
    ok(r2.call("CLIENT", "TRACKING", "off", "BCAST", "OPTIN", "OPTOUT", "PREFIX", "x"))
    assert r2.call("CLIENT", "TRACKING") == (
        "-", b"ERR wrong number of arguments for 'client|tracking' command")


def test_tracking_mode_switches(r2):
    ok(r2.call("CLIENT", "TRACKING", "On", "optin"))
    assert r2.call("CLIENT", "TRACKING", "on", "OPTOUT") == (
        "-", b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
        b"client, and then re-enabling it with a different mode.")
    bcast_switch = ("-", b"ERR You can't switch BCAST mode on/off before disabling tracking "
                    b"for this client, and then re-enabling it with a different mode.")
    assert r2.call("CLIENT", "TRACKING", "on", "BCAST") == bcast_switch
    ok(r2.call("CLIENT", "TRACKING", "on"))  # plain again: OPTIN is dropped
    ok(r2.call("CLIENT", "TRACKING", "off"))
    ok(r2.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x", "PREFIX", "y", "NOLOOP"))
    assert r2.call("CLIENT", "TRACKING", "on") == bcast_switch
    assert r2.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "xa") == (
        "-", b"ERR Prefix 'xa' overlaps with an existing prefix 'x'. Prefixes for a single "
        b"client must not overlap.")
    assert r2.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "y") == (
        "-", b"ERR Prefix 'y' overlaps with an existing prefix 'y'. Prefixes for a single "
        b"client must not overlap.")
    ok(r2.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a"))
    ok(r2.call("CLIENT", "TRACKING", "on", "BCAST"))  # no prefix: the empty one joins
    assert r2.call("CLIENT", "TRACKINGINFO") == ("*", [
        ("$", b"flags"), ("*", [("$", b"on"), ("$", b"bcast")]),
        ("$", b"redirect"), (":", 0),
        ("$", b"prefixes"), ("*", [("$", b""), ("$", b"a"), ("$", b"x"), ("$", b"y")]),
    ])
    ok(r2.call("CLIENT", "TRACKING", "off"))
    assert r2.call("CLIENT", "TRACKINGINFO")[1][5] == ("*", [])


def test_trackinginfo_and_getredir(r, proto):
    def info():
        reply = r.call("CLIENT", "TRACKINGINFO")
        if proto == 3:
            assert reply[0] == "%" and reply[1][0][1][0] == "~", reply  # flags: a set
            return [item for pair in reply[1] for item in pair]
        assert reply[0] == "*" and reply[1][1][0] == "*", reply
        return reply[1]

    def flags(*names):
        return ("~" if proto == 3 else "*", [("$", name) for name in names])

    assert info() == [("$", b"flags"), flags(b"off"), ("$", b"redirect"), (":", -1),
                      ("$", b"prefixes"), ("*", [])]
    assert r.call("CLIENT", "GETREDIR") == (":", -1)
    ok(r.call("CLIENT", "TRACKING", "on", "OPTIN", "NOLOOP"))
    assert info()[1] == flags(b"on", b"optin", b"noloop")
    assert r.call("CLIENT", "GETREDIR") == (":", 0)
    ok(r.call("CLIENT", "CACHING", "yes"))
    assert info()[1] == flags(b"on", b"optin", b"caching-yes", b"noloop")
    ok(r.call("CLIENT", "TRACKING", "off"))
    ok(r.call("CLIENT", "TRACKING", "on", "OPTOUT"))
    ok(r.call("CLIENT", "CACHING", "no"))
    assert info()[1] == flags(b"on", b"optout", b"caching-no")
    me = r.call("CLIENT", "ID")[1]
    ok(r.call("CLIENT", "TRACKING", "on", "REDIRECT", me))
    assert info()[2:4] == [("$", b"redirect"), (":", me)]
    assert r.call("CLIENT", "GETREDIR") == (":", me)
    ok(r.call("CLIENT", "TRACKING", "off"))
    assert r.call("CLIENT", "GETREDIR") == (":", -1)


def test_caching_errors(r2):
    not_tracking = ("-", b"ERR CLIENT CACHING can be called only when the client is in "
                    b"tracking mode with OPTIN or OPTOUT mode enabled")
    assert r2.call("CLIENT", "CACHING", "yes") == not_tracking
    assert r2.call("CLIENT", "CACHING", "maybe") == not_tracking
    assert r2.call("CLIENT", "CACHING", "yes", "no") == (
        "-", b"ERR wrong number of arguments for 'client|caching' command")
    ok(r2.call("CLIENT", "TRACKING", "on"))
    assert r2.call("CLIENT", "CACHING", "maybe") == ("-", b"ERR syntax error")
    assert r2.call("CLIENT", "CACHING", "yes") == (
        "-", b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    assert r2.call("CLIENT", "CACHING", "no") == (
        "-", b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    ok(r2.call("CLIENT", "TRACKING", "on", "OPTIN"))
    assert r2.call("CLIENT", "CACHING", "no")[0] == "-"
    ok(r2.call("CLIENT", "CACHING", "YES"))


# --- invalidation ---------------------------------------------------------------------------


def test_write_by_another_client_invalidates_once(target, r2, cache):
    c = cache()
    assert c.conn.call("GET", "k") == null(c.proto)  # a missing key is tracked too
    c.conn.call("MGET", "m1", "m2")
    c.conn.call("HGET", "h", "f")
    ok(r2.call("SET", "k", "v"))
    assert c.received() == [c.frame(b"k")]
    ok(r2.call("SET", "k", "again"))  # forgotten once invalidated
    assert r2.call("HSET", "h", "f", "1") == (":", 1)
    ok(r2.call("MSET", "m2", "1", "m1", "1"))
    assert c.received() == [c.frame(b"h"), c.frame(b"m2"), c.frame(b"m1")]
    assert r2.call("DEL", "nothing-there") == (":", 0)  # no change, no message
    assert c.received() == []


def test_key_names_are_shared_by_databases(r2, cache):
    c = cache()
    c.conn.call("GET", "k")
    ok(r2.call("SELECT", "3"))
    ok(r2.call("SET", "k", "v"))
    assert c.received() == [c.frame(b"k")]


def test_reads_that_fail_are_tracked_and_swapdb_invalidates_nothing(r2, cache):
    c = cache()
    assert r2.call("HSET", "h", "f", "v") == (":", 1)
    ok(r2.call("SET", "s", "1"))
    assert c.conn.call("GET", "h")[0] == "-"  # WRONGTYPE: the key is tracked all the same
    c.conn.call("GET", "s")
    ok(r2.call("SWAPDB", "0", "1"))
    assert r2.call("HSET", "h", "f", "w") == (":", 1)
    assert c.received() == [c.frame(b"h")]


def test_resp2_without_redirect_gets_nothing(r2, target):
    other = target.raw(2)
    ok(r2.call("CLIENT", "TRACKING", "on"))
    r2.call("GET", "k")
    ok(other.call("SET", "k", "v"))
    ok(r2.call("SET", "k", "w"))
    assert r2.call("PING") == ("+", b"PONG")
    other.close()


def test_own_write_is_invalidated_after_its_reply(target):
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    c.send("GET", "k")
    c.send("SET", "k", "2")
    c.send("GET", "k")
    c.send("PING")
    push = (">", [("$", b"invalidate"), keys_payload([b"k"])])
    assert [c.read() for _ in range(5)] == [("_", None), ("+", b"OK"), push, ("$", b"2"),
                                            ("+", b"PONG")]
    c.close()


def test_transaction_invalidates_after_exec(target):
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    c.call("GET", "k")
    ok(c.call("MULTI"))
    for args in (("GET", "k"), ("SET", "k", "3"), ("GET", "k")):
        assert c.call(*args) == ("+", b"QUEUED")
    assert c.call("EXEC") == ("*", [("_", None), ("+", b"OK"), ("$", b"3")])
    # k was read again inside the transaction: one message for the SET, none pending
    assert c.read() == (">", [("$", b"invalidate"), keys_payload([b"k"])])
    assert c.call("PING") == ("+", b"PONG")
    c.close()


def test_scripts_track_the_keys_their_commands_read(target, r2):
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    c.call("GET", "k")
    reply = c.call("EVAL", "redis.call('set', KEYS[1], '1') return redis.call('get', KEYS[1])",
                   1, "k")
    assert reply == ("$", b"1")  # its own invalidation comes after the script's reply
    assert c.read() == (">", [("$", b"invalidate"), keys_payload([b"k"])])
    assert c.call("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "ro") == ("_", None)
    assert c.call("STRLEN", "s") == (":", 0)
    ok(r2.call("MSET", "k", "x", "ro", "x", "s", "x"))
    c.send("PING")
    assert pushes_until(c, ("+", b"PONG")) == [
        (">", [("$", b"invalidate"), keys_payload([key])]) for key in (b"k", b"ro", b"s")]
    c.close()


def test_flush_invalidates_every_key(target, r2, cache):
    c = cache()
    c.conn.call("GET", "k")
    ok(r2.call("FLUSHALL"))
    assert c.received() == [c.frame()]
    ok(r2.call("FLUSHDB", "ASYNC"))  # with nothing tracked too
    assert c.received() == [c.frame()]
    ok(r2.call("FLUSHALL", "ASYNC"))
    assert c.received() == [c.frame()]
    mine = target.raw(3)
    ok(mine.call("CLIENT", "TRACKING", "on"))
    mine.send("FLUSHDB")
    mine.send("PING")
    assert [mine.read() for _ in range(3)] == [
        ("+", b"OK"), (">", [("$", b"invalidate"), ("_", None)]), ("+", b"PONG")]
    mine.close()


def test_expiry_invalidates(r2, cache):
    c = cache()
    ok(r2.call("SET", "e", "1", "PX", "30"))
    c.conn.call("GET", "e")
    time.sleep(0.1)
    assert r2.call("GET", "e") == ("$", None)
    assert c.received() == [c.frame(b"e")]


def test_redirect_targets(target, proto):
    """Invalidations go to the redirect target: a push if it speaks RESP3, a message on
    __redis__:invalidate if it is a RESP2 client in pub/sub mode (any subscription),
    nothing otherwise. The flush's null is the *tracking* client's protocol's, even on a
    target speaking the other one (as Valkey does)."""
    tracker = target.raw(proto)
    resp3_inbox, resp2_subscribed, resp2_plain = target.raw(3), target.raw(2), target.raw(2)
    ids = [each.call("CLIENT", "ID")[1] for each in (resp3_inbox, resp2_subscribed, resp2_plain)]
    resp2_subscribed.call("SUBSCRIBE", "anything")
    frames = [
        lambda payload: (">", [("$", b"invalidate"), payload]),
        lambda payload: ("*", [("$", b"message"), ("$", INVALIDATE_CHANNEL), payload]),
    ]
    for inbox, inbox_id, frame in zip((resp3_inbox, resp2_subscribed), ids, frames):
        ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
        tracker.call("GET", "k")
        ok(tracker.call("SET", "k", "1"))
        ok(tracker.call("FLUSHALL"))
        assert received(inbox) == [frame(keys_payload([b"k"])), frame(null(proto))]
    ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", ids[2]))
    tracker.call("GET", "k")
    ok(tracker.call("SET", "k", "1"))
    assert received(resp2_plain) == []
    assert tracker.call("PING") == ("+", b"PONG")  # nothing on the tracker itself either
    for each in (tracker, resp3_inbox, resp2_plain, resp2_subscribed):
        each.close()


def received(inbox):
    """The frames that reached `inbox` before the answer to a PING."""
    inbox.send("PING")
    frames = []
    while (frame := inbox.read()) not in PONGS:
        frames.append(frame)
    return frames


# --- OPTIN, OPTOUT, NOLOOP ------------------------------------------------------------------


def test_optin_tracks_only_after_caching_yes(r2, cache):
    c = cache("OPTIN")
    conn = c.conn
    conn.call("GET", "o1")  # not asked for: untracked
    ok(conn.call("CLIENT", "CACHING", "yes"))
    conn.call("GET", "o2")
    conn.call("GET", "o3")  # CACHING covered only the request after it
    # other CLIENT subcommands keep it for the next request; anything else ends it
    ok(conn.call("CLIENT", "CACHING", "yes"))
    conn.call("CLIENT", "ID")
    conn.call("GET", "o4")
    ok(conn.call("CLIENT", "CACHING", "yes"))
    conn.call("PING")
    conn.call("GET", "o5")
    # a refused request ends it too
    ok(conn.call("CLIENT", "CACHING", "yes"))
    assert conn.call("GET")[0] == "-"
    conn.call("GET", "o6")
    ok(conn.call("CLIENT", "CACHING", "yes"))
    assert conn.call("NOSUCHCOMMAND")[0] == "-"
    conn.call("GET", "o7")
    ok(r2.call("MSET", *[x for i in range(1, 8) for x in (f"o{i}", "1")]))
    assert c.received() == [c.frame(b"o2"), c.frame(b"o4")]


def test_optin_caching_covers_a_whole_transaction_and_script(r2, cache):
    c = cache("OPTIN")
    conn = c.conn
    ok(conn.call("CLIENT", "CACHING", "yes"))
    ok(conn.call("MULTI"))
    conn.call("GET", "t1")
    conn.call("GET", "t2")
    assert conn.call("EXEC")[0] == "*"
    conn.call("GET", "t3")
    ok(conn.call("MULTI"))  # CACHING queued inside the transaction
    conn.call("CLIENT", "CACHING", "yes")
    conn.call("GET", "t4")
    assert conn.call("EXEC")[0] == "*"
    conn.call("GET", "t5")
    ok(conn.call("CLIENT", "CACHING", "yes"))
    conn.call("EVAL", "redis.call('get', 't6') return redis.call('get', 't7')", 0)
    conn.call("GET", "t8")
    ok(r2.call("MSET", *[x for i in range(1, 9) for x in (f"t{i}", "1")]))
    assert c.received() == [c.frame(key) for key in (b"t1", b"t2", b"t4", b"t6", b"t7")]


def test_optout_skips_after_caching_no(r2, cache):
    c = cache("OPTOUT")
    c.conn.call("GET", "u1")
    ok(c.conn.call("CLIENT", "CACHING", "no"))
    c.conn.call("GET", "u2")
    c.conn.call("GET", "u3")
    ok(r2.call("MSET", "u1", "1", "u2", "1", "u3", "1"))
    assert c.received() == [c.frame(b"u1"), c.frame(b"u3")]


def test_noloop_leaves_out_own_writes(r2, cache):
    c = cache("NOLOOP")
    c.conn.call("GET", "l1")
    c.conn.call("GET", "l2")
    ok(c.conn.call("SET", "l1", "mine"))  # no message, and l1 is forgotten all the same
    ok(r2.call("MSET", "l1", "1", "l2", "1"))
    assert c.received() == [c.frame(b"l2")]


# --- BCAST ------------------------------------------------------------------------------------


def test_bcast_one_message_per_prefix_per_turn(r2, cache):
    c = cache("BCAST", "PREFIX", "q:", "PREFIX", "p:")
    # one pipeline: its writes reach the subscribers together, keys in byte order
    assert r2.pipeline(("SET", "p:2", "1"), ("SET", "other", "1"),
                       ("MSET", "q:1", "1", "p:1", "2", "p:2", "3")) == [("+", b"OK")] * 3
    assert c.received() == [c.frame(b"p:1", b"p:2"), c.frame(b"q:1")]
    ok(r2.call("MULTI"))
    r2.call("SET", "q:3", "1")
    r2.call("SET", "p:1", "1")
    assert r2.call("EXEC")[0] == "*"
    assert c.received() == [c.frame(b"p:1"), c.frame(b"q:3")]
    c.conn.call("GET", "p:9")  # BCAST reads track nothing
    assert stats(r2)[1] == 0


def test_bcast_own_writes_and_noloop(target, r2, proto):
    mine = target.raw(3)
    ok(mine.call("CLIENT", "TRACKING", "on", "BCAST"))
    mine.send_raw(encode_command("SET", "b", "1") + encode_command("SET", "a", "1")
                  + encode_command("GET", "a"))
    # after the replies of its whole batch
    assert [mine.read() for _ in range(4)] == [
        ("+", b"OK"), ("+", b"OK"), ("$", b"1"),
        (">", [("$", b"invalidate"), keys_payload([b"a", b"b"])])]
    ok(mine.call("CLIENT", "TRACKING", "off"))
    ok(mine.call("CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"))
    ok(mine.call("SET", "z1", "1"))
    ok(r2.call("SET", "z2", "1"))
    mine.send("PING")
    assert pushes_until(mine, ("+", b"PONG")) == [
        (">", [("$", b"invalidate"), keys_payload([b"z2"])])]
    mine.close()


def test_bcast_expiry_flush_and_resp2(target, r2, cache):
    c = cache("BCAST")
    ok(r2.call("SET", "ex", "1", "PX", "20"))
    assert c.received() == [c.frame(b"ex")]
    time.sleep(0.1)
    assert r2.call("GET", "ex") == ("$", None)
    assert c.received() == [c.frame(b"ex")]
    ok(r2.call("FLUSHALL"))  # BCAST clients are told of flushes too
    assert c.received() == [c.frame()]
    plain = target.raw(2)  # RESP2 and no redirect: nothing
    ok(plain.call("CLIENT", "TRACKING", "on", "BCAST"))
    ok(r2.call("SET", "x", "1"))
    assert plain.call("PING") == ("+", b"PONG")
    plain.close()


def test_switching_to_bcast_drops_pending_keys(r2, cache):
    c = cache()
    c.conn.call("GET", "w1")
    ok(c.conn.call("CLIENT", "TRACKING", "off"))
    ok(c.conn.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "zzz", *c.redirect))
    ok(r2.call("SET", "w1", "1"))
    assert c.received() == []


# --- a redirect target that leaves, the table's limit, INFO, CLIENT LIST, RESET -------------


def test_broken_redirect(target, r2, proto):
    tracker = target.raw(proto)
    gone = target.raw(3)
    gone_id = gone.call("CLIENT", "ID")[1]
    ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", gone_id))
    tracker.call("GET", "k1")
    tracker.call("GET", "k2")
    gone.close()
    deadline = time.monotonic() + 5
    while b"id=%d " % gone_id in r2.call("CLIENT", "LIST")[1]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ok(r2.call("SET", "k1", "x"))
    broken = (">", [("$", b"tracking-redir-broken"), (":", gone_id)])
    tracker.send("SET", "k2", "1")
    tracker.send("FLUSHALL")
    tracker.send("PING")
    expected = [("+", b"OK"), ("+", b"OK"), ("+", b"PONG")]
    if proto == 3:  # told once for each message it could not pass on, after its replies
        expected = [broken, ("+", b"OK"), broken, ("+", b"OK"), broken, ("+", b"PONG")]
    assert [tracker.read() for _ in expected] == expected
    info = tracker.call("CLIENT", "TRACKINGINFO")
    flags = [item for pair in info[1] for item in pair][1] if proto == 3 else info[1][1]
    assert [name for _, name in flags[1]] == [b"on", b"broken_redirect"]
    line = tracker.call("CLIENT", "INFO")[1]
    assert b" flags=tR " in line and b" redir=%d " % gone_id in line
    assert b"flags=tR" in r2.call("CLIENT", "LIST", "FLAGS", "R")[1]
    ok(tracker.call("CLIENT", "TRACKING", "on"))  # a new "on" mends it
    assert b" flags=t " in tracker.call("CLIENT", "INFO")[1]
    tracker.close()


def test_client_list_flags_and_redir(r2, target):
    other = target.raw(3)
    ok(other.call("CLIENT", "TRACKING", "on", "BCAST"))
    other_id = other.call("CLIENT", "ID")[1]
    assert r2.call("CLIENT", "LIST", "FLAGS", "B") == ("$", r2.call(
        "CLIENT", "LIST", "ID", other_id)[1])
    assert b" flags=tB " in r2.call("CLIENT", "LIST", "ID", other_id)[1]
    assert b" redir=0 " in r2.call("CLIENT", "LIST", "ID", other_id)[1]
    assert b" redir=-1 " in r2.call("CLIENT", "INFO")[1]
    other.call("SUBSCRIBE", "x")
    assert b" flags=PtB " in r2.call("CLIENT", "LIST", "ID", other_id)[1]
    other.close()


def test_reset_turns_tracking_off(r2, cache):
    c = cache()
    c.conn.call("GET", "k")
    assert c.conn.call("RESET") == ("+", b"RESET")
    assert c.conn.call("CLIENT", "TRACKINGINFO")[1][1] == ("*", [("$", b"off")])
    ok(r2.call("SET", "k", "1"))
    assert c.received() == []
    assert c.conn.call("PING") == ("+", b"PONG")


def test_info_counts(target, r2):
    assert stats(r2) == (0, 0, 0, 0)
    a, b = target.raw(3), target.raw(3)
    ok(a.call("CLIENT", "TRACKING", "on"))
    ok(b.call("CLIENT", "TRACKING", "on"))
    for key in ("n1", "n2"):
        a.call("GET", key)
    b.call("GET", "n1")
    assert stats(r2) == (2, 2, 3, 0)
    b.close()  # its entries stay until their keys change
    deadline = time.monotonic() + 5
    while stats(r2)[0] != 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert stats(r2) == (1, 2, 3, 0)
    ok(a.call("CLIENT", "TRACKING", "off"))
    ok(r2.call("SET", "n1", "x"))
    assert stats(r2) == (0, 1, 1, 0)
    ok(a.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p", "PREFIX", "q"))
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p", "PREFIX", "r"))
    assert stats(r2) == (2, 1, 1, 3)
    c.close()
    ok(a.call("CLIENT", "TRACKING", "off"))
    deadline = time.monotonic() + 5
    while stats(r2)[0]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert stats(r2) == (0, 1, 1, 0)
    ok(r2.call("FLUSHALL"))
    assert stats(r2) == (0, 0, 0, 0)
    a.close()


def test_table_limit_evicts_with_invalidation(r2, cache):
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "2"))
    try:
        c = cache()
        for key in ("k1", "k2", "k3"):
            assert c.call("GET", key) == null(c.proto)
        assert c.call("MGET", "m1", "m2", "m3") == ("*", [null(c.proto)] * 3)
        deadline = time.monotonic() + 5
        while stats(r2)[1] > 2:  # Valkey evicts before the next command or in its cron
            assert time.monotonic() < deadline
            r2.call("PING")
            time.sleep(0.01)
        assert stats(r2)[1:3] == (2, 2)
        evicted = c.received()
        assert len(evicted) == 4
        keys = {frame[1][-1][1][0][1] for frame in evicted}
        assert len(keys) == 4 and keys < {b"k1", b"k2", b"k3", b"m1", b"m2", b"m3"}
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "0"))  # no limit
        assert c.call("MGET", "x1", "x2", "x3", "x4")[0] == "*"
        assert stats(r2)[1] == 6
    finally:
        r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")


def test_redis_py_client_side_cache(target, monkeypatch):
    """redis-py's own cache (RESP3) stays right when another client writes: it drops
    what the server invalidates. redis-py allows it only for servers named "redis" at
    7.4 or later, so the check is loosened here; the protocol is what is tested. The
    invalidation travels on the cached client's socket, the write's reply on the writer's:
    the cache catches up as soon as the push has arrived (on real Valkey as here)."""
    import redis
    from redis.cache import CacheConfig
    from redis.connection import CacheProxyConnection

    monkeypatch.setattr(CacheProxyConnection, "DEFAULT_SERVER_NAME", "valkey")
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    cached = redis.Redis(host=target.host, port=target.port, protocol=3,
                         cache_config=CacheConfig())
    writer = redis.Redis(host=target.host, port=target.port)

    def eventually(read, expected):
        deadline = time.monotonic() + 5
        while (value := read()) != expected:
            assert time.monotonic() < deadline, value
            time.sleep(0.005)

    try:
        writer.set("user:1", "alice")
        assert cached.get("user:1") == b"alice"
        cache = cached.get_cache()
        assert cache is not None and cache.size == 1
        assert cached.get("user:1") == b"alice"  # from the cache
        writer.set("user:1", "bob")
        eventually(lambda: cached.get("user:1"), b"bob")  # invalidated, read again
        writer.hset("h", "f", "1")
        assert cached.hget("h", "f") == b"1"
        assert cache.size == 2
        writer.flushall()
        eventually(lambda: cached.hget("h", "f"), None)
        assert cached.get("user:1") is None
    finally:
        cached.close()
        writer.close()


def test_invalidation_comes_before_the_keyspace_event(target, r2):
    ok(r2.call("CONFIG", "SET", "notify-keyspace-events", "KEA"))
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    c.call("GET", "k")
    c.call("SUBSCRIBE", "__keyspace@0__:k")
    ok(r2.call("SET", "k", "1"))
    c.send("PING")
    assert pushes_until(c, ("+", b"PONG")) == [
        (">", [("$", b"invalidate"), keys_payload([b"k"])]),
        (">", [("$", b"message"), ("$", b"__keyspace@0__:k"), ("$", b"set")]),
    ]
    c.close()


def test_bcast_collects_a_scripts_writes(r2, cache):
    c = cache("BCAST", "PREFIX", "b")
    assert r2.call("EVAL", "redis.call('set', 'bk2', '1') redis.call('set', 'bk', '1')", 0) == (
        "$", None)
    assert c.received() == [c.frame(b"bk", b"bk2")]


def test_many_prefixes_in_one_request(r2, target):
    """Valkey compares every pair; fakekey finds the same first overlap without doing so."""
    prefixes = [b"p%06d:" % i for i in range(5000)]
    args = [x for prefix in prefixes + [b"p000001:x"] for x in (b"PREFIX", prefix)]
    started = time.monotonic()
    assert r2.call("CLIENT", "TRACKING", "on", "BCAST", *args) == (
        "-", b"ERR Prefix 'p000001:' overlaps with another provided prefix 'p000001:x'. "
        b"Prefixes for a single client must not overlap.")
    ok(r2.call("CLIENT", "TRACKING", "on", "BCAST", *args[:-2]))
    assert r2.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p004999:9") == (
        "-", b"ERR Prefix 'p004999:9' overlaps with an existing prefix 'p004999:'. "
        b"Prefixes for a single client must not overlap.")
    assert time.monotonic() - started < 10
    other = target.raw(2)
    ok(other.call("SET", "p001234:k", "1"))
    other.close()
    ok(r2.call("CLIENT", "TRACKING", "off"))


def test_lowering_the_table_limit_evicts_at_the_next_command(r2, cache):
    c = cache()
    for key in ("a", "b", "c"):
        assert c.call("GET", key) == null(c.proto)
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
    try:
        deadline = time.monotonic() + 5
        while stats(r2)[1] > 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert len(c.received()) == 2
    finally:
        r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")


# --- more of Valkey's tests/unit/tracking.tcl -------------------------------------------------


def received_until(c, count, timeout=5.0):
    """What reached `c`'s inbox, once it holds `count` frames (the cron's work)."""
    frames = []
    deadline = time.monotonic() + timeout
    while len(frames) < count:
        assert time.monotonic() < deadline, frames
        time.sleep(0.01)
        frames += c.received()
    return frames


def subscribed_inbox(target, proto=2):
    """A client subscribed to __redis__:invalidate, and its id to redirect to."""
    inbox = target.raw(proto)
    inbox_id = inbox.call("CLIENT", "ID")[1]
    inbox.send("SUBSCRIBE", INVALIDATE_CHANNEL)
    inbox.read()
    return inbox, inbox_id


def message(*keys):
    """A RESP2 redirect target's invalidation of `keys`."""
    return ("*", [("$", b"message"), ("$", INVALIDATE_CHANNEL), keys_payload(keys)])


def invalidate(*keys):
    """A RESP3 invalidation of `keys`; none: the flush's null."""
    return (">", [("$", b"invalidate"), keys_payload(keys) if keys else ("_", None)])


def test_prefixes_cost_little_client_memory(r2):
    """tcl: Client tracking prefixes memory overhead."""
    def tot_mem():
        line = r2.call("CLIENT", "INFO")[1]
        return int(line.split(b" tot-mem=")[1].split(b" ")[0])

    before = tot_mem()
    args = [x for i in range(10240) for x in ("PREFIX", f"PREFIX-{i}-{i}-{i}-{i}-{i}-{i}-{i}")]
    ok(r2.call("CLIENT", "TRACKING", "on", "BCAST", *args))
    assert tot_mem() - before < 300000
    ok(r2.call("CLIENT", "TRACKING", "off"))


def test_bcast_prefix_added_later(r2, cache):
    """tcl: Adding prefixes to BCAST mode works."""
    c = cache("BCAST", "PREFIX", "a:", "PREFIX", "b:")
    ok(c.call("CLIENT", "TRACKING", "on", "BCAST", *c.redirect, "PREFIX", "c:"))
    assert r2.call("INCR", "c:1234") == (":", 1)
    assert c.received() == [c.frame(b"c:1234")]


def test_bcast_noloop_is_told_of_its_keys_expiring(cache):
    """tcl: Tracking gets notification of expired keys. An expiry is no client's write,
    so NOLOOP leaves nothing out."""
    c = cache("BCAST", "NOLOOP")
    ok(c.call("SET", "mykey", "myval", "PX", "1"))
    ok(c.call("SET", "mykeyotherkey", "myval"))  # its own write: left out
    assert received_until(c, 1) == [c.frame(b"mykey")]


def test_bcast_noloop_lazy_expiry_in_a_transaction(cache):
    """tcl: Tracking gets notification of lazy expired keys."""
    c = cache("BCAST", "NOLOOP")
    ok(c.call("MULTI"))
    for args in (("SET", "mykey", "myval", "PX", "1"), ("SET", "mykeyotherkey", "myval"),
                 ("DEBUG", "SLEEP", "0.1"), ("GET", "mykey")):
        assert c.call(*args) == ("+", b"QUEUED")
    assert c.call("EXEC") == ("*", [("+", b"OK")] * 3 + [("$", b"myval")])
    assert received_until(c, 1) == [c.frame(b"mykey")]


def test_bcast_noloop_is_told_of_its_own_command_expiring_a_key(cache, r2):
    """A key expired lazily by a BCAST NOLOOP client's own read is the server's doing:
    that client is told too (Valkey's deleteExpiredKeyAndPropagate)."""
    c = cache("BCAST", "NOLOOP")
    ok(r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0"))  # the read must be what expires it
    try:
        ok(c.call("SET", "mykey", "myval", "PX", "1"))
        time.sleep(0.05)
        assert c.call("GET", "mykey") == null(c.proto)
        assert received_until(c, 1) == [c.frame(b"mykey")]
    finally:
        ok(r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1"))


def test_redirect_survives_switching_to_resp3(target, r2):
    """tcl: Invalidations of previous keys (and of new keys) can be redirected after
    switching to RESP3."""
    inbox, inbox_id = subscribed_inbox(target)
    tracker = target.raw(2)
    ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
    ok(r2.call("SET", "key1", "1"))
    assert tracker.call("GET", "key1") == ("$", b"1")
    assert tracker.call("HELLO", "3")[0] == "%"
    ok(r2.call("SET", "key1", "2"))
    assert tracker.call("GET", "key1") == ("$", b"2")
    ok(r2.call("SET", "key1", "3"))
    assert received(inbox) == [message(b"key1"), message(b"key1")]
    assert tracker.call("PING") == ("+", b"PONG")  # nothing on the tracker itself
    for each in (inbox, tracker):
        each.close()


def test_noloop_leaves_out_a_scripts_own_write(target):
    """tcl: Invalid keys should not be tracked for scripts in NOLOOP mode."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on", "NOLOOP"))
    ok(c.call("SET", "key1", "1"))
    assert c.call("GET", "key1") == ("$", b"1")
    ok(c.call("EVAL", "return redis.call('set', 'key1', '2')", 1, "key1"))
    assert c.call("GET", "key1") == ("$", b"2")
    assert c.call("PING") == ("+", b"PONG")
    c.close()


def test_scripts_track_only_the_keys_their_reads_name(target, r2):
    """tcl: Tracking only occurs for scripts when a command calls a read-only command:
    the keys a script declares are not tracked, those its read commands name are."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    ok(r2.call("MSET", "key2", "1", "key2", "1"))
    for script in ("EVAL", "EVAL_RO"):
        body = "redis.call('set', 'key3', 'bar')" if script == "EVAL" else "redis.call('ping')"
        assert c.call(script, body, 2, "key1", "key2") == ("_", None)
        ok(r2.call("MSET", "key2", "2", "key1", "2"))
        assert c.call("PING") == ("+", b"PONG")
        assert c.call(script, "redis.call('get', 'key2')", 2, "key1", "key2") == ("_", None)
        ok(r2.call("MSET", "key2", "2", "key3", "2"))
        assert c.read() == invalidate(b"key2")
        assert c.call("PING") == ("+", b"PONG")
    c.close()


def test_bcast_noloop_is_told_of_its_scripts_writes(target):
    """A script's writes are its own client's, not its caller's: a BCAST NOLOOP caller is
    told of them (a transaction's are its own, left out)."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"))
    assert c.call("EVAL", "redis.call('set', 's1', '1') return 1", 0) == (":", 1)
    c.send("PING")
    assert pushes_until(c, ("+", b"PONG")) == [invalidate(b"s1")]
    ok(c.call("MULTI"))
    assert c.call("SET", "m1", "1") == ("+", b"QUEUED")
    assert c.call("EXEC") == ("*", [("+", b"OK")])
    assert c.call("PING") == ("+", b"PONG")
    c.close()


def test_clients_share_a_redirect_target(target, r2):
    """tcl: Different clients can redirect to the same connection."""
    inbox, inbox_id = subscribed_inbox(target)
    a, b = target.raw(2), target.raw(3)
    for each in (a, b):
        ok(each.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
    ok(r2.call("MSET", "key1", "1", "key2", "1"))
    assert a.call("GET", "key1") == ("$", b"1")
    assert b.call("GET", "key2") == ("$", b"1")
    assert r2.call("INCR", "key1") == (":", 2)
    assert r2.call("INCR", "key2") == (":", 2)
    assert [inbox.read(), inbox.read()] == [message(b"key1"), message(b"key2")]
    for each in (inbox, a, b):
        each.close()


def test_clients_of_both_protocols_track_one_key(target, r2):
    """tcl: Different clients using different protocols can track the same key."""
    inbox, inbox_id = subscribed_inbox(target)
    resp2, resp3 = target.raw(2), target.raw(3)
    ok(resp2.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
    ok(resp3.call("CLIENT", "TRACKING", "on"))
    ok(r2.call("SET", "key1", "1"))
    assert resp2.call("GET", "key1") == ("$", b"1")
    assert resp3.call("GET", "key1") == ("$", b"1")
    assert r2.call("INCR", "key1") == (":", 2)
    assert inbox.read() == message(b"key1")
    resp3.send("PING")  # its invalidation comes before the answer
    assert [resp3.read(), resp3.read()] == [invalidate(b"key1"), ("+", b"PONG")]
    for each in (inbox, resp2, resp3):
        each.close()


def test_redirect_to_a_subscribed_resp3_client(target, r2, proto):
    """tcl: Able to redirect to a RESP3 client: a push, even when it is subscribed to
    __redis__:invalidate."""
    inbox, inbox_id = subscribed_inbox(target, 3)
    tracker = target.raw(proto)
    ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
    ok(r2.call("SET", "key1", "1"))
    assert tracker.call("GET", "key1") == ("$", b"1")
    assert r2.call("INCR", "key1") == (":", 2)
    assert inbox.read() == invalidate(b"key1")
    assert inbox.call("UNSUBSCRIBE")[0] == ">"
    assert inbox.call("HELLO", "2")[0] == "*"
    for each in (inbox, tracker):
        each.close()


def test_switching_to_bcast_sends_only_the_broadcast(target, r2):
    """tcl: After switching from normal tracking to BCAST mode, no invalidation message
    is produced for pre-BCAST keys (the broadcast of the empty prefix comes alone)."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    ok(r2.call("SET", "key1", "1"))
    assert c.call("GET", "key1") == ("$", b"1")
    ok(c.call("CLIENT", "TRACKING", "off"))
    ok(c.call("CLIENT", "TRACKING", "on", "BCAST"))
    assert r2.call("INCR", "key1") == (":", 2)
    c.send("PING")
    assert [c.read(), c.read()] == [invalidate(b"key1"), ("+", b"PONG")]
    c.close()


def test_bcast_prefix_collisions(target):
    """tcl: BCAST with prefix collisions throw errors; self-collision at later index,
    identical prefix at later index, the empty prefix: each refused, tracking stays off."""
    c = target.raw(2)
    refusals = [
        (("FOOBAR", "FOO"), b"'FOOBAR' overlaps with another provided prefix 'FOO'"),
        (("FOO", "FOOBAR"), b"'FOO' overlaps with another provided prefix 'FOOBAR'"),
        (("aaa", "bbb", "bbbc"), b"'bbb' overlaps with another provided prefix 'bbbc'"),
        (("xxx", "yyy", "yyy"), b"'yyy' overlaps with another provided prefix 'yyy'"),
        (("", "foo"), b"'' overlaps with another provided prefix 'foo'"),
    ]
    for prefixes, clash in refusals:
        args = [x for prefix in prefixes for x in ("PREFIX", prefix)]
        assert c.call("CLIENT", "TRACKING", "ON", "BCAST", *args) == (
            "-", b"ERR Prefix " + clash + b". Prefixes for a single client must not overlap.")
        assert c.call("CLIENT", "TRACKINGINFO")[1][1] == ("*", [("$", b"off")])
    ok(c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "FOO", "PREFIX", "BAR"))
    for prefix, clash in ((b"FO", b"FOO"), (b"BARB", b"BAR")):
        assert c.call("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", prefix) == (
            "-", b"ERR Prefix '" + prefix + b"' overlaps with an existing prefix '" + clash
            + b"'. Prefixes for a single client must not overlap.")
    ok(c.call("CLIENT", "TRACKING", "OFF"))
    c.close()


def test_own_hdel_is_invalidated_after_its_reply(target):
    """tcl: hdel deliver invalidate message after response in the same connection."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    assert c.call("HSET", "myhash", "f", "1") == (":", 1)
    assert c.call("HGET", "myhash", "f") == ("$", b"1")
    assert c.call("HDEL", "myhash", "f") == (":", 1)
    assert c.read() == invalidate(b"myhash")
    c.close()


def test_lazy_expiry_is_invalidated_after_a_multi_key_reply(target):
    """tcl: Tracking invalidation message is not interleaved with multiple keys response."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    ok(c.call("DEBUG", "SET-ACTIVE-EXPIRE", "0"))
    try:
        ok(c.call("MULTI"))
        for args in (("MSET", "x", "1", "y", "2"), ("PEXPIRE", "y", "100"), ("GET", "y")):
            assert c.call(*args) == ("+", b"QUEUED")
        assert c.call("EXEC") == ("*", [("+", b"OK"), (":", 1), ("$", b"2")])
        time.sleep(0.15)
        assert c.call("MGET", "x", "y") == ("*", [("$", b"1"), ("_", None)])
        assert c.read() == invalidate(b"y")
    finally:
        ok(c.call("DEBUG", "SET-ACTIVE-EXPIRE", "1"))
    c.close()


def test_flushdb_in_a_transaction_is_invalidated_after_exec(target):
    """tcl: flushdb tracking invalidation message is not interleaved with transaction
    response."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    ok(c.call("SET", "a", "1"))
    assert c.call("GET", "a") == ("$", b"1")
    ok(c.call("MULTI"))
    assert c.call("FLUSHDB") == ("+", b"QUEUED")
    assert c.call("EXEC") == ("*", [("+", b"OK")])
    assert c.read() == invalidate()
    c.close()


def test_maxmemory_eviction_is_invalidated_before_the_reply(target):
    """tcl: Tracking invalidation message of eviction keys should be before response:
    the eviction runs before the command that finds the memory over the limit."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    text = c.call("INFO", "memory")[1]
    fields = dict(line.split(b":", 1) for line in text.split(b"\r\n") if b":" in line)
    used = int(fields[b"used_memory"]) - int(fields[b"mem_not_counted_for_evict"])
    try:
        ok(c.call("CONFIG", "SET", "maxmemory", used + 100 * 1024))
        ok(c.call("CONFIG", "SET", "maxmemory-policy", "volatile-random"))
        ok(c.call("SETEX", "volatile-key", "10000", "x"))
        assert c.call("GET", "volatile-key") == ("$", b"x")
        assert c.call("SETBIT", "big-key", "1600000", "0") == (":", 0)  # about 200kB
        c.send("GETBIT", "big-key", "0")
        assert [c.read(), c.read()] == [invalidate(b"volatile-key"), (":", 0)]
    finally:
        ok(c.call("CONFIG", "SET", "maxmemory-policy", "noeviction"))
        ok(c.call("CONFIG", "SET", "maxmemory", "0"))
    c.close()


def test_woken_client_gets_its_invalidation_after_its_reply(target, r2):
    """tcl: Unblocked BLMOVE gets notification after response. The woken client's own
    write is told after its reply; a write by the client that woke it, before."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on"))
    assert r2.call("RPUSH", "list2", "a") == (":", 1)
    assert c.call("LRANGE", "list2", "0", "-1") == ("*", [("$", b"a")])
    assert c.call("LLEN", "list1") == (":", 0)
    c.send("BLMOVE", "list1", "list2", "left", "left", "0")
    wait_blocked(r2, 1)
    assert r2.call("RPUSH", "list1", "foo") == (":", 1)
    # list1 changed under the pusher's command, list2 under the woken BLMOVE
    assert [c.read() for _ in range(3)] == [
        invalidate(b"list1"), ("$", b"foo"), invalidate(b"list2")]
    assert c.call("LLEN", "q") == (":", 0)
    c.send("BLPOP", "q", "0")
    wait_blocked(r2, 1)
    assert r2.call("RPUSH", "q", "bar") == (":", 1)
    c.send("PING")
    assert [c.read() for _ in range(3)] == [
        invalidate(b"q"), ("*", [("$", b"q"), ("$", b"bar")]), ("+", b"PONG")]
    c.close()


@pytest.mark.parametrize("mode", [("NOLOOP",), ("BCAST", "NOLOOP")], ids=["noloop", "bcast"])
def test_woken_noloop_client_is_not_told_of_its_own_writes(target, r2, mode):
    """A woken client's command runs as the current client again: NOLOOP leaves out what
    it writes, and in BCAST the key it popped was written by it last."""
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on", *mode))
    assert c.call("LRANGE", "list2", "0", "-1") == ("*", [])
    c.send("BLMOVE", "list1", "list2", "left", "left", "0")
    wait_blocked(r2, 1)
    assert r2.call("RPUSH", "list1", "foo") == (":", 1)
    assert c.read() == ("$", b"foo")
    assert c.call("PING") == ("+", b"PONG")
    c.close()


def wait_blocked(client, count):
    deadline = time.monotonic() + 5
    while b"blocked_clients:%d\r\n" % count not in client.call("INFO", "clients")[1]:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_flushall_async_empties_the_table(target, r2, cache):
    """tcl: Test ASYNC flushall (and the invalidations for flushall and flushdb)."""
    c = cache()
    for key in ("key1", "key2"):
        assert c.call("GET", key) == null(c.proto)
    assert stats(r2)[1] == 2
    ok(r2.call("FLUSHALL", "ASYNC"))
    assert stats(r2)[1] == 0
    assert c.received() == [c.frame()]


def test_info_counts_as_valkey_tests_them(target, r2, cache):
    """tcl: Tracking info is correct."""
    c = cache()
    ok(r2.call("MSET", "key1", "1", "key2", "2"))
    assert c.call("GET", "key1") == ("$", b"1")
    assert c.call("GET", "key2") == ("$", b"2")
    bcast = target.raw(2)
    ok(bcast.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "prefix:"))
    ok(r2.call("SET", "prefix:key1", "1"))
    ok(r2.call("SET", "prefix:key2", "2"))
    deadline = time.monotonic() + 5
    while stats(r2)[0] > 2:  # the tracking clients of earlier tests may still be leaving
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert stats(r2) == (2, 2, 2, 1)
    bcast.close()


@pytest.mark.parametrize("reply_proto", [3, 2])
def test_client_reply_off_keeps_the_invalidations(target, r2, reply_proto):
    """tcl: RESP3 (and RESP2) based basic invalidation with client reply off: pushes go
    out whatever CLIENT REPLY says; the replies stay off."""
    c = target.raw(reply_proto)
    c_id = c.call("CLIENT", "ID")[1]
    ok(c.call("CLIENT", "TRACKING", "on"))
    ok(r2.call("SET", "foo", "bar"))
    assert c.call("GET", "foo") == ("$", b"bar")
    c.send("CLIENT", "REPLY", "OFF")
    wait_last_command(r2, c_id, b"client|reply")
    ok(r2.call("SET", "foo", "bar2"))
    if reply_proto == 3:
        assert c.read() == invalidate(b"foo")
    ok(c.call("CLIENT", "REPLY", "ON"))
    assert c.call("PING") == ("+", b"PONG")
    c.close()


def test_client_reply_off_on_a_redirect_target(target, r2):
    """tcl: RESP3 based basic redirect invalidation with client reply off."""
    inbox = target.raw(3)
    inbox_id = inbox.call("CLIENT", "ID")[1]
    tracker = target.raw(2)
    ok(tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id))
    ok(r2.call("SET", "foo", "bar"))
    assert tracker.call("GET", "foo") == ("$", b"bar")
    inbox.send("CLIENT", "REPLY", "OFF")
    wait_last_command(r2, inbox_id, b"client|reply")
    ok(r2.call("SET", "foo", "bar2"))
    assert inbox.read() == invalidate(b"foo")
    ok(inbox.call("CLIENT", "REPLY", "ON"))
    assert inbox.call("PING") == ("+", b"PONG")
    for each in (inbox, tracker):
        each.close()


def wait_last_command(client, client_id, name):
    """Until the client `client_id` has run `name` (it answers nothing: CLIENT REPLY OFF)."""
    deadline = time.monotonic() + 5
    while b" cmd=" + name + b" " not in client.call("CLIENT", "LIST", "ID", client_id)[1]:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_client_reply_off_and_a_broken_redirect(target, r2):
    """tcl: RESP3 based basic tracking-redir-broken with client reply off."""
    gone = target.raw(2)
    gone_id = gone.call("CLIENT", "ID")[1]
    c = target.raw(3)
    ok(c.call("CLIENT", "TRACKING", "on", "REDIRECT", gone_id))
    ok(r2.call("SET", "foo", "bar"))
    assert c.call("GET", "foo") == ("$", b"bar")
    c.send("CLIENT", "REPLY", "OFF")
    ok(gone.call("QUIT"))
    gone.close()
    deadline = time.monotonic() + 5
    while b"id=%d " % gone_id in r2.call("CLIENT", "LIST")[1]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ok(r2.call("SET", "foo", "bar2"))
    assert c.read() == (">", [("$", b"tracking-redir-broken"), (":", gone_id)])
    ok(c.call("CLIENT", "REPLY", "ON"))
    assert c.call("PING") == ("+", b"PONG")
    c.close()


# --- tracking-table-max-keys: the cron and the commands hold the table to it ------------------


def test_table_limit_evicts_in_the_cron_with_growing_effort(target, r2, cache):
    """tcl: Server is able to evacuate enough keys when num of keys surpasses limit by
    more than defined initial effort. 100 keys a round, 100 more each round still over:
    249 invalidations without a command, then no more."""
    c = cache()
    for i in range(250):
        ok(r2.call("SET", f"key{i}", i))
        assert c.call("GET", f"key{i}") == ("$", str(i).encode())
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
    try:
        evicted = [c.inbox.read() for _ in range(249)]
        keys = {frame[1][-1][1][0][1] for frame in evicted}
        assert len(keys) == 249 and keys < {b"key%d" % i for i in range(250)}
        assert c.received() == []
        assert stats(r2)[1:3] == (1, 1)
    finally:
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000"))


def test_table_limit_eviction_reaches_a_noloop_client(target, r2):
    """tcl: Tracking gets notification on tracking table key eviction: the client that
    lowered the limit is told too, by the cron, though it tracks with NOLOOP."""
    inbox, inbox_id = subscribed_inbox(target)
    c = target.raw(2)
    ok(c.call("CLIENT", "TRACKING", "on", "REDIRECT", inbox_id, "NOLOOP"))
    ok(c.call("MSET", "key1", "1", "key2", "2"))
    assert c.call("MGET", "key1", "key2") == ("*", [("$", b"1"), ("$", b"2")])
    ok(c.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
    try:
        assert inbox.read() in (message(b"key1"), message(b"key2"))
    finally:
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000"))
    for each in (inbox, c):
        each.close()


def test_table_limit_eviction_before_a_noloop_clients_command(target, r2):
    """Before a command, Valkey evicts with that command's client as the current one: a
    NOLOOP client is not told of the keys evicted before its own command (they leave
    the table all the same)."""
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
    c = target.raw(3)
    try:
        ok(c.call("CLIENT", "TRACKING", "on", "NOLOOP"))
        c.send_raw(encode_command("MGET", "k1", "k2") + encode_command("PING"))  # one read
        assert [c.read(), c.read()] == [("*", [("_", None), ("_", None)]), ("+", b"PONG")]
        assert stats(r2)[1:3] == (1, 1)
        assert c.call("PING") == ("+", b"PONG")
    finally:
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000"))
    c.close()


def test_table_limit_with_a_transaction_open(target, r2):
    """tcl: Regression test for #11715 (without DEBUG PAUSE-CRON, which fakekey lacks: the
    cron evicts here, while the client is inside MULTI; its queued command and EXEC go on
    as usual, after the invalidation)."""
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "2"))
    c = target.raw(3)
    try:
        ok(c.call("CLIENT", "TRACKING", "on"))
        assert c.call("MGET", "1{tag}", "2{tag}") == ("*", [("_", None), ("_", None)])
        ok(c.call("MULTI"))
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
        time.sleep(0.3)  # a few cron rounds
        c.send("PING")
        c.send("EXEC")
        frames = [c.read() for _ in range(3)]
        assert frames[0] in (invalidate(b"1{tag}"), invalidate(b"2{tag}"))
        assert frames[1:] == [("+", b"QUEUED"), ("*", [("+", b"PONG")])]
    finally:
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000"))
    c.close()


def test_table_limit_waits_for_a_tracking_client(target, r2):
    """Valkey holds the table to its limit only while some client is tracking: the keys
    of a client that left stay until then."""
    gone = target.raw(3)
    ok(gone.call("CLIENT", "TRACKING", "on"))
    assert gone.call("MGET", "k1", "k2", "k3") == ("*", [("_", None)] * 3)
    gone.close()
    deadline = time.monotonic() + 5
    while stats(r2)[0]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1"))
    c = target.raw(3)
    try:
        time.sleep(0.3)  # a few cron rounds
        assert stats(r2) == (0, 3, 3, 0)
        ok(c.call("CLIENT", "TRACKING", "on"))
        assert stats(r2) == (1, 1, 1, 0)  # INFO is a command: the limit held before it
        assert c.call("PING") == ("+", b"PONG")  # nothing for c: the keys were not its
    finally:
        ok(r2.call("CONFIG", "SET", "tracking-table-max-keys", "1000000"))
    c.close()
