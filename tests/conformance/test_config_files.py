"""Config files as valkey-server reads them, on fakekey-server and on a real valkey-server:
the valkey.conf that ships with Valkey 8 and with Valkey 9 loads; the directives that are
no settings (the deprecated ones, `include`, `rename-command`, `loadmodule`) do what
Valkey's do; a configuration the server refuses is reported as Valkey reports it, with the
line, its number and why, and a failed start logs Valkey's lines and nothing more.

Each test runs the server's command line (`python -m fakekey`, or the valkey-server
binary); the reports of a refused config file are asked of fakekey's `main` in this
process (the same code, without a Python start-up per case)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakekey import VALKEY_VERSION
from fakekey.cli import main
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

KINDS = [k.strip() for k in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",") if k.strip()]
DATA = Path(__file__).with_name("data")
FATAL = f"\n*** FATAL CONFIG FILE ERROR (Version {VALKEY_VERSION}) ***\n"
BAD = "Bad directive or wrong number of arguments"
LOG_PREFIX = re.compile(r"^\d+:[A-Z] \d\d \w{3} \d{4} [\d:.]+ ", re.M)  # pid:role date time
PYTHON_WARNING = re.compile(r"^.+?:\d+: \w*Warning: .*\n", re.M)  # a stale compiled module's
# fakekey's own commands and module off: the same command table as Valkey's
PLAIN = ["--enable-fakekey-commands", "no", "--enable-emq-module", "no"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "valkey" and find_valkey_binary() is None:
        pytest.skip("no valkey-server binary")
    return request.param


def command_line(kind: str) -> list[str]:
    if kind == "fakekey":
        return [sys.executable, "-m", "fakekey"]
    binary = find_valkey_binary()
    assert binary is not None
    return [binary]


def run_refused(kind: str, args: list[str], stdin: str = "") -> tuple[str, list[str]]:
    """A start that fails at once: its standard error and its log lines (pid and time
    left out). fakekey's `main` runs here; valkey-server as a process."""
    if kind == "fakekey":
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _stdin(io.StringIO(stdin)):
            status = main(args)
        stdout, stderr = out.getvalue(), err.getvalue()
    else:
        proc = subprocess.run([*command_line(kind), *args], input=stdin, capture_output=True,
                              text=True, timeout=60)
        status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    assert status == 1, (stdout, stderr)
    return stderr, LOG_PREFIX.sub("", stdout).splitlines()


