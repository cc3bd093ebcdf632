"""fakekey-server: valkey-server's command line and config file form.

    fakekey-server [config-file] [--port 6379] [--bind 127.0.0.1] [--requirepass pw] ... [-]
    echo "maxmemory 1mb" | fakekey-server -          settings from stdin too
    fakekey-server --port 0 [--port-file PATH]      a free port, announced when listening
    fakekey-server --daemonize yes [--pidfile PATH] [--logfile PATH]
    fakekey-server --cluster-primaries 3 [--cluster-replicas 1] [--port 7000]
                                                    a cluster in one process, on the port
                                                    and those after it (0: free ports)
    fakekey-server run [flags] -- CMD ARGS...       CMD with a server on a free port (REDIS_URL...)
    fakekey-server -v | --version
    fakekey-server -h | --help

Every `--name value` is a setting (as in a config file line `name value`). Once listening,
one line goes to stdout for harnesses to read:

    fakekey ready port=PORT pid=PID url=redis://HOST:PORT
    fakekey ready ports=PORT,PORT,... pid=PID url=redis://HOST:PORT     (a cluster)

SIGTERM, SIGINT and SHUTDOWN stop the server cleanly (exit status 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from fakekey._version import VALKEY_VERSION, __version__
from fakekey.config.directives import StartupRefused
from fakekey.config.file import (
    ConfigLine,
    Directive,
    LineError,
    UnreadableFile,
    config_lines,
    read_file_text,
)
from fakekey.config.limits import TooFewDescriptors
from fakekey.config.settings import Config, ConfigError
from fakekey.core.monitor import quote
from fakekey.core.registry import Registry
from fakekey.core.users import check_user_directive
from fakekey.memory.collector import EVERY_S, collect_if_cheap, own_the_collector, set_aside_what_lives
from fakekey.net.cluster import Cluster
from fakekey.net.registry import load_all
from fakekey.net.server import Server, _url_host, new_event_loop
from fakekey.net.sockets import UnixSocketFailure
from fakekey.persistence.snapshot import LoadError
from fakekey.resp.splitargs import split_args

log = logging.getLogger("fakekey.net.server")

DEFAULT_PIDFILE = "/var/run/valkey.pid"  # what valkey-server writes when daemonized without one
DAEMON_START_TIMEOUT = 60.0  # seconds the launching process waits for the daemon's ready line
VERBOSE = 15  # Valkey's level between debug and notice
logging.addLevelName(VERBOSE, "VERBOSE")
LOG_LEVELS = {"debug": logging.DEBUG, "verbose": VERBOSE, "notice": logging.INFO,
              "warning": logging.WARNING, "nothing": logging.CRITICAL + 1}


def version_line() -> str:
    """valkey-server's `--version` line with fakekey's facts (those INFO reports too),
    fakekey's own version as one more `key=value` at the end."""
    bits = 64 if sys.maxsize > 2**32 else 32
    return (f"Valkey server v={VALKEY_VERSION} sha=00000000:0 malloc=python bits={bits} build=0 "
            f"fakekey={__version__}")


def parse_argv(argv: Sequence[str], stdin: TextIO | None = None) -> list[Directive]:
    """[config-file] [-] then --name value [value...] directives, as valkey-server takes
    them: the file, then the config text on stdin (`-` first or last), then the flags."""
    return [line.directive for line in read_argv(argv, stdin)]


def read_argv(argv: Sequence[str], stdin: TextIO | None = None) -> Iterator[ConfigLine]:
    """The directives of a command line, each with its line number and text as
    valkey-server numbers them: one text made of the config file, stdin's text and a line
    per `--name` option (after a newline), read in order; an `include` is read when
    reached, so an earlier line's error is reported first."""
    args = list(argv)
    config_file = args.pop(0) if args and not args[0].startswith("-") else None
    options, from_stdin = options_text(args, first=config_file is None)
    text = read_file_text(config_file) if config_file is not None else ""
    if from_stdin:
        text += (stdin or sys.stdin).read()
    yield from config_lines(f"{text}\n{options}")


