-- cjson: Valkey's lua-cjson 2.1.0 (deps/lua/src/lua_cjson.c) rewritten in plain Lua 5.1.
--
-- The chunk returns the module table. It creates no global. cjson.null must be a userdata
-- (Valkey's is a NULL lightuserdata): the chunk takes newproxy as its first argument, or
-- reads the base library's newproxy while it loads.
--
-- Behaviour kept from the C library, byte for byte:
-- * numbers are written with "%.14g" (encode_number_precision changes the 14);
-- * a table is an array when all its keys are integers >= 1, unless it is "excessively
--   sparse"; every other table (the empty one included) is an object;
-- * depth limits and the Lua C stack limit (LUAI_MAXCSTACK, 8000 slots) give the same
--   "excessive nesting" / "too many nested data structures" errors at the same depth;
-- * decoding reads numbers as glibc's strtod does (hex, inf, nan when allowed) and stops
--   at a NUL byte, as the C parser does on its NUL-terminated buffer.
-- Errors carry the caller's position like luaL_error does (level 2 at the entry points).

local newproxy_arg = ...

local type, next, select, error, pcall, tostring, tonumber, rawget, setmetatable, getmetatable =
  type, next, select, error, pcall, tostring, tonumber, rawget, setmetatable, getmetatable
local byte, char, sub, find, format, gsub, lower = string.byte, string.char, string.sub,
  string.find, string.format, string.gsub, string.lower
local floor, huge = math.floor, math.huge
local concat = table.concat

local INT_MAX = 2147483647
local MAX_C_STACK = 8000 -- LUAI_MAXCSTACK: lua_checkstack fails beyond it

-- cjson.null: a userdata that prints like Valkey's NULL lightuserdata; its metatable is
-- hidden (getmetatable answers false where Valkey answers nil).
local null
do
  local make = newproxy_arg
  if type(make) ~= "function" then
    local ok, found = pcall(function() return newproxy end)
    make = ok and found or nil
  end
  if type(make) ~= "function" then
    error("cjson.lua needs newproxy (pass it as the chunk's first argument)", 0)
  end
  null = make(true)
  local meta = getmetatable(null)
  meta.__tostring = function() return "userdata: (nil)" end
  meta.__metatable = false
end

-- Errors raised inside the library are wrapped so the entry point can re-raise them at
-- the caller's level; foreign errors (script kill, out of memory) pass through untouched.
local FAILURE = {}
local function fail(message)
  error(setmetatable({ message = message }, FAILURE), 0)
end

local function raise(err)
  if getmetatable(err) == FAILURE then
    error(err.message, 3)
  end
  error(err, 0)
end

local function argerror(n, name, extramsg)
  fail(format("bad argument #%d to '%s' (%s)", n, name, extramsg))
end

local function typename(v, present)
  if not present then return "no value" end
  return type(v)
end

-- luaL_checkinteger: a number or a numeric string, truncated like a C cast to lua_Integer.
local function to_lua_integer(n)
  if n ~= n or n >= 9223372036854775808 or n < -9223372036854775808 then
    return -9223372036854775808
  end
  if n >= 0 then return floor(n) end
  return -floor(-n)
end

-- (int)lua_Integer: keep the low 32 bits, signed.
local function to_c_int(n)
  n = n % 4294967296
  if n >= 2147483648 then n = n - 4294967296 end
  return n
end

local function check_integer(v, present, n, name)
  local num = v
  if type(num) ~= "number" then
    num = type(num) == "string" and tonumber(num) or nil
    if num == nil then
      argerror(n, name, "number expected, got " .. typename(v, present))
    end
  end
  return to_c_int(to_lua_integer(num))
end

local function check_string(v, present, n, name)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return tostring(v) end
  argerror(n, name, "string expected, got " .. typename(v, present))
end

-- ===== encoding =====

local ESCAPES = {}
for code = 0, 31 do
  ESCAPES[char(code)] = format("\\u%04x", code)
end
ESCAPES["\b"], ESCAPES["\t"], ESCAPES["\n"], ESCAPES["\f"], ESCAPES["\r"] =
  "\\b", "\\t", "\\n", "\\f", "\\r"
ESCAPES['"'], ESCAPES["\\"], ESCAPES["/"], ESCAPES["\127"] = '\\"', "\\\\", "\\/", "\\u007f"
local ESCAPED = '[%z\1-\31"\\/\127]'

local function encode_number(cfg, n)
  if n ~= n or n == huge or n == -huge then
    local mode = cfg.encode_invalid_numbers
    if mode == 0 then
      fail("Cannot serialise number: must not be NaN or Inf")
    elseif mode == 2 then
      return "null"
    elseif n ~= n then
      return "nan"
    end
  end
  return format(cfg.number_format, n)
end

-- lua_array_length: the array size, or -1 when the table must be an object.
local function array_length(cfg, t)
  local max, items = 0, 0
  for k in next, t do
    if type(k) ~= "number" or k < 1 or floor(k) ~= k then
      return -1
    end
    if k > max then
      -- the C code stores k in an int: out of range it becomes INT_MIN on x86
      if k > INT_MAX then max = -2147483648 else max = k end
    end
    items = items + 1
  end
  local ratio = cfg.encode_sparse_ratio
  if ratio > 0 and max > to_c_int(items * ratio) and max > cfg.encode_sparse_safe then
    if cfg.encode_sparse_convert == 0 then
      fail("Cannot serialise table: excessively sparse array")
    end
    return -1
  end
  return max
end

local function new_encoder(cfg)
  local buf, n -- the output pieces

  local function put(piece)
    n = n + 1
    buf[n] = piece
  end

  local function put_string(text)
    put('"')
    put(find(text, ESCAPED) and (gsub(text, ESCAPED, ESCAPES)) or text)
    put('"')
  end

  local encode_value

  local function put_array(t, length, depth, slots)
    put("[")
    for i = 1, length do
      if i > 1 then put(",") end
      encode_value(rawget(t, i), depth, slots + 1)
    end
    put("]")
  end

  local function put_object(t, depth, slots)
    put("{")
    local first = true
    for k, v in next, t do
      if not first then put(",") end
      first = false
      local kt = type(k)
      if kt == "number" then
        put('"')
        put(encode_number(cfg, k))
        put('":')
      elseif kt == "string" then
        put_string(k)
        put(":")
      else
        fail("Cannot serialise " .. kt .. ": table key must be a number or string")
      end
      encode_value(v, depth, slots + 2)
    end
    put("}")
  end

  -- slots: what the C encoder would hold on its Lua stack while at this value.
  encode_value = function(value, depth, slots)
    local t = type(value)
    if t == "string" then
      put_string(value)
    elseif t == "number" then
      put(encode_number(cfg, value))
    elseif t == "boolean" then
      put(value and "true" or "false")
    elseif t == "nil" or value == null then
      put("null")
    elseif t == "table" then
      depth = depth + 1
      if depth > cfg.encode_max_depth or slots + 3 > MAX_C_STACK then
        fail(format("Cannot serialise, excessive nesting (%d)", depth))
      end
      local length = array_length(cfg, value)
      if length > 0 then
        put_array(value, length, depth, slots)
      else
        put_object(value, depth, slots)
      end
    else
      fail("Cannot serialise " .. t .. ": type not supported")
    end
  end

  return function(value)
    buf, n = {}, 0
    encode_value(value, 0, 1)
    local out = concat(buf, "", 1, n)
    buf = nil
    return out
  end
end

-- ===== decoding =====

local TOKEN_NAMES = {
  ["{"] = "T_OBJ_BEGIN", ["}"] = "T_OBJ_END", ["["] = "T_ARR_BEGIN", ["]"] = "T_ARR_END",
  [","] = "T_COMMA", [":"] = "T_COLON", string = "T_STRING", number = "T_NUMBER",
  boolean = "T_BOOLEAN", null = "T_NULL", ["end"] = "T_END",
}
local SIMPLE_TOKENS = { [123] = "{", [125] = "}", [91] = "[", [93] = "]", [44] = ",", [58] = ":" }
local WHITESPACE = { [32] = true, [9] = true, [10] = true, [13] = true }
local SINGLE_ESCAPES = {
  [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [116] = "\t", [110] = "\n", [102] = "\f",
  [114] = "\r",
}
local B_QUOTE, B_MINUS, B_PLUS, B_ZERO, B_NINE = 34, 45, 43, 48, 57
-- other bytes that reach the C tokenizer's number path: f i I n N t +
local MAY_BE_INVALID_NUMBER = { [102] = true, [105] = true, [73] = true, [110] = true,
  [78] = true, [116] = true, [B_PLUS] = true }
-- after leading digits, these may extend what strtod reads: . e E x X
local NUMBER_CONTINUES = { [46] = true, [101] = true, [69] = true, [120] = true, [88] = true }

local function is_digit(c) return c ~= nil and c >= 48 and c <= 57 end
local function is_hex(c)
  return c ~= nil and ((c >= 48 and c <= 57) or (c >= 97 and c <= 102) or (c >= 65 and c <= 70))
end
local function is_name_char(c) -- [0-9A-Za-z_]
  return c ~= nil and (is_digit(c) or (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or c == 95)
end

-- The end (exclusive) of the longest prefix at p that glibc's strtod converts, or p.
local function digits_end(s, i)
  while is_digit(byte(s, i)) do i = i + 1 end
  return i
end

local function exponent_end(s, i, letter)
  local c = byte(s, i)
  if c ~= letter and c ~= letter - 32 then return i end
  local j = i + 1
  c = byte(s, j)
  if c == B_PLUS or c == B_MINUS then j = j + 1 end
  if not is_digit(byte(s, j)) then return i end
  return digits_end(s, j)
end

local function strtod_end(s, p)
  local i = p
  local c = byte(s, i)
  if c == B_PLUS or c == B_MINUS then i = i + 1 end
  local word = lower(sub(s, i, i + 2))
  if word == "inf" then
    if lower(sub(s, i, i + 7)) == "infinity" then return i + 8 end
    return i + 3
  elseif word == "nan" then
    local j = i + 3
    if byte(s, j) == 40 then -- "(" n-char-sequence ")"
      local k = j + 1
      while is_name_char(byte(s, k)) do k = k + 1 end
      if byte(s, k) == 41 then return k + 1 end
    end
    return j
  end
  c = byte(s, i + 1)
  if byte(s, i) == B_ZERO and (c == 120 or c == 88) then
    local j, digits = i + 2, 0
    while is_hex(byte(s, j)) do j, digits = j + 1, digits + 1 end
    if byte(s, j) == 46 then
      j = j + 1
      while is_hex(byte(s, j)) do j, digits = j + 1, digits + 1 end
    end
    if digits == 0 then return i + 1 end -- only the "0" converts
    return exponent_end(s, j, 112)
  end
  local j = digits_end(s, i)
  local digits = j - i
  if byte(s, j) == 46 then
    local k = digits_end(s, j + 1)
    digits = digits + (k - j - 1)
    j = k
  end
  if digits == 0 then return p end
  return exponent_end(s, j, 101)
end

-- json_is_invalid_number: forms strtod accepts but strict JSON does not.
local function is_invalid_number(s, p)
  local c = byte(s, p)
  if c == B_PLUS then return true end
  if c == B_MINUS then
    p = p + 1
    c = byte(s, p)
  end
  if c == B_ZERO then
    local c2 = byte(s, p + 1)
    return c2 == 120 or c2 == 88 or is_digit(c2)
  end
  if c == nil or c <= B_NINE then return false end
  local word = lower(sub(s, p, p + 2))
  return word == "inf" or word == "nan"
end

local function codepoint_to_utf8(cp)
  if cp <= 0x7F then return char(cp) end
  if cp <= 0x7FF then
    return char(floor(cp / 64) + 0xC0, cp % 64 + 0x80)
  end
  if cp <= 0xFFFF then
    return char(floor(cp / 4096) + 0xE0, floor(cp / 64) % 64 + 0x80, cp % 64 + 0x80)
  end
  return char(floor(cp / 262144) + 0xF0, floor(cp / 4096) % 64 + 0x80,
    floor(cp / 64) % 64 + 0x80, cp % 64 + 0x80)
end

local function hex4(s, i)
  local digits = sub(s, i, i + 3)
  if not find(digits, "^%x%x%x%x$") then return nil end
  return tonumber(digits, 16)
end

-- A \u escape at i (the backslash): the UTF-8 text and the index after it, or nil.
local function unicode_escape(s, i)
  local cp = hex4(s, i + 2)
  if cp == nil then return nil end
  local length = 6
  if cp >= 0xD800 and cp <= 0xDFFF then
    if cp >= 0xDC00 then return nil end -- a low surrogate cannot come first
    if byte(s, i + 6) ~= 92 or byte(s, i + 7) ~= 117 then return nil end
    local low = hex4(s, i + 8)
    if low == nil or low < 0xDC00 or low > 0xDFFF then return nil end
    cp = (cp - 0xD800) * 1024 + (low - 0xDC00) + 0x10000
    length = 12
  end
  return codepoint_to_utf8(cp), i + length
end

local function new_decoder(cfg)
  local s, limit -- the text, and the index of its end (its first NUL, or #s + 1)

  -- A string token at i (the opening quote).
  local function string_token(i)
    local stop = find(s, '["\\%z]', i + 1)
    if stop and byte(s, stop) == B_QUOTE then -- no escape: the common case
      return "string", sub(s, i + 1, stop - 1), i - 1, stop + 1
    end
    local parts, count, j = {}, 0, i + 1
    while true do
      if stop == nil then return "error", "unexpected end of string", #s, j end
      count = count + 1
      parts[count] = sub(s, j, stop - 1)
      local b = byte(s, stop)
      if b == B_QUOTE then
        return "string", concat(parts, "", 1, count), i - 1, stop + 1
      elseif b == 0 then
        return "error", "unexpected end of string", stop - 1, stop
      end
      local text
      if byte(s, stop + 1) == 117 then
        text, j = unicode_escape(s, stop)
        if text == nil then return "error", "invalid unicode escape code", stop - 1, stop end
      else
        text, j = SINGLE_ESCAPES[byte(s, stop + 1)], stop + 2
        if text == nil then return "error", "invalid escape code", stop - 1, stop end
      end
      count = count + 1
      parts[count] = text
      stop = find(s, '["\\%z]', j)
    end
  end

  -- A number token at i, read as strtod reads it.
  local function number_token(i)
    local _, last = find(s, "^-?%d+", i)
    local stop
    if last and not NUMBER_CONTINUES[byte(s, last + 1)] then
      stop = last + 1 -- plain digits: the common case
    else
      stop = strtod_end(s, i)
      if stop == i then return "error", "invalid number", i - 1, i end
    end
    return "number", tonumber(sub(s, i, stop - 1)), i - 1, stop
  end

  -- Literals and the non-JSON numbers strtod accepts (inf, nan, +1) when allowed.
  local function word_token(c, i)
    if c == 116 and sub(s, i, i + 3) == "true" then return "boolean", true, i - 1, i + 4 end
    if c == 102 and sub(s, i, i + 4) == "false" then return "boolean", false, i - 1, i + 5 end
    if c == 110 and sub(s, i, i + 3) == "null" then return "null", nil, i - 1, i + 4 end
    if MAY_BE_INVALID_NUMBER[c] and cfg.decode_invalid_numbers == 1 and is_invalid_number(s, i) then
      return number_token(i)
    end
    return "error", "invalid token", i - 1, i
  end

  -- Tokens: kind, value, index (0-based like the C messages), next position.
  -- kind is a TOKEN_NAMES key, "string", "number", "boolean", "null", "end" or "error"
  -- (then value holds the error text).
  local function next_token(i)
    local c = byte(s, i)
    if WHITESPACE[c] then
      i = find(s, "[^ \t\n\r]", i) or #s + 1
      c = byte(s, i)
    end
    if i >= limit then return "end", nil, i - 1, i end
    local simple = SIMPLE_TOKENS[c]
    if simple then return simple, nil, i - 1, i + 1 end
    if c == B_QUOTE then return string_token(i) end
    if c == B_MINUS or is_digit(c) then
      if cfg.decode_invalid_numbers == 0 and is_invalid_number(s, i) then
        return "error", "invalid number", i - 1, i
      end
      return number_token(i)
    end
    return word_token(c, i)
  end

  local function parse_error(expected, kind, value, index)
    local found = kind == "error" and value or TOKEN_NAMES[kind]
    fail(format("Expected %s but found %s at character %d", expected, found, index + 1))
  end

  local function descend(depth, slots, top, after)
    if depth > cfg.decode_max_depth or top + slots > MAX_C_STACK then
      fail(format("Found too many nested data structures (%d) at character %d", depth, after - 1))
    end
  end

  -- A value whose first token is given; top is the C decoder's Lua stack height.
  -- Returns the value and the position after it.
  local function parse_value(kind, value, index, pos, depth, top)
    if kind == "string" or kind == "number" or kind == "boolean" then
      return value, pos
    elseif kind == "null" then
      return null, pos
    elseif kind == "[" then
      depth = depth + 1
      descend(depth, 2, top, pos)
      local array = {}
      kind, value, index, pos = next_token(pos)
      if kind == "]" then return array, pos end
      local i = 1
      while true do
        array[i], pos = parse_value(kind, value, index, pos, depth, top + 1)
        kind, value, index, pos = next_token(pos)
        if kind == "]" then return array, pos end
        if kind ~= "," then parse_error("comma or array end", kind, value, index) end
        kind, value, index, pos = next_token(pos)
        i = i + 1
      end
    elseif kind == "{" then
      depth = depth + 1
      descend(depth, 3, top, pos)
      local object = {}
      kind, value, index, pos = next_token(pos)
      if kind == "}" then return object, pos end
      while true do
        if kind ~= "string" then parse_error("object key string", kind, value, index) end
        local key = value
        kind, value, index, pos = next_token(pos)
        if kind ~= ":" then parse_error("colon", kind, value, index) end
        kind, value, index, pos = next_token(pos)
        object[key], pos = parse_value(kind, value, index, pos, depth, top + 2)
        kind, value, index, pos = next_token(pos)
        if kind == "}" then return object, pos end
        if kind ~= "," then parse_error("comma or object end", kind, value, index) end
        kind, value, index, pos = next_token(pos)
      end
    end
    parse_error("value", kind, value, index)
  end

  return function(text)
    if #text >= 2 and (byte(text, 1) == 0 or byte(text, 2) == 0) then
      fail("JSON parser does not support UTF-16 or UTF-32")
    end
    s = text
    limit = find(text, "%z") or #text + 1
    local kind, value, index, pos = next_token(1)
    local result
    result, pos = parse_value(kind, value, index, pos, 0, 1)
    kind, value, index = next_token(pos)
    if kind ~= "end" then parse_error("the end", kind, value, index) end
    s = nil
    return result
  end
end

-- ===== configuration =====

local BOOL_OPTIONS = { "off", "on" }
local INVALID_NUMBER_OPTIONS = { "off", "on", "null" }

-- json_enum_option: a boolean, or the name of one of options (0-based settings).
local function enum_option(cfg, key, v, present, n, name, options)
  if v ~= nil then
    if type(v) == "boolean" then
      cfg[key] = v and 1 or 0
    else
      local text = check_string(v, present, n, name)
      local found
      for i = 1, #options do
        if options[i] == text then found = i - 1 end
      end
      if found == nil then argerror(n, name, format("invalid option '%s'", text)) end
      cfg[key] = found
    end
  end
  local setting = cfg[key]
  if setting <= 1 then return setting == 1 end
  return options[setting + 1]
end

local function integer_option(cfg, key, v, present, n, name, min, max)
  if v ~= nil then
    local value = check_integer(v, present, n, name)
    if value < min or value > max then
      argerror(1, name, format("expected integer between %d and %d", min, max))
    end
    cfg[key] = value
  end
  return cfg[key]
end

local function check_arg_count(count, allowed, name)
  if count > allowed then argerror(allowed + 1, name, "found too many arguments") end
end

local function new_module()
  local cfg = {
    encode_sparse_convert = 0, encode_sparse_ratio = 2, encode_sparse_safe = 10,
    encode_max_depth = 1000, decode_max_depth = 1000,
    encode_invalid_numbers = 0, decode_invalid_numbers = 1,
    encode_keep_buffer = 1, encode_number_precision = 14, number_format = "%.14g",
  }
  local encode, decode = new_encoder(cfg), new_decoder(cfg)
  local module = {}

  -- Runs body(count, ...) and re-raises its failures at the caller of the entry point.
  local function guarded(body)
    return function(...)
      local ok, result = pcall(body, select("#", ...), ...)
      if not ok then raise(result) end
      return result
    end
  end

  -- The same for encode_sparse_array, the one entry point that answers three values.
  local function guarded3(body)
    return function(...)
      local ok, a, b, c = pcall(body, select("#", ...), ...)
      if not ok then raise(a) end
      return a, b, c
    end
  end

  module.encode = guarded(function(count, value)
    if count ~= 1 then argerror(1, "encode", "expected 1 argument") end
    return encode(value)
  end)

  module.decode = guarded(function(count, text)
    if count ~= 1 then argerror(1, "decode", "expected 1 argument") end
    return decode(check_string(text, true, 1, "decode"))
  end)

  module.encode_sparse_array = guarded3(function(count, convert, ratio, safe)
    local name = "encode_sparse_array"
    check_arg_count(count, 3, name)
    return enum_option(cfg, "encode_sparse_convert", convert, count >= 1, 1, name, BOOL_OPTIONS),
      integer_option(cfg, "encode_sparse_ratio", ratio, count >= 2, 2, name, 0, INT_MAX),
      integer_option(cfg, "encode_sparse_safe", safe, count >= 3, 3, name, 0, INT_MAX)
  end)

  local function integer_setting(key, min, max)
    return guarded(function(count, v)
      check_arg_count(count, 1, key)
      return integer_option(cfg, key, v, count >= 1, 1, key, min, max)
    end)
  end
  module.encode_max_depth = integer_setting("encode_max_depth", 1, INT_MAX)
  module.decode_max_depth = integer_setting("decode_max_depth", 1, INT_MAX)

  module.encode_number_precision = guarded(function(count, v)
    local name = "encode_number_precision"
    check_arg_count(count, 1, name)
    local precision = integer_option(cfg, name, v, count >= 1, 1, name, 1, 14)
    cfg.number_format = "%." .. precision .. "g"
    return precision
  end)

  local function enum_setting(key, options)
    return guarded(function(count, v)
      check_arg_count(count, 1, key)
      return enum_option(cfg, key, v, count >= 1, 1, key, options)
    end)
  end
  module.encode_keep_buffer = enum_setting("encode_keep_buffer", BOOL_OPTIONS)
  module.encode_invalid_numbers = enum_setting("encode_invalid_numbers", INVALID_NUMBER_OPTIONS)
  module.decode_invalid_numbers = enum_setting("decode_invalid_numbers", BOOL_OPTIONS)

  module.new = new_module
  module.null = null
  module._NAME = "cjson"
  module._VERSION = "2.1.0"
  return module
end

return new_module()
