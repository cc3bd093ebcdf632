"""Geospatial commands: a geo set is a sorted set whose scores are 52-bit geohashes.

GEOADD turns each (longitude, latitude) into its score and hands the request to ZADD, as
Valkey does (so its options, its reply, its `zadd` notification and its dirty count are
ZADD's). The searches (GEOSEARCH, GEOSEARCHSTORE and the legacy GEORADIUS family) follow
georadiusGeneric: the same order of checks and errors, the same 9 cells visited in the
same order, the same filtering and the same sorts (glibc's stable qsort, and Valkey's
partial quicksort when COUNT cuts the result), so equal distances come out in Valkey's
order. The arithmetic lives in `fakekey/codecs/geohash.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fakekey.codecs import geohash as gh
from fakekey.commands.args import SYNTAX, c_text, parse_float, parse_int
from fakekey.commands.zsets import lookup_zset, zset_limits
from fakekey.core.client import Client
from fakekey.core.registry import command, keys_keyword, keys_range
from fakekey.resp.replies import NULL_ARRAY, Raw, ReplyError
from fakekey.types.zset import ZSet

G = "geo"
ACL = "geo"
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

UNSUPPORTED_UNIT = ReplyError("ERR unsupported unit provided. please use M, KM, FT, MI")
NEED_RADIUS = ReplyError("ERR need numeric radius")
NEED_WIDTH = ReplyError("ERR need numeric width")
NEED_HEIGHT = ReplyError("ERR need numeric height")
RADIUS_NEGATIVE = ReplyError("ERR radius cannot be negative")
BOX_NEGATIVE = ReplyError("ERR height or width cannot be negative")
COUNT_POSITIVE = ReplyError("ERR COUNT must be > 0")
ANY_NEEDS_COUNT = ReplyError("ERR the ANY argument requires COUNT argument")
BAD_VERTEX_COUNT = ReplyError("ERR invalid number of vertices")
TOO_FEW_VERTICES = ReplyError("ERR GEOSEARCH BYPOLYGON must have at least 3 vertices")

_SEARCH_COMPLEXITY = (
    "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area "
    "around the shape provided as the filter and M is the number of items inside the shape"
)
_RADIUS_COMPLEXITY = (
    "O(N+log(M)) where N is the number of elements inside the bounding box of the circular "
    "area delimited by center and radius and M is the number of items inside the index."
)


# --- argument helpers ----------------------------------------------------------------------


def parse_lonlat(lon_raw: bytes, lat_raw: bytes) -> tuple[float, float]:
    """extractLongLatOrReply: two doubles within Valkey's limits."""
    lon, lat = parse_float(lon_raw), parse_float(lat_raw)
    if not gh.is_valid_lonlat(lon, lat):
        raise ReplyError(b"ERR invalid longitude,latitude pair %f,%f" % (lon, lat))
    return lon, lat


def parse_unit(raw: bytes) -> float:
    """extractUnitOrReply: the unit's factor to meters."""
    factor = gh.UNITS.get(raw.lower())
    if factor is None:
        raise UNSUPPORTED_UNIT
    return factor


def parse_radius(radius_raw: bytes, unit_raw: bytes) -> tuple[float, float]:
    """extractDistanceOrReply: (radius, unit factor)."""
    radius = parse_float(radius_raw, NEED_RADIUS)
    if radius < 0:
        raise RADIUS_NEGATIVE
    return radius, parse_unit(unit_raw)


def parse_box(width_raw: bytes, height_raw: bytes, unit_raw: bytes) -> tuple[float, float, float]:
    """extractBoxOrReply: (width, height, unit factor)."""
    width = parse_float(width_raw, NEED_WIDTH)
    height = parse_float(height_raw, NEED_HEIGHT)
    if height < 0 or width < 0:
        raise BOX_NEGATIVE
    return width, height, parse_unit(unit_raw)


def member_position(zs: ZSet, member: bytes) -> tuple[float, float]:
    """The position of a member the search starts from; Valkey's error when missing."""
    score = zs.score(member)
    if score is None:
        raise ReplyError(b"ERR member " + c_text(member) + b" does not exist")
    return gh.position(score)


