"""The merging t-digest (Dunning's), as the t-digest-c of Redis Stack's RedisBloom keeps
it (TDIS-TYPE): centroids (mean, weight) in one buffer of `capacity` = 6 x compression +
10 nodes, the merged ones first, sorted, then the observations added since, unmerged. A
full buffer, and every query, compresses it: sort by mean (its own quicksort), then fold
each node into the current centroid while the k-scale bound `z <= q (1 - q)` holds at
both its ends. Quantiles, CDF, ranks and the trimmed mean interpolate over the merged
centroids the way t-digest-c does, so the estimates are the numbers Redis Stack answers,
its quirks included: a digest of one observation never compresses (its total weight is
1), so its quantiles, CDF and trimmed mean are NaN."""

from __future__ import annotations

import math
from typing import Final

from fakekey.modules.stack import BLOOM_MODULE
from fakekey.modules.stack.module_io import ModuleReader, ModuleWriter
from fakekey.types.module_value import ModuleValue, register_module_type

INT_MAX: Final = (1 << 31) - 1
PICO: Final = 1e-12  # how near t-digest-c's CDF takes two doubles to be equal
LLONG_MAX: Final = (1 << 63) - 1
_NAN: Final = math.nan


def capacity_for(compression: int) -> int:
    return 6 * compression + 10


def _div(a: float, b: float) -> float:
    """a / b as C divides doubles: by zero it is an infinity or NaN, not an error."""
    if b:
        return a / b
    if a == 0 or a != a:
        return _NAN
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _weighted_average(x1: float, w1: float, x2: float, w2: float) -> float:
    """weighted_average: the weighted mean, kept between the two values (by the
    library's min and max macros, comparisons a NaN fails)."""
    if x1 > x2:
        x1, w1, x2, w2 = x2, w2, x1, w1
    x = _div(x1 * w1 + x2 * w2, w1 + w2)
    low = x if x < x2 else x2
    return x1 if x1 > low else low


class Overflow(Exception):
    """td_add or td_compress refused: a weight would leave 64 bits or a double's range."""