@contextlib.contextmanager
def _stdin(replacement: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, replacement
    try:
        yield
    finally:
        sys.stdin = saved


def start_failed(kind: str, args: list[str]) -> tuple[str, list[str]]:
    """A server process that fails as it starts: its standard error (Python's warnings
    left out) and its warning lines."""
    proc = subprocess.run([*command_line(kind), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = LOG_PREFIX.sub("", proc.stdout).splitlines()
    return PYTHON_WARNING.sub("", proc.stderr), [line for line in lines if line.startswith("# ")]


def report(number: int, line: str, reason: str) -> str:
    return f"{FATAL}Reading the configuration file, at line {number}\n>>> '{line}'\n{reason}\n"


@contextlib.contextmanager
def serving(kind: str, args: list[str], cwd: Path) -> Iterator[RawClient]:
    """A server started with this command line (in `cwd`), and a client of it."""
    port = free_port()
    extra = PLAIN if kind == "fakekey" else []
    proc = subprocess.Popen([*command_line(kind), *args, "--port", str(port), *extra],
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        client = _connect(proc, port)
        with client:
            yield client
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def _connect(proc: subprocess.Popen[bytes], port: int) -> RawClient:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            assert proc.stderr is not None
            raise AssertionError(f"the server exited: {proc.stderr.read().decode()}")
        try:
            client = RawClient("127.0.0.1", port, timeout=5)
        except OSError:
            time.sleep(0.02)
            continue
        if client.call("PING") == ("+", b"PONG"):
            return client
        client.close()
    raise AssertionError("the server did not answer")


def config_get(client: RawClient, name: str) -> bytes | None:
    kind, items = client.call("CONFIG", "GET", name)
    return items[1][1] if items else None


# --- the stock valkey.conf -------------------------------------------------------------------


@pytest.mark.parametrize("version", [8, 9])
def test_the_valkey_conf_that_ships_with_valkey_loads(kind: str, version: int, tmp_path: Path) -> None:
    """Its directives, with the deprecated `dynamic-hz yes` of Valkey 8's; its port and
    pid file replaced on the command line (options come after the file)."""
    conf = DATA / f"valkey-{version}.conf"
    args = [str(conf), "--pidfile", str(tmp_path / "valkey.pid"), "--save", ""]
    with serving(kind, args, tmp_path) as client:
        assert config_get(client, "bind") == b"127.0.0.1 -::1"  # the file's, not the default
        assert config_get(client, "dir") == str(tmp_path).encode()  # `dir ./`
        assert config_get(client, "client-output-buffer-limit") == (
            b"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
        assert client.call("SET", "k", "v") == ("+", b"OK")


def test_deprecated_directives_are_ignored(kind: str, tmp_path: Path) -> None:
    conf = tmp_path / "old.conf"
    conf.write_text("dynamic-hz yes\nio-threads-do-reads yes\nlua-replicate-commands yes\n"
                    "events-per-io-thread 2\nlist-max-ziplist-entries 512\nlist-max-ziplist-value 64\n"
                    "DYNAMIC-HZ no\n")
    with serving(kind, [str(conf)], tmp_path) as client:
        assert client.call("CONFIG", "GET", "dynamic-hz") == ("*", [])
        assert client.call("CONFIG", "SET", "dynamic-hz", "yes") == (
            "-", b"ERR Unknown option or number of arguments for CONFIG SET - 'dynamic-hz'")


def test_include_reads_the_files_a_glob_names_in_order(kind: str, tmp_path: Path) -> None:
    """A wildcard matching nothing is no error (an empty conf.d may be included)."""
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "a.conf").write_text("hz 20\nmaxmemory 1mb\n")
    (tmp_path / "conf.d" / "b.conf").write_text("hz 30\n")
    (tmp_path / "base.conf").write_text("maxmemory-policy allkeys-lru\n")
    conf = tmp_path / "main.conf"
    conf.write_text(f"hz 5\ninclude {tmp_path}/conf.d/*.conf\ninclude {tmp_path}/none.d/*.conf\n"
                    f"include {tmp_path}/base.conf\n")
    with serving(kind, [str(conf)], tmp_path) as client:
        assert config_get(client, "hz") == b"30"
        assert config_get(client, "maxmemory") == b"1048576"
        assert config_get(client, "maxmemory-policy") == b"allkeys-lru"


def test_rename_command(kind: str, tmp_path: Path) -> None:
    """To "" the command is gone (unknown, not listed, not counted); to another name it
    answers there, and still calls itself by its own name."""
    conf = tmp_path / "renamed.conf"
    conf.write_text('rename-command FLUSHALL ""\nrename-command get Fetch\n')
    with serving(kind, [str(conf)], tmp_path) as client:
        assert client.call("FLUSHALL") == ("-", b"ERR unknown command 'FLUSHALL', with args beginning with: ")
        names = [name for _kind, name in client.call("COMMAND", "LIST")[1]]
        assert b"flushall" not in names and b"get" in names and b"fetch" not in names
        assert client.call("COMMAND", "COUNT") == (":", 256)  # Valkey 9.1.2's 257, less one
        client.call("SET", "k", "v")
        assert client.call("FETCH", "k") == ("$", b"v")
        assert client.call("GET", "k") == ("-", b"ERR unknown command 'GET', with args beginning with: 'k' ")
        assert client.call("fetch") == ("-", b"ERR wrong number of arguments for 'get' command")
        assert client.call("COMMAND", "INFO", "fetch")[1][0][1][0] == ("$", b"get")
        assert client.call("COMMAND", "INFO", "get") == ("*", [("$", None)])
        assert client.call("EVAL", "return redis.call('fetch', 'k')", 0) == ("$", b"v")


# --- what a refused configuration prints --------------------------------------------------------

ENUM = ("argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, "
        "volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
NOT_AN_INTEGER = "argument couldn't be parsed into an integer"
REFUSED_LINES = [
    # (file, flags after it, line number, the line as reported, why)
    ("port abc\n", [], 1, "port abc", NOT_AN_INTEGER),
    ("# a comment\n\nport 1 2\n", [], 3, "port 1 2", "wrong number of arguments"),
    ("  maxmemory-polcy  allkeys-lru \n", [], 1, "maxmemory-polcy  allkeys-lru", BAD),
    ("dynamic-hz yes no\n", [], 1, "dynamic-hz yes no", BAD),
    ("dynamic-hz\n", [], 1, "dynamic-hz", BAD),
    ('save "abc\n', [], 1, 'save "abc', "Unbalanced quotes in configuration line"),
    ("maxmemory-policy nope\n", [], 1, "maxmemory-policy nope", ENUM),
    ("rename-command nosuch foo\n", [], 1, "rename-command nosuch foo", "No such command in rename-command"),
    ("rename-command get set\n", [], 1, "rename-command get set", "Target command name already exists"),
    ("rename-command get\n", [], 1, "rename-command get", BAD),
    ('rename-command flushall ""\nrename-command FlushAll x\n', [], 2, "rename-command FlushAll x",
     "No such command in rename-command"),
    ("include a b\n", [], 1, "include a b", BAD),
    ("loadmodule\n", [], 1, "loadmodule", BAD),
    ("some.module-setting\n", [], 1, "some.module-setting", "Module config specified without value"),
    ("sentinel monitor x\n", [], 1, "sentinel monitor x", "sentinel directive while not in sentinel mode"),
    ("user bad on foo\n", [], 1, "user bad on foo", "Error in user declaration 'bad': Syntax error"),
    # the options follow the file's text after a newline, one line each, values quoted
    ("maxmemory 1mb\n", ["--maxmemory-policy", "nope"], 3, 'maxmemory-policy "nope"', ENUM),
    ("maxmemory 1mb", ["--hz", "5", "--port", "abc"], 3, 'port "abc"', NOT_AN_INTEGER),
    ("", ["--maxmemory", "--port", "0"], 2, 'maxmemory "--port" "0"', "wrong number of arguments"),
    ("", ["--port", "1", 'a"b\t'], 2, 'port "1" "a\\"b\\t"', "wrong number of arguments"),
    ("", ["--save", "--bogus", "1"], 3, 'bogus "1"', BAD),
    ("", ["stray"], 2, '"stray"', BAD),
]


@pytest.mark.parametrize(("text", "flags", "number", "line", "why"), REFUSED_LINES)
def test_a_refused_line_is_reported_with_its_number(kind: str, tmp_path: Path, text: str,
                                                      flags: list[str], number: int, line: str,
                                                      why: str) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(text)
    stderr, _log = run_refused(kind, [str(conf), *flags, "--port", "0"])
    assert stderr == report(number, line, why)


def test_stdin_comes_after_the_file_and_before_the_flags(kind: str, tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text("hz 5\nmaxmemory 1mb\n")
    stderr, _log = run_refused(kind, [str(conf), "--port", "0", "-"], stdin="hz 6\nbogus\n")
    assert stderr == report(4, "bogus", BAD)
    stderr, _log = run_refused(kind, ["-", "--port", "x"], stdin="hz 6\n")
    assert stderr == report(3, 'port "x"', NOT_AN_INTEGER)


def test_an_included_file_counts_its_own_lines(kind: str, tmp_path: Path) -> None:
    """A wildcard's files make one text; an earlier line's error comes before an include's."""
    (tmp_path / "a.conf").write_text("hz 20\n")
    (tmp_path / "b.conf").write_text("port 0\nmaxmemory 1mb\nbad\n")
    conf = tmp_path / "main.conf"
    conf.write_text(f"\n\ninclude {tmp_path}/[ab].conf\n")
    assert run_refused(kind, [str(conf)])[0] == report(4, "bad", BAD)
    conf.write_text(f"bogus\ninclude {tmp_path}/missing.conf\n")
    assert run_refused(kind, [str(conf)])[0] == report(1, "bogus", BAD)


def test_a_file_that_cannot_be_read(kind: str, tmp_path: Path) -> None:
    """Logged (on stdout: no log file yet), not reported on standard error."""
    missing = tmp_path / "missing.conf"
    logged = f"# Fatal error, can't open config file '{missing}': No such file or directory"
    stderr, log = run_refused(kind, [str(missing)])
    assert (stderr, log[-1:]) == ("", [logged])
    conf = tmp_path / "main.conf"
    conf.write_text(f"hz 5\ninclude {missing}\n")
    stderr, log = run_refused(kind, [str(conf)])
    assert (stderr, log[-1:]) == ("", [logged])


def test_a_log_file_that_cannot_be_opened(kind: str, tmp_path: Path) -> None:
    """Checked once every line is read: reported without a line."""
    conf = tmp_path / "server.conf"
    conf.write_text(f"logfile {tmp_path}/no/such/dir/server.log\n")
    stderr, _log = run_refused(kind, [str(conf), "--port", "0"])
    assert stderr == f"{FATAL}Can't open the log file: No such file or directory\n"


# --- a start that fails -------------------------------------------------------------------------


def test_loadmodule_fails_the_start_as_a_missing_module(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "missing.so"
    stderr, warnings = start_failed(kind, ["--port", str(free_port()), "--save", "",
                                           "--loadmodule", str(path), "arg"])
    assert stderr == ""
    assert warnings[-2:] == [
        f"# Module {path} failed to load: {path}: cannot open shared object file: No such file or directory",
        f"# Can't load module from {path}: server aborting"]


def test_a_module_setting_no_module_takes_fails_the_start(kind: str) -> None:
    stderr, warnings = start_failed(kind, ["--port", str(free_port()), "--save", "",
                                           "--some.setting", "1"])
    assert stderr == ""
    assert warnings[-2:] == [
        "# Unused Module Configuration: some.setting",
        "# Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting"]


def test_a_port_in_use_logs_valkeys_two_lines_and_nothing_more(kind: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        stderr, warnings = start_failed(kind, ["--port", str(port), "--bind", "127.0.0.1", "--save", ""])
    assert stderr == ""
    assert warnings[-2:] == [
        f"# Warning: Could not create server TCP listening socket 127.0.0.1:{port}: bind: "
        "Address already in use",
        f"# Failed listening on port {port} (tcp), aborting."]
