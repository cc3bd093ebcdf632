"""Valkey's geohash arithmetic, as pure functions over floats and 64-bit integers.

A geo set is a sorted set whose scores are 52-bit geohashes: 26 bits of latitude and 26 of
longitude, interleaved (latitude in the even bits). Every step here follows Valkey's C
(geohash.c, geohash_helper.c, geo.c) operation for operation, in IEEE doubles, so the
scores, the decoded cell centres, the haversine distances and the cells a search visits
are the same bits as Valkey's: replies then agree byte for byte.

C's fixed-width integers are emulated with masks where they matter: a longitude of exactly
180 (or a latitude at the top of the range) carries into bit 52 or 53, and a score that is
not a geohash (any double ZADD stored) is converted to uint64 as x86-64 does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

STEP_MAX = 26  # 26 bits per coordinate: 52-bit scores
LAT_MIN = -85.05112878
LAT_MAX = 85.05112878
LONG_MIN = -180.0
LONG_MAX = 180.0

D_R = math.pi / 180.0
EARTH_RADIUS_IN_METERS = 6372797.560856
MERCATOR_MAX = 20037726.37
GEO_EPSILON = 1e-15

MASK64 = (1 << 64) - 1
MASK32 = (1 << 32) - 1
INT64_MIN = -(1 << 63)
_TWO63 = float(1 << 63)

# Units and their factor to meters (extractUnitOrReply).
UNITS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}

Hash = tuple[int, int]  # (bits, step); (0, 0) is the zeroed (skipped) cell
Range = tuple[float, float]  # (min, max)
Area = tuple[Range, Range]  # (longitude, latitude)

WGS84: tuple[Range, Range] = ((LONG_MIN, LONG_MAX), (LAT_MIN, LAT_MAX))
STANDARD: tuple[Range, Range] = ((-180.0, 180.0), (-90.0, 90.0))  # GEOHASH strings

CIRCLE, BOX, POLYGON = "circle", "box", "polygon"


def _sin(x: float) -> float:
    """sin as libm answers it: NaN (not an exception) for an infinite argument."""
    return math.sin(x) if math.isfinite(x) else math.nan


def _cos(x: float) -> float:
    return math.cos(x) if math.isfinite(x) else math.nan


def deg_rad(angle: float) -> float:
    return angle * D_R


def rad_deg(angle: float) -> float:
    return angle / D_R


# --- bits ---------------------------------------------------------------------------------


def interleave64(xlo: int, ylo: int) -> int:
    """The bits of x in the even positions, those of y in the odd (x, y < 2**32)."""
    x, y = xlo, ylo
    x = (x | (x << 16)) & 0x0000FFFF0000FFFF
    y = (y | (y << 16)) & 0x0000FFFF0000FFFF
    x = (x | (x << 8)) & 0x00FF00FF00FF00FF
    y = (y | (y << 8)) & 0x00FF00FF00FF00FF
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0F
    y = (y | (y << 4)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x << 2)) & 0x3333333333333333
    y = (y | (y << 2)) & 0x3333333333333333
    x = (x | (x << 1)) & 0x5555555555555555
    y = (y | (y << 1)) & 0x5555555555555555
    return (x | (y << 1)) & MASK64


def deinterleave64(interleaved: int) -> int:
    """The even bits in the low 32, the odd bits in the high 32."""
    x = interleaved
    y = interleaved >> 1
    x = x & 0x5555555555555555
    y = y & 0x5555555555555555
    x = (x | (x >> 1)) & 0x3333333333333333
    y = (y | (y >> 1)) & 0x3333333333333333
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0F
    y = (y | (y >> 2)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FF
    y = (y | (y >> 4)) & 0x00FF00FF00FF00FF
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFF
    y = (y | (y >> 8)) & 0x0000FFFF0000FFFF
    x = (x | (x >> 16)) & 0x00000000FFFFFFFF
    y = (y | (y >> 16)) & 0x00000000FFFFFFFF
    return (x | (y << 32)) & MASK64


def score_to_uint64(score: float) -> int:
    """(uint64_t)score as x86-64 code does it: truncation, wrapping below zero, and the
    'integer indefinite' 2**63 for what does not fit (so 2**64 and beyond give 0)."""
    if score >= _TWO63:
        rest = score - _TWO63
        low = 1 << 63 if rest >= _TWO63 or rest != rest else int(rest)
        return low ^ (1 << 63)
    if score != score or score < -_TWO63:
        return 1 << 63
    return int(score) & MASK64


def score_to_int64(score: float) -> int:
    """(long long)score: truncation, the indefinite LLONG_MIN when it does not fit."""
    if score != score or not -_TWO63 <= score < _TWO63:
        return INT64_MIN
    return int(score)


# --- encode and decode ----------------------------------------------------------------------


def is_valid_lonlat(lon: float, lat: float) -> bool:
    return LONG_MIN <= lon <= LONG_MAX and LAT_MIN <= lat <= LAT_MAX


def encode(lon: float, lat: float, step: int, ranges: tuple[Range, Range] = WGS84) -> Hash | None:
    """geohashEncode: the cell of `step` bits per coordinate holding (lon, lat)."""
    if step > 32 or step == 0:
        return None
    if not is_valid_lonlat(lon, lat):
        return None
    (lon_min, lon_max), (lat_min, lat_max) = ranges
    if lat < lat_min or lat > lat_max or lon < lon_min or lon > lon_max:
        return None
    lat_offset = (lat - lat_min) / (lat_max - lat_min)
    long_offset = (lon - lon_min) / (lon_max - lon_min)
    scale = float(1 << step)
    lat_offset *= scale
    long_offset *= scale
    # double -> uint32_t truncates; an offset of exactly 1.0 gives 2**step (a carry)
    return interleave64(int(lat_offset) & MASK32, int(long_offset) & MASK32), step


def decode(hash_: Hash, ranges: tuple[Range, Range] = WGS84) -> Area:
    """geohashDecode: the (longitude, latitude) ranges of a cell."""
    bits, step = hash_
    (lon_min, lon_max), (lat_min, lat_max) = ranges
    separated = deinterleave64(bits)
    lat_scale = lat_max - lat_min
    long_scale = lon_max - lon_min
    ilato = separated & MASK32
    ilono = (separated >> 32) & MASK32
    div = float(1 << step)
    lat_area = (
        lat_min + (ilato * 1.0 / div) * lat_scale,
        lat_min + (((ilato + 1) & MASK32) * 1.0 / div) * lat_scale,  # uint32 wraps
    )
    lon_area = (
        lon_min + (ilono * 1.0 / div) * long_scale,
        lon_min + (((ilono + 1) & MASK32) * 1.0 / div) * long_scale,
    )
    return lon_area, lat_area


def area_center(area: Area) -> tuple[float, float]:
    """geohashDecodeAreaToLongLat: the centre, clamped to the valid range."""
    (lon_lo, lon_hi), (lat_lo, lat_hi) = area
    lon = (lon_lo + lon_hi) / 2
    lon = min(max(lon, LONG_MIN), LONG_MAX)
    lat = (lat_lo + lat_hi) / 2
    lat = min(max(lat, LAT_MIN), LAT_MAX)
    return lon, lat


def score_of(lon: float, lat: float) -> int:
    """The 52-bit score GEOADD stores for a valid (lon, lat)."""
    hash_ = encode(lon, lat, STEP_MAX)
    assert hash_ is not None
    return align52(hash_)


_CELLS = float(1 << STEP_MAX)
_LAT_SCALE = LAT_MAX - LAT_MIN
_LONG_SCALE = LONG_MAX - LONG_MIN


_EVEN16: list[int] = []
_ODD16: list[int] = []


def _split16() -> tuple[list[int], list[int]]:
    """The even and the odd bits of every 16-bit value, compacted (built on first use)."""
    if not _EVEN16:
        even8 = [sum(((v >> (2 * k)) & 1) << k for k in range(4)) for v in range(256)]
        odd8 = [sum(((v >> (2 * k + 1)) & 1) << k for k in range(4)) for v in range(256)]
        _EVEN16.extend(even8[v & 0xFF] | even8[v >> 8] << 4 for v in range(65536))
        _ODD16.extend(odd8[v & 0xFF] | odd8[v >> 8] << 4 for v in range(65536))
    return _EVEN16, _ODD16


def position(score: float) -> tuple[float, float]:
    """decodeGeohash: the (lon, lat) a stored score stands for (its cell's centre). The
    steps of decode() and area_center() inlined, and deinterleave64() by table: every
    search decodes each candidate."""
    bits = int(score) if 0 <= score < _TWO63 else score_to_uint64(score)
    even, odd = _EVEN16 or _split16()[0], _ODD16
    a0, a1, a2, a3 = bits & 0xFFFF, (bits >> 16) & 0xFFFF, (bits >> 32) & 0xFFFF, bits >> 48
    ilato = even[a0] | even[a1] << 8 | even[a2] << 16 | even[a3] << 24
    ilono = odd[a0] | odd[a1] << 8 | odd[a2] << 16 | odd[a3] << 24
    lat = (LAT_MIN + (ilato / _CELLS) * _LAT_SCALE
           + (LAT_MIN + (((ilato + 1) & MASK32) / _CELLS) * _LAT_SCALE)) / 2
    lon = (LONG_MIN + (ilono / _CELLS) * _LONG_SCALE
           + (LONG_MIN + (((ilono + 1) & MASK32) / _CELLS) * _LONG_SCALE)) / 2
    if lon > LONG_MAX:
        lon = LONG_MAX
    elif lon < LONG_MIN:
        lon = LONG_MIN
    if lat > LAT_MAX:
        lat = LAT_MAX
    elif lat < LAT_MIN:
        lat = LAT_MIN
    return lon, lat


def align52(hash_: Hash) -> int:
    bits, step = hash_
    return (bits << (52 - step * 2)) & MASK64


GEOALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"


def geohash_string(score: float) -> bytes:
    """GEOHASH: the position re-encoded on the standard -90..90 latitude range, as 11
    base-32 characters (the last is always '0': there are only 52 bits)."""
    lon, lat = position(score)
    hash_ = encode(lon, lat, 26, STANDARD)
    bits = hash_[0] if hash_ is not None else 0
    out = bytearray()
    for i in range(10):
        out.append(GEOALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F])
    out.append(GEOALPHABET[0])
    return bytes(out)


# --- distances ----------------------------------------------------------------------------


def lat_distance(lat1d: float, lat2d: float) -> float:
    """geohashGetLatDistance: along a meridian."""
    return EARTH_RADIUS_IN_METERS * abs(deg_rad(lat2d) - deg_rad(lat1d))


def distance(lon1d: float, lat1d: float, lon2d: float, lat2d: float) -> float:
    """geohashGetDistance: the haversine great-circle distance, in meters."""
    lon1r = lon1d * D_R
    lon2r = lon2d * D_R
    try:
        v = math.sin((lon2r - lon1r) / 2)
        if abs(v) <= GEO_EPSILON:
            return lat_distance(lat1d, lat2d)
        lat1r = lat1d * D_R
        lat2r = lat2d * D_R
        u = math.sin((lat2r - lat1r) / 2)
        a = u * u + math.cos(lat1r) * math.cos(lat2r) * v * v
    except ValueError:  # an infinite angle: libm answers NaN
        return math.nan
    if not a >= 0:  # NaN in, NaN out (Python's sqrt would raise)
        return math.nan
    root = math.sqrt(a)
    if root > 1.0:  # a rounded past 1: asin is NaN there, as in C
        return math.nan
    return 2.0 * EARTH_RADIUS_IN_METERS * math.asin(root)


def fixed4(value: float) -> bytes:
    """fixedpoint_d2string(d, 4): llrint(d * 10000), written with 4 decimals."""
    if value == 0:
        return b"0.0000"
    scaled = value * 10000.0
    if scaled != scaled or not -_TWO63 <= scaled < _TWO63:
        whole = INT64_MIN  # llrint's indefinite result
    else:
        whole = round(scaled)  # round half to even, as llrint in the default mode
    sign = b"-" if whole < 0 else b""
    whole = abs(whole)
    return b"%s%d.%04d" % (sign, whole // 10000, whole % 10000)


def human(value: float) -> bytes:
    """ld2string(LD_STR_HUMAN): %.17Lf of the (exact) value, trailing zeros cut."""
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if value != value:
        return b"nan"
    text = b"%.17f" % value
    text = text.rstrip(b"0").rstrip(b".")
    return b"0" if text == b"-0" else text


# --- search shapes ------------------------------------------------------------------------


@dataclass
class Shape:
    """GeoShape: a circle (radius) or box (width, height) in `unit`s around `center`, or
    a polygon of (lon, lat) vertices (its centre is the centroid, its unit the meter)."""

    kind: str
    center: tuple[float, float] = (0.0, 0.0)
    conversion: float = 1.0
    radius: float = 0.0
    width: float = 0.0
    height: float = 0.0
    vertices: list[tuple[float, float]] = field(default_factory=list)
    index: PolygonIndex | None = None  # built by the first point tested
    bounds: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


def bounding_box(shape: Shape) -> tuple[float, float, float, float]:
    """geohashBoundingBox: (min lon, min lat, max lon, max lat) of the search area; a
    polygon's box comes from its vertices, and sets the centroid as its centre."""
    if shape.kind == POLYGON:
        return _polygon_box(shape)
    if shape.kind == CIRCLE:
        height = shape.conversion * shape.radius
        width = shape.conversion * shape.radius
    else:
        height = shape.conversion * shape.height / 2
        width = shape.conversion * shape.width / 2
    lon, lat = shape.center
    lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS)
    long_delta_top = rad_deg(width / EARTH_RADIUS_IN_METERS / _cos(deg_rad(lat + lat_delta)))
    long_delta_bottom = rad_deg(width / EARTH_RADIUS_IN_METERS / _cos(deg_rad(lat - lat_delta)))
    southern = lat < 0
    delta = long_delta_bottom if southern else long_delta_top
    return lon - delta, lat - lat_delta, lon + delta, lat + lat_delta


