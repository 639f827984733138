"""Input tokens of an image at each provider's published formula, and image sizes from file headers."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, strategies as st

from napkin.errors import InputError
from napkin.formulas import images as img
from napkin.image_size import image_size, parse_size


@pytest.mark.parametrize("w, h, detail, tokens", [
    (1024, 1024, "high", 765),  # "A 1024 x 1024 square image in detail: high mode costs 765 tokens"
    (2048, 4096, "high", 1105),  # "A 2048 x 4096 image in detail: high mode costs 1105 tokens"
    (4096, 8192, "low", 85),  # "A 4096 x 8192 image in detail: low most costs 85 tokens"
])
def test_openai_published_examples(w, h, detail, tokens):
    """OpenAI API docs, Images and vision, "Calculating costs" (its three worked examples, as quoted May 2024)."""
    assert img.openai_image_tokens(w, height_px=h, detail=detail) == tokens


@pytest.mark.parametrize("w, h, tokens", [(200, 200, 54), (1000, 1000, 1334), (1092, 1092, 1590)])
def test_anthropic_published_examples(w, h, tokens):
    """Anthropic docs, Vision, "Calculate image costs": ~54, ~1334 and ~1590 tokens."""
    assert img.anthropic_image_tokens(w, height_px=h) == tokens


def test_anthropic_caps_large_images_at_the_largest_unresized_size():
    """784 x 1568 is the largest 1:2 size the docs list as sent unresized; 2048 x 4096 is scaled to it."""
    assert img.anthropic_image_tokens(784, height_px=1568) == img.anthropic_image_tokens(2048, height_px=4096) == 1640


@pytest.mark.parametrize("w, h, tokens", [(384, 384, 258), (100, 300, 258), (385, 384, 258), (768, 769, 516),
                                          (1536, 1536, 1032)])
def test_gemini_tiles(w, h, tokens):
    """Google's token docs (Gemini 2.0): 258 up to 384 x 384, else 258 per 768 x 768 tile."""
    assert img.gemini_image_tokens(w, height_px=h) == tokens


@given(st.integers(1, 20000), st.integers(1, 20000))
def test_image_tokens_are_bounded(w, h):
    """OpenAI's two resizes leave at most 768 x 2048, so at most 2 x 4 tiles (85 + 170 · 8); Anthropic's cap
    bounds it at 1,640; a wider image never costs fewer tokens at Gemini."""
    assert 255 <= img.openai_image_tokens(w, height_px=h) <= 85 + 170 * 8
    assert 1 <= img.anthropic_image_tokens(w, height_px=h) <= 1640
    assert img.gemini_image_tokens(w + 1, height_px=h) >= img.gemini_image_tokens(w, height_px=h)


def _png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", w, h) + b"\x08\x02\x00\x00\x00"


def _jpeg(w: int, h: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, h, w, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


@pytest.mark.parametrize("data, size", [
    (_png(1024, 768), (1024, 768)),
    (b"GIF89a" + struct.pack("<HH", 320, 200) + b"\x00" * 8, (320, 200)),
    (_jpeg(4032, 3024), (4032, 3024)),
    (b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x0a\x00\x00\x00" + b"\x00" * 4 + (1919).to_bytes(3, "little")
     + (1079).to_bytes(3, "little"), (1920, 1080)),
])
def test_image_size_from_headers(data, size):
    assert image_size(data, "x") == size


def test_image_size_refuses_what_it_cannot_read():
    with pytest.raises(InputError, match="is not a PNG, JPEG, GIF or WebP image"):
        image_size(b"%PDF-1.7", "doc.pdf")
    with pytest.raises(InputError, match="write WIDTHxHEIGHT"):
        parse_size("1024 by 768")
    assert parse_size("1024x768") == (1024, 768)


def test_tokens_image_file(run_cli, tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(_png(1024, 1024))
    out = run_cli("tokens", "--image", str(path)).stdout
    assert out.endswith(f"  {path}     1,024      1,024     765      1,399   1,032\n")
