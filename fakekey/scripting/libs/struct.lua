-- struct: Roberto Ierusalimschy's struct library as Valkey builds it (deps/lua/src/
-- lua_struct.c, with Redis' fixes), in plain Lua 5.1. The chunk returns the module table
-- and creates no global.
--
-- Formats: "<" ">" little/big endian (little by default, as on x86-64), "!n" alignment
-- (default 8), "x" a zero byte, "b"/"B" 1 byte, "h"/"H" 2, "l"/"L"/"T" 8, "i"/"In" n bytes
-- (default 4, at most 32), "f" float, "d" double, "cn" n characters ("c0": the whole string
-- when packing, the previous number as the length when unpacking), "s" a zero-terminated
-- string, " " ignored. The quirks of the C code on x86-64 are kept: integers go through
-- a 64-bit value (wider fields are zero-filled, sign bits beyond 64 follow x86 shift
-- masking), the format stops at a NUL byte, and the Lua C stack limit (8000 slots) bounds
-- the number of unpacked results. Errors carry the caller's position like luaL_error does.

local type, select, error, pcall, tostring, tonumber, unpack, setmetatable, getmetatable =
  type, select, error, pcall, tostring, tonumber, unpack, setmetatable, getmetatable
local byte, char, sub, find, format, rep, reverse, lower = string.byte, string.char,
  string.sub, string.find, string.format, string.rep, string.reverse, string.lower
local floor, frexp, ldexp, huge = math.floor, math.frexp, math.ldexp, math.huge
local concat = table.concat

local MAXINTSIZE = 32
local MAXALIGN = 8
local MAX_C_STACK = 8000
local INT_MAX = 2147483647
local TWO23, TWO24, TWO32 = 8388608, 16777216, 4294967296
local TWO31, TWO63, TWO64 = 2147483648, 9223372036854775808, 18446744073709551616

local NAN_NEGATIVE, NAN_POSITIVE = 0 / 0, -(0 / 0)
if tostring(NAN_NEGATIVE) ~= "-nan" then
  NAN_NEGATIVE, NAN_POSITIVE = NAN_POSITIVE, NAN_NEGATIVE
end

local FAILURE = {}
local function fail(message)
  error(setmetatable({ message = message }, FAILURE), 0)
end

local function argerror(n, name, extramsg)
  fail(format("bad argument #%d to '%s' (%s)", n, name, extramsg))
end

local function typename(v, present)
  if not present then return "no value" end
  return type(v)
end

-- ===== argument checks (lauxlib) =====

local function check_number(v, present, n, name)
  if type(v) == "number" then return v end
  local num = type(v) == "string" and tonumber(v) or nil
  if num == nil then argerror(n, name, "number expected, got " .. typename(v, present)) end
  return num
end

local function check_string(v, present, n, name)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return tostring(v) end
  argerror(n, name, "string expected, got " .. typename(v, present))
end

local function truncate(x)
  if x >= 0 then return floor(x) end
  return -floor(-x)
end

-- lua_tointeger on x86-64: truncation, INT64_MIN out of range.
local function to_lua_integer(x)
  if x ~= x or x >= TWO63 or x < -TWO63 then return -TWO63 end
  return truncate(x)
end

-- A double converted to uint64 the way gcc compiles it on x86-64, as (high, low) words.
local function to_uint64_words(x)
  local value
  if x < 0 then
    value = x >= -TWO63 and truncate(x) or -TWO63 -- (uint64_t)(int64_t)x
  elseif x >= TWO63 then
    local rest = x - TWO63
    value = rest < TWO63 and truncate(rest) + TWO63 or 0
  elseif x ~= x then
    value = TWO63
  else
    value = truncate(x)
  end
  local high = floor(value / TWO32)
  local low = value - high * TWO32
  if high < 0 then high = high + TWO32 end
  return high, low
end

-- (size_t)x for a lua_Number (used for the "c0" length).
local function to_size(x)
  if x ~= x then return TWO63 end
  if x >= TWO64 then return 0 end
  if x <= -1 then return TWO64 end -- wraps to a huge size
  if x < 0 then return 0 end
  return truncate(x)
end

-- ===== IEEE-754 =====

local function is_negative(x)
  if x ~= x then return sub(tostring(x), 1, 1) == "-" end
  return x < 0 or (x == 0 and 1 / x < 0)
end

