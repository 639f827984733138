"""The width and height of an image, from its header: PNG, JPEG, GIF or WebP, with no imaging library.

An image's input tokens depend only on its size in pixels (formulas.images), so the header
is all napkin reads. A size may also be typed as ``1024x768``.
"""

from __future__ import annotations

import re
import struct

from napkin.errors import InputError

MAX_IMAGE_BYTES = 64 * 2**20  # larger than any image a provider accepts (OpenAI: 50 MB; Anthropic: 5 MB)
_SIZE = re.compile(r"^\s*(\d+)\s*[xX×]\s*(\d+)\s*(?:px)?\s*$")


def parse_size(text: str, field: str = "image_size") -> tuple[int, int]:
    """``1024x768`` -> (1024, 768); InputError naming the field otherwise."""
    m = _SIZE.match(str(text))
    if not m:
        raise InputError(field, text, "is not an image size", "write WIDTHxHEIGHT in pixels, e.g. 1024x768")
    w, h = int(m.group(1)), int(m.group(2))
    if w < 1 or h < 1 or w > 1_000_000 or h > 1_000_000:
        raise InputError(field, text, "has a side outside 1 .. 1,000,000 pixels", "give the image's size in pixels")
    return w, h


def image_size(data: bytes, name: str, field: str = "image") -> tuple[int, int]:
    """(width, height) from the bytes of a PNG, JPEG, GIF or WebP file."""
    try:
        if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if data[:6] in (b"GIF87a", b"GIF89a"):
            return struct.unpack("<HH", data[6:10])
        if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            return _webp(data)
        if data[:2] == b"\xff\xd8":
            return _jpeg(data)
    except struct.error:
        pass
    raise InputError(field, name, "is not a PNG, JPEG, GIF or WebP image napkin can read the size of",
                     "give its size instead: --image-size 1024x768")


def _webp(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the frame tag and start code
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit width-1 and height-1, packed
        b = struct.unpack("<I", data[21:25])[0]
        return (b & 0x3FFF) + 1, ((b >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit width-1 and height-1
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    raise struct.error("unknown WebP chunk")


def _jpeg(data: bytes) -> tuple[int, int]:
    """The size in the first start-of-frame marker (SOF0-SOF15 but DHT, JPG and DAC), segment by segment."""
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            raise struct.error("not a marker")
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack(">HH", data[i + 5:i + 9])
            return w, h
        i += 2 + length
    raise struct.error("no frame header")