@register_module_type
class TDigest(ModuleValue):
    TYPE_NAME = "TDIS-TYPE"
    ENCODING_VERSION = 0
    MODULE_NAME = BLOOM_MODULE
    MODULE_IO = True  # the payload is RedisBloom's own rdb_save fields

    __slots__ = ("compression", "capacity", "means", "weights", "merged_nodes",
                 "merged_weight", "unmerged_weight", "min", "max", "total_compressions")

    def __init__(self, compression: int) -> None:
        self.compression = compression
        self.capacity = capacity_for(compression)
        self.means: list[float] = []  # merged nodes, then unmerged ones
        self.weights: list[int] = []
        self.reset()

    def reset(self) -> None:
        """td_reset: empty, min and max back to their sentinels (the buffer stays)."""
        self.means.clear()
        self.weights.clear()
        self.merged_nodes = 0
        self.merged_weight = 0
        self.unmerged_weight = 0
        self.min = 1.7976931348623157e308  # DBL_MAX
        self.max = -1.7976931348623157e308
        self.total_compressions = 0

    @property
    def unmerged_nodes(self) -> int:
        return len(self.means) - self.merged_nodes

    def size(self) -> int:
        """td_size: the observations' total weight."""
        return self.merged_weight + self.unmerged_weight

    # --- adding ------------------------------------------------------------------------

    def add(self, mean: float, weight: int) -> None:
        """td_add: buffer one centroid, compressing first when the buffer is full."""
        if len(self.means) >= self.capacity - 1:
            self.compress()
        if len(self.means) >= self.capacity:
            raise Overflow
        unmerged = self.unmerged_weight + weight
        total = unmerged + self.merged_weight
        if unmerged > LLONG_MAX or total > LLONG_MAX or _double_overflows(total):
            raise Overflow
        if mean < self.min:
            self.min = mean
        if mean > self.max:
            self.max = mean
        self.means.append(mean)
        self.weights.append(weight)
        self.unmerged_weight = unmerged

    def merge_from(self, other: TDigest) -> None:
        """td_merge: every centroid of `other` (compressed first) added here."""
        self.compress()
        other.compress()
        for mean, weight in zip(list(other.means), list(other.weights), strict=True):
            self.add(mean, weight)

    def compress(self) -> None:
        """td_compress: merge the unmerged nodes in."""
        if self.unmerged_nodes == 0:
            return
        means, weights = _sorted_nodes(self.means, self.weights)
        self.means, self.weights = means, weights
        total = float(self.merged_weight) + float(self.unmerged_weight)
        if _double_overflows(total):
            raise Overflow
        if total <= 1:  # t-digest-c leaves a lone observation sorted but unmerged
            return
        means, weights = _merged(means, weights, self.compression / _denominator(total), total)
        self.means, self.weights = means, weights
        self.merged_nodes = len(means)
        self.merged_weight = int(total)  # through a double, as the library does
        self.unmerged_weight = 0
        self.total_compressions += 1

    # --- queries (each compresses first, as t-digest-c's do) ----------------------------

    def quantile(self, q: float) -> float:
        """td_quantile (it counts the unmerged nodes where td_quantiles does not)."""
        self.compress()
        if q < 0 or q > 1 or not self.means:
            return _NAN
        if len(self.means) == 1:
            return self.means[0]
        index = q * self.merged_weight
        if index < 1:
            return self.min
        return _Walk(self).value_at(index)

    def quantiles(self, qs: list[float]) -> list[float]:
        """td_quantiles over an ascending run: one walk serves them all (and, as in
        t-digest-c, without td_quantile's `index < 1` shortcut to min)."""
        self.compress()
        n = self.merged_nodes
        if n == 0:
            return [_NAN] * len(qs)
        if n == 1:
            return [_NAN if q < 0 or q > 1 else self.means[0] for q in qs]
        walk = _Walk(self)
        return [walk.value_at(q * self.merged_weight) for q in qs]

    def cdf(self, value: float) -> float:
        """td_cdf: the fraction of the observations below `value`, plus half those at it."""
        self.compress()
        n = self.merged_nodes
        if n == 0:
            return _NAN
        if value < self.min:
            return 0.0
        if value > self.max:
            return 1.0
        if n == 1:
            width = self.max - self.min
            return 0.5 if value - self.min <= width else (value - self.min) / width
        return self._cdf_within(value)

    def _cdf_within(self, value: float) -> float:
        means, weights = self.means, self.weights
        n = self.merged_nodes
        total = float(self.merged_weight)
        if value < means[0]:
            width = means[0] - self.min
            if width <= 0:
                return 0.0
            if abs(value - self.min) < PICO:
                return 0.5 / total
            return (1 + (value - self.min) / width * (weights[0] / 2 - 1)) / total
        if value > means[n - 1]:
            width = self.max - means[n - 1]
            if width <= 0:
                return 1.0
            if abs(value - self.max) < PICO:
                return 1 - 0.5 / total
            return 1 - (1 + (self.max - value) / width * (weights[n - 1] / 2 - 1)) / total
        so_far = 0.0
        it = 0
        while it < n - 1:
            if abs(means[it] - value) < PICO:
                at = 0.0
                while it < n and abs(means[it] - value) < PICO:
                    at += weights[it]
                    it += 1
                return (so_far + at / 2) / total
            if means[it] <= value < means[it + 1]:
                return self._between(it, value, so_far, total)
            so_far += weights[it]
            it += 1
        return 1 - 0.5 / total

    def _between(self, it: int, value: float, so_far: float, total: float) -> float:
        """td_cdf between centroids it and it + 1 (a singleton's weight sits at its mean)."""
        w, w_next = float(self.weights[it]), float(self.weights[it + 1])
        mean, mean_next = self.means[it], self.means[it + 1]
        dw = (w + w_next) / 2
        if mean_next - mean <= 0:
            return (so_far + dw) / total
        left_out = right_out = 0.0
        if w == 1:
            if w_next == 1:
                return (so_far + 1) / total
            left_out = 0.5
        elif w_next == 1:
            right_out = 0.5
        base = so_far + w / 2 + left_out
        return (base + (dw - left_out - right_out) * (value - mean) / (mean_next - mean)) / total

    def trimmed_mean(self, low: float, high: float) -> float:
        """td_trimmed_mean: the mean of the observations between the two quantiles."""
        self.compress()
        if self.merged_nodes == 0 or not (0 <= low <= 1 and 0 <= high <= 1):
            return _NAN
        if self.merged_nodes == 1:
            return self.means[0]
        leftmost = math.floor(self.merged_weight * low)
        rightmost = math.ceil(self.merged_weight * high)
        done = total = count = 0.0
        for mean, weight in zip(self.means, self.weights, strict=True):
            add = float(weight)
            add -= min(max(0.0, leftmost - done), add)
            add = min(max(0.0, rightmost - done), add)
            done += weight
            total += mean * add
            count += add
            if done >= rightmost:
                break
        return total / count if count else _NAN  # C's 0 / 0

    # --- the module value ----------------------------------------------------------------

    def copy(self) -> TDigest:
        twin = TDigest(self.compression)
        twin.means, twin.weights = list(self.means), list(self.weights)
        twin.merged_nodes, twin.merged_weight = self.merged_nodes, self.merged_weight
        twin.unmerged_weight, twin.total_compressions = self.unmerged_weight, self.total_compressions
        twin.min, twin.max = self.min, self.max
        return twin

    def payload(self) -> bytes:
        """TDigestRdbSave: compressed first, then its fields and the centroids (a lone
        observation, which never merges, too: Redis Stack would drop it)."""
        self.compress()
        out = ModuleWriter()
        out.double(float(self.compression))
        out.double(self.min)
        out.double(self.max)
        out.signed(self.capacity)
        out.signed(self.merged_nodes)
        out.signed(self.unmerged_nodes)
        out.signed(self.total_compressions)
        out.double(float(self.merged_weight))
        out.double(float(self.unmerged_weight))
        for mean in self.means:
            out.double(mean)
        for weight in self.weights:
            out.double(float(weight))
        return out.payload()

    @classmethod
    def from_payload(cls, data: bytes, encoding_version: int) -> TDigest:
        if encoding_version > cls.ENCODING_VERSION:
            raise ValueError(f"t-digest encoding version {encoding_version} is newer than 0")
        src = ModuleReader(data)
        compression = src.double()
        if not (math.isfinite(compression) and 0 < compression <= INT_MAX):
            raise ValueError("t-digest: bad compression")
        digest = cls(int(compression))
        digest.min, digest.max = src.double(), src.double()
        digest.capacity = src.signed()
        merged_nodes, unmerged_nodes = src.signed(), src.signed()
        digest.total_compressions = src.signed()
        digest.merged_weight, digest.unmerged_weight = int(src.double()), int(src.double())
        if not (merged_nodes >= 0 and unmerged_nodes >= 0
                and merged_nodes + unmerged_nodes <= digest.capacity):
            raise ValueError("t-digest: bad node counts")
        # Redis Stack saves the merged nodes only; fakekey a lone unmerged one too
        nodes = merged_nodes + unmerged_nodes
        if src.remaining() < 18 * nodes:  # a double is 9 bytes: its opcode, then 8
            nodes = merged_nodes
        digest.means = [src.double() for _ in range(nodes)]
        digest.weights = [int(src.double()) for _ in range(nodes)]
        digest.merged_nodes = merged_nodes
        if nodes == merged_nodes:
            digest.unmerged_weight = 0
        src.finish()
        return digest

    def memory_usage(self) -> int:
        """TDigestMemUsage: a pointer and two arrays of `capacity` doubles."""
        return 8 + 2 * self.capacity * 8