local function round_half_even(x)
  local whole = floor(x)
  local fraction = x - whole
  if fraction > 0.5 or (fraction == 0.5 and whole % 2 == 1) then return whole + 1 end
  return whole
end

-- The bits of (float)x, rounding to nearest even like the C cast.
local function float_bits(x)
  local sign = is_negative(x) and TWO31 or 0
  if x ~= x then return sign + 0x7FC00000 end
  if x < 0 then x = -x end
  if x == huge then return sign + 0x7F800000 end
  if x == 0 then return sign end
  local m, e = frexp(x)
  local bits
  if e > 128 then
    bits = 0x7F800000
  elseif e >= -125 then
    bits = (e + 126) * TWO23 + round_half_even(m * TWO24) - TWO23
    if bits > 0x7F800000 then bits = 0x7F800000 end
  else
    bits = round_half_even(ldexp(x, 149)) -- subnormal, may round up to the smallest normal
  end
  return sign + bits
end

local function float_from_bits(bits)
  local negative = bits >= TWO31
  if negative then bits = bits - TWO31 end
  local exponent = floor(bits / TWO23)
  local fraction = bits % TWO23
  local value
  if exponent == 255 then
    if fraction ~= 0 then return negative and NAN_NEGATIVE or NAN_POSITIVE end
    value = huge
  elseif exponent == 0 then
    value = ldexp(fraction, -149)
  else
    value = ldexp(fraction + TWO23, exponent - 150)
  end
  return negative and -value or value
end

-- The bits of a double as (high, low) words.
local function double_words(x)
  local sign = is_negative(x) and TWO31 or 0
  local exponent, significand
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
  return sign + exponent * 2 ^ 20 + high, significand - high * TWO32
end

local function double_from_words(high, low)
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
  return negative and -value or value
end

-- ===== bytes =====

-- The count least significant bytes of a word, least significant first.
local function word_bytes(word, count, into, at)
  for i = 0, count - 1 do
    local b = word % 256
    into[at + i] = b
    word = (word - b) / 256
  end
end

-- size bytes of a 64-bit value in the given order (bytes beyond the 8th are zero).
local function integer_bytes(high, low, size, little)
  local lsb_first = {}
  word_bytes(low, 4, lsb_first, 1)
  word_bytes(high, 4, lsb_first, 5)
  for i = 9, size do lsb_first[i] = 0 end
  local out = {}
  for i = 1, size do
    out[i] = little and lsb_first[i] or lsb_first[size + 1 - i]
  end
  return char(unpack(out, 1, size))
end

local function ordered(lsb_first_string, little)
  if little then return lsb_first_string end
  return reverse(lsb_first_string)
end

local function float_string(x, little)
  local bytes = {}
  word_bytes(float_bits(x), 4, bytes, 1)
  return ordered(char(unpack(bytes, 1, 4)), little)
end

local function double_string(x, little)
  local high, low = double_words(x)
  local bytes = {}
  word_bytes(low, 4, bytes, 1)
  word_bytes(high, 4, bytes, 5)
  return ordered(char(unpack(bytes, 1, 8)), little)
end

local function le_word(s, at)
  local b1, b2, b3, b4 = byte(s, at, at + 3)
  return ((b4 * 256 + b3) * 256 + b2) * 256 + b1
end

local function in_order(data, pos, size, little)
  local raw = sub(data, pos + 1, pos + size)
  if little then return raw end
  return reverse(raw)
end

-- getinteger(): the bytes shifted into a 64-bit value, then sign-extended from bit
-- size*8-1 (taken mod 64, as the x86 shift does), then converted to a double.
local function read_integer(data, pos, size, little, signed)
  local high, low = 0, 0
  for i = 0, size - 1 do
    local b = byte(data, pos + 1 + (little and size - 1 - i or i))
    high = (high * 256 + floor(low / TWO24)) % TWO32
    low = (low % TWO24) * 256 + b
  end
  if not signed then return high * TWO32 + low end
  local shift = (size * 8 - 1) % 64
  if shift >= 32 then
    local bit = 2 ^ (shift - 32)
    if high >= bit then high = high % bit + (TWO32 - bit) end
  else
    local bit = 2 ^ shift
    if high > 0 or low >= bit then
      high = TWO32 - 1
      low = low % bit + (TWO32 - bit)
    end
  end
  if high >= TWO31 then high = high - TWO32 end
  return high * TWO32 + low
