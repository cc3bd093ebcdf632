"""Connection commands: PING, ECHO, SELECT, QUIT, RESET, HELLO, AUTH."""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import parse_db_index, parse_int
from fakekey.core.client import Client
from fakekey.core.monitor import stop_monitoring
from fakekey.core.registry import command
from fakekey.core.users import set_default_user
from fakekey.core.version_gate import hello_identity
from fakekey.resp.replies import OK, PONG, ReplyError, Simple

G = "connection"


@command("ping", -1, "fast sentinel", acl="connection", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Answers PONG, or echoes its argument.")
def ping(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 2:
        raise ReplyError("ERR wrong number of arguments for 'ping' command")
    if (c.subscriptions or c.shard_channels) and c.protocol == 2:
        return [b"pong", argv[1] if len(argv) == 2 else b""]
    return argv[1] if len(argv) == 2 else PONG


@command("echo", 2, "loading stale fast", acl="connection", group=G, since="1.0.0",
         summary="Answers with the message it was given.")
def echo(c: Client, argv: list[bytes]) -> Any:
    return argv[1]


@command("select", 2, "loading stale fast allow_busy", acl="connection", group=G, since="1.0.0",
         summary="Switches the connection to another numbered database.")
def select(c: Client, argv: list[bytes]) -> Any:
    c.select(parse_db_index(argv[1], len(c.state.dbs)))
    return OK


@command("quit", -1, "allow_busy noscript loading stale fast no_auth", acl="connection",
         group=G, since="1.0.0", summary="Closes the connection after answering OK.")
def quit_(c: Client, argv: list[bytes]) -> Any:
    c.close_after_reply = True
    return OK


@command("reset", 1, "noscript loading stale fast no_auth allow_busy", acl="connection",
         group=G, since="6.2.0", summary="Returns the connection to its initial state.")
def reset(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    if c.in_multi or c.multi_queue:
        c.in_multi = False
        c.multi_queue.clear()
        c.multi_error = False
    state.unwatch_all(c)
    state.unsubscribe_all(c)
    if c.monitor:
        stop_monitoring(c)
    if c.tracking is not None:
        state.tracking_table.disable(c)
    c.set_protocol(2)
    c.select(0)
    c.name = b""
    c.reply_mode = "on"
    c.no_evict = False
    c.no_touch = False
    c.cluster_readonly = c.asking = False
    set_default_user(c)
    return Simple(b"RESET")


def check_password(c: Client, user: bytes, password: bytes, verb: bytes = b"AUTH") -> None:
    """Authenticate `c` as `user` or raise WRONGPASS (the failure goes to the ACL log)."""
    c.state.users.authenticate(c, user, password, verb)


@command("auth", -2, "noscript loading stale fast no_auth allow_busy", acl="connection",
         group=G, since="1.0.0", summary="Authenticates the connection.",
         complexity="O(N) where N is the number of passwords defined for the user")
def auth(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise ReplyError("ERR syntax error")
    if len(argv) == 2:
        if c.state.users.default.nopass:
            raise ReplyError(
                "ERR AUTH <password> called without any password configured for the default "
                "user. Are you sure your configuration is correct?"
            )
        check_password(c, b"default", argv[1], argv[0])
    else:
        check_password(c, argv[1], argv[2], argv[0])
    return OK


def hello_reply(c: Client) -> dict[bytes, Any]:
    state = c.state
    server, version = hello_identity(state)  # Valkey's, or a fakeredis user's version=
    reply: dict[bytes, Any] = {
        b"server": server,
        b"version": version,
        b"proto": c.protocol,
        b"id": c.id,
        b"mode": b"standalone",
        b"role": b"master",
        b"modules": state.module_list(),
    }
    zone = state.config["availability-zone"]
    if zone:  # Valkey adds it only when set
        reply[b"availability_zone"] = zone.encode()
    return reply


@command("hello", -1, "noscript loading stale fast no_auth allow_busy", acl="connection",
         group=G, since="6.0.0", summary="Chooses the protocol, and optionally authenticates "
         "and names the connection; answers with the server's description.")
def hello(c: Client, argv: list[bytes]) -> Any:
    protocol = c.protocol
    i = 1
    if len(argv) >= 2:
        try:
            protocol = parse_int(argv[1])
        except ReplyError as err:
            err.__traceback__ = None  # a shared instance: its traceback would keep growing
            raise ReplyError("ERR Protocol version is not an integer or out of range") from None
        if protocol < 2 or protocol > 3:
            raise ReplyError("NOPROTO unsupported protocol version")
        i = 2
    user = password = name = None
    while i < len(argv):
        opt = argv[i].lower()
        more = len(argv) - i - 1
        if opt == b"auth" and more >= 2:
            user, password = argv[i + 1], argv[i + 2]
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            i += 2
        else:
            raise ReplyError(f"ERR Syntax error in HELLO option '{argv[i].decode('utf-8', 'replace')}'")
    if user is not None and password is not None:
        check_password(c, user, password, argv[0])
    if not c.authenticated and c.state.users.auth_required():
        raise ReplyError("NOAUTH HELLO must be called with the client already authenticated, "
                         "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                         "authenticate the client and select the RESP protocol version at the same time")
    if name is not None:
        from fakekey.commands.clients import validate_name

        validate_name(name)
        c.name = name
    c.set_protocol(protocol)
    return hello_reply(c)