def _polygon_box(shape: Shape) -> tuple[float, float, float, float]:
    min_lon, max_lon = LONG_MAX, LONG_MIN
    min_lat, max_lat = LAT_MAX, LAT_MIN
    x = y = z = 0.0
    for lon, lat in shape.vertices:
        if lon < min_lon:
            min_lon = lon
        if lon > max_lon:
            max_lon = lon
        if lat < min_lat:
            min_lat = lat
        if lat > max_lat:
            max_lat = lat
        lon_rad = deg_rad(lon)
        lat_rad = deg_rad(lat)
        x += _cos(lat_rad) * _cos(lon_rad)
        y += _cos(lat_rad) * _sin(lon_rad)
        z += _sin(lat_rad)
    central_lon = math.atan2(y, x)
    central_hyp = math.sqrt(x * x + y * y)
    central_lat = math.atan2(z, central_hyp)
    shape.center = (rad_deg(central_lon), rad_deg(central_lat))
    return min_lon, min_lat, max_lon, max_lat


def estimate_steps(range_meters: float, lat: float) -> int:
    """geohashEstimateStepsByRadius: the cell size whose 9 cells cover the radius."""
    if range_meters == 0:
        return 26
    step = 1
    while range_meters < MERCATOR_MAX:
        range_meters *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return min(max(step, 1), 26)