end

-- ===== formats =====

local function is_digit(c) return c ~= nil and c >= 48 and c <= 57 end

local function is_alnum(c)
  return is_digit(c) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122)
end

local function is_power_of_2(x)
  if x <= 0 then return false end
  while x % 2 == 0 do x = x / 2 end
  return x == 1
end

-- getnum(): a decimal number at i (or default), and the index after it.
local function read_number(fmt, i, default)
  local c = byte(fmt, i)
  if not is_digit(c) then return default, i end
  local a = 0
  repeat
    local digit = c - 48
    if a > floor(INT_MAX / 10) or a * 10 > INT_MAX - digit then
      fail("integral size overflow")
    end
    a = a * 10 + digit
    i = i + 1
    c = byte(fmt, i)
  until not is_digit(c)
  return a, i
end

local FIXED_SIZES = {
  B = 1, b = 1, H = 2, h = 2, L = 8, l = 8, T = 8, f = 4, d = 8, x = 1,
}
local INTEGER_OPTIONS = { b = true, B = true, h = true, H = true, l = true, L = true, T = true,
  i = true, I = true }

-- optsize(): the size of option opt and the index after its digits.
local function option_size(opt, fmt, i)
  local fixed = FIXED_SIZES[opt]
  if fixed then return fixed, i end
  if opt == "c" then return read_number(fmt, i, 1) end
  if opt == "i" or opt == "I" then
    local size
    size, i = read_number(fmt, i, 4)
    if size > MAXINTSIZE then
      fail(format("integral size %d is larger than limit of %d", size, MAXINTSIZE))
    end
    return size, i
  end
  return 0, i
end

local function small_and(a, m) -- a & m for m < 64
  local result, bit = 0, 1
  a = a % 64
  while m > 0 do
    if a % 2 == 1 and m % 2 == 1 then result = result + bit end
    a, m, bit = floor(a / 2), floor(m / 2), bit * 2
  end
  return result
end

-- gettoalign(): padding before an option of this size at offset len.
local function padding(len, header, opt, size)
  if size == 0 or opt == "c" then return 0 end
  if size > header.align then size = header.align end
  return small_and(size - small_and(len, size - 1), size - 1)
end

-- controloptions(): endianness, alignment and spaces; anything else is invalid.
local function control(opt, fmt, i, header, name)
  if opt == " " then return i end
  if opt == ">" then
    header.little = false
    return i
  end
  if opt == "<" then
    header.little = true
    return i
  end
  if opt == "!" then
    local align
    align, i = read_number(fmt, i, MAXALIGN)
    if not is_power_of_2(align) then fail(format("alignment %d is not a power of 2", align)) end
    header.align = align
    return i
  end
  argerror(1, name, format("invalid format option '%s'", opt))
end

-- The format as C reads it: up to its first NUL byte.
local function c_string(fmt)
  local nul = find(fmt, "%z")
  if nul then return sub(fmt, 1, nul - 1) end
  return fmt
end

-- ===== pack / unpack / size =====