def options_text(args: list[str], first: bool) -> tuple[str, bool]:
    """The options as valkey-server's main() writes them: each `--name` starts a line
    `name `, each other argument goes on that line quoted (sdscatrepr), so a stray word is
    a line of its own; `--save` right before another option is `save ""`; a `--x` right
    after an option name without a value is that option's value. A `-` first or last
    reads config text from stdin (`first`: args[0] is the command's first argument).
    Returns the text and whether stdin is read."""
    lines: list[str] = []
    from_stdin = False
    named = True  # the last option has its value: a `--x` now names a new option
    for i, arg in enumerate(args):
        last = i == len(args) - 1
        following = "" if last else args[i + 1]
        if arg == "-" and ((first and i == 0) or last):
            from_stdin = True
        elif named and arg.startswith("--"):
            lines.append(arg[2:] + " ")
            words = split_args(arg.encode("utf-8", "surrogateescape"))
            named = words is None or len(words) != 1  # `--port 6380` as one argument: named
            if not named and arg.lower() == "--save" and following.startswith("--"):
                lines[-1] += '""'
                named = True
        else:
            if not lines:
                lines.append("")
            quoted = quote(arg.encode("utf-8", "surrogateescape"))
            lines[-1] += quoted.decode("utf-8", "surrogateescape") + " "
            named = True
    return "\n".join(lines), from_stdin


@dataclass
class Launch:
    """What the command line asks of the process around the server (not server settings)."""

    port_file: str | None = None
    cluster_primaries: int = 0  # --cluster-primaries N: a fakekey.Cluster instead of one server
    cluster_replicas: int = 0
    pidfile: str | None = None
    ready_fd: int | None = None  # the daemon's line back to the process that launched it
    written: list[str] = field(default_factory=list)  # files to remove at a clean exit


def take_launch_directives(directives: list[Directive]) -> tuple[list[Directive], Launch]:
    """Split off fakekey's own launch directives (`port-file PATH`): they are no settings
    of Valkey's, so CONFIG never sees them."""
    launch = Launch()
    settings: list[Directive] = []
    for name, words in directives:
        if name == "port-file":
            launch.port_file = port_file_of(words)
        elif name in CLUSTER_LAUNCH:
            count = count_of(words, CLUSTER_LAUNCH[name])
            if name == "cluster-primaries":
                launch.cluster_primaries = count
            else:
                launch.cluster_replicas = count
        else:
            settings.append((name, words))
    return settings, launch


# fakekey's own: a cluster in this process (the least count each takes)
CLUSTER_LAUNCH = {"cluster-primaries": 1, "cluster-replicas": 0}


def count_of(words: list[str], least: int) -> int:
    if len(words) != 1:
        raise ConfigError("wrong number of arguments")
    try:
        count = int(words[0])
    except ValueError:
        raise ConfigError("argument must be a number") from None
    if not least <= count <= 100:
        raise ConfigError(f"argument must be between {least} and 100 inclusive")
    return count


def port_file_of(words: list[str]) -> str:
    if len(words) != 1 or not words[0]:
        raise ConfigError("wrong number of arguments")
    return words[0]


class ValkeyLogFormat(logging.Formatter):
    """`pid:M 02 Dec 2026 06:39:11.195 # text`: # warning, * notice, - verbose, . debug.
    A record with `signal_handler` set is the line Valkey writes from its signal handler:
    `pid:signal-handler (unix seconds) text`; one with `raw` set is its text alone."""

    MARKS = {logging.DEBUG: ".", VERBOSE: "-", logging.INFO: "*", logging.WARNING: "#"}

    def __init__(self, state: Any = None) -> None:
        super().__init__()
        self.state = state  # the server's: its role letter, S while a replica (REPLICAOF)

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "signal_handler", False):
            return f"{os.getpid()}:signal-handler ({int(record.created)}) {record.getMessage()}"
        if getattr(record, "raw", False):  # serverLogRaw: the text alone (the logo)
            return record.getMessage().removesuffix("\n")
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(record.created))
        mark = self.MARKS.get(record.levelno, "#")
        role = "S" if self.state is not None and self.state.upstream is not None else "M"
        return f"{os.getpid()}:{role} {stamp}.{int(record.msecs):03d} {mark} {record.getMessage()}"


class StdoutLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Log lines to stdout; a reader that went away (a harness that read the ready line
    and closed its pipe) silences the log instead of filling stderr with tracebacks."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            self.setStream(open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - kept open
            return
        super().handleError(record)


def log_like_valkey(logfile: str = "", loglevel: str = "notice", state: Any = None) -> None:
    """The server's log lines in valkey-server's format: to `logfile` (appended) when one
    is set, else to stdout; at `loglevel`; with `state`, its role letter (M or S)."""
    handler: logging.Handler = (logging.FileHandler(logfile, mode="a", encoding="utf-8") if logfile
                                else StdoutLogHandler(sys.stdout))
    handler.setFormatter(ValkeyLogFormat(state))
    logger = logging.getLogger("fakekey")
    logger.addHandler(handler)
    logger.setLevel(LOG_LEVELS.get(loglevel, logging.INFO))


def fatal_config_error(err: ConfigError) -> str:
    """Valkey's report of a configuration it cannot take: the line's number and text when
    a line is at fault, then why."""
    report = f"\n*** FATAL CONFIG FILE ERROR (Version {VALKEY_VERSION}) ***\n"
    line = err.line if isinstance(err, LineError) else None
    if line is not None:
        report += f"Reading the configuration file, at line {line.number}\n>>> '{line.text}'\n"
    return report + str(err)


def early_warning(text: str) -> None:
    """A warning from before the config is read (no log file yet): a log line on stdout,
    as valkey-server writes its "can't open config file"."""
    record = logging.LogRecord("fakekey", logging.WARNING, __file__, 0, text, None, None)
    print(ValkeyLogFormat().format(record), flush=True)


def check_directives(lines: Iterable[ConfigLine]) -> list[Directive]:
    """The directives, each line taken in order as valkey-server loads them (the first it
    refuses raises LineError, with the line), then the log file opened as Valkey opens it."""
    config = Config()
    commands = load_all().view()  # rename-command names a command of this table
    directives: list[Directive] = []
    for line in lines:
        try:
            take_line(config, commands, line)
        except (ConfigError, ValueError) as err:
            raise LineError(line, str(err)) from None
        directives.append(line.directive)
    check_logfile(config["logfile"])
    return directives


def take_line(config: Config, commands: Registry, line: ConfigLine) -> None:
    """One line into the configuration, a `user` checked, a `rename-command` applied (the
    next may name the new name); raises what Valkey reports of the line."""
    if line.name == "port-file":
        port_file_of(line.words)
        return
    if line.name in CLUSTER_LAUNCH:
        count_of(line.words, CLUSTER_LAUNCH[line.name])
        return
    config.set_at_startup(line.name, line.words)
    if line.name == "user":
        check_user_directive(line.words)
    elif line.name == "rename-command":
        commands.rename(*line.words)


def check_logfile(logfile: str) -> None:
    """Valkey opens the log file (creating it) once the config is read, and stops when it
    cannot: a report without a line."""
    if not logfile:
        return
    try:
        open(logfile, "a").close()  # noqa: SIM115 - only opened to see that it opens
    except OSError as err:
        raise ConfigError(f"Can't open the log file: {err.strerror}") from None