class _Walk:
    """td_internal_iterate_centroids_to_index: the value at a cumulative weight, walking
    the merged centroids forward; one walk answers ascending indexes in turn."""

    __slots__ = ("digest", "so_far", "pos")

    def __init__(self, digest: TDigest) -> None:
        self.digest = digest
        self.so_far = digest.weights[0] / 2
        self.pos = 0

    def value_at(self, index: float) -> float:
        d = self.digest
        means, weights = d.means, d.weights
        n = d.merged_nodes
        total = d.merged_weight
        left_weight = float(weights[0])
        if left_weight > 1 and index < left_weight / 2:
            return d.min + _div(index - 1, left_weight / 2 - 1) * (means[0] - d.min)
        if index > total - 1:
            return d.max
        right_weight = float(weights[n - 1])
        right_mean = means[n - 1]
        if right_weight > 1 and total - index <= right_weight / 2:
            return d.max - _div(total - index - 1, right_weight / 2 - 1) * (d.max - right_mean)
        while self.pos < n - 1:
            i = self.pos
            w, w_next = float(weights[i]), float(weights[i + 1])
            dw = (w + w_next) / 2
            if self.so_far + dw > index:
                return self._inside(i, index, w, w_next, dw)
            self.so_far += dw
            self.pos += 1
        z1 = index - total - right_weight / 2.0
        z2 = right_weight / 2 - z1
        return _weighted_average(right_mean, z1, d.max, z2)

    def _inside(self, i: int, index: float, w: float, w_next: float, dw: float) -> float:
        """Centroids i and i + 1 bracket `index`: interpolate, singletons held at their mean."""
        means = self.digest.means
        left_unit = right_unit = 0.0
        if w == 1:
            if index - self.so_far < 0.5:
                return means[i]
            left_unit = 0.5
        if w_next == 1:
            if self.so_far + dw - index <= 0.5:
                return means[i + 1]
            right_unit = 0.5
        z1 = index - self.so_far - left_unit
        z2 = self.so_far + dw - index - right_unit
        return _weighted_average(means[i], z2, means[i + 1], z1)


