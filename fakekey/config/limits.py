"""maxclients and the process's file-descriptor limit, as Valkey's adjustOpenFilesLimit
(server.c): every client needs a descriptor, and 32 more are kept for the server's own
files. When the limit cannot be raised, maxclients is lowered to what it allows, so the
client past it gets `max number of clients reached` instead of a failed accept.

Only a server that owns its process does so (fakekey-server: `Server.owns_process`). A
server embedded in someone else's process (a test's, by the hundred) leaves the process's
limit and its log alone: the limit is the host's, shared by all it runs, so maxclients
stays as set and CONFIG SET maxclients takes any value (`maxclients_applier`)."""

from __future__ import annotations

import errno
import logging
import os
import resource

RESERVED_FDS = 32  # Valkey's CONFIG_MIN_RESERVED_FDS
log = logging.getLogger("fakekey.net.server")


class TooFewDescriptors(OSError):
    """The descriptor limit leaves no room for a single client: the server cannot start."""


def adjust_open_files_limit(maxclients: int) -> int:
    """Raise the soft RLIMIT_NOFILE to maxclients + 32 (in steps of 16 down from there,
    as far as the OS allows) and return the maxclients the limit allows, logging what
    Valkey logs. The hard limit is left as it is."""
    maxfiles = maxclients + RESERVED_FDS
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError) as err:
        log.warning("Unable to obtain the current NOFILE limit (%s), assuming 1024 and setting "
                    "the max clients configuration accordingly.", err)
        return 1024 - RESERVED_FDS
    if soft == resource.RLIM_INFINITY or soft >= maxfiles:
        return maxclients
    best, error = _raise_soft_limit(soft, hard, maxfiles)
    if best >= maxfiles:
        log.info("Increased maximum number of open files to %d (it was originally set to %d).",
                 maxfiles, soft)
        return maxclients
    if best <= RESERVED_FDS:
        message = (f"Your current 'ulimit -n' of {soft} is not enough for the server to start. "
                   f"Please increase your open file limit to at least {maxfiles}. Exiting.")
        log.warning("%s", message)
        raise TooFewDescriptors(errno.EMFILE, message)
    allowed = best - RESERVED_FDS
    log.warning("You requested maxclients of %d requiring at least %d max file descriptors.",
                maxclients, maxfiles)
    log.warning("Server can't set maximum open files to %d because of OS error: %s.",
                maxfiles, os.strerror(error))
    log.warning("Current maximum open files is %d. maxclients has been reduced to %d to compensate "
                "for low ulimit. If you need higher maxclients increase 'ulimit -n'.", best, allowed)
    return allowed


def _raise_soft_limit(soft: int, hard: int, wanted: int) -> tuple[int, int]:
    """Try `wanted`, then 16 less each time, down to the current limit: the limit now in
    force and the errno of the last refusal."""
    best, error = wanted, 0
    while best > soft:
        try:
            # past the hard limit the hard limit must rise too (a privileged process may)
            raise_hard = hard != resource.RLIM_INFINITY and best > hard
            resource.setrlimit(resource.RLIMIT_NOFILE, (best, best if raise_hard else hard))
            return best, error
        except (OSError, ValueError) as err:
            error = getattr(err, "errno", None) or errno.EPERM
        if best < 16:
            break
        best -= 16
    return soft, error


def maxclients_applier(new: int, old: int) -> str | None:
    """CONFIG SET maxclients in an embedded server: taken as it is (the descriptor limit
    is the host process's)."""
    return None


def owned_maxclients_applier(new: int, old: int) -> str | None:
    """CONFIG SET maxclients in fakekey-server's own process: refused when the descriptor
    limit cannot make room for it, as Valkey."""
    try:
        allowed = adjust_open_files_limit(new)
    except TooFewDescriptors:  # Valkey exits here; a running fakekey refuses instead
        allowed = 0
    if allowed != new:
        return f"The operating system is not able to handle the specified number of clients, try with {allowed}"
    return None
