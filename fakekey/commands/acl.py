"""ACL: users and their rules (the model and the checks live in fakekey/core/users.py)."""

from __future__ import annotations

import os
from typing import Any

from fakekey.commands.args import help_lines, parse_int
from fakekey.commands.clients import client_line
from fakekey.core.client import Client
from fakekey.core.registry import ACL_CATEGORIES, FAKEKEY_PREFIX, command, container
from fakekey.core.users import set_client_describer
from fakekey.resp.replies import OK, ReplyError

G = "server"
ADMIN = "admin noscript loading stale"
ALL_NODES = "request_policy:all_nodes response_policy:all_succeeded"
GENPASS_MAX_BITS = 4096
NO_ACL_FILE = ReplyError(
    "ERR This instance is not configured to use an ACL file. You may want to specify users "
    "via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a "
    "configuration file set) in order to store users in the configuration.")

set_client_describer(client_line)  # ACL LOG's client-info

container("acl", group=G, since="6.0.0", summary="Holds the commands about users and their "
          "permissions.")

ACL_HELP = [
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <rule> [<rule> ...]",
    "    Create or modify a user with the specified rules.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Print this help.",
]


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@command("acl|setuser", -3, ADMIN, acl="dangerous", since="6.0.0", tips=ALL_NODES,
         complexity="O(N). Where N is the number of rules provided.",
         summary="Creates a user or changes its rules.")
def acl_setuser(c: Client, argv: list[bytes]) -> Any:
    if any(ch in b" \t\n\r\x0b\x0c\x00" for ch in argv[2]):
        raise ReplyError("ERR Usernames can't contain spaces or null characters")
    c.state.users.set_user(_name(argv[2]), argv[3:])
    return OK


@command("acl|deluser", -3, ADMIN, acl="dangerous", since="6.0.0", tips=ALL_NODES,
         complexity="O(1) amortized time considering the typical user.",
         summary="Deletes users and closes their connections.")
def acl_deluser(c: Client, argv: list[bytes]) -> Any:
    names = [_name(raw) for raw in argv[2:]]
    if "default" in names:
        raise ReplyError("ERR The 'default' user cannot be removed")
    return c.state.users.delete(names)


@command("acl|getuser", 3, ADMIN, acl="dangerous", since="6.0.0",
         complexity="O(N). Where N is the number of password, command and pattern rules that "
         "the user has.", summary="Describes one user's rules.")
def acl_getuser(c: Client, argv: list[bytes]) -> Any:
    user = c.state.users.get(_name(argv[2]))
    return None if user is None else user.getuser()


@command("acl|list", 2, ADMIN, acl="dangerous", since="6.0.0",
         complexity="O(N). Where N is the number of configured users.",
         summary="Describes every user as an ACL file line.")
def acl_list(c: Client, argv: list[bytes]) -> Any:
    users = c.state.users.by_name
    return [b"user " + name.encode("utf-8", "surrogateescape") + b" " + users[name].describe()
            for name in sorted(users)]


@command("acl|users", 2, ADMIN, acl="dangerous", since="6.0.0",
         complexity="O(N). Where N is the number of configured users.",
         summary="Lists the user names.")
def acl_users(c: Client, argv: list[bytes]) -> Any:
    return [name.encode("utf-8", "surrogateescape") for name in sorted(c.state.users.by_name)]


@command("acl|whoami", 2, "noscript loading stale", since="6.0.0",
         summary="Answers the name of the connection's user.")
def acl_whoami(c: Client, argv: list[bytes]) -> Any:
    return c.user.encode("utf-8", "surrogateescape")


@command("acl|cat", -2, "noscript loading stale", since="6.0.0",
         complexity="O(1) since the categories and commands are a fixed set.",
         summary="Lists the categories, or the commands of one.")
