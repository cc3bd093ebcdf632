"""Valkey's multi-part AOF manifest: which files of `appenddirname` make the log.

    file appendonly.aof.2.base.rdb seq 2 type b
    file appendonly.aof.1.incr.aof seq 1 type h
    file appendonly.aof.2.incr.aof seq 2 type i

One base (type `b`, RDB or RESP by its suffix), history files (`h`, an old base and the
incr files a rewrite replaced: deleted once the new manifest is written) and the incr
files (`i`, RESP commands, ascending sequence numbers; the last one is written). The base
and incr sequences are separate counters, each moved by one per new file, as Valkey's
`getNewBaseFileNameAndMarkPreAsHistory` and `getNewIncrAofName` do. A manifest is always
replaced atomically (persistence/snapshot.py's `write_file_atomically`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from fakekey.persistence.snapshot import LoadError, write_file_atomically
from fakekey.resp.splitargs import split_args

BASE, HISTORY, INCR = "b", "h", "i"
MAX_LINE = 1024  # Valkey's MANIFEST_MAX_LINE
FORMER_FIRST_LINE = "fakekey-aof-manifest 1"  # the manifest fakekey wrote before (aof.py)


@dataclass
class AofFile:
    name: str
    seq: int
    kind: str  # BASE, HISTORY or INCR


@dataclass
class Manifest:
    base: AofFile | None = None
    history: list[AofFile] = field(default_factory=list)
    incrs: list[AofFile] = field(default_factory=list)
    base_seq: int = 0  # the highest sequence numbers given so far
    incr_seq: int = 0

    def render(self) -> bytes:
        """getAofManifestAsString: the base, the history, the incr files."""
        files = ([self.base] if self.base else []) + self.history + self.incrs
        return "".join(f"file {quoted(f.name)} seq {f.seq} type {f.kind}\n" for f in files).encode()

    def names(self) -> list[str]:
        """The files the log is made of now (not the history), base first."""
        return ([self.base.name] if self.base else []) + [f.name for f in self.incrs]

    def copy(self) -> Manifest:
        return Manifest(self.base, list(self.history), list(self.incrs), self.base_seq, self.incr_seq)

    # --- new files --------------------------------------------------------------------------

    def new_base(self, filename: str, rdb_preamble: bool) -> str:
        """A new base; the former one becomes history (getNewBaseFileNameAndMarkPreAsHistory)."""
        if self.base is not None:
            self.history.insert(0, AofFile(self.base.name, self.base.seq, HISTORY))
        self.base_seq += 1
        suffix = "rdb" if rdb_preamble else "aof"
        self.base = AofFile(f"{filename}.{self.base_seq}.base.{suffix}", self.base_seq, BASE)
        return self.base.name

    def new_incr(self, filename: str) -> str:
        self.incr_seq += 1
        name = f"{filename}.{self.incr_seq}.incr.aof"
        self.incrs.append(AofFile(name, self.incr_seq, INCR))
        return name

    def rewritten_incrs_to_history(self, keep_last: bool) -> None:
        """After a rewrite, every incr file but the one being written is history
        (markRewrittenIncrAofAsHistory)."""
        done = self.incrs[:-1] if keep_last and self.incrs else self.incrs
        for f in reversed(done):
            self.history.insert(0, AofFile(f.name, f.seq, HISTORY))
        self.incrs = self.incrs[len(done):]


def quoted(name: str) -> str:
    """A name with spaces or odd bytes goes in quotes, as Valkey's sdscatrepr."""
    if name and all(c.isprintable() and c not in ' "\'\\' for c in name):
        return name
    escaped = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


# --- paths ---------------------------------------------------------------------------------------


def aof_dir(config: Any) -> str:
    return os.path.join(config["dir"], config["appenddirname"])


def manifest_path(config: Any) -> str:
    return os.path.join(aof_dir(config), config["appendfilename"] + ".manifest")


def write_manifest(config: Any, manifest: Manifest) -> None:
    write_file_atomically(manifest_path(config), [manifest.render()])


# --- reading -------------------------------------------------------------------------------------


def is_former(text: bytes) -> bool:
    """The manifest of fakekey's former log (FKAOF records, an FKSNAP base)."""
    return text.startswith(FORMER_FIRST_LINE.encode())


def parse_manifest(path: str, text: bytes) -> Manifest:
    """aofLoadManifestFromFile: strict; any fault refuses the start with Valkey's message."""
    if not text:
        raise _fatal(path, "Found an empty AOF manifest")
    manifest = Manifest()
    linenum = 0
    for raw in text.splitlines(keepends=True):
        linenum += 1
        if raw.startswith(b"#"):
            continue
        line = raw.strip(b" \t\r\n")
        if len(raw) > MAX_LINE or not raw.endswith(b"\n"):  # fgets found no end of line
            raise _fatal(path, "The AOF manifest file contains too long line")
        _add(path, manifest, _parse_line(path, line, linenum), linenum, line)
    return manifest


def _parse_line(path: str, line: bytes, linenum: int) -> AofFile:
    words = split_args(line) if line else None
    if not words or len(words) < 6 or len(words) % 2:
        raise _fatal(path, "Invalid AOF manifest file format", linenum, line)
    name, seq, kind = "", 0, ""
    for key, value in zip(words[0::2], words[1::2], strict=True):
        word = key.lower()
        if word == b"file":
            name = value.decode("utf-8", "surrogateescape")
            if os.path.basename(name) != name:
                raise _fatal(path, "File can't be a path, just a filename", linenum, line)
        elif word == b"seq":
            seq = _atoll(value)
        elif word == b"type":
            kind = value[:1].decode("latin-1")
    if not name or not seq or not kind:
        raise _fatal(path, "Invalid AOF manifest file format", linenum, line)
    return AofFile(name, seq, kind)


def _add(path: str, manifest: Manifest, f: AofFile, linenum: int, line: bytes) -> None:
    if f.kind == BASE:
        if manifest.base is not None:
            raise _fatal(path, "Found duplicate base file information", linenum, line)
        manifest.base = f
        manifest.base_seq = f.seq
    elif f.kind == HISTORY:
        manifest.history.append(f)
    elif f.kind == INCR:
        if f.seq <= manifest.incr_seq:
            raise _fatal(path, "Found a non-monotonic sequence number", linenum, line)
        manifest.incrs.append(f)
        manifest.incr_seq = f.seq
    else:
        raise _fatal(path, "Unknown AOF file type", linenum, line)


def _atoll(value: bytes) -> int:
    """C's atoll: the leading digits (with a sign), 0 when there are none."""
    text = value.strip().decode("latin-1")
    digits = ""
    for i, ch in enumerate(text):
        if ch.isdigit() or (i == 0 and ch in "+-"):
            digits += ch
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def _fatal(path: str, err: str, linenum: int = 0, line: bytes = b"") -> LoadError:
    """Valkey logs the line and the cause, then exits; the message carries both."""
    where = f"Reading the manifest file, at line {linenum}: >>> '{line.decode('utf-8', 'replace')}' " \
        if linenum else ""
    return LoadError(f"{path}: *** FATAL AOF MANIFEST FILE ERROR *** {where}{err}")
