#!/bin/sh
# fakekey-server from a shell script, with redis-cli: start it on a free port, run a few
# commands (the clock too), stop it.
#
#   FAKEKEY_SERVER=path/to/fakekey-server sh examples/shell/demo.sh
#
# `--daemonize yes` returns once the server listens and prints its ready line
# (`fakekey ready port=PORT pid=PID url=...`); the pidfile is removed when it stops.
set -eu

server=${FAKEKEY_SERVER:-fakekey-server}
workdir=$(mktemp -d)
pidfile="$workdir/fakekey.pid"
cleanup() {
    if [ -s "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

ready=$("$server" --port 0 --daemonize yes --pidfile "$pidfile" --logfile "$workdir/fakekey.log")
port=$(printf '%s\n' "$ready" | sed -n 's/^fakekey ready port=\([0-9]*\) .*/\1/p')
echo "fakekey-server listens on port $port"

cli() { redis-cli -p "$port" "$@"; }

cli SET greeting hello
cli GET greeting
cli RPUSH queue a b c
cli LRANGE queue 0 -1
cli EVAL "return redis.call('INCRBY', KEYS[1], ARGV[1])" 1 counter 5

# Expiry without sleeping: freeze the clock, move it past the TTL.
cli SET session abc EX 30
cli FAKEKEY.CLOCK SET "$(cli FAKEKEY.CLOCK GET)"
cli FAKEKEY.CLOCK ADVANCE 30001
cli EXISTS session

cli SHUTDOWN || true  # the server closes the connection without a reply
tries=0
while [ -e "$pidfile" ]; do  # removed by the server on its way out
    tries=$((tries + 1))
    if [ "$tries" -gt 200 ]; then echo "fakekey-server did not stop" >&2; exit 1; fi
    sleep 0.05
done
echo "stopped"
