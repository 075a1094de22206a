"""Decode the PNG screenshots Chromium writes (8-bit RGB/RGBA, not interlaced) into pixel counts, so a test can
say which colours a page rendered without an imaging library."""

import struct
import zlib
from collections import Counter


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def decode(data):
    """(width, height, rows of bytes per pixel channels, bytes per pixel)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up, corner = prev[x], prev[x - bpp] if x >= bpp else 0
            predictor = (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]
            line[x] = (line[x] + predictor) & 0xFF
        rows.append(line)
        prev = line
    return width, height, rows, bpp


def colour_counts(data):
    """Counter of (r, g, b) over every pixel."""
    _, _, rows, bpp = decode(data)
    counts = Counter()
    for line in rows:
        for x in range(0, len(line), bpp):
            counts[(line[x], line[x + 1], line[x + 2])] += 1
    return counts
