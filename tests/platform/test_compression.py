"""gzip for HTML and JSON (leaderboard/web/compression.py), with the anonymous page micro-cache in front."""

from __future__ import annotations

import gzip

import pytest
from django.test import Client

from leaderboard.web.compression import compressible
from leaderboard.web.pagecache import PAGE_CACHE

from .factories import make_user
from .test_leaderboard_pages import known_board

pytestmark = pytest.mark.django_db
GZIP = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}


@pytest.fixture
def board():
    return known_board(make_user("gzip-host"), [make_user("gzip-alice"), make_user("gzip-bob")])[0]


def test_the_board_is_sent_compressed_to_a_client_that_asks_for_gzip(board):
    url = board.get_absolute_url()
    plain = Client().get(url)
    packed = Client().get(url, **GZIP)
    assert plain.status_code == packed.status_code == 200
    assert not plain.has_header("Content-Encoding")  # a client that does not ask gets the page as it is
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    page = gzip.decompress(packed.content)
    assert b'table class="table leaderboard"' in page and len(packed.content) < len(page) / 4
    assert int(packed["Content-Length"]) == len(packed.content)


def test_the_leaderboard_json_is_compressed_too(board):
    response = Client().get(f"/api/challenges/{board.slug}/leaderboard/", **GZIP)
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.content).startswith(b"{")


def test_the_micro_cache_keeps_the_page_uncompressed_and_serves_both_kinds_of_client(board, settings):
    """The cache sits inside the middleware: it stores the rendered page, and each response is compressed on the
    way out, so a client that asks for gzip and one that does not both get the right body from one entry."""
    settings.VARBOARD = {**settings.VARBOARD, "LEADERBOARD_MICROCACHE_S": 60}
    PAGE_CACHE.clear()
    try:
        url = board.get_absolute_url()
        first = Client().get(url, **GZIP)
        assert "X-Varboard-Page-Cache" not in first and first["Content-Encoding"] == "gzip"
        ((stored, _),) = [entry[0] for entry in PAGE_CACHE.entries.values()]
        assert stored.startswith(b"<!doctype html>")  # the page itself, not a gzip stream
        hit_gzip = Client().get(url, **GZIP)
        hit_plain = Client().get(url)
        assert hit_gzip["X-Varboard-Page-Cache"] == hit_plain["X-Varboard-Page-Cache"] == "hit"
        assert hit_gzip["Content-Encoding"] == "gzip" and not hit_plain.has_header("Content-Encoding")
        assert gzip.decompress(hit_gzip.content) == hit_plain.content == stored
        assert {"Cookie", "Accept-Encoding"} <= {v.strip() for v in hit_gzip["Vary"].split(",")}
    finally:
        PAGE_CACHE.clear()


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/html; charset=utf-8", True),
        ("application/json", True),
        ("text/csv", True),
        ("application/problem+json", True),
        ("application/vnd.oai.openapi+json", True),
        ("application/vnd.apache.parquet", False),
        ("application/zip", False),
        ("image/png", False),
        ("application/octet-stream", False),
        ("", False),
    ],
)
def test_only_text_is_compressed(content_type, expected):
    assert compressible(content_type) is expected
