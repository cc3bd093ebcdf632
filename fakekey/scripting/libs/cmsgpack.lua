-- cmsgpack: lua-cmsgpack 0.4.0 as Valkey builds it (deps/lua/src/lua_cmsgpack.c), in plain
-- Lua 5.1. The chunk returns the module table and creates no global.
--
-- Kept from the C library:
-- * a number equal to an int64 packs as the smallest integer type; any other number as a
--   float 32 when the float holds it exactly, else as a float 64;
-- * strings use fixstr/str8/str16/str32 (never bin); a table whose keys are exactly 1..n
--   (the empty table too) is an array, every other table a map; nesting deeper than 16
--   tables packs nil; anything else (functions, cjson.null, ...) packs nil;
-- * unpacking knows no bin/ext types, reads uint64 as a signed int64, and answers 7999
--   values at most, failing as the C code does on the Lua C stack limit (8000 slots).
-- Errors carry the caller's position like luaL_error does.

local type, next, select, error, pcall, tostring, tonumber, unpack, setmetatable, getmetatable =
  type, next, select, error, pcall, tostring, tonumber, unpack, setmetatable, getmetatable
local byte, char, sub, format = string.byte, string.char, string.sub, string.format
local floor, frexp, ldexp, huge = math.floor, math.frexp, math.ldexp, math.huge
local concat = table.concat

local MAX_NESTING = 16
local MAX_C_STACK = 8000
local INT_MAX = 2147483647
local TWO16, TWO24, TWO32 = 65536, 16777216, 4294967296
local TWO31, TWO63 = 2147483648, 9223372036854775808

-- 0/0 is the x86 default NaN (sign bit set); its negation has the sign bit clear.
local NAN_NEGATIVE, NAN_POSITIVE = 0 / 0, -(0 / 0)
if tostring(NAN_NEGATIVE) ~= "-nan" then
  NAN_NEGATIVE, NAN_POSITIVE = NAN_POSITIVE, NAN_NEGATIVE
end

local FAILURE = {}
local function fail(message)
  error(setmetatable({ message = message }, FAILURE), 0)
end