def _move_x(hash_: Hash, d: int) -> Hash:
    bits, step = hash_
    x = bits & 0xAAAAAAAAAAAAAAAA
    y = bits & 0x5555555555555555
    zz = 0x5555555555555555 >> (64 - step * 2)
    x = x + (zz + 1) if d > 0 else (x | zz) - (zz + 1)
    x &= 0xAAAAAAAAAAAAAAAA >> (64 - step * 2)
    return x | y, step


def _move_y(hash_: Hash, d: int) -> Hash:
    bits, step = hash_
    x = bits & 0xAAAAAAAAAAAAAAAA
    y = bits & 0x5555555555555555
    zz = 0xAAAAAAAAAAAAAAAA >> (64 - step * 2)
    y = y + (zz + 1) if d > 0 else (y | zz) - (zz + 1)
    y &= 0x5555555555555555 >> (64 - step * 2)
    return x | y, step


def neighbors(hash_: Hash) -> dict[str, Hash]:
    """geohashNeighbors: the 8 cells around one (wrapping at the edges)."""
    east, west = _move_x(hash_, 1), _move_x(hash_, -1)
    return {
        "north": _move_y(hash_, 1),
        "south": _move_y(hash_, -1),
        "east": east,
        "west": west,
        "north_east": _move_y(east, 1),
        "north_west": _move_y(west, 1),
        "south_east": _move_y(east, -1),
        "south_west": _move_y(west, -1),
    }