def build_server(directives: list[Directive], port: int | None = 6379) -> Server:
    """The server the directives describe (the last port directive wins; `port` when
    none: None is a free port, which `--port 0` is too unless a Unix socket is set)."""
    settings: list[tuple[str, list[str]]] = []
    for name, words in directives:
        if name == "port" and len(words) == 1 and words[0].isdigit():
            port = int(words[0])
        else:
            settings.append((name, words))
    server = Server(port=port, config=settings)
    server.owns_process = True  # its own process: the descriptor limit is its to raise, as Valkey
    return server


# --- daemonize ------------------------------------------------------------------------------


def daemonize(logfile: str) -> int:
    """Detach as valkey-server does, with a double fork (the daemon can never regain a
    terminal). Returns, in the daemon, the write end of a pipe on which it sends its
    ready line; the launching process waits for that line, prints it and exits 0 (1 if
    the daemon dies first), so whoever ran it knows the server is listening."""
    read_fd, write_fd = os.pipe()
    launcher_child = os.fork()
    if launcher_child:
        os.close(write_fd)
        os.waitpid(launcher_child, 0)  # the intermediate process exits at once
        sys.exit(relay_daemon_ready(read_fd, logfile))
    os.close(read_fd)
    os.setsid()
    if os.fork():
        os._exit(0)
    detach_stdio(logfile)
    return write_fd


def detach_stdio(logfile: str) -> None:
    """stdin from /dev/null; stdout and stderr to the logfile (or /dev/null, as Valkey)."""
    null = os.open(os.devnull, os.O_RDWR)
    out = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if logfile else null
    for fd, target in ((0, null), (1, out), (2, out)):
        os.dup2(target, fd)
    for fd in {null, out}:
        os.close(fd)


def relay_daemon_ready(read_fd: int, logfile: str) -> int:
    """In the launching process: the daemon's ready line to stdout, and the exit status."""
    received = b""
    deadline = time.monotonic() + DAEMON_START_TIMEOUT
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while not received.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                break
            chunk = pipe.read(4096)
            if not chunk:
                break
            received += chunk
    if not received.endswith(b"\n"):
        where = f"see {logfile}" if logfile else "set --logfile to see why"
        print(f"fakekey-server: the daemon did not start ({where})", file=sys.stderr)
        return 1
    sys.stdout.write(received.decode())
    sys.stdout.flush()
    return 0


# --- files announcing the running server -----------------------------------------------------


class PortFileError(Exception):
    """The port file asked for cannot be written: whoever waits for it would wait forever."""


def write_atomically(path: str, text: str) -> None:
    """Write through a temporary file in the same directory and rename it, so a reader
    sees either no file or the whole text."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_pidfile(path: str) -> bool:
    try:
        write_atomically(path, f"{os.getpid()}\n")
    except OSError as err:
        log.warning("Failed to write PID file: %s", err.strerror)
        return False
    return True


def remove_written(launch: Launch) -> None:
    """Remove the pidfile and port file this process wrote (never another's)."""
    for path in launch.written:
        with contextlib.suppress(OSError):
            os.unlink(path)


def ready_line(server: Server) -> str:
    return f"fakekey ready port={server.port} pid={os.getpid()} url={server.url}\n"


def announce_ready(server: Server, launch: Launch) -> None:
    """Once listening: the pidfile, the port file, then the ready line (stdout, and the
    launching process when daemonized)."""
    if launch.pidfile and write_pidfile(launch.pidfile):
        launch.written.append(launch.pidfile)
    if launch.port_file:
        try:
            write_atomically(launch.port_file, f"{server.port}\n")
        except OSError as err:
            log.warning("Failed to write the port file %s: %s", launch.port_file, err.strerror)
            raise PortFileError from err
        launch.written.append(launch.port_file)
    if server.tcp_wanted:
        log.info("Ready to accept connections tcp")
    if server.unix_socket_path:
        log.info("Ready to accept connections unix")
    line = ready_line(server)
    if launch.ready_fd is not None:
        os.write(launch.ready_fd, line.encode())
        os.close(launch.ready_fd)
        launch.ready_fd = None
    else:
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.write(line)
            sys.stdout.flush()


def stop_on_signals(server: Server) -> None:
    """SIGTERM and SIGINT stop the server as SHUTDOWN does."""
    loop = asyncio.get_running_loop()

    def stop(signame: str) -> None:
        log.warning("Received %s scheduling shutdown...", signame, extra={"signal_handler": True})
        future = server.state.shutdown_requested
        if future is None or future.done():
            return
        log.info("User requested shutdown...")
        # as Valkey: save when a save rule is set (shutdown-on-sig* may say otherwise)
        flags = server.state.config["shutdown-on-sigterm" if signame == "SIGTERM" else "shutdown-on-sigint"]
        flags = set(flags.split()) if isinstance(flags, str) else set(flags)
        save = True if "save" in flags else False if "nosave" in flags else None
        persistence = server.state.persistence
        if persistence is not None and not persistence.shutdown(save, force="force" in flags):
            log.warning("Error trying to save the DB, can't exit.")
            return
        future.set_result(None)

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signal.Signals(signum).name)