def coordinate(c: Client, value: float) -> Any:
    """addReplyHumanLongDouble: %.17Lf text, a bulk in RESP2 and a double in RESP3."""
    text = gh.human(value)
    return Raw(b"," + text + b"\r\n") if c.protocol == 3 else text


# --- GEOADD -------------------------------------------------------------------------------


@command("geoadd", -5, "write denyoom", keys=keys_range(1, flags="RW update"), acl=ACL, group=G,
         since="3.2.0",
         complexity="O(log(N)) for each item added, where N is the number of elements in the "
         "sorted set.",
         summary="Adds members at longitude/latitude positions to a geo set (NX, XX, CH); "
         "creates the key if needed.")
def geoadd(c: Client, argv: list[bytes]) -> Any:
    xx = nx = False
    first = 2
    while first < len(argv):
        option = argv[first].lower()
        if option == b"nx":
            nx = True
        elif option == b"xx":
            xx = True
        elif option != b"ch":
            break
        first += 1
    if (len(argv) - first) % 3 or (xx and nx):
        raise SYNTAX
    zadd_argv = [b"zadd", *argv[1:first]]
    for i in range(first, len(argv), 3):
        lon, lat = parse_lonlat(argv[i], argv[i + 1])
        zadd_argv += [b"%d" % gh.score_of(lon, lat), argv[i + 2]]
    # the registered ZADD, so its dirty counting applies as well
    zadd = c.state.registry.lookup(b"zadd")
    assert zadd is not None and zadd.handler is not None
    return zadd.handler(c, zadd_argv)


# --- GEODIST, GEOHASH, GEOPOS ---------------------------------------------------------------


@command("geodist", -4, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="3.2.0", complexity="O(1)",
         summary="Answers the distance between two members of a geo set, in m, km, ft or mi.")
def geodist(c: Client, argv: list[bytes]) -> Any:
    to_meter = 1.0
    if len(argv) == 5:
        to_meter = parse_unit(argv[4])
    elif len(argv) > 5:
        raise SYNTAX
    zs = lookup_zset(c, argv[1])
    if zs is None:
        return None
    first, second = zs.score(argv[2]), zs.score(argv[3])
    if first is None or second is None:
        return None
    meters = gh.distance(*gh.position(first), *gh.position(second))
    return gh.fixed4(meters / to_meter)


@command("geohash", -2, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="3.2.0", complexity="O(1) for each member requested.",
         summary="Answers the standard 11-character geohash string of each member.")
def geohash(c: Client, argv: list[bytes]) -> Any:
    zs = lookup_zset(c, argv[1])
    out: list[Any] = []
    for member in argv[2:]:
        score = zs.score(member) if zs is not None else None
        out.append(None if score is None else gh.geohash_string(score))
    return out


@command("geopos", -2, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="3.2.0", complexity="O(1) for each member requested.",
         summary="Answers the longitude and latitude of each member.")
def geopos(c: Client, argv: list[bytes]) -> Any:
    zs = lookup_zset(c, argv[1])
    out: list[Any] = []
    for member in argv[2:]:
        score = zs.score(member) if zs is not None else None
        if score is None:
            out.append(NULL_ARRAY)
        else:
            lon, lat = gh.position(score)
            out.append([coordinate(c, lon), coordinate(c, lat)])
    return out


# --- the searches ---------------------------------------------------------------------------

RADIUS_COORDS, RADIUS_MEMBER, RADIUS_NOSTORE, GEOSEARCH, GEOSEARCHSTORE = 1, 2, 4, 8, 16
SORT_NONE, SORT_ASC, SORT_DESC = 0, 1, 2


@dataclass
class Found:
    """A point inside the shape (geoPoint)."""

    member: bytes
    lon: float
    lat: float
    dist: float  # meters
    score: float


