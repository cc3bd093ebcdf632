"""The core of one server: its state, clients, keyspace, clock, blocking, pub/sub,
tracking, pause, ACL users, the command registry and the command log."""
