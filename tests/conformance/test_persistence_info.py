"""Persistence as clients see it: INFO persistence, BGSAVE/SAVE/BGREWRITEAOF while a
background job runs, the log switched on and off. Both targets write into their own
temporary `dir`."""

import time

RDB_FIELDS = [
    "loading", "async_loading", "current_cow_peak", "current_cow_size", "current_cow_size_age",
    "current_fork_perc", "current_save_keys_processed", "current_save_keys_total",
    "rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
    "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec",
    "rdb_saves", "rdb_last_cow_size", "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded",
    "aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_rewrite_time_sec",
    "aof_current_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_rewrites",
    "aof_rewrites_consecutive_failures", "aof_last_write_status", "aof_last_cow_size",
    "module_fork_in_progress", "module_fork_last_cow_size", "slot_migration_fork_in_progress",
]
AOF_FIELDS = ["aof_current_size", "aof_base_size", "aof_pending_rewrite", "aof_buffer_length",
              "aof_pending_bio_fsync", "aof_delayed_fsync"]


def persistence(r) -> dict[str, str]:
    kind, data = r.call("INFO", "persistence")
    text = (data[4:] if kind == "=" else data).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n")[1:] if line)


def wait_idle(r) -> dict[str, str]:
    deadline = time.monotonic() + 20
    while True:
        fields = persistence(r)
        busy = (fields["rdb_bgsave_in_progress"], fields["aof_rewrite_in_progress"],
                fields["aof_rewrite_scheduled"]) != ("0", "0", "0")
        if not busy or time.monotonic() > deadline:
            return fields
        time.sleep(0.02)


def test_info_persistence_has_valkeys_fields_in_order(r):
    fields = persistence(r)
    assert list(fields) == RDB_FIELDS
    assert fields["aof_enabled"] == "0"
    assert fields["rdb_last_bgsave_status"] == "ok"


def test_bgsave_moves_lastsave_and_clears_the_change_count(r2):
    wait_idle(r2)
    r2.call("SET", "k", "v")
    assert int(persistence(r2)["rdb_changes_since_last_save"]) >= 1
    saves = int(persistence(r2)["rdb_saves"])
    _, before = r2.call("LASTSAVE")
    assert r2.call("BGSAVE") == ("+", b"Background saving started")
    fields = wait_idle(r2)
    assert fields["rdb_last_bgsave_status"] == "ok"
    assert fields["rdb_changes_since_last_save"] == "0"
    assert int(fields["rdb_saves"]) == saves + 1
    assert int(fields["rdb_last_bgsave_time_sec"]) >= 0
    kind, after = r2.call("LASTSAVE")
    assert kind == ":" and after >= before


def test_saves_refused_while_a_background_save_runs(r2):
    wait_idle(r2)
    r2.call("MSET", *[part for i in range(40) for part in (f"k{i}", "v")])
    assert r2.call("CONFIG", "SET", "rdb-key-save-delay", "100000") == ("+", b"OK")  # 0.1 s a key
    try:
        assert r2.call("BGSAVE") == ("+", b"Background saving started")
        assert r2.call("BGSAVE") == ("-", b"ERR Background save already in progress")
        assert r2.call("BGSAVE", "SCHEDULE") == ("-", b"ERR Background save already in progress")
        assert r2.call("SAVE") == ("-", b"ERR Background save already in progress")
        fields = persistence(r2)
        assert fields["rdb_bgsave_in_progress"] == "1"
        assert fields["current_save_keys_total"] == "40"
        assert int(fields["rdb_current_bgsave_time_sec"]) >= 0
        assert r2.call("BGREWRITEAOF") == ("+", b"Background append only file rewriting scheduled")
        assert persistence(r2)["aof_rewrite_scheduled"] == "1"
    finally:
        r2.call("FLUSHALL")  # ends the background save, as Valkey kills its child
        r2.call("CONFIG", "SET", "rdb-key-save-delay", "0")
    fields = wait_idle(r2)
    assert fields["rdb_bgsave_in_progress"] == "0"
    assert fields["rdb_last_bgsave_status"] == "ok"
    assert fields["aof_last_bgrewrite_status"] == "ok"


def test_appendonly_on_and_off(r2):
    wait_idle(r2)
    rewrites = int(persistence(r2)["aof_rewrites"])
    assert r2.call("CONFIG", "SET", "appendonly", "yes") == ("+", b"OK")
    try:
        r2.call("SET", "k", "v")
        fields = wait_idle(r2)
        assert list(fields) == RDB_FIELDS + AOF_FIELDS
        assert fields["aof_enabled"] == "1"
        assert int(fields["aof_rewrites"]) == rewrites + 1
        assert int(fields["aof_current_size"]) >= int(fields["aof_base_size"]) > 0
        assert r2.call("BGREWRITEAOF") == ("+", b"Background append only file rewriting started")
        assert int(wait_idle(r2)["aof_rewrites"]) == rewrites + 2
    finally:
        assert r2.call("CONFIG", "SET", "appendonly", "no") == ("+", b"OK")
    fields = persistence(r2)
    assert fields["aof_enabled"] == "0"
    assert "aof_current_size" not in fields


def test_bgsave_waits_for_a_running_rewrite_when_scheduled(r2):
    wait_idle(r2)
    r2.call("MSET", *[part for i in range(8) for part in (f"k{i}", "v")])
    saves = int(persistence(r2)["rdb_saves"])
    assert r2.call("CONFIG", "SET", "rdb-key-save-delay", "100000") == ("+", b"OK")
    try:
        assert r2.call("BGREWRITEAOF") == ("+", b"Background append only file rewriting started")
        assert r2.call("BGREWRITEAOF") == (
            "-", b"ERR Background append only file rewriting already in progress")
        assert r2.call("BGSAVE") == ("-", b"ERR Another child process is active (AOF?): can't BGSAVE "
                                          b"right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE "
                                          b"whenever possible.")
        assert r2.call("BGSAVE", "SCHEDULE") == ("+", b"Background saving scheduled")
        fields = persistence(r2)
        assert (fields["aof_rewrite_in_progress"], fields["rdb_bgsave_in_progress"]) == ("1", "0")
    finally:
        r2.call("CONFIG", "SET", "rdb-key-save-delay", "0")
    deadline = time.monotonic() + 20
    while int(persistence(r2)["rdb_saves"]) == saves and time.monotonic() < deadline:
        time.sleep(0.05)
    fields = wait_idle(r2)
    assert int(fields["rdb_saves"]) == saves + 1  # the scheduled save ran after the rewrite
    assert fields["aof_last_bgrewrite_status"] == "ok"
