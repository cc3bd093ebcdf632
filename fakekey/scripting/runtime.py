"""The Lua side of scripting: one Lua 5.1 state (lupa's `lua51`, never LuaJIT) built as
Valkey builds its scripting environment.

What a script sees is Valkey's sandbox: the allowed builtins and libraries only, globals
and every library table read-only ("Attempt to modify a readonly table"), reading an
undefined global an error, `loadstring` refusing bytecode, `pcall` turning error tables
into their message, the `redis`/`server` API, a count hook that SCRIPT KILL uses.

How the sandbox holds, given a stock Lua 5.1 (Valkey patches its VM with a read-only flag
on tables; lupa's Lua has none):
- every protected table is reached through an empty *proxy* whose metatable reads
  through to the real table and refuses writes; the raw-access builtins (rawset, next,
  table.insert, setmetatable, ...) are wrapped to see through proxies and refuse writes;
- the globals a script sees are a fresh table with Valkey's names only: the environment
  of every script and of every chunk a script loads (`loadstring`/`load` are wrapped);
  the state's own globals table (which lupa itself reads) is out of the scripts' reach;
- Python is reachable only through closures made in the bootstrap chunk, which keep the
  host's callables as upvalues; `debug` (the only way to read upvalues or the registry)
  is dropped from the globals; the lupa runtime is created with `register_eval=False`,
  `register_builtins=False` and an attribute filter that refuses everything, and the
  `python` table it registers is never put in the script's globals.

Where a stock Lua differs from Valkey's and how it is bridged:
- Valkey's API functions are C functions; ours are Lua closures, which a script's
  `return redis.call(...)` would tail-call, dropping the script's frame from error
  positions: compiled scripts get their tail calls turned into plain calls (`untail`);
- Lua hooks are per thread: every coroutine a script creates gets the count hook;
- Valkey hashes strings with murmur32, stock Lua 5.1 does not: `pairs()` over a table
  with string keys, and so a map reply built from one, can list the keys in another
  order than Valkey (deviation).

Python talks to the state through the functions the bootstrap returns (`run`,
`compile`); everything about commands lives in `bridge.py`. A state is used by the
event-loop thread only; a run that keeps the server BUSY is suspended in a greenlet
between its slices, and nothing else runs Lua meanwhile (see `bridge.ScriptRunner`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final, Protocol

import lupa.lua51 as lupa51

from fakekey.scripting.libs import INSTALLERS

# The chunk name of the bootstrap: frames from it are hidden from error positions.
INTERNAL_CHUNK = "=fakekey"
# Instructions between two checks of the kill flag (Valkey's hook count).
HOOK_COUNT = 100000
# Beyond this many values, results cross between Lua and Python as a table instead of
# multiple values (Lua 5.1's C stack holds 8000 slots).
MAX_MULTIPLE_VALUES = 7000

_BOOTSTRAP = r"""
local host_call, host_acl, host_log, host_stop, host_sha1, host_rand, host_seed, host_untail,
      kind, redis_version, redis_version_num, valkey_version, valkey_version_num,
      hook_count, max_values, host_call_packed, host_acl_packed, host_setresp = ...

local type, next, rawget, rawset, rawequal, select, tostring, tonumber, error, assert =
      type, next, rawget, rawset, rawequal, select, tostring, tonumber, error, assert
local pairs, ipairs, unpack, getmetatable, setmetatable = pairs, ipairs, unpack, getmetatable, setmetatable
local pcall, xpcall, loadstring, load, setfenv = pcall, xpcall, loadstring, load, setfenv
local string, table, math, os, coroutine, debug = string, table, math, os, coroutine, debug
local byte, gsub, format, dump = string.byte, string.gsub, string.format, string.dump
local floor, ceil = math.floor, math.ceil
local concat, insert, remove, sort, getn, maxn, foreach, foreachi, setn =
      table.concat, table.insert, table.remove, table.sort, table.getn, table.maxn,
      table.foreach, table.foreachi, table.setn
local getinfo, sethook, rawgetmetatable = debug.getinfo, debug.sethook, debug.getmetatable
local INTERNAL = '=fakekey'
local READONLY = 'Attempt to modify a readonly table'

-- Read-only tables ------------------------------------------------------------------
-- A protected table is only ever seen through its proxy: an empty table that reads
-- through to the real one and refuses every write.
local real_of, proxy_of = {}, {}

local function deny_write() error(READONLY, 2) end

local function protect(t)
  local p = proxy_of[t]
  if p then return p end
  p = {}
  proxy_of[t], real_of[p] = p, t
  setmetatable(p, {__index = t, __newindex = deny_write})
  for k, v in next, t do
    if type(v) == 'table' and not real_of[v] then rawset(t, k, protect(v)) end
  end
  local mt = rawgetmetatable(t)
  if type(mt) == 'table' then protect(mt) end
  return p
end