@dataclass
class Search:
    """The parsed request (georadiusGeneric's locals)."""

    shape: gh.Shape | None = None
    store: bytes | None = None
    storedist: bool = False
    withdist: bool = False
    withhash: bool = False
    withcoord: bool = False
    frommember: bool = False
    fromloc: bool = False
    byradius: bool = False
    bybox: bool = False
    bypolygon: bool = False
    sort: int = SORT_NONE
    any: bool = False
    count: int = 0


def _shape(search: Search) -> gh.Shape:
    if search.shape is None:
        search.shape = gh.Shape(gh.CIRCLE)
    return search.shape


def parse_search(argv: list[bytes], base: int, flags: int, zs: ZSet | None, search: Search) -> None:
    """The option loop: each option is checked (and its values parsed) where it stands."""
    remaining = len(argv) - base
    is_search = bool(flags & GEOSEARCH)
    may_store = not flags & RADIUS_NOSTORE and not is_search
    i = 0
    while i < remaining:
        arg = argv[base + i].lower()
        at = base + i + 1  # the option's first value
        if arg == b"withdist":
            search.withdist = True
        elif arg == b"withhash":
            search.withhash = True
        elif arg == b"withcoord":
            search.withcoord = True
        elif arg == b"any":
            search.any = True
        elif arg == b"asc":
            search.sort = SORT_ASC
        elif arg == b"desc":
            search.sort = SORT_DESC
        elif arg == b"count" and i + 1 < remaining:
            search.count = parse_int(argv[at])
            if search.count <= 0:
                raise COUNT_POSITIVE
            i += 1
        elif arg in (b"store", b"storedist") and i + 1 < remaining and may_store:
            search.store = argv[at]
            search.storedist = arg == b"storedist"
            i += 1
        elif arg == b"storedist" and is_search and flags & GEOSEARCHSTORE:
            search.storedist = True
        elif (arg == b"frommember" and i + 1 < remaining and is_search and not search.fromloc
              and not search.bypolygon):
            if zs is not None:
                _shape(search).center = member_position(zs, argv[at])
            search.frommember = True
            i += 1
        elif (arg == b"fromlonlat" and i + 2 < remaining and is_search and not search.frommember
              and not search.bypolygon):
            _shape(search).center = parse_lonlat(argv[at], argv[at + 1])
            search.fromloc = True
            i += 2
        elif (arg == b"byradius" and i + 2 < remaining and is_search and not search.bybox
              and not search.bypolygon):
            shape = _shape(search)
            shape.radius, shape.conversion = parse_radius(argv[at], argv[at + 1])
            shape.kind = gh.CIRCLE
            search.byradius = True
            i += 2
        elif (arg == b"bybox" and i + 3 < remaining and is_search and not search.byradius
              and not search.bypolygon):
            shape = _shape(search)
            shape.width, shape.height, shape.conversion = parse_box(argv[at], argv[at + 1], argv[at + 2])
            shape.kind = gh.BOX
            search.bybox = True
            i += 3
        elif (arg == b"bypolygon" and i + 2 < remaining and is_search and not search.byradius
              and not search.bybox and not search.frommember and not search.fromloc):
            vertices = parse_polygon(argv, at, remaining - i - 2)
            shape = _shape(search)
            shape.kind, shape.conversion, shape.vertices = gh.POLYGON, 1.0, vertices
            search.bypolygon = True
            i += 1 + 2 * len(vertices)
        else:
            raise SYNTAX
        i += 1


def parse_polygon(argv: list[bytes], at: int, left: int) -> list[tuple[float, float]]:
    """BYPOLYGON n lon lat ...: n (an int, at least 3, no more than the arguments left)
    vertices, each a valid position."""
    count = parse_int(argv[at], BAD_VERTEX_COUNT)
    if not INT_MIN <= count <= INT_MAX:
        raise BAD_VERTEX_COUNT
    if count < 3 or left // 2 < count:
        raise TOO_FEW_VERTICES
    first = at + 1
    return [parse_lonlat(argv[first + 2 * j], argv[first + 2 * j + 1]) for j in range(count)]