ZERO: Hash = (0, 0)
SEARCH_ORDER = ("north", "south", "east", "west", "north_east", "north_west", "south_east", "south_west")


def search_cells(shape: Shape) -> list[Hash]:
    """geohashCalculateAreasByShapeWGS84: the centre cell and its 8 neighbours, in the
    order Valkey visits them, with the useless ones zeroed."""
    shape.bounds = bounding_box(shape)
    min_lon, min_lat, max_lon, max_lat = shape.bounds
    lon, lat = shape.center
    if shape.kind == CIRCLE:
        radius_meters = shape.radius
    elif shape.kind == BOX:
        radius_meters = math.sqrt((shape.width / 2) * (shape.width / 2) + (shape.height / 2) * (shape.height / 2))
    else:
        corners = ((min_lon, max_lat), (max_lon, max_lat), (min_lon, min_lat), (max_lon, min_lat))
        radius_meters = distance(lon, lat, *corners[0])
        for corner in corners[1:]:
            far = distance(lon, lat, *corner)
            if far > radius_meters:
                radius_meters = far
    radius_meters *= shape.conversion
    steps = estimate_steps(radius_meters, lat)
    hash_ = _cell(lon, lat, steps)
    around = neighbors(hash_)
    north, south = decode(around["north"]), decode(around["south"])
    east, west = decode(around["east"]), decode(around["west"])
    decrease = (
        north[1][1] < max_lat or south[1][0] > min_lat or east[0][1] < max_lon or west[0][0] > min_lon
    )
    if steps > 1 and decrease:
        steps -= 1
        hash_ = _cell(lon, lat, steps)
        around = neighbors(hash_)
    area = decode(hash_)
    if steps >= 2:
        if area[1][0] < min_lat:
            around["south"] = around["south_west"] = around["south_east"] = ZERO
        if area[1][1] > max_lat:
            around["north"] = around["north_east"] = around["north_west"] = ZERO
        if area[0][0] < min_lon:
            around["west"] = around["south_west"] = around["north_west"] = ZERO
        if area[0][1] > max_lon:
            around["east"] = around["south_east"] = around["north_east"] = ZERO
    return [hash_] + [around[name] for name in SEARCH_ORDER]