-- Builtins run on the script's behalf: an error they raise reads as if the script had
-- called them itself (its position, the builtin's name), not as coming from here.
-- luaL_where for the frame that called into this chunk: its position, or nothing for a
-- C caller (tail calls among this chunk's functions leave pseudo-frames to skip); and
-- whether that caller is a C function (which calls a builtin nameless: '?').
local function where()
  local level = 3
  while true do
    local info = getinfo(level, 'Sl')
    if not info then return '', true end
    if info.what ~= 'tail' and info.source ~= INTERNAL then
      if info.currentline > 0 then return info.short_src .. ':' .. info.currentline .. ': ', false end
      return '', info.what == 'C'
    end
    level = level + 1
  end
end

local function rethrow(name, ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == 'string' then
    local position, from_c = where()
    if not from_c then
      e = gsub(e, "^bad argument #(%d+) to '%?'", "bad argument #%1 to '" .. name .. "'", 1)
    end
    error(position .. e, 0)
  end
  error(e, 0)
end
local function relay(name, f, ...) return rethrow(name, pcall(f, ...)) end

local function w_next(...)
  local t, k = ...
  local r = real_of[t]
  if r then return next(r, k) end
  if type(t) == 'table' then return next(t, k) end
  return relay('next', next, ...)
end

local function w_pairs(...)
  local t = ...
  if real_of[t] then return w_next, t, nil end
  if type(t) == 'table' then return pairs(t) end
  return relay('pairs', pairs, ...)
end

local function proxy_ipairs_step(p, i)
  i = i + 1
  local v = rawget(real_of[p], i)
  if v ~= nil then return i, v end
end

local function w_ipairs(...)
  local t = ...
  if real_of[t] then return proxy_ipairs_step, t, 0 end
  if type(t) == 'table' then return ipairs(t) end
  return relay('ipairs', ipairs, ...)
end

local function w_rawget(...)
  local t, k = ...
  if select('#', ...) >= 2 then
    local r = real_of[t]
    if r then return rawget(r, k) end
    if type(t) == 'table' then return rawget(t, k) end
  end
  return relay('rawget', rawget, ...)
end

local function w_rawset(...)
  local t = ...
  if select('#', ...) >= 3 then
    if real_of[t] then error(READONLY, 0) end
    if type(t) == 'table' then return rawset(...) end
  end
  return relay('rawset', rawset, ...)
end

local function w_getmetatable(...)
  if select('#', ...) == 0 then return relay('getmetatable', getmetatable, ...) end
  local v = ...
  local mt = getmetatable(real_of[v] or v)
  if mt == nil then return nil end
  return proxy_of[mt] or mt
end

local function w_setmetatable(...)
  local t, mt = ...
  local r = real_of[t]
  if r and (mt == nil or type(mt) == 'table') then
    local current = rawgetmetatable(r)
    if current and rawget(current, '__metatable') ~= nil then
      return relay('setmetatable', error, 'cannot change a protected metatable')
    end
    error(READONLY, 0)
  end
  return relay('setmetatable', setmetatable, t, real_of[mt] or mt, select(3, ...))
end

local INT_MAX = 2147483647

local function int_arg(v, default)  -- luaL_optint's value, nil past an int
  if v == nil then return default end
  local n = tonumber(v)
  if n == nil then return nil end
  n = n >= 0 and floor(n) or ceil(n)
  if n > INT_MAX or n < -INT_MAX - 1 then return nil end
  return n
end

local function w_unpack(...)
  local t, i, e = ...
  local r = real_of[t] or t
  if type(r) == 'table' then
    -- a range of INT_MAX elements or more: Valkey's unpack counts it without the int
    -- overflow that crashes Lua 5.1's, and refuses it as one it has no room for
    local first, last = int_arg(i, 1), int_arg(e, #r)
    if first and last and first <= last and last - first >= INT_MAX then
      return relay('unpack', unpack, r, 1, INT_MAX)
    end
  end
  return relay('unpack', unpack, r, select(2, ...))
end

-- Code a script loads runs in the script's globals (set by lock()), its tail calls made
-- plain calls (see untail() in runtime.py: API errors report the script's line).
local script_env
local function in_script_env(f, ...)
  if type(f) ~= 'function' then return f, ... end
  local patched = host_untail(dump(f))
  if patched then
    local g = loadstring(patched)
    if g then f = g end
  end
  setfenv(f, script_env)
  return f
end

local function is_text(v) return type(v) == 'string' or type(v) == 'number' end

local function w_loadstring(...)
  local s, name = ...
  if not is_text(s) or (name ~= nil and not is_text(name)) then
    return relay('loadstring', loadstring, ...)
  end
  s = tostring(s)
  if byte(s, 1) == 27 then
    -- Valkey's parser refuses bytecode: parse it as text, as Valkey does
    return in_script_env(loadstring(' ' .. s, name or s))
  end
  return in_script_env(loadstring(s, name))
end

local function w_load(...)
  local f, name = ...
  if type(f) ~= 'function' or (name ~= nil and not is_text(name)) then
    return relay('load', load, ...)
  end
  local first = true
  local function reader()
    local piece = f()
    if first then
      first = false
      if type(piece) == 'string' and byte(piece, 1) == 27 then return ' ' .. piece end
    end
    return piece
  end
  return in_script_env(load(reader, name or '=(load)'))
end

-- An error raised inside this chunk (a host callable refusing its arguments, say) must
-- not show the chunk's own name: it reads as raised where the script called in.
local function scrub(e, position)
  if type(e) == 'string' and byte(e, 1) == 102 then  -- 'f'
    return (gsub(e, '^' .. INTERNAL:sub(2) .. ':%d+: ', position, 1))
  end
  return e
end

-- Valkey's pcall: an error table with an `err` field is caught as its message
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = scrub((...), (where()))
  if type(e) == 'table' then
    local m = e.err
    local tm = type(m)
    if tm == 'string' or tm == 'number' then return false, m end
  end
  return false, e
end
local function w_pcall(...)
  if select('#', ...) == 0 then return false end
  return pcall_result(pcall(...))
end

local T = {}
T.concat = function(...)
  local t = ...
  return relay('concat', concat, real_of[t] or t, select(2, ...))
end
T.insert = function(...)
  local t, a = ...
  local n = select('#', ...)
  if type(t) == 'table' and (n == 2 or (n == 3 and type(a) == 'number')) then
    if real_of[t] then error(READONLY, 0) end
    return insert(...)
  end
  return relay('insert', insert, real_of[t] or t, select(2, ...))
end
T.remove = function(...)
  local t, pos = ...
  local r = real_of[t]
  if r then
    if getn(r) > 0 then error(READONLY, 0) end
    return
  end
  local n = select('#', ...)
  if type(t) == 'table' and (n == 1 or (n == 2 and type(pos) == 'number')) then return remove(...) end
  return relay('remove', remove, ...)
end
T.sort = function(...)
  local t, comp = ...
  local r = real_of[t]
  if r then
    if getn(r) > 1 then error(READONLY, 0) end
    return
  end
  if type(t) == 'table' and (comp == nil or type(comp) == 'function') then return sort(...) end
  return relay('sort', sort, ...)
end
T.getn = function(...)
  local t = ...
  return relay('getn', getn, real_of[t] or t, select(2, ...))
end
T.maxn = function(...)
  local t = ...
  return relay('maxn', maxn, real_of[t] or t, select(2, ...))
end
T.foreach = function(...)
  local t, f = ...
  if type(t) == 'table' and type(f) == 'function' then return foreach(real_of[t] or t, f) end
  return relay('foreach', foreach, ...)
end
T.foreachi = function(...)
  local t, f = ...
  if type(t) == 'table' and type(f) == 'function' then return foreachi(real_of[t] or t, f) end
  return relay('foreachi', foreachi, ...)
end
T.setn = function(...) return relay('setn', setn, ...) end

-- math.random as Valkey's (the same rand48 sequence on every machine) ------------------
-- luaL_argerror's text, raised at `level` (relative to the caller of argerror)
local function argerror(level, i, name, msg)
  error(format("bad argument #%d to '%s' (%s)", i, name, msg), level + 1)
end
-- luaL_checkint: a number or a numeric string, truncated to a C int
local function checkint(n, i, name, v)
  local x = tonumber(v)
  if x == nil then
    argerror(3, i, name, 'number expected, got ' .. (i > n and 'no value' or type(v)))
  end
  x = x >= 0 and floor(x) or ceil(x)
  x = x % 4294967296
  if x >= 2147483648 then x = x - 4294967296 end
  return x
end
local M = {}
for k, v in next, math do M[k] = v end
M.random = function(...)
  local n = select('#', ...)
  local a, b = ...
  local r = host_rand()
  if n == 0 then return r end
  if n == 1 then
    local u = checkint(n, 1, 'random', a)
    if u < 1 then argerror(2, 1, 'random', 'interval is empty') end
    return floor(r * u) + 1
  end
  if n == 2 then
    local l = checkint(n, 1, 'random', a)
    local u = checkint(n, 2, 'random', b)
    if l > u then argerror(2, 2, 'random', 'interval is empty') end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 2)
end
M.randomseed = function(...)
  host_seed(checkint(select('#', ...), 1, 'randomseed', (...)))
end

-- The server API ---------------------------------------------------------------------
local script_resp = 2     -- the protocol of redis.call replies (redis.setresp)

local function raise(msg)
  local t = {}
  t.err = 'ERR ' .. msg
  error(t, 0)
end

-- Replies come from Python as scalars or as a flat token list: a string or a number is
-- itself; `false` is an escape followed by a code (and its payload).
-- An array reply with holes (RESP3 nulls) is built the way Valkey's C code builds it,
-- with all its slots in the array part, so that `#` sees the same border.
local array_ctors = {}
local MAX_CTOR = 2048
local function array_of(n, a)
  if n > MAX_CTOR then return a end
  local c = array_ctors[n]
  if not c then
    local parts = {}
    for i = 1, n do parts[i] = 'a[' .. i .. ']' end
    c = loadstring('return function(a) return {' .. concat(parts, ',') .. '} end', INTERNAL)()
    array_ctors[n] = c
  end
  return c(a)
end

local decode
local function decode_list(tk, i, n)
  local a, holes = {}, false
  for j = 1, n do
    local v
    v, i = decode(tk, i)
    if v == nil then holes = true end
    a[j] = v
  end
  return a, holes, i
end

-- A map or set reply as a Lua table (keys Lua cannot hold, nil and NaN, are left out).
local function keyed(is_map, n, a)
  local t = {}
  local step = is_map and 2 or 1
  for j = 1, n * step, step do
    local k = a[j]
    if k ~= nil and k == k then
      if is_map then t[k] = a[j + 1] else t[k] = true end
    end
  end
  return t
end

decode = function(tk, i)
  local v = tk[i]
  if v ~= false then return v, i + 1 end
  local code = tk[i + 1]
  i = i + 2
  if code == 1 then return false, i end
  if code == 2 then return nil, i end
  if code == 3 then return true, i end
  if code == 5 then local t = {}; t.ok = tk[i]; return t, i + 1 end
  if code == 6 then
    local t = {}
    t.err = tk[i]
    t.ignore_error_stats_update = true
    return t, i + 1
  end
  if code == 7 then
    local n = tk[i]
    local a, holes
    a, holes, i = decode_list(tk, i + 1, n)
    if holes then a = array_of(n, a) end
    return a, i
  end
  if code == 8 or code == 9 then
    local n = tk[i]
    local a
    local _holes
    a, _holes, i = decode_list(tk, i + 1, code == 8 and 2 * n or n)
    local t = {}
    if code == 8 then t.map = keyed(true, n, a) else t.set = keyed(false, n, a) end
    return t, i
  end
  if code == 10 then local t = {}; t.double = tk[i]; return t, i + 1 end
  if code == 11 then local t = {}; t.big_number = tk[i]; return t, i + 1 end
  if code == 12 then
    local t, inner = {}, {}
    inner.string = tk[i + 1]
    inner.format = tk[i]
    t.verbatim_string = inner
    return t, i + 2
  end
  return nil, i
end

local stop_now  -- the kill machinery's, below: stops the script as SCRIPT KILL does

-- What host_call answers: a string or number reply itself (the commonest), else
-- `false` and a tag with its payload.
local function finish(raise_it, v, tag, a, ...)
  if v ~= false then return v end
  if tag == 0 then return a end
  if tag == 6 then  -- an array of strings and numbers: the values themselves
    if a == nil then return {} end
    return {a, ...}
  end
  if tag == 5 then stop_now(a) end
  if tag == 1 then local t = {}; t.ok = a; return t end
  if tag == 2 then
    local t = {}
    t.err = a
    if (...) then t.ignore_error_stats_update = true end
    if raise_it then error(t, 0) end
    return t
  end
  if tag == 3 then return (decode({a, ...}, 1)) end
  return (decode(a, 1))
end

-- Past this many arguments, a call crosses to Python with its arguments in one table: a
-- C function's stack (lupa's too) holds at most 8000 values, redis.call's arguments and
-- the ones lupa adds.
local PACK_ARGS = 256
local R = {}
R.call = function(...)
  local n = select('#', ...)
  if n > PACK_ARGS then return finish(true, host_call_packed(n, {...})) end
  return finish(true, host_call(...))
end
R.pcall = function(...)
  local n = select('#', ...)
  if n > PACK_ARGS then return finish(false, host_call_packed(n, {...})) end
  return finish(false, host_call(...))
end
R.sha1hex = function(...)
  if select('#', ...) ~= 1 then raise('wrong number of arguments') end
  local s = ...
  if type(s) == 'number' then s = tostring(s) elseif type(s) ~= 'string' then s = '' end
  return host_sha1(s)
end
R.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    local t = {}; t.err = 'ERR wrong number or type of arguments'; return t
  end
  if byte(e, 1) ~= 45 then e = '-' .. e end
  local code, msg = string.match(e, '^%-([^ ]*) (.*)$')
  if not code then code, msg = 'ERR', string.sub(e, 2) end
  msg = gsub(gsub(msg, '^[\r\n]+', ''), '[\r\n]+$', '')
  local t = {}
  t.err = code .. ' ' .. msg
  return t
end
R.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    local t = {}; t.err = 'ERR wrong number or type of arguments'; return t
  end
  local t = {}
  t.ok = s
  return t
end
R.log = function(...)
  local n = select('#', ...)
  if n < 2 then raise('server.log() requires two arguments or more.') end
  local level = ...
  if tonumber(level) == nil then raise('First argument must be a number (log level).') end
  level = tonumber(level)
  level = level >= 0 and floor(level) or ceil(level)
  if level < 0 or level > 3 then raise('Invalid log level.') end
  local parts = {}
  for i = 2, n do
    local v = select(i, ...)
    local tv = type(v)
    if tv == 'string' or tv == 'number' then parts[#parts + 1] = tostring(v) end
  end
  host_log(level, concat(parts, ' '))
end
R.setresp = function(...)
  if select('#', ...) ~= 1 then raise('server.setresp() requires one argument.') end
  local resp = tonumber((...)) or 0
  resp = resp >= 0 and floor(resp) or ceil(resp)
  if resp ~= 2 and resp ~= 3 then raise('RESP version must be 2 or 3.') end
  script_resp = resp
  host_setresp(resp)  -- the host converts redis.call replies for it (a run starts at 2)
end
R.set_repl = function(...)
  if select('#', ...) ~= 1 then raise('server.set_repl() requires one argument.') end
  local flags = tonumber((...)) or 0
  flags = flags >= 0 and floor(flags) or ceil(flags)
  if flags < 0 or flags > 3 then
    raise('Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.')
  end
end
R.acl_check_cmd = function(...)
  local n = select('#', ...)
  local ok, v
  if n > PACK_ARGS then ok, v = host_acl_packed(n, {...}) else ok, v = host_acl(...) end
  if not ok then raise(v) end
  return v
end
R.LOG_DEBUG, R.LOG_VERBOSE, R.LOG_NOTICE, R.LOG_WARNING = 0, 1, 2, 3
R.REPL_NONE, R.REPL_AOF, R.REPL_SLAVE, R.REPL_REPLICA, R.REPL_ALL = 0, 1, 2, 2, 3
R.REDIS_VERSION, R.REDIS_VERSION_NUM = redis_version, redis_version_num
R.VALKEY_VERSION, R.VALKEY_VERSION_NUM = valkey_version, valkey_version_num
R.SERVER_NAME = 'valkey'

-- Errors: where a script failed, as Valkey's error handler reports it ------------------
local function error_handler(err)
  local level = 2
  local info = getinfo(level, 'Sl')
  while info and (info.what == 'C' or info.what == 'tail' or info.source == INTERNAL) do
    level = level + 1
    info = getinfo(level, 'Sl')
  end
  if type(err) ~= 'table' then
    local position = info and (info.short_src .. ':' .. info.currentline .. ': ') or ''
    err = {err = 'ERR ' .. tostring(scrub(err, position))}
  end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

-- SCRIPT KILL: the count hook asks the host; once killed, every line of script code
-- raises again, so pcall in the script cannot swallow the kill.
local killed_mode, kill_msg = false, nil
local function in_script(level)
  local info = getinfo(level, 'S')
  return info ~= nil and info.what ~= 'C' and info.what ~= 'tail' and info.source ~= INTERNAL
end
local function raise_kill()
  local t = {}
  t.err = kill_msg
  error(t, 0)
end
local function line_hook()
  if in_script(3) then raise_kill() end
end
local function count_hook()
  local msg = host_stop()
  if msg then
    kill_msg = msg
    killed_mode = true
    sethook(line_hook, 'l')
    if in_script(3) then raise_kill() end
  end
end
-- the host stops the script from redis.call (the server going away under a BUSY run):
-- from here on as killed, pcall in the script cannot swallow it
stop_now = function(msg)
  kill_msg = msg
  killed_mode = true
  sethook(line_hook, 'l')
  raise_kill()
end

-- A Lua hook belongs to one thread: every coroutine a script makes gets the count hook
-- (the line hook once the script is killed), as Valkey's C hook is inherited.
local function arm(co)
  if killed_mode then sethook(co, line_hook, 'l') else sethook(co, count_hook, '', hook_count) end
  return co
end
-- coroutine.create refuses C functions too: let those fail through relay, so the error
-- names the script's line, not this wrapper's
local function lua_function(f) return type(f) == 'function' and getinfo(f, 'S').what ~= 'C' end
local CO = {}
for k, v in next, coroutine do CO[k] = v end
CO.create = function(...)
  if not lua_function(...) then return relay('create', coroutine.create, ...) end
  return arm(coroutine.create(...))
end
-- coroutine.wrap as Lua 5.1's: a string error gets the caller's position
local resume = coroutine.resume
local function wrap_result(ok, ...)
  if ok then return ... end
  local e = ...
  local te = type(e)
  if te == 'string' or te == 'number' then error(where() .. e, 0) end
  error(e, 0)
end
CO.wrap = function(...)
  if not lua_function(...) then return relay('wrap', coroutine.wrap, ...) end
  local co = arm(coroutine.create(...))
  return function(...) return wrap_result(resume(co, ...)) end
end

-- The globals a script sees -------------------------------------------------------------
local G = {}
G._G = G
G._VERSION = _VERSION
G.assert, G.collectgarbage, G.error, G.gcinfo = assert, collectgarbage, error, gcinfo
G.select, G.tonumber, G.tostring, G.type, G.xpcall, G.rawequal = select, tonumber, tostring, type, xpcall, rawequal
G.next, G.pairs, G.ipairs, G.rawget, G.rawset = w_next, w_pairs, w_ipairs, w_rawget, w_rawset
G.getmetatable, G.setmetatable, G.unpack = w_getmetatable, w_setmetatable, w_unpack
G.loadstring, G.load, G.pcall = w_loadstring, w_load, w_pcall
-- string.rep whose result would pass 512 MB fails as a failed allocation does: one script
-- cannot take the server's memory (Valkey builds it, as far as the machine's memory goes).
-- The count is the C int Lua 5.1 makes of it (2^32+5 repeats 5 times, 2^40 none).
do
  local rep, floor, ceil, MAX_REP = string.rep, math.floor, math.ceil, 536870912
  string.rep = function(s, n, ...)
    local count = tonumber(n)
    if count and count == count and (type(s) == 'string' or type(s) == 'number') then
      count = (count >= 0 and floor(count) or ceil(count)) % 4294967296
      if count < 2147483648 and #tostring(s) * count > MAX_REP then
        error('not enough memory', 0)
      end
    end
    return rep(s, n, ...)
  end
end
G.string, G.table, G.math, G.coroutine = string, T, M, CO
G.os = {clock = os.clock}
G.server, G.redis = R, R
if kind == 'eval' then
  R.breakpoint = function() return false end
  R.debug = function() end
  R.replicate_commands = function() return true end
  G.__server__err__handler, G.__redis__err__handler = error_handler, error_handler
end
setmetatable(G, {__index = function(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end})

-- FCALL's state (kind 'function'): as Valkey's, the scripts' globals are an empty read-only
-- table reading through to the globals at run time, and to the load-time API (only
-- `redis`/`server` with register_function, log and the constants) while FUNCTION LOAD
-- runs a library's code (see load_library).
local runtime_globals, env_mt

local function lock()
  -- string methods go through the protected string table
  local string_mt = rawgetmetatable('')
  rawset(string_mt, '__index', protect(G.string))
  if kind == 'function' then
    runtime_globals = protect(G)
    env_mt = {__index = runtime_globals, __newindex = deny_write}
    script_env = setmetatable({}, env_mt)
  else
    script_env = protect(G)
  end
  protect(string_mt)
  sethook(count_hook, '', hook_count)
end

-- Running a script ----------------------------------------------------------------------
local NULL_CODE, BOOL_CODE = 1, 3
-- Lua value -> tokens for Python: strings and numbers are themselves; `false` escapes
-- a code: 1 null, 2 boolean (then the value), 4 error (message), 5 status, 6 double
-- (value, negative zero), 7 big number, 8 verbatim (format, string), 9 map, 10 set,
-- 11 array (then the count and the elements).
-- `used` counts the Lua stack slots Valkey's conversion (luaReplyToServerReply) would hold
-- for this value: it answers an error in place of a value nested past its C stack limit
-- (LUAI_MAXCSTACK, 8000, with room for 4 more), so a recursive table ends there too.
local STACK_LIMIT_ERROR = 'ERR reached lua stack limit'
local MAX_USED_SLOTS = 8000 - 4
local function encode(v, out, n, used)
  if used > MAX_USED_SLOTS then
    out[n + 1] = false; out[n + 2] = 4; out[n + 3] = STACK_LIMIT_ERROR; out[n + 4] = false
    return n + 4
  end
  local t = type(v)
  if t == 'string' or t == 'number' then
    n = n + 1; out[n] = v; return n
  end
  if t == 'boolean' then
    out[n + 1] = false; out[n + 2] = 2; out[n + 3] = v; return n + 3
  end
  if t ~= 'table' then
    out[n + 1] = false; out[n + 2] = NULL_CODE; return n + 2
  end
  local r = real_of[v] or v
  local x = rawget(r, 'err')
  if type(x) == 'string' then
    out[n + 1] = false; out[n + 2] = 4; out[n + 3] = x
    out[n + 4] = rawget(r, 'ignore_error_stats_update') == true
    return n + 4
  end
  x = rawget(r, 'ok')
  if type(x) == 'string' then out[n + 1] = false; out[n + 2] = 5; out[n + 3] = x; return n + 3 end
  x = rawget(r, 'double')
  if type(x) == 'number' then
    out[n + 1] = false; out[n + 2] = 6; out[n + 3] = x; out[n + 4] = x == 0 and 1 / x < 0
    return n + 4
  end
  x = rawget(r, 'big_number')
  if type(x) == 'string' then out[n + 1] = false; out[n + 2] = 7; out[n + 3] = x; return n + 3 end
  x = rawget(r, 'verbatim_string')
  if type(x) == 'table' then
    local xr = real_of[x] or x
    local f, s = rawget(xr, 'format'), rawget(xr, 'string')
    if type(f) == 'string' and type(s) == 'string' then
      out[n + 1] = false; out[n + 2] = 8; out[n + 3] = f; out[n + 4] = s
      return n + 4
    end
  end
  x = rawget(r, 'map')
  if type(x) == 'table' then
    out[n + 1] = false; out[n + 2] = 9; out[n + 3] = 0  -- no holes: `out` stays a sequence
    local at, count = n + 3, 0
    n = at
    for k, val in next, real_of[x] or x do
      -- Valkey's stack: the table, the map, the key, the value, a copy of the key
      n = encode(k, out, n, used + 4)
      n = encode(val, out, n, used + 3)
      count = count + 1
    end
    out[at] = count
    return n
  end
  x = rawget(r, 'set')
  if type(x) == 'table' then
    out[n + 1] = false; out[n + 2] = 10; out[n + 3] = 0
    local at, count = n + 3, 0
    n = at
    for k in next, real_of[x] or x do
      n = encode(k, out, n, used + 3)  -- the table, the set, the key, a copy of the key
      count = count + 1
    end
    out[at] = count
    return n
  end
  out[n + 1] = false; out[n + 2] = 11; out[n + 3] = 0
  local at, j = n + 3, 1
  n = at
  while true do
    local e = rawget(r, j)
    if e == nil then break end
    n = encode(e, out, n, used + 1)
    j = j + 1
  end
  out[at] = j - 1
  return n
end

local function error_info(e)
  if type(e) ~= 'table' then
    local te = type(e)
    return 3, script_resp, (te == 'string' or te == 'number') and tostring(e) or nil
  end
  local r = real_of[e] or e
  local msg, source, line = rawget(r, 'err'), rawget(r, 'source'), rawget(r, 'line')
  if type(msg) == 'number' then msg = tostring(msg) elseif type(msg) ~= 'string' then msg = nil end
  if type(source) == 'number' then source = tostring(source) elseif type(source) ~= 'string' then source = nil end
  if type(line) == 'number' then line = tostring(line) elseif type(line) ~= 'string' then line = nil end
  return 2, script_resp, msg, source, line, rawget(r, 'ignore_error_stats_update') == true
end

-- The length of a table that `encode` would answer as an array of strings and numbers
-- (none of the reply fields it looks for; items 1.. up to the first nil, each a string
-- or a number), or nil: such a result, the commonest a script returns, crosses to Python
-- as its values instead of encode's tokens. Other keys are ignored, as encode ignores them.
local function flat_count(r)
  if rawget(r, 'err') ~= nil or rawget(r, 'ok') ~= nil or rawget(r, 'double') ~= nil
      or rawget(r, 'big_number') ~= nil or rawget(r, 'verbatim_string') ~= nil
      or rawget(r, 'map') ~= nil or rawget(r, 'set') ~= nil then
    return nil
  end
  local n = 0
  while true do
    local v = rawget(r, n + 1)
    if v == nil then return n end
    local tv = type(v)
    if tv ~= 'string' and tv ~= 'number' then return nil end
    n = n + 1
    if n > max_values then return nil end
  end
end

-- FCALL's function, called through xpcall without a closure per call (no run nests
-- in another: FCALL is not allowed from scripts)
local f_fn, f_keys, f_args
local function call_function() return f_fn(f_keys, f_args) end

-- run(fn, as_function, nkeys, keys..., args...): the script's outcome for Python:
--   value                 a string or number result, itself (the commonest: no tuple)
--   0, resp, value        another scalar result
--   1, resp, tokens...    a table result (or 4, resp, token table when very long)
--   5, resp, values...    a table result that is a plain array of strings and numbers
--   2, resp, msg, source, line, ignore_stats   an error
--   3, resp, text         an error that is not a table (error in error handling)
-- `values` holds the keys and then the args (n in all); it becomes the keys table.
local function execute(fn, as_function, nkeys, values, n)
  script_resp = 2
  if killed_mode then
    killed_mode = false
    sethook(count_hook, '', hook_count)
  end
  local keys, args = values, {}
  for i = nkeys + 1, n do
    args[i - nkeys] = keys[i]
    keys[i] = nil
  end
  local ok, res
  if as_function then
    f_fn, f_keys, f_args = fn, keys, args
    ok, res = xpcall(call_function, error_handler)
    f_fn, f_keys, f_args = nil, nil, nil
  else
    G.KEYS, G.ARGV = keys, args  -- G has no __newindex: raw sets, without two C calls
    ok, res = xpcall(fn, error_handler)
  end
  if not ok then return error_info(res) end
  local t = type(res)
  if t == 'string' or t == 'number' then return res end
  if t ~= 'table' then
    if t == 'function' or t == 'userdata' or t == 'thread' then res = nil end
    return 0, script_resp, res
  end
  local flat = flat_count(real_of[res] or res)
  if flat then return 5, script_resp, unpack(real_of[res] or res, 1, flat) end
  local out = {}
  local count = encode(res, out, 0, 2)  -- Valkey's stack holds 2 slots below the result
  if count > max_values then return 4, script_resp, out end
  return 1, script_resp, unpack(out, 1, count)
end

local function run(fn, as_function, nkeys, ...)
  return execute(fn, as_function, nkeys, {...}, select('#', ...))
end

local function run_packed(fn, as_function, nkeys, all)
  local values = {}  -- the script's own tables, not the one Python made
  for i = 1, #all do values[i] = all[i] end
  return execute(fn, as_function, nkeys, values, #all)
end

local function compile(code, chunkname)
  if byte(code, 1) == 27 then code = ' ' .. code end
  return in_script_env(loadstring(code, chunkname))
end

-- Library installers wrap Python callables: the script gets a Lua closure only.
local function wrap(f)
  local function checked(ok, ...)
    if ok then return ... end
    error(where() .. (...), 0)
  end
  return function(...) return checked(f(...)) end
end

-- FUNCTION LOAD: run a library's compiled code with `api` (a protected table) as what its
-- globals read through to; no error handler, as Valkey's lua_pcall: true, or false and the
-- message as Valkey extracts it (a string error gets `ERR `, a table gives its `err`).
local function end_kill()
  if killed_mode then
    killed_mode = false
    sethook(count_hook, '', hook_count)
  end
end
local function load_library(fn, api)
  end_kill()
  env_mt.__index = api
  local ok, e = pcall(fn)
  env_mt.__index = runtime_globals
  end_kill()
  if ok then return true end
  local te = type(e)
  if te == 'string' or te == 'number' then return false, 'ERR ' .. tostring(e) end
  if te == 'table' then
    local m = rawget(real_of[e] or e, 'err')
    if type(m) == 'string' or type(m) == 'number' then return false, tostring(m) end
  end
  return false, nil
end

-- a Lua function's bytecode (for `straight_line`), or nil for a C function
local function dump_of(f)
  local ok, code = pcall(dump, f)
  if ok then return code end
  return nil
end

return {G = G, R = R, lock = lock, run = run, run_packed = run_packed, compile = compile, wrap = wrap,
        protect = protect, load_library = load_library, dump_of = dump_of}
"""


class SandboxHost(Protocol):
    """What the sandbox needs from the server (see `bridge.CommandBridge`). None of these
    may raise: a Python exception must never reach Lua."""

    # redis.call: a string or integer reply itself, else (False, tag, ...) (see `finish`)
    def call(self, *args: Any) -> Any: ...

    def acl_check(self, *args: Any) -> tuple: ...

    def call_packed(self, count: int, args: Any) -> Any: ...

    def setresp(self, resp: int) -> None: ...

    def acl_check_packed(self, count: int, args: Any) -> tuple: ...

    def log(self, level: int, message: bytes) -> None: ...

    def should_stop(self) -> bytes | None: ...

    def random(self) -> float: ...

    def randomseed(self, seed: int) -> None: ...


class LuaLibraryError(Exception):
    """Raised by a Python library function (see `LibraryContext.wrap`): a Lua error
    with this message in the script."""


class LibraryContext:
    """What a library installer gets (see `fakekey.scripting.libs`)."""

    def __init__(self, sandbox: LuaSandbox) -> None:
        self.lua = sandbox.lua
        self._sandbox = sandbox

    def set_global(self, name: str, value: Any) -> None:
        """Make `value` (a Lua value) a global of the scripts."""
        self._sandbox.globals[name.encode()] = value

    def execute(self, source: str, *args: Any) -> Any:
        """Run trusted Lua code (the full standard library is visible; `...` are `args`)
        and return its results, e.g. a library table built in Lua. Its frames are hidden
        from error positions, like Valkey's C libraries."""
        return self.lua.execute(source, *args, name=INTERNAL_CHUNK)

    def wrap(self, fn: Callable[..., Any]) -> Any:
        """A Lua function calling Python `fn`; see the module docs of `libs` for rules."""

        def guarded(*args: Any) -> tuple:
            try:
                result = fn(*args)
            except LuaLibraryError as err:
                return (False, str(err).encode())
            except Exception as err:  # noqa: BLE001 - a Python error must not reach Lua
                return (False, f"internal error: {type(err).__name__}".encode())
            if isinstance(result, tuple):
                return (True, *result)
            return (True, result)

        return self._sandbox.wrap_callable(guarded)


_OP_CALL, _OP_TAILCALL = 28, 29
_HEADER = b"\x1bLua\x51\x00\x01\x04\x08\x04\x08\x00"  # Lua 5.1, 64-bit little-endian


def untail(dump: bytes) -> bytes:
    """A script's bytecode with every tail call made a plain call.

    Valkey's redis.call and the other API functions are C functions: a script's `return
    redis.call(...)` keeps the script's frame, so errors report the script's line. Ours
    are Lua closures, which a Lua tail call would replace the frame with; `CALL` followed
    by the `RETURN` the compiler already emits after each tail call returns the same
    values and keeps the frame."""
    if not dump.startswith(_HEADER):
        raise ValueError("unexpected Lua bytecode header")
    code = bytearray(dump)
    _untail_function(code, len(_HEADER))
    return bytes(code)


def _untail_function(code: bytearray, pos: int) -> int:
    """Patch one function prototype (and its nested ones); the position after it."""
    pos = _skip_string(code, pos)  # source
    pos += 4 + 4 + 4  # linedefined, lastlinedefined, nups/numparams/is_vararg/maxstack
    count = int.from_bytes(code[pos:pos + 4], "little")
    pos += 4
    for at in range(pos, pos + 4 * count, 4):
        if code[at] & 0x3F == _OP_TAILCALL:
            code[at] = (code[at] & 0xC0) | _OP_CALL
    pos += 4 * count
    count = int.from_bytes(code[pos:pos + 4], "little")  # constants
    pos += 4
    for _ in range(count):
        kind = code[pos]
        pos += 1
        if kind == 1:  # boolean
            pos += 1
        elif kind == 3:  # number
            pos += 8
        elif kind == 4:  # string
            pos = _skip_string(code, pos)
    count = int.from_bytes(code[pos:pos + 4], "little")  # nested functions
    pos += 4
    for _ in range(count):
        pos = _untail_function(code, pos)
    count = int.from_bytes(code[pos:pos + 4], "little")  # line info
    pos += 4 + 4 * count
    count = int.from_bytes(code[pos:pos + 4], "little")  # local variables
    pos += 4
    for _ in range(count):
        pos = _skip_string(code, pos) + 8
    count = int.from_bytes(code[pos:pos + 4], "little")  # upvalue names
    pos += 4
    for _ in range(count):
        pos = _skip_string(code, pos)
    return pos


def _skip_string(code: bytearray | bytes, pos: int) -> int:
    return pos + 8 + int.from_bytes(code[pos:pos + 8], "little")


# Lua 5.1's opcodes that loop, make or reach other functions (see lopcodes.h)
_OP_GETUPVAL, _OP_GETGLOBAL, _OP_SETUPVAL, _OP_JMP = 4, 5, 8, 22
_OP_FORLOOP, _OP_FORPREP, _OP_TFORLOOP, _OP_CLOSURE = 31, 32, 33, 36
_LOOPING_OPS: Final = frozenset({_OP_GETUPVAL, _OP_SETUPVAL, _OP_FORLOOP, _OP_FORPREP, _OP_TFORLOOP,
                                 _OP_CLOSURE})
# Globals through which a script could reach code it did not bring in its own body:
# compiled text (loadstring, load), or the environment itself (_G, getfenv, setfenv; the
# last two and newproxy only with lua-enable-insecure-api).
_CODE_GLOBALS: Final = frozenset({b"_G", b"loadstring", b"load", b"getfenv", b"setfenv", b"newproxy"})
_SBX_BIAS = 131071  # a signed jump offset is stored biased (MAXARG_sBx)


def straight_line(dump: bytes) -> bool:
    """Whether a compiled function (its `string.dump`) runs fewer than HOOK_COUNT Lua
    instructions whatever it is given: no loop (no backward jump), no nested function,
    no upvalue, fewer instructions than that, and no global that reaches other Lua
    code. Every other function it can call is a builtin or one of the sandbox's own,
    and none of those loops over Lua code of the script's. Valkey's count hook fires
    every HOOK_COUNT instructions of a run, and only there may a script turn the
    server BUSY: such a function never can, so it runs without the means to give way
    (`bridge.ScriptRunner.execute`)."""
    try:
        return _straight_line(dump)
    except (ValueError, IndexError):
        return False


def _straight_line(dump: bytes) -> bool:
    if not dump.startswith(_HEADER):
        return False
    pos = _skip_string(dump, len(_HEADER))  # source
    pos += 4 + 4  # linedefined, lastlinedefined
    if dump[pos] != 0:  # upvalues
        return False
    pos += 4  # nups, numparams, is_vararg, maxstacksize
    count = int.from_bytes(dump[pos:pos + 4], "little")
    pos += 4
    if count >= HOOK_COUNT:
        return False
    globals_read: list[int] = []
    for at in range(pos, pos + 4 * count, 4):
        instruction = int.from_bytes(dump[at:at + 4], "little")
        op = instruction & 0x3F
        if op in _LOOPING_OPS or (op == _OP_JMP and (instruction >> 14) < _SBX_BIAS):
            return False
        if op == _OP_GETGLOBAL:
            globals_read.append(instruction >> 14)
    pos += 4 * count
    constants, pos = _constants(dump, pos)
    if any(constants[i] in _CODE_GLOBALS for i in globals_read):
        return False
    return int.from_bytes(dump[pos:pos + 4], "little") == 0  # no nested functions


def _constants(dump: bytes, pos: int) -> tuple[list[bytes | None], int]:
    """A function's constants (strings as bytes, the others None), and where they end."""
    count = int.from_bytes(dump[pos:pos + 4], "little")
    pos += 4
    found: list[bytes | None] = []
    for _ in range(count):
        kind = dump[pos]
        pos += 1
        if kind == 4:  # string: its size counts the trailing NUL
            size = int.from_bytes(dump[pos:pos + 8], "little")
            found.append(dump[pos + 8:pos + 8 + size - 1])
            pos += 8 + size
            continue
        found.append(None)
        if kind == 1:  # boolean
            pos += 1
        elif kind == 3:  # number
            pos += 8
        elif kind != 0:
            raise ValueError(f"unexpected Lua constant type {kind}")
    return found, pos


def _untail_host(dump: bytes) -> bytes | None:
    try:
        return untail(dump)
    except (ValueError, IndexError):  # never let Python errors reach Lua
        return None


def _refuse_attribute(obj: Any, name: Any, is_setting: bool) -> Any:
    raise AttributeError("not accessible from Lua")


def _sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


def _version_num(version: str) -> int:
    major, minor, patch = (int(part) for part in version.split("."))
    return (major << 16) | (minor << 8) | patch


class LuaSandbox:
    """One Lua state in Valkey's sandbox. `kind` is "eval" (EVAL's state: KEYS/ARGV
    globals, the debugger stubs) or "function" (FCALL's: keys and args as arguments);
    `prepare(sandbox)` may add to `sandbox.globals` / `sandbox.redis` before the lock."""

    def __init__(
        self,
        host: SandboxHost,
        kind: str = "eval",
        *,
        redis_version: str,
        valkey_version: str,
        prepare: Callable[[LuaSandbox], None] | None = None,
    ) -> None:
        self.kind = kind
        self.lua = lupa51.LuaRuntime(
            encoding=None,
            register_eval=False,
            register_builtins=False,
            attribute_filter=_refuse_attribute,
            unpack_returned_tuples=True,
        )
        api = self.lua.execute(
            _BOOTSTRAP,
            host.call, host.acl_check, host.log, host.should_stop, _sha1hex,
            host.random, host.randomseed, _untail_host, kind.encode(),
            redis_version.encode(), _version_num(redis_version),
            valkey_version.encode(), _version_num(valkey_version),
            HOOK_COUNT, MAX_MULTIPLE_VALUES, host.call_packed, host.acl_check_packed, host.setresp,
            name=INTERNAL_CHUNK,
        )
        self.globals = api[b"G"]  # the real globals table, writable until the lock
        self.redis = api[b"R"]  # the real server/redis table
        # run_fn(fn, as_function, nkeys, keys..., args...): the bootstrap's `run`, for at
        # most MAX_MULTIPLE_VALUES keys and args; called directly on the hot path
        self.run_fn = api[b"run"]
        self._run_packed = api[b"run_packed"]
        self._compile = api[b"compile"]
        self._wrap = api[b"wrap"]
        self.protect = api[b"protect"]  # a read-only view of a Lua table, as the sandbox makes them
        self._load_library = api[b"load_library"]
        self._dump_of = api[b"dump_of"]
        for install in INSTALLERS:
            install(LibraryContext(self))
        if prepare is not None:
            prepare(self)
        api[b"lock"]()
        # lupa looks `debug.traceback` up in the state's own globals before every call into
        # Lua, for its error handler; the bootstrap holds what it uses of `debug` as
        # upvalues and scripts never see these globals, so it goes: one lookup a call less.
        self.lua.globals()[b"debug"] = None

    def wrap_callable(self, fn: Callable[..., tuple]) -> Any:
        """A Lua closure around `fn(*args) -> (ok, results...)` (see LibraryContext.wrap)."""
        return self._wrap(fn)

    def compile(self, code: bytes, chunkname: bytes) -> tuple[Any, bytes | None]:
        """(function, None), or (None, Lua's error message)."""
        result = self.lua_call(self._compile, code, chunkname)
        return result[0], (result[1] if len(result) > 1 else None)

    def run(self, fn: Any, keys: list[bytes], args: list[bytes], *, as_function: bool = False) -> tuple:
        """Call a compiled script with its keys and arguments; the outcome tuple of the
        bootstrap's `run` (see there): (tag, resp, ...), a string or number result as
        (0, 2, value)."""
        if len(keys) + len(args) <= MAX_MULTIPLE_VALUES:
            outcome = self.run_fn(fn, as_function, len(keys), *keys, *args)
        else:  # too many to pass as separate values: pass them in one table
            outcome = self._run_packed(fn, as_function, len(keys), self.lua.table_from(keys + args))
        return outcome if isinstance(outcome, tuple) else (0, 2, outcome)

    def runs_straight(self, fn: Any) -> bool:
        """Whether a compiled script or function can never reach the count hook's give-way
        (see `straight_line`)."""
        code = self._dump_of(fn)
        return isinstance(code, bytes) and straight_line(code)

    def load_library(self, fn: Any, api: Any) -> bytes | None:
        """Run a function library's compiled code (kind "function") with `api` as what its
        globals read: None, or the error message (FUNCTION LOAD's "Error registering
        functions: ..." part)."""
        result = self.lua_call(self._load_library, fn, api)
        if result[0]:
            return None
        return result[1] if len(result) > 1 and result[1] is not None else b"ERR unknown error"

    @staticmethod
    def lua_call(fn: Any, *args: Any) -> Any:
        result = fn(*args)
        return result if isinstance(result, tuple) else (result,)