def check_search(argv: list[bytes], flags: int, search: Search) -> None:
    """The checks after the loop, in Valkey's order."""
    if search.store is not None and (search.withdist or search.withhash or search.withcoord):
        what = b"GEOSEARCHSTORE" if flags & GEOSEARCHSTORE else b"STORE option in GEORADIUS"
        raise ReplyError(b"ERR " + what + b" is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    if flags & GEOSEARCH:
        if not (search.frommember or search.fromloc) and not search.bypolygon:
            raise ReplyError(b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + argv[0])
        if not (search.byradius or search.bybox or search.bypolygon):
            raise ReplyError(
                b"ERR exactly one of BYRADIUS, BYBOX and BYPOLYGON can be specified for " + argv[0])
    if search.any and not search.count:
        raise ANY_NEEDS_COUNT


def georadius_generic(c: Client, argv: list[bytes], src: int, flags: int) -> Any:
    zs = lookup_zset(c, argv[src])
    search = Search()
    if flags & RADIUS_COORDS:
        base = 6
        center = parse_lonlat(argv[2], argv[3])
        radius, conversion = parse_radius(argv[4], argv[5])
        search.shape = gh.Shape(gh.CIRCLE, center=center, radius=radius, conversion=conversion)
    elif flags & RADIUS_MEMBER:
        base = 5
        if zs is not None:  # without the key, the rest is parsed only to pick the reply
            center = member_position(zs, argv[2])
            radius, conversion = parse_radius(argv[3], argv[4])
            search.shape = gh.Shape(gh.CIRCLE, center=center, radius=radius, conversion=conversion)
    else:
        base = 3 if flags & GEOSEARCHSTORE else 2
        if flags & GEOSEARCHSTORE:
            search.store = argv[1]
    parse_search(argv, base, flags, zs, search)
    check_search(argv, flags, search)
    if zs is None:
        if search.store is not None:
            c.db.delete(search.store)
            return 0
        return []
    if search.count and search.sort == SORT_NONE and not search.any:
        search.sort = SORT_ASC
    shape = _shape(search)
    found = collect(zs, shape, search.count if search.any else 0)
    if not found and search.store is None:
        return []
    returned = len(found) if not search.count else min(len(found), search.count)
    if search.sort != SORT_NONE:
        found = sort_found(found, returned, search.sort == SORT_DESC)
    chosen = found[:returned]
    if search.store is not None:
        return store_found(c, search, shape, chosen, flags)
    return [result(c, search, shape, point) for point in chosen]


def collect(zs: ZSet, shape: gh.Shape, limit: int) -> list[Found]:
    """membersOfAllNeighbors: the points inside the shape, cell by cell; with a limit
    (COUNT ANY) the walk stops as soon as that many were found."""
    cells = gh.search_cells(shape)
    found: list[Found] = []
    last = 0
    for i, cell in enumerate(cells):
        if cell == gh.ZERO:
            continue
        if last and cell == cells[last]:  # huge radii: a neighbour may repeat the last cell
            continue
        if found and limit and len(found) >= limit:
            break
        points_in_cell(zs, cell, shape, found, limit)
        last = i
    return found


def points_in_cell(zs: ZSet, cell: gh.Hash, shape: gh.Shape, found: list[Found], limit: int) -> None:
    """geoGetPointsInRange: scores in [min, max) of the cell, in set order."""
    low, high = gh.score_range(cell)
    keys = zs.sorted_keys()
    for score, member in keys.iter_from(keys.bisect((low, b""))):
        if not score < high:
            break
        lon, lat = gh.position(score)
        dist = gh.within(shape, lon, lat)
        if dist is not None:
            found.append(Found(member, lon, lat, dist, score))
        if found and limit and len(found) >= limit:
            break


def sort_found(found: list[Found], returned: int, desc: bool) -> list[Found]:
    """qsort (glibc's: a stable merge sort) when every point is answered, else Valkey's
    pqsort of the first `returned` places. With distinct distances both give the sorted
    order; only ties need pqsort's own steps."""
    if returned == len(found) or len({p.dist for p in found}) == len(found):
        return sorted(found, key=lambda p: p.dist, reverse=desc)
    items = list(found)
    pqsort(items, _by_dist_desc if desc else _by_dist_asc, 0, returned - 1)
    return items


def _by_dist_asc(a: Found, b: Found) -> int:
    if a.dist > b.dist:
        return 1
    return 0 if a.dist == b.dist else -1


def _by_dist_desc(a: Found, b: Found) -> int:
    return -_by_dist_asc(a, b)


def result(c: Client, search: Search, shape: gh.Shape, point: Found) -> Any:
    """A member alone, or [member, dist?, hash?, [lon, lat]?]."""
    if not (search.withdist or search.withhash or search.withcoord):
        return point.member
    item: list[Any] = [point.member]
    if search.withdist:
        item.append(gh.fixed4(point.dist / shape.conversion))
    if search.withhash:
        item.append(gh.score_to_int64(point.score))
    if search.withcoord:
        item.append([coordinate(c, point.lon), coordinate(c, point.lat)])
    return item


def store_found(c: Client, search: Search, shape: gh.Shape, chosen: list[Found], flags: int) -> int:
    """STORE / STOREDIST / GEOSEARCHSTORE: the result replaces the destination (scores are
    the geohashes, or the distances in the request's unit); nothing found deletes it."""
    dest = search.store
    assert dest is not None
    if not chosen:
        c.db.delete(dest)
        return 0
    pairs = [(p.member, p.dist / shape.conversion if search.storedist else p.score) for p in chosen]
    event = "geosearchstore" if flags & GEOSEARCH else "georadiusstore"
    c.db.set_value(dest, ZSet.from_pairs(pairs, zset_limits(c)), event=event, klass="z")
    c.state.dirty += len(chosen) - 1  # Valkey counts every member stored
    return len(chosen)


# --- pqsort ---------------------------------------------------------------------------------


def pqsort(items: list[Any], cmp: Any, lrange: int, rrange: int) -> None:
    """Valkey's pqsort (NetBSD's qsort, recursing only into the parts that overlap the
    places [lrange, rrange]): the same swaps, so ties land where Valkey puts them."""
    _pqsort(items, 0, len(items), cmp, lrange, rrange)


def _med3(items: list[Any], a: int, b: int, c: int, cmp: Any) -> int:
    if cmp(items[a], items[b]) < 0:
        if cmp(items[b], items[c]) < 0:
            return b
        return c if cmp(items[a], items[c]) < 0 else a
    if cmp(items[b], items[c]) > 0:
        return b
    return a if cmp(items[a], items[c]) < 0 else c


def _vecswap(items: list[Any], a: int, b: int, n: int) -> None:
    for k in range(n):
        items[a + k], items[b + k] = items[b + k], items[a + k]


def _pqsort(items: list[Any], a: int, n: int, cmp: Any, lrange: int, rrange: int) -> None:
    """C's recursion on the left part and loop on the right part, with a stack instead of
    the recursion (the parts are disjoint, so the order they are sorted in changes
    nothing, and crafted input cannot exhaust Python's recursion limit)."""
    pending = [(a, n)]
    while pending:
        a, n = pending.pop()
        for part in _partition(items, a, n, cmp):
            start, size = part
            if not (rrange < start or lrange >= start + size):  # it overlaps the places
                pending.append(part)


def _partition(items: list[Any], a: int, n: int, cmp: Any) -> list[tuple[int, int]]:
    """One pass of _pqsort over items[a:a+n]: insertion sort when short, else a 3-way
    partition; answers the (start, size) parts still to sort."""
    if n < 7:
        for pm in range(a + 1, a + n):
            pl = pm
            while pl > a and cmp(items[pl - 1], items[pl]) > 0:
                items[pl], items[pl - 1] = items[pl - 1], items[pl]
                pl -= 1
        return []
    pm = a + n // 2
    if n > 7:
        pl, pn = a, a + n - 1
        if n > 40:
            d = n // 8
            pl = _med3(items, pl, pl + d, pl + 2 * d, cmp)
            pm = _med3(items, pm - d, pm, pm + d, cmp)
            pn = _med3(items, pn - 2 * d, pn - d, pn, cmp)
        pm = _med3(items, pl, pm, pn, cmp)
    items[a], items[pm] = items[pm], items[a]
    pa = pb = a + 1
    pc = pd = a + n - 1
    while True:
        while pb <= pc:
            outcome = cmp(items[pb], items[a])
            if outcome > 0:
                break
            if outcome == 0:
                items[pa], items[pb] = items[pb], items[pa]
                pa += 1
            pb += 1
        while pb <= pc:
            outcome = cmp(items[pc], items[a])
            if outcome < 0:
                break
            if outcome == 0:
                items[pc], items[pd] = items[pd], items[pc]
                pd -= 1
            pc -= 1
        if pb > pc:
            break
        items[pb], items[pc] = items[pc], items[pb]
        pb += 1
        pc -= 1
    pn = a + n
    r = min(pa - a, pb - pa)
    _vecswap(items, a, pb - r, r)
    r = min(pd - pc, pn - pd - 1)
    _vecswap(items, pb, pn - r, r)
    parts = []
    if pb - pa > 1:
        parts.append((a, pb - pa))
    if pd - pc > 1:
        parts.append((pn - (pd - pc), pd - pc))
    return parts


# --- the search commands --------------------------------------------------------------------


@command("geosearch", -7, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL, group=G,
         since="6.2.0", complexity=_SEARCH_COMPLEXITY,
         summary="Answers the members of a geo set inside a circle, a box or a polygon, "
         "around a member or a position.")
def geosearch(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 1, GEOSEARCH)


@command("geosearchstore", -8, "write denyoom",
         keys=(keys_range(1, flags="OW update"), keys_range(2, flags="RO access")), acl=ACL,
         group=G, since="6.2.0", complexity=_SEARCH_COMPLEXITY,
         summary="Stores the members of a geo set inside a circle, a box or a polygon in a "
         "sorted set (with their distances as scores on STOREDIST).")
def geosearchstore(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 2, GEOSEARCH | GEOSEARCHSTORE)


def georadius_keys(argv: list[bytes]) -> list[int]:
    """georadiusGetKeys: the source, and the last STORE/STOREDIST key after argument 4."""
    stored = -1
    i = 5
    while i < len(argv):
        if argv[i].lower() in (b"store", b"storedist") and i + 1 < len(argv):
            stored = i + 1
            i += 1
        i += 1
    return [1] if stored < 0 else [1, stored]


def _store_keys(startfrom: int) -> tuple[Any, ...]:
    return (
        keys_range(1, flags="RO access"),
        keys_keyword("STORE", startfrom, flags="OW update variable_flags"),
        keys_keyword("STOREDIST", startfrom, flags="OW update variable_flags"),
    )


@command("georadius", -6, "write denyoom movablekeys", keys=_store_keys(6),
         get_keys=georadius_keys, acl=ACL, group=G, since="3.2.0",
         complexity=_RADIUS_COMPLEXITY,
         summary="Answers (or stores) the members of a geo set within a radius of a position.")
def georadius(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 1, RADIUS_COORDS)


@command("georadius_ro", -6, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="3.2.10", complexity=_RADIUS_COMPLEXITY,
         summary="Answers the members of a geo set within a radius of a position.")
def georadius_ro(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 1, RADIUS_COORDS | RADIUS_NOSTORE)


@command("georadiusbymember", -5, "write denyoom movablekeys", keys=_store_keys(5),
         get_keys=georadius_keys, acl=ACL, group=G, since="3.2.0",
         complexity=_RADIUS_COMPLEXITY,
         summary="Answers (or stores) the members of a geo set within a radius of one of "
         "its members.")
def georadiusbymember(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 1, RADIUS_MEMBER)


@command("georadiusbymember_ro", -5, "readonly", keys=keys_range(1, flags="RO access"), acl=ACL,
         group=G, since="3.2.10", complexity=_RADIUS_COMPLEXITY,
         summary="Answers the members of a geo set within a radius of one of its members.")
def georadiusbymember_ro(c: Client, argv: list[bytes]) -> Any:
    return georadius_generic(c, argv, 1, RADIUS_MEMBER | RADIUS_NOSTORE)