# --- main -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-v", "--version"):
        print(version_line())
        return 0
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv and argv[0] == "run":
        return run_with_server(argv[1:])
    try:
        directives = check_directives(read_argv(argv))
        directives, launch = take_launch_directives(directives)
        if launch.cluster_replicas and not launch.cluster_primaries:
            raise ConfigError("--cluster-replicas needs --cluster-primaries")
        if launch.cluster_primaries:
            return run_cluster(directives, launch)
        server = build_server(directives)
    except UnreadableFile as err:
        early_warning(str(err))
        return 1
    except ConfigError as err:
        print(fatal_config_error(err), file=sys.stderr)
        return 1
    config = server.state.config
    if argv and not argv[0].startswith("-"):  # CONFIG REWRITE writes it back (config/rewrite.py)
        config.config_file = os.path.abspath(argv[0])
    if config["daemonize"]:
        launch.ready_fd = daemonize(config["logfile"])
        config.values["pidfile"] = config["pidfile"] or DEFAULT_PIDFILE
    launch.pidfile = config["pidfile"] or None
    log_like_valkey(config["logfile"], config["loglevel"], server.state)
    log_banner()
    return run(server, launch)


def log_banner() -> None:
    """Valkey's first log lines, with fakekey's version after its own."""
    bits = 64 if sys.maxsize > 2**32 else 32
    log.info("oO0OoO0OoO0Oo Valkey is starting oO0OoO0OoO0Oo")
    log.info("Valkey version=%s, bits=%d, commit=00000000, modified=0, pid=%d, just started "
             "(fakekey %s)", VALKEY_VERSION, bits, os.getpid(), __version__)
    log.info("Configuration loaded")


# Valkey's startup logo (src/asciilogo.h, 9.x): version, mode, port and pid filled in.
# Harnesses wait for its `PID: N` line (Valkey's own: tests/support/server.tcl).
ASCII_LOGO = (
    "                .+^+.                                                \n"
    "            .+#########+.                                            \n"
    "        .+########+########+.           Valkey {version} (00000000/0) {bits} bit\n"
    "    .+########+'     '+########+.                                    \n"
    " .########+'     .+.     '+########.    Running in {mode} mode\n"
    " |####+'     .+#######+.     '+####|    Port: {port}\n"
    " |###|   .+###############+.   |###|    PID: {pid}                     \n"
    " |###|   |#####*'' ''*#####|   |###|                                 \n"
    " |###|   |####'  .-.  '####|   |###|                                 \n"
    " |###|   |###(  (@@@)  )###|   |###|          https://valkey.io      \n"
    " |###|   |####.  '-'  .####|   |###|                                 \n"
    " |###|   |#####*.   .*#####|   |###|                                 \n"
    " |###|   '+#####|   |#####+'   |###|                                 \n"
    " |####+.     +##|   |#+'     .+####|                                 \n"
    " '#######+   |##|        .+########'                                 \n"
    "    '+###|   |##|    .+########+'                                    \n"
    "        '|   |####+########+'                                        \n"
    "             +#########+'                                            \n"
    "                '+v+'                                                \n\n"
)