-- Errors the C code raises without a position (Lua's own "table index is nil").
local function fail_bare(message)
  error(setmetatable({ message = message, bare = true }, FAILURE), 0)
end

local function raise(err)
  if getmetatable(err) == FAILURE then
    error(err.message, err.bare and 0 or 3)
  end
  error(err, 0)
end

local function stack_overflow(what)
  fail("stack overflow (" .. what .. ")")
end

-- ===== helpers on numbers =====

local function truncate(n)
  if n >= 0 then return floor(n) end
  return -floor(-n)
end

-- lua_tointeger on x86-64: truncation, INT64_MIN when out of range.
local function to_lua_integer(n)
  if n ~= n or n >= TWO63 or n < -TWO63 then return -TWO63 end
  return truncate(n)
end

local function to_c_int(n)
  n = n % TWO32
  if n >= TWO31 then n = n - TWO32 end
  return n
end

-- Big-endian bytes of a non-negative integer below 2^(8*count).
local function be_bytes(n, count)
  local out = {}
  for i = count, 1, -1 do
    local b = n % 256
    out[i] = b
    n = (n - b) / 256
  end
  return char(unpack(out, 1, count))
end

-- Big-endian bytes of an integral double in [-2^63, 2^63), two's complement.
local function int64_bytes(n)
  local hi = floor(n / TWO32)
  local lo = n - hi * TWO32
  if hi < 0 then hi = hi + TWO32 end
  return be_bytes(hi, 4) .. be_bytes(lo, 4)
end

local function is_negative(x)
  if x ~= x then return sub(tostring(x), 1, 1) == "-" end
  return x < 0 or (x == 0 and 1 / x < 0)
end

-- True when (double)(float)x == x.
local function fits_float(x)
  if x ~= x then return false end
  if x == huge or x == -huge or x == 0 then return true end
  if x < 0 then x = -x end
  local m, e = frexp(x)
  if e > 128 then return false end
  if e >= -125 then
    local scaled = m * TWO24
    return scaled == floor(scaled)
  end
  local scaled = x * 2 ^ 149
  return scaled == floor(scaled)
end

-- IEEE-754 single bits of a float-exact number.
local function float_bytes(x)
  local sign = is_negative(x) and 128 or 0
  if x < 0 then x = -x end
  local bits
  if x == huge then
    bits = 255 * 2 ^ 23
  elseif x == 0 then
    bits = 0
  else
    local m, e = frexp(x)
    if e >= -125 then
      bits = (e + 126) * 2 ^ 23 + (m * TWO24 - 2 ^ 23)
    else
      bits = x * 2 ^ 149
    end
  end
  local top = floor(bits / TWO24)
  return char(sign + top) .. be_bytes(bits - top * TWO24, 3)
end

local function double_bytes(x)
  local sign = is_negative(x) and 128 or 0
  local exponent, significand -- significand: the 52-bit field
  if x ~= x then
    exponent, significand = 2047, 2 ^ 51
  else
    if x < 0 then x = -x end
    if x == huge then
      exponent, significand = 2047, 0
    elseif x == 0 then
      exponent, significand = 0, 0
    else
      local m, e = frexp(x)
      if e >= -1021 then
        exponent, significand = e + 1022, m * 2 ^ 53 - 2 ^ 52
      else
        exponent, significand = 0, ldexp(x, 1074)
      end
    end
  end
  local high = floor(significand / TWO32)
  local first = sign + floor(exponent / 16)
  local second = (exponent % 16) * 16 + floor(high / TWO16)
  return char(first, second) .. be_bytes(high % TWO16, 2) .. be_bytes(significand % TWO32, 4)
end

local function float_from_bits(bits)
  local negative = bits >= TWO31
  if negative then bits = bits - TWO31 end
  local exponent = floor(bits / 2 ^ 23)
  local fraction = bits % 2 ^ 23
  local value
  if exponent == 255 then
    if fraction ~= 0 then return negative and NAN_NEGATIVE or NAN_POSITIVE end
    value = huge
  elseif exponent == 0 then
    value = ldexp(fraction, -149)
  else
    value = ldexp(fraction + 2 ^ 23, exponent - 150)
  end
  if negative then return -value end
  return value
end

local function double_from_bits(high, low)
  local negative = high >= TWO31
  if negative then high = high - TWO31 end
  local exponent = floor(high / 2 ^ 20)
  local fraction = (high % 2 ^ 20) * TWO32 + low
  local value
  if exponent == 2047 then
    if fraction ~= 0 then return negative and NAN_NEGATIVE or NAN_POSITIVE end
    value = huge
  elseif exponent == 0 then
    value = ldexp(fraction, -1074)
  else
    value = ldexp(fraction + 2 ^ 52, exponent - 1075)
  end
  if negative then return -value end
  return value
end

-- ===== packing =====

local function pack_integer(n)
  if n >= 0 then
    if n <= 127 then return char(n) end
    if n <= 0xff then return "\204" .. char(n) end
    if n <= 0xffff then return "\205" .. be_bytes(n, 2) end
    if n <= 0xffffffff then return "\206" .. be_bytes(n, 4) end
    return "\207" .. int64_bytes(n)
  end
  if n >= -32 then return char(n + 256) end
  if n >= -128 then return "\208" .. char(n + 256) end
  if n >= -32768 then return "\209" .. be_bytes(n + TWO16, 2) end
  if n >= -TWO31 then return "\210" .. be_bytes(n + TWO32, 4) end
  return "\211" .. int64_bytes(n)
end

local function pack_number(n)
  -- IS_INT64_EQUIVALENT: (int64_t)n == n (NaN and infinities are not)
  if n == n and n >= -TWO63 and n < TWO63 and n == floor(n) then
    return pack_integer(n)
  end
  if fits_float(n) then return "\202" .. float_bytes(n) end
  return "\203" .. double_bytes(n)
end

local function pack_string(s)
  local length = #s
  if length < 32 then return char(0xa0 + length) .. s end
  if length <= 0xff then return "\217" .. char(length) .. s end
  if length <= 0xffff then return "\218" .. be_bytes(length, 2) .. s end
  return "\219" .. be_bytes(length % TWO32, 4) .. s
end

local function container_header(count, fix, code16, code32)
  if count <= 15 then return char(fix + count) end
  if count <= 65535 then return char(code16) .. be_bytes(count, 2) end
  return char(code32) .. be_bytes(count % TWO32, 4)
end

-- table_is_an_array: keys exactly 1..n, each a number equal to a C int.
local function is_array(t)
  local count, max = 0, 0
  for k in next, t do
    if type(k) ~= "number" or k <= 0 or k > INT_MAX or k ~= floor(k) then
      return false
    end
    if k > max then max = k end
    count = count + 1
  end
  return max == count
end

-- out collects the pieces; top is the C packer's Lua stack height with value on top.
local function pack_value(out, value, level, top)
  local t = type(value)
  if t == "table" and level == MAX_NESTING then t = "nil" end
  if t == "string" then
    out[#out + 1] = pack_string(value)
  elseif t == "boolean" then
    out[#out + 1] = value and "\195" or "\194"
  elseif t == "number" then
    out[#out + 1] = pack_number(value)
  elseif t == "table" then
    if top + 2 > MAX_C_STACK then stack_overflow("in function table_is_an_array") end
    if is_array(value) then
      local length = #value
      out[#out + 1] = container_header(length, 0x90, 0xdc, 0xdd)
      if top + 1 > MAX_C_STACK then stack_overflow("in function mp_encode_lua_table_as_array") end
      for i = 1, length do
        pack_value(out, value[i], level + 1, top + 1)
      end
    else
      if top + 3 > MAX_C_STACK then stack_overflow("in function mp_encode_lua_table_as_map") end
      local count = 0
      for _ in next, value do count = count + 1 end
      out[#out + 1] = container_header(count, 0x80, 0xde, 0xdf)
      for k, v in next, value do
        pack_value(out, k, level + 1, top + 3)
        pack_value(out, v, level + 1, top + 2)
      end
    end
  else
    out[#out + 1] = "\192"
  end
end

local function pack(count, ...)
  if count == 0 then fail("bad argument #0 to 'pack' (MessagePack pack needs input.)") end
  if count + count > MAX_C_STACK then
    fail("bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)")
  end
  local out = {}
  for i = 1, count do
    pack_value(out, (select(i, ...)), 0, count + i)
  end
  return concat(out)
end

-- ===== unpacking =====

local EOF, BADFMT = {}, {}

-- The decoder reads c.s from c.pos (1-based); running out of bytes or an unknown type
-- unwinds with EOF or BADFMT (reported by the caller), stack overflows fail at once.
local function need(c, n)
  if c.length - c.pos + 1 < n then error(EOF, 0) end
end

local function be_uint(c, offset, n)
  local value, at = 0, c.pos + offset
  for i = 0, n - 1 do
    value = value * 256 + byte(c.s, at + i)
  end
  return value
end

local function be_int(c, offset, n)
  local value = be_uint(c, offset, n)
  local half = 2 ^ (8 * n - 1)
  if value >= half then value = value - 2 * half end
  return value
end

-- A 64-bit two's complement integer, as the C code pushes it (a double).
local function be_int64(c, offset)
  local high, low = be_uint(c, offset, 4), be_uint(c, offset + 4, 4)
  if high >= TWO31 then high = high - TWO32 end
  return high * TWO32 + low
end

-- Fixed-size numbers: type byte -> size with the type byte, reader of what follows it.
local FIXED = {
  [0xcc] = { 2, function(c) return be_uint(c, 1, 1) end },
  [0xcd] = { 3, function(c) return be_uint(c, 1, 2) end },
  [0xce] = { 5, function(c) return be_uint(c, 1, 4) end },
  [0xcf] = { 9, function(c) return be_int64(c, 1) end }, -- uint 64 read as int64, like C
  [0xd0] = { 2, function(c) return be_int(c, 1, 1) end },
  [0xd1] = { 3, function(c) return be_int(c, 1, 2) end },
  [0xd2] = { 5, function(c) return be_int(c, 1, 4) end },
  [0xd3] = { 9, function(c) return be_int64(c, 1) end },
  [0xca] = { 5, function(c) return float_from_bits(be_uint(c, 1, 4)) end },
  [0xcb] = { 9, function(c) return double_from_bits(be_uint(c, 1, 4), be_uint(c, 5, 4)) end },
}
-- Strings and containers with a length field: type byte -> length size.
local STR_LENGTHS = { [0xd9] = 1, [0xda] = 2, [0xdb] = 4 }
local ARRAY_LENGTHS = { [0xdc] = 2, [0xdd] = 4 }
local MAP_LENGTHS = { [0xde] = 2, [0xdf] = 4 }
local CONSTANTS = { [0xc2] = false, [0xc3] = true }

local decode

local function take_string(c, header, length)
  need(c, header + length)
  local text = sub(c.s, c.pos + header, c.pos + header + length - 1)
  c.pos = c.pos + header + length
  return text
end

local function decode_array(c, count, top)
  local array = {}
  if top + 2 > MAX_C_STACK then stack_overflow("in function mp_decode_to_lua_array") end
  for i = 1, count do
    array[i] = decode(c, top + 2)
  end
  return array
end

local function decode_map(c, count, top)
  local map = {}
  for _ = 1, count do
    local key = decode(c, top + 1)
    local value = decode(c, top + 2)
    if key == nil then fail_bare("table index is nil") end
    if key ~= key then fail_bare("table index is NaN") end
    map[key] = value
  end
  return map
end

-- Reads a length field of size bytes after the type byte, then skips both.
local function length_field(c, size)
  need(c, 1 + size)
  local length = be_uint(c, 1, size)
  c.pos = c.pos + 1 + size
  return length
end

-- One value; top is the C decoder's stack height before it is pushed.
decode = function(c, top)
  need(c, 1)
  if top + 1 > MAX_C_STACK then
    stack_overflow("too many return values at once; use unpack_one or unpack_limit instead.")
  end
  local code = byte(c.s, c.pos)
  local fixed = FIXED[code]
  if fixed then
    need(c, fixed[1])
    local value = fixed[2](c)
    c.pos = c.pos + fixed[1]
    return value
  end
  if code < 0x80 then -- positive fixint
    c.pos = c.pos + 1
    return code
  end
  if code >= 0xe0 then -- negative fixint
    c.pos = c.pos + 1
    return code - 256
  end
  if code >= 0xa0 and code <= 0xbf then return take_string(c, 1, code - 0xa0) end
  if code <= 0x9f then -- fixmap 0x80-0x8f, fixarray 0x90-0x9f
    c.pos = c.pos + 1
    if code >= 0x90 then return decode_array(c, code - 0x90, top) end
    return decode_map(c, code - 0x80, top)
  end
  if code == 0xc0 then
    c.pos = c.pos + 1
    return nil
  end
  local constant = CONSTANTS[code]
  if constant ~= nil then
    c.pos = c.pos + 1
    return constant
  end
  local size = STR_LENGTHS[code]
  if size then
    need(c, 1 + size)
    return take_string(c, 1 + size, be_uint(c, 1, size))
  end
  size = ARRAY_LENGTHS[code]
  if size then return decode_array(c, length_field(c, size), top) end
  size = MAP_LENGTHS[code]
  if size then return decode_map(c, length_field(c, size), top) end
  error(BADFMT, 0)
end

-- Answers n values of t, beyond what unpack() alone returns (it stops at 7997).
local function spread(t, n)
  if n <= 7990 then return unpack(t, 1, n) end
  return t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], unpack(t, 11, n)
end

local function check_string(v, present, n, name)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return tostring(v) end
  fail(format("bad argument #%d to '%s' (string expected, got %s)", n, name,
    present and t or "no value"))
end

local function check_integer(v, present, n, name)
  local num = v
  if type(num) ~= "number" then
    num = type(num) == "string" and tonumber(num) or nil
    if num == nil then
      fail(format("bad argument #%d to '%s' (number expected, got %s)", n, name,
        present and type(v) or "no value"))
    end
  end
  return to_lua_integer(num)
end

local function opt_integer(v, present, n, name, default)
  if v == nil then return default end
  return check_integer(v, present, n, name)
end

-- mp_unpack_full: returns the count and a table of the results.
local function unpack_full(name, text, present, limit, offset, top)
  local s = check_string(text, present, 1, name)
  local length = #s
  if offset < 0 or limit < 0 then
    fail(format("Invalid request to unpack with offset of %d and limit of %d.",
      to_c_int(offset), to_c_int(length)))
  elseif offset > length then
    fail(format("Start offset %d greater than input length %d.", to_c_int(offset),
      to_c_int(length)))
  end
  local decode_all = limit == 0 and offset == 0
  if decode_all then limit = INT_MAX end

  local cursor = { s = s, pos = offset + 1, length = length }
  local results, count = {}, 0
  while cursor.pos <= length and count < limit do
    local ok, value = pcall(decode, cursor, top + count)
    if not ok then
      if value == EOF then fail("Missing bytes in input.") end
      if value == BADFMT then fail("Bad data format in input.") end
      error(value, 0)
    end
    count = count + 1
    results[count] = value
  end
  if decode_all then return count, results end

  if top + count + 1 > MAX_C_STACK then stack_overflow("in function mp_unpack_full") end
  for i = count, 1, -1 do results[i + 1] = results[i] end
  results[1] = cursor.pos > length and -1 or cursor.pos - 1
  return count + 1, results
end

-- Entry points: run body and answer its (count, results), re-raising failures at the
-- caller's level.
local function entry(body)
  return function(...)
    local ok, count, results = pcall(body, select("#", ...), ...)
    if not ok then raise(count) end
    return spread(results, count)
  end
end

local cmsgpack = {}

cmsgpack.pack = entry(function(count, ...)
  return 1, { pack(count, ...) }
end)

cmsgpack.unpack = entry(function(count, text)
  return unpack_full("unpack", text, count >= 1, 0, 0, count)
end)

cmsgpack.unpack_one = entry(function(count, text, offset)
  offset = opt_integer(offset, count >= 2, 2, "unpack_one", 0)
  return unpack_full("unpack_one", text, count >= 1, 1, offset, 1)
end)

cmsgpack.unpack_limit = entry(function(count, text, limit, offset)
  limit = check_integer(limit, count >= 2, 2, "unpack_limit")
  offset = opt_integer(offset, count >= 3, 3, "unpack_limit", 0)
  return unpack_full("unpack_limit", text, count >= 1, limit, offset, 1)
end)

cmsgpack._NAME = "cmsgpack"
cmsgpack._VERSION = "lua-cmsgpack 0.4.0"
cmsgpack._COPYRIGHT = "Copyright (C) 2012, Redis Ltd."
cmsgpack._DESCRIPTION = "MessagePack C implementation for Lua"

return cmsgpack