def _cell(lon: float, lat: float, step: int) -> Hash:
    """geohashEncode for a search centre; a failed encode leaves bits 0 (as C does)."""
    hash_ = encode(lon, lat, step)
    return hash_ if hash_ is not None else (0, step)


def score_range(hash_: Hash) -> tuple[float, float]:
    """scoresOfGeoHashBox: [min, max) of the scores inside a cell."""
    bits, step = hash_
    return float(align52(hash_)), float(align52(((bits + 1) & MASK64, step)))


Edge = tuple[float, float, float, float]  # (ax, ay, bx, by)

BANDS = 4096  # latitude bands of a polygon's edge index
BANDS_PER_EDGE = 8  # an edge spanning more bands is checked for every point


@dataclass
class PolygonIndex:
    """The polygon's edges by latitude band, so a point is tested only against the edges
    that can cross its latitude (an edge crosses latitude y when min(ay, by) <= y <
    max(ay, by)). Bands are computed by one monotone float expression, so an edge sits in
    every band a crossing point can fall in; tall edges stay in `tall`, which bounds the
    index to BANDS_PER_EDGE entries per edge."""

    low: float
    width: float
    bands: list[list[Edge]]
    tall: list[Edge]

    def band(self, y: float) -> int:
        if not y > self.low:
            return 0
        ratio = (y - self.low) / self.width  # may overflow to inf for a flat polygon
        last = len(self.bands) - 1
        return int(ratio) if ratio < last else last

    def candidates(self, y: float) -> list[Edge]:
        band = self.bands[self.band(y)]
        return self.tall + band if band else self.tall


def polygon_index(vertices: Sequence[tuple[float, float]]) -> PolygonIndex:
    """Each vertex i paired with the one before it (j), as PNPOLY pairs them."""
    edges = [(*vertices[i], *vertices[i - 1]) for i in range(len(vertices))]
    low = min(v[1] for v in vertices)
    high = max(v[1] for v in vertices)
    count = max(1, min(BANDS, len(edges)))
    width = (high - low) / count or 1.0
    index = PolygonIndex(low, width, [[] for _ in range(count)], [])
    for edge in edges:
        first = index.band(min(edge[1], edge[3]))
        last = index.band(max(edge[1], edge[3]))
        if last - first >= BANDS_PER_EDGE:
            index.tall.append(edge)
        else:
            for band in range(first, last + 1):
                index.bands[band].append(edge)
    return index


def in_polygon(point: tuple[float, float], edges: Sequence[Edge]) -> bool:
    """PNPOLY ray casting, each edge tested exactly as geohashGetDistanceIfInPolygon does
    (the answer is the parity of the crossings: which edges are tested, and in which
    order, changes nothing as long as every crossing edge is)."""
    px, py = point
    inside = False
    for ax, ay, bx, by in edges:
        if (ay > py) != (by > py) and px < (bx - ax) * (py - ay) / (by - ay) + ax:
            inside = not inside
    return inside


def within(shape: Shape, lon: float, lat: float) -> float | None:
    """geoWithinShape: the distance (meters) from the shape's centre when the point is
    inside, else None."""
    clon, clat = shape.center
    if shape.kind == CIRCLE:
        dist = distance(clon, clat, lon, lat)
        return None if dist > shape.radius * shape.conversion else dist
    if shape.kind == BOX:
        if lat_distance(lat, clat) > shape.height * shape.conversion / 2:
            return None
        if distance(lon, lat, clon, lat) > shape.width * shape.conversion / 2:
            return None
        return distance(clon, clat, lon, lat)
    if not shape.bounds[1] <= lat < shape.bounds[3]:
        return None  # above or below every vertex: no edge can cross
    if shape.index is None:
        shape.index = polygon_index(shape.vertices)
    if not in_polygon((lon, lat), shape.index.candidates(lat)):
        return None
    return distance(clon, clat, lon, lat)
