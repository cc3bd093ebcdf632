"""fakekey-server: valkey-server's command line and config file form.

    fakekey-server [config-file] [--port 6379] [--bind 127.0.0.1] [--requirepass pw] ...

Every `--name value` is a setting (as in a config file line `name value`).
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import Sequence

from fakekey import __version__
from fakekey.config import ConfigError
from fakekey.server import Server, new_event_loop


def read_config_file(path: str) -> list[tuple[str, str]]:
    """Directives of a valkey.conf-style file: `name value...` per line, # comments."""
    pairs: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            pairs.append((words[0].lower(), " ".join(words[1:])))
    return pairs


def parse_argv(argv: Sequence[str]) -> list[tuple[str, str]]:
    """[config-file] then --name value [value...] pairs, as valkey-server takes them."""
    pairs: list[tuple[str, str]] = []
    args = list(argv)
    if args and not args[0].startswith("--"):
        pairs.extend(read_config_file(args.pop(0)))
    name: str | None = None
    values: list[str] = []
    for arg in args + ["--"]:
        if arg.startswith("--"):
            if name is not None:
                pairs.append((name, " ".join(values)))
            name, values = (arg[2:].lower() or None), []
        elif name is None:
            raise ConfigError(f"Invalid argument '{arg}'")
        else:
            values.append(arg)
    return pairs


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-v", "--version"):
        print(f"fakekey v={__version__} (emulates Valkey 9.1.2)")
        return 0
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        settings = dict(parse_argv(argv))
        port = int(settings.pop("port", "6379"))
        host = settings.pop("bind", "127.0.0.1").split()[0]
        server = Server(host=host, port=port, config=settings)
    except (ConfigError, OSError, ValueError) as err:
        print(f"*** FATAL CONFIG FILE ERROR: {err}", file=sys.stderr)
        return 1
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve(server))
    except KeyboardInterrupt:
        pass
    finally:
        loop.close()
    return 0


async def _serve(server: Server) -> None:
    await server.start_async()
    print(f"fakekey {__version__} ready to accept connections on {server.host}:{server.port}", flush=True)
    server.state.shutdown_requested = asyncio.get_running_loop().create_future()
    await server.state.shutdown_requested
    await server.stop_async()


if __name__ == "__main__":
    sys.exit(main())