local function pack(count, ...)
  local fmt = c_string(check_string((...), count >= 1, 1, "pack"))
  local header = { little = true, align = 1 }
  local out, n = {}, 0
  local args = { ... }
  local arg, total, i = 2, 0, 1
  -- arguments past the last one read as nil (the C code's nil marker sits there)
  local function next_arg()
    local value = args[arg]
    arg = arg + 1
    return value
  end
  while i <= #fmt do
    local opt = sub(fmt, i, i)
    local size
    size, i = option_size(opt, fmt, i + 1)
    local pad = padding(total, header, opt, size)
    total = total + pad
    if pad > 0 then
      n = n + 1
      out[n] = rep("\0", pad)
    end
    local piece
    if INTEGER_OPTIONS[opt] then
      local at = arg
      local high, low = to_uint64_words(check_number(next_arg(), true, at, "pack"))
      piece = integer_bytes(high, low, size, header.little)
    elseif opt == "x" then
      piece = "\0"
    elseif opt == "f" then
      local at = arg
      piece = float_string(check_number(next_arg(), true, at, "pack"), header.little)
    elseif opt == "d" then
      local at = arg
      piece = double_string(check_number(next_arg(), true, at, "pack"), header.little)
    elseif opt == "c" or opt == "s" then
      local at = arg
      local s = check_string(next_arg(), true, at, "pack")
      if size == 0 then size = #s end
      -- the C code reports the argument after the string here
      if #s < size then argerror(arg, "pack", "string too short") end
      piece = sub(s, 1, size)
      if opt == "s" then
        piece = piece .. "\0"
        size = size + 1
      end
    else
      i = control(opt, fmt, i, header, "pack")
    end
    if piece then
      n = n + 1
      out[n] = piece
    end
    total = total + size
  end
  return 1, { concat(out, "", 1, n) }
end

local function unpack_format(count, fmt, data, offset)
  fmt = c_string(check_string(fmt, count >= 1, 1, "unpack"))
  data = check_string(data, count >= 2, 2, "unpack")
  if offset == nil then
    offset = 1
  else
    offset = to_lua_integer(check_number(offset, true, 3, "unpack"))
  end
  if offset == 0 then argerror(3, "unpack", "offset must be 1 or greater") end
  -- pos is a size_t: a negative offset wraps to a huge one no data is long enough for
  local wrapped = offset < 0
  local pos, length = offset - 1, #data
  local header = { little = true, align = 1 }
  local results, n, i = {}, 0, 1
  local function check_room(size)
    if wrapped or size > length or pos > length - size then
      argerror(2, "unpack", "data string too short")
    end
  end
  while i <= #fmt do
    local opt = sub(fmt, i, i)
    local size
    size, i = option_size(opt, fmt, i + 1)
    pos = pos + padding(pos, header, opt, size)
    check_room(size)
    if count + n + 2 > MAX_C_STACK then fail("stack overflow (too many results)") end
    if INTEGER_OPTIONS[opt] then
      n = n + 1
      results[n] = read_integer(data, pos, size, header.little, opt == lower(opt))
    elseif opt == "f" then
      n = n + 1
      results[n] = float_from_bits(le_word(in_order(data, pos, 4, header.little), 1))
    elseif opt == "d" then
      local raw = in_order(data, pos, 8, header.little)
      n = n + 1
      results[n] = double_from_words(le_word(raw, 5), le_word(raw, 1))
    elseif opt == "c" then
      if size == 0 then
        local previous = n > 0 and results[n] or nil
        if type(previous) == "string" then previous = tonumber(previous) end
        if previous == nil then fail("format 'c0' needs a previous size") end
        size = to_size(previous)
        results[n] = nil
        n = n - 1
        check_room(size)
      end
      n = n + 1
      results[n] = sub(data, pos + 1, pos + size)
    elseif opt == "s" then
      local nul = find(data, "\0", pos + 1, true)
      if nul == nil then fail("unfinished string in data") end
      size = nul - pos
      n = n + 1
      results[n] = sub(data, pos + 1, nul - 1)
    elseif opt ~= "x" then
      i = control(opt, fmt, i, header, "unpack")
    end
    pos = pos + size
  end
  n = n + 1
  results[n] = pos + 1
  return n, results
end

local function size_of(count, fmt)
  fmt = c_string(check_string(fmt, count >= 1, 1, "size"))
  local header = { little = true, align = 1 }
  local pos, i = 0, 1
  while i <= #fmt do
    local opt = sub(fmt, i, i)
    local size
    size, i = option_size(opt, fmt, i + 1)
    pos = pos + padding(pos, header, opt, size)
    if opt == "s" then
      argerror(1, "size", "option 's' has no fixed size")
    elseif opt == "c" and size == 0 then
      argerror(1, "size", "option 'c0' has no fixed size")
    end
    if not is_alnum(byte(opt)) then i = control(opt, fmt, i, header, "size") end
    pos = pos + size
  end
  return 1, { pos }
end

-- Answers n values of t, beyond what unpack() alone returns (it stops at 7997).
local function spread(t, n)
  if n <= 7990 then return unpack(t, 1, n) end
  return t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], unpack(t, 11, n)
end

-- Entry points: run body and answer its (count, results); failures are re-raised at the
-- caller's level, foreign errors untouched.
local function entry(body)
  return function(...)
    local ok, count, results = pcall(body, select("#", ...), ...)
    if not ok then
      if getmetatable(count) == FAILURE then error(count.message, 2) end
      error(count, 0)
    end
    return spread(results, count)
  end
end

return {
  pack = entry(pack),
  unpack = entry(unpack_format),
  size = entry(size_of),
}