def shows_logo(config: Any) -> bool:
    """Valkey draws its logo when always-show-logo is set, or when it logs to a terminal
    (no log file, no syslog, stdout a tty); else one `Running mode=` line."""
    if config["always-show-logo"]:
        return True
    return not config["logfile"] and not config["syslog-enabled"] and sys.stdout.isatty()


def log_logo(server: Server, mode: str = "standalone") -> None:
    """The logo (written raw, as serverLogRaw) or the one line Valkey logs instead."""
    if not shows_logo(server.state.config):
        log.info("Running mode=%s, port=%d.", mode, server.port)
        return
    bits = 64 if sys.maxsize > 2**32 else 32
    logo = ASCII_LOGO.format(version=VALKEY_VERSION, bits=bits, mode=mode, port=server.port,
                             pid=os.getpid())
    log.info("%s", logo, extra={"raw": True})


def run(server: Server, launch: Launch) -> int:
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve(server, launch))
    except (TooFewDescriptors, PortFileError):
        return 1  # logged already
    except LoadError as err:  # a damaged snapshot or log: refuse, and leave it as it is
        log.warning("Fatal error loading the DB: %s. Exiting.", err)
        print(f"fakekey-server: {err}", file=sys.stderr)
        return 1
    except StartupRefused as err:  # a module to load (fakekey loads none)
        for line in err.lines:
            log.warning("%s", line)
        return 1
    except OSError:  # the listening socket's own warning is logged already
        log.warning("Failed listening on port %d (tcp), aborting.", server.port)
        return 1
    except UnixSocketFailure:  # "Failed opening Unix socket: ..." is logged already
        return 1
    except KeyboardInterrupt:
        pass
    finally:
        loop.close()
        remove_written(launch)
    return 0


async def _serve(server: Server, launch: Launch) -> None:
    log_logo(server)
    log.info("Server initialized")  # then the loading lines, as Valkey's loadDataFromDisk
    await server.start_async()
    server.state.shutdown_requested = asyncio.get_running_loop().create_future()
    stop_on_signals(server)
    gc_timer = own_the_collector_for([server.state])
    announce_ready(server, launch)
    await server.state.shutdown_requested
    gc_timer.cancel()  # "User requested shutdown..." is logged where it was asked
    await server.stop_async()
    log.warning("Valkey is now ready to exit, bye bye...")


def own_the_collector_for(states: list[Any]) -> asyncio.Task[None]:
    """This process is fakekey-server's: no full collection freezes its clients
    (memory/collector.py); a cheap one runs now and then."""
    own_the_collector()
    set_aside_what_lives()

    def count_keys() -> int:
        return sum(len(db.data) for state in states for db in state.dbs)

    async def now_and_then() -> None:
        while True:
            await asyncio.sleep(EVERY_S)
            collect_if_cheap(count_keys)

    return asyncio.get_running_loop().create_task(now_and_then())


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def run_cluster(directives: list[Directive], launch: Launch) -> int:
    """--cluster-primaries N [--cluster-replicas M]: a whole cluster in this process, on
    --port and the ports after it (0: free ports), until SIGTERM or SIGINT."""
    settings = dict(directives)
    port = int(settings.pop("port", ["6379"])[0])
    host = _url_host(" ".join(settings.pop("bind", ["127.0.0.1"])))
    cluster = Cluster(launch.cluster_primaries, launch.cluster_replicas, host=host, port=port,
                      config=[(name, " ".join(words)) for name, words in settings.items()])
    log_like_valkey()
    log_banner()
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve_cluster(cluster))
    except OSError:
        log.warning("Failed listening on the cluster's ports, aborting.")
        return 1
    finally:
        loop.close()
    return 0