def acl_cat(c: Client, argv: list[bytes]) -> Any:
    from fakekey.core.users import commands_in_category

    if len(argv) > 3:
        raise ReplyError(f"ERR unknown subcommand or wrong number of arguments for "
                         f"'{_name(argv[1])}'. Try ACL HELP.")
    if len(argv) == 2:
        return [name.encode() for name in ACL_CATEGORIES]
    category = _name(argv[2]).lower()
    if category not in ACL_CATEGORIES:
        raise ReplyError(f"ERR Unknown category '{_name(argv[2])[:128]}'")
    # the declared commands (a renamed one by its own name, as Valkey), less FAKEKEY.* on
    # a server that has none (enable-fakekey-commands no)
    own = c.state.config["enable-fakekey-commands"]
    return [name.encode() for name in commands_in_category(category)
            if own or not name.startswith(FAKEKEY_PREFIX)]


@command("acl|dryrun", -4, ADMIN, acl="dangerous", since="7.0.0", complexity="O(1).",
         summary="Answers whether a user could run a command, without running it.")
def acl_dryrun(c: Client, argv: list[bytes]) -> Any:
    users = c.state.users
    name = _name(argv[2])
    user = users.get(name)
    if user is None:
        raise ReplyError(f"ERR User '{name}' not found")
    target = argv[3:]
    cmd = c.state.registry.lookup(target[0])
    if cmd is not None and cmd.subcommands and len(target) > 1:  # a container alone: arity
        cmd = cmd.subcommands.get(target[1].lower())
    if cmd is None:
        raise ReplyError(f"ERR Command '{_name(target[0])}' not found")
    if (cmd.arity > 0 and cmd.arity != len(target)) or len(target) < -cmd.arity:
        raise ReplyError(f"ERR wrong number of arguments for '{cmd.name}' command")
    denied = user.check_command(cmd, target, c.db.index)
    return OK if denied is None else users.dryrun_text(name, cmd, target, denied)


@command("acl|genpass", -2, "noscript loading stale", since="6.0.0",
         summary="Generates a random password.")
def acl_genpass(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise ReplyError(f"ERR unknown subcommand or wrong number of arguments for "
                         f"'{_name(argv[1])}'. Try ACL HELP.")
    bits = parse_int(argv[2]) if len(argv) == 3 else 256
    if bits <= 0 or bits > GENPASS_MAX_BITS:
        raise ReplyError("ERR ACL GENPASS argument must be the number of bits for the output "
                         f"password, a positive number up to {GENPASS_MAX_BITS}")
    chars = (bits + 3) // 4
    return os.urandom((chars + 1) // 2).hex()[:chars].encode()


@command("acl|log", -2, ADMIN, acl="dangerous", since="6.0.0",
         complexity="O(N) with N being the number of entries shown.",
         summary="Lists the recent refusals, or empties the list.")
def acl_log(c: Client, argv: list[bytes]) -> Any:
    users = c.state.users
    if len(argv) > 3:
        raise ReplyError(f"ERR unknown subcommand or wrong number of arguments for "
                         f"'{_name(argv[1])}'. Try ACL HELP.")
    count = 10
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            users.log.clear()
            return OK
        count = max(parse_int(argv[2]), 0)
    now = c.state.now
    return [entry.reply(now) for entry in users.log[:count]]


def _acl_file(c: Client) -> str:
    path = c.state.config["aclfile"]
    if not path:
        raise NO_ACL_FILE
    return path


@command("acl|load", 2, ADMIN, acl="dangerous", since="6.0.0",
         complexity="O(N). Where N is the number of configured users.",
         summary="Replaces the users with those of the ACL file.")
def acl_load(c: Client, argv: list[bytes]) -> Any:
    c.state.users.load_file(_acl_file(c))
    return OK


@command("acl|save", 2, ADMIN, acl="dangerous", since="6.0.0", tips=ALL_NODES,
         complexity="O(N). Where N is the number of configured users.",
         summary="Writes the users to the ACL file.")
def acl_save(c: Client, argv: list[bytes]) -> Any:
    c.state.users.save_file(_acl_file(c))
    return OK


@command("acl|help", 2, "loading stale", since="6.0.0", summary="Explains the ACL subcommands.")
def acl_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(ACL_HELP)