def _denominator(total: float) -> float:
    return 2 * math.pi * total * math.log(total)


def _double_overflows(total: float) -> bool:
    """_check_td_overflow: the total, and the compression's denominator, stay finite."""
    total = float(total)
    return math.isinf(total) or (total > 1 and math.isinf(_denominator(total)))


def _sorted_nodes(means: list[float], weights: list[int]) -> tuple[list[float], list[int]]:
    """The nodes by mean. Equal means can come out in any order; it only matters when
    their weights differ, and then t-digest-c's own quicksort decides it."""
    order = sorted(range(len(means)), key=means.__getitem__)
    sorted_means = [means[i] for i in order]
    sorted_weights = [weights[i] for i in order]
    for i in range(len(order) - 1):
        if sorted_means[i] == sorted_means[i + 1] and sorted_weights[i] != sorted_weights[i + 1]:
            sorted_means, sorted_weights = list(means), list(weights)
            _quicksort(sorted_means, sorted_weights)
            break
    return sorted_means, sorted_weights


def _quicksort(means: list[float], weights: list[int]) -> None:
    """td_qsort, with a stack of ranges for its recursion: Lomuto's partition around the
    middle node, two nodes compared directly; the weights move with their means. A range
    of equal means (quadratic for Lomuto) is stepped through in its own loop, to the
    same order."""
    ranges = [(0, len(means) - 1, False)]
    while ranges:
        start, end, equal = ranges.pop()
        if equal:
            _equal_range(means, weights, start, end)
            continue
        if start >= end:
            continue
        if end - start == 1:
            if means[start] > means[end]:
                means[start], means[end] = means[end], means[start]
                weights[start], weights[end] = weights[end], weights[start]
            continue
        middle = (end + start) // 2
        pivot = means[middle]
        means[middle], means[end] = means[end], means[middle]
        weights[middle], weights[end] = weights[end], weights[middle]
        low = start - 1
        larger = False
        for j in range(start, end):
            mean = means[j]
            if mean < pivot:
                low += 1
                means[low], means[j] = mean, means[low]
                weights[low], weights[j] = weights[j], weights[low]
            elif mean > pivot:
                larger = True
        at = low + 1
        means[at], means[end] = means[end], means[at]
        weights[at], weights[end] = weights[end], weights[at]
        if at > start:
            ranges.append((start, at - 1, False))
        ranges.append((at + 1, end, at == start and not larger))


def _equal_range(means: list[float], weights: list[int], start: int, end: int) -> None:
    """td_qsort over a range of equal means: each partition swaps the middle node to the
    end, then the end to the front, and goes on with the rest."""
    while end - start > 1:
        middle = (end + start) // 2
        weights[middle], weights[end] = weights[end], weights[middle]
        weights[start], weights[end] = weights[end], weights[start]
        start += 1


def _merged(means: list[float], weights: list[int], normalizer: float,
            total: float) -> tuple[list[float], list[int]]:
    """td_compress's pass over the sorted nodes: fold each into the current centroid while
    the proposed weight stays within the k-scale bound at both its ends."""
    if math.isinf(normalizer):
        raise Overflow
    out_means = [means[0]]
    out_weights = [weights[0]]
    so_far = 0.0
    for i in range(1, len(means)):
        proposed = float(out_weights[-1]) + float(weights[i])
        z = proposed * normalizer
        q0 = so_far / total
        q2 = (so_far + proposed) / total
        if z <= q0 * (1 - q0) and z <= q2 * (1 - q2):
            out_weights[-1] += weights[i]
            delta = means[i] - out_means[-1]
            out_means[-1] += delta * weights[i] / out_weights[-1]
        else:
            so_far += out_weights[-1]
            out_means.append(means[i])
            out_weights.append(weights[i])
    return out_means, out_weights