async def _serve_cluster(cluster: Cluster) -> None:
    log.info("Running mode=cluster, %d primaries, %d replicas each.", cluster.primaries_count,
             cluster.replicas_count)
    await cluster.start_async()
    gc_timer = own_the_collector_for([node.server.state for node in cluster.nodes])
    done = asyncio.get_running_loop().create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, _settle, done)
    ports = ",".join(str(node.port) for node in cluster.nodes)
    log.info("Ready to accept connections tcp")
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.write(f"fakekey ready ports={ports} pid={os.getpid()} url={cluster.url}\n")
        sys.stdout.flush()
    await done
    gc_timer.cancel()
    log.info("User requested shutdown...")
    await cluster.stop_async()
    log.warning("Valkey is now ready to exit, bye bye...")


if __name__ == "__main__":
    sys.exit(main())


# --- fakekey-server run -- CMD ARGS... -----------------------------------------------------

RUN_USAGE = "usage: fakekey-server run [server flags...] -- COMMAND [ARGS...]"
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def run_with_server(argv: Sequence[str]) -> int:
    """`fakekey-server run [flags] -- CMD ARGS...`: a server on a free port (or --port)
    for the length of one command, which finds it in REDIS_URL, VALKEY_URL, REDIS_HOST and
    REDIS_PORT; the command's exit status is ours (128+N when signal N ended it), and the
    signals we get are passed on to it."""
    flags, command = _split_run_argv(list(argv))
    if not command:
        print(RUN_USAGE, file=sys.stderr)
        return 2
    try:
        directives = check_directives(read_argv(flags))
        server = build_server(directives, port=None).start()
    except ConfigError as err:  # the flag's line and why, as fakekey-server reports it
        print(fatal_config_error(err), file=sys.stderr)
        return 1
    except (UnreadableFile, StartupRefused, OSError) as err:
        print(f"fakekey-server run: {err}", file=sys.stderr)
        return 1
    try:
        return _run_child(command, _server_environment(server))
    finally:
        server.stop()


def _split_run_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Server flags before `--`, the command after it (no `--`: all of it is the command)."""
    if "--" not in argv:
        return [], argv
    split = argv.index("--")
    return argv[:split], argv[split + 1:]


def _server_environment(server: Server) -> dict[str, str]:
    password = server.state.config["requirepass"]
    auth = f":{quote_url(password)}@" if password else ""
    host = f"[{server.host}]" if ":" in server.host else server.host
    url = f"redis://{auth}{host}:{server.port}"
    if server.url.startswith("unix://"):  # --port 0 with --unixsocket: the socket only
        url = server.url + (f"?password={quote_url(password)}" if password else "")
    return {**os.environ, "REDIS_URL": url, "VALKEY_URL": url, "REDIS_HOST": server.host,
            "REDIS_PORT": str(server.port)}


def quote_url(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _run_child(command: list[str], env: dict[str, str]) -> int:
    import subprocess

    # the handlers go in before the child starts: a signal sent as soon as the child is up
    # (it may answer before Popen returns) is held, then passed on
    children: list[subprocess.Popen[bytes]] = []
    held: list[int] = []

    def forward(received: int, _frame: object) -> None:
        if children:
            children[0].send_signal(received)
        else:
            held.append(received)

    previous = {}
    for name in FORWARDED_SIGNALS:
        signum = getattr(signal, name)
        previous[signum] = signal.signal(signum, forward)
    try:
        try:
            children.append(subprocess.Popen(command, env=env))
        except OSError as err:  # not found, not executable: the shell's statuses
            print(f"fakekey-server run: {command[0]}: {err.strerror}", file=sys.stderr)
            return 127 if isinstance(err, FileNotFoundError) else 126
        child = children[0]
        for received in held:
            child.send_signal(received)
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - status if status < 0 else status
