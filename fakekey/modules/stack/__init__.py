"""The emulated Redis Stack modules' verbs (RedisBloom's BF.*, CF.*, CMS.*, TOPK.* and
TDIGEST.*; RedisJSON's JSON.*), for code moving from fakeredis, which has them. Off
unless `enable-stack-modules yes` (the fakeredis drop-in turns it on): a plain
Valkey 9.1.2 has none of them. docs/stack.md is the reference."""

from __future__ import annotations

from fakekey.core.registry import declare_module

SWITCH = "enable-stack-modules"
BLOOM_MODULE = "bf"  # RedisBloom's name in MODULE LIST: BF, CF, CMS, TOPK, TDIGEST
BLOOM_MODULE_VERSION = 20804  # 2.8.4
JSON_MODULE = "ReJSON"  # RedisJSON's
JSON_MODULE_VERSION = 20803  # 2.8.3
STACK_SINCE = "2.0.0"  # what COMMAND DOCS reports as the verbs' `since` (the module's)

declare_module(BLOOM_MODULE, BLOOM_MODULE_VERSION, SWITCH)
declare_module(JSON_MODULE, JSON_MODULE_VERSION, SWITCH)
