-- bit: LuaBitOp 1.0.2 as Valkey builds it (deps/lua/src/lua_bit.c), in plain Lua 5.1.
--
-- The chunk returns the module table and creates no global. Operations work on 32-bit
-- words held as unsigned doubles in [0, 2^32) and answer signed 32-bit numbers. An
-- argument becomes a word the way the C code does it: add 2^52 + 2^51 to the double and
-- keep the low 32 bits of its IEEE-754 pattern (rounding to nearest even, wrapping mod 2^32).

local type, tonumber, select, error = type, tonumber, select, error
local frexp, ldexp, floor, huge = math.frexp, math.ldexp, math.floor, math.huge
local format, sub = string.format, string.sub

local TWO32 = 4294967296
local TWO31 = 2147483648
local MAGIC = 6755399441055744 -- 2^52 + 2^51
local TWO53 = 9007199254740992
local TWO51 = 2251799813685248

-- The low 32 bits of the significand field of a double.
local function low_significand_bits(x)
  if x ~= x or x == huge or x == -huge or x == 0 then return 0 end
  if x < 0 then x = -x end
  local m, e = frexp(x)
  local significand = e >= -1021 and m * TWO53 or ldexp(x, 1074)
  return significand % TWO32
end

-- barg(): argument i as a word; raises luaL_typerror (level 3: the caller of the entry).
local function word(name, i, present, v)
  local n = v
  if type(n) == "number" then
    -- integers within 2^51 need no rounding: the low 32 bits are n mod 2^32
    if n % 1 == 0 and n >= -TWO51 and n <= TWO51 then return n % TWO32 end
  else
    n = type(n) == "string" and tonumber(n) or nil
    if n == nil then
      local got = present and type(v) or "no value"
      error(format("bad argument #%d to '%s' (number expected, got %s)", i, name, got), 3)
    end
  end
  return low_significand_bits(n + MAGIC)
end

local function signed(w)
  if w >= TWO31 then return w - TWO32 end
  return w
end

-- Lookup tables: the result of op for one nibble of each operand.
local function build(op)
  local t = {}
  for a = 0, 15 do
    for b = 0, 15 do
      local r, bit, x, y = 0, 1, a, b
      for _ = 1, 4 do
        if op(x % 2 == 1, y % 2 == 1) then r = r + bit end
        x, y, bit = floor(x / 2), floor(y / 2), bit * 2
      end
      t[a * 16 + b] = r
    end
  end
  return t
end

local AND = build(function(x, y) return x and y end)
local OR = build(function(x, y) return x or y end)
local XOR = build(function(x, y) return x ~= y end)

local function combine(lookup, a, b)
  local r, place = 0, 1
  for _ = 1, 8 do
    local x, y = a % 16, b % 16
    r = r + lookup[x * 16 + y] * place
    a, b, place = (a - x) / 16, (b - y) / 16, place * 16
  end
  return r
end

-- band/bor/bxor: the first argument, then the others from the last one down (as the C
-- loop reads them, which decides which bad argument is reported).
local function fold(name, lookup)
  return function(...)
    local count = select("#", ...)
    local acc = word(name, 1, count >= 1, (...))
    for i = count, 2, -1 do
      acc = combine(lookup, acc, word(name, i, true, (select(i, ...))))
    end
    return signed(acc)
  end
end

local function shift(name, op)
  return function(...)
    local count = select("#", ...)
    local b = word(name, 1, count >= 1, (...))
    local n = word(name, 2, count >= 2, (select(2, ...))) % 32
    return signed(op(b, n))
  end
end

local bit = {}

bit.tobit = function(...)
  return signed(word("tobit", 1, select("#", ...) >= 1, (...)))
end

bit.bnot = function(...)
  return signed(TWO32 - 1 - word("bnot", 1, select("#", ...) >= 1, (...)))
end

bit.band = fold("band", AND)
bit.bor = fold("bor", OR)
bit.bxor = fold("bxor", XOR)

bit.lshift = shift("lshift", function(b, n) return (b * 2 ^ n) % TWO32 end)
bit.rshift = shift("rshift", function(b, n) return floor(b / 2 ^ n) end)
bit.arshift = shift("arshift", function(b, n) return floor(signed(b) / 2 ^ n) % TWO32 end)
-- n == 0 leaves b unchanged (x86 masks the 32-bit shift count of the other half)
bit.rol = shift("rol", function(b, n)
  if n == 0 then return b end
  return (b * 2 ^ n) % TWO32 + floor(b / 2 ^ (32 - n))
end)
bit.ror = shift("ror", function(b, n)
  if n == 0 then return b end
  return floor(b / 2 ^ n) + (b * 2 ^ (32 - n)) % TWO32
end)

bit.bswap = function(...)
  local b = word("bswap", 1, select("#", ...) >= 1, (...))
  local b0, b1, b2 = b % 256, floor(b / 256) % 256, floor(b / 65536) % 256
  local b3 = floor(b / 16777216)
  return signed(((b0 * 256 + b1) * 256 + b2) * 256 + b3)
end

bit.tohex = function(...)
  local count = select("#", ...)
  local b = word("tohex", 1, count >= 1, (...))
  local n = 8
  if count >= 2 then n = signed(word("tohex", 2, true, (select(2, ...)))) end
  local digits = "%08x"
  if n == -TWO31 then n = -TWO31 + 1 end
  if n < 0 then
    n = -n
    digits = "%08X"
  end
  if n > 8 then n = 8 end
  if n == 0 then return "" end
  return sub(format(digits, b), -n)
end

return bit
