"""CRC-32C of many ranges of one buffer at once, for checking every batch of a file.

One ``crc32c`` call per batch costs about 0.25 µs, most of it Python's call and slice, which
is a quarter of reading a quiet log. But a CRC is affine in its input: for two inputs of one
length, ``crc(x) ^ crc(y)`` is a linear function of ``x ^ y``, the xor of what each differing
byte adds, which depends only on the byte and how many bytes follow it. So the ranges of one
length are checked together: the first one's CRC, then, column by column of the bytes where
any range differs from it, a table lookup per range. In a quiet log the batches of one length
differ in a dozen bytes of some sixty (the timestamps). Short runs of one length, and long
ranges, are computed one by one.
"""

from __future__ import annotations

import functools

import numpy as np

from ..wire.crc import crc32c

_TOGETHER = 1 << 14  # fewer ranges of one length are computed one by one
_WIDEST = 4096  # and so are longer ranges (a few big batches)
_CHUNK = 4 << 20  # bytes of ranges compared at once (bounds the memory)


def crcs(data: bytes, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """CRC-32C of ``data[starts[i]:starts[i] + sizes[i]]`` for every i (uint32)."""
    n = len(starts)
    out = np.empty(n, np.uint32)
    if not n:
        return out
    a = np.frombuffer(data, np.uint8)
    view = memoryview(data)
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    cuts = (np.flatnonzero(np.diff(ordered)) + 1).tolist()
    for lo, hi in zip([0, *cuts], [*cuts, n], strict=True):
        rows = order[lo:hi]
        width = int(ordered[lo])
        if hi - lo < _TOGETHER or width > _WIDEST:
            out[rows] = [crc32c(view[p:p + width]) for p in starts[rows].tolist()]
        else:
            out[rows] = _same_length(a, starts[rows], width)
    return out


def _same_length(a: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The CRCs of ranges of one length: the first range's CRC, xor what each byte that
    differs from it adds. The ranges are compared as 64-bit words (read a few bytes past
    their end, which are then ignored)."""
    first = int(starts[0])
    out = np.full(len(starts), crc32c(a[first:first + width].tobytes()), np.uint32)
    words = -(-width // 8)
    if int(starts.max()) + 8 * words > len(a):
        words = width // 8  # the last range ends the buffer: its tail bytes one by one
    ref = a[first:first + 8 * words].view(np.uint64)
    windows = np.lib.stride_tricks.sliding_window_view(a, 8 * words) if words else None
    chunk = max(1, _CHUNK // max(width, 1))
    for lo in range(0, len(starts), chunk):
        part = out[lo:lo + chunk]
        rows = starts[lo:lo + chunk]
        if windows is not None:
            diff = windows[rows].view(np.uint64) ^ ref
            seen = np.bitwise_or.reduce(diff, axis=0).tolist()  # where any range differs
            for w in range(words):
                for j in range(8 * w, min(8 * w + 8, width)):
                    shift = 8 * (j - 8 * w)
                    if (seen[w] >> shift) & 0xFF:
                        byte = (diff[:, w] >> np.uint64(shift)).astype(np.uint8)
                        part ^= _adds(width - 1 - j)[byte]
        for j in range(8 * words, width):  # bytes past the last whole word
            part ^= _adds(width - 1 - j)[a[rows + j] ^ a[first + j]]
    return out


@functools.lru_cache(maxsize=4096)
def _adds(after: int) -> np.ndarray:
    """What a byte b followed by ``after`` bytes adds to a CRC-32C, for every b: linear in
    b, so made from its eight bits."""
    zeros = bytes(after)
    none = crc32c(b"\0" + zeros)
    values = np.arange(256)
    table = np.zeros(256, np.uint32)
    for bit in range(8):
        table[(values >> bit) & 1 == 1] ^= crc32c(bytes([1 << bit]) + zeros) ^ none
    return table
