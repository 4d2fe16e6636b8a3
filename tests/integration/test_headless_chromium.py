"""The headless Chromium harness against small pages: it must see what a reader would, and catch what breaks."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.headless_chromium import chromium_path, render

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        chromium_path() is None,
        reason="Chromium is not installed: `make setup` installs Debian's chromium where apt-get can run",
    ),
]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def solid_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of one colour, built by hand so the test needs no image library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\xc0\x30\x30" * width for _ in range(height))
    return PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write_page(directory: Path, body: str, title: str = "Fleet report") -> Path:
    page = directory / "page.html"
    page.write_text(f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")
    return page


def test_a_self_contained_page_renders_its_image_and_table_without_fetching(tmp_path: Path) -> None:
    image = base64.b64encode(solid_png(4, 3)).decode()
    page = write_page(
        tmp_path,
        f'<h1>Today</h1><img alt="stall chart" src="data:image/png;base64,{image}">'
        "<table><thead><tr><th>Job</th><th> Status </th></tr></thead><tbody><tr><td>a</td><td>ok</td></tr></tbody>"
        '</table><div style="height: 2000px"></div>',
    )
    screenshot = tmp_path / "page.png"

    rendered = render(page, screenshot=screenshot, width=800)

    assert rendered.title == "Fleet report"
    [chart] = rendered.images
    assert (chart.alt, chart.natural_width, chart.natural_height, chart.complete) == ("stall chart", 4, 3, True)
    assert chart.src_scheme == "data"
    assert rendered.tables == [["Job", "Status"]]
    assert "Today" in rendered.text
    assert rendered.requested_urls[0] == page.resolve().as_uri()
    assert {urlsplit(url).scheme for url in rendered.requested_urls} <= {"file", "data"}
    assert rendered.console_errors == []
    png = screenshot.read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", png[16:24])  # from IHDR: one device pixel per CSS pixel
    assert width == 800 and height > 2000  # the whole page, not the 900-pixel viewport, and no scrollbar


def test_a_missing_image_and_a_script_error_are_reported(tmp_path: Path) -> None:
    page = write_page(
        tmp_path, '<img alt="gone" src="missing.png"><script>throw new Error("chart data missing")</script>'
    )

    rendered = render(page)

    [gone] = rendered.images
    assert gone.natural_width == 0 and gone.src_scheme == "file"
    assert any("ERR_FILE_NOT_FOUND" in error for error in rendered.console_errors)
    assert any("Error: chart data missing" in error for error in rendered.console_errors)


def test_a_network_fetch_is_seen_even_when_it_fails(tmp_path: Path) -> None:
    page = write_page(tmp_path, '<img alt="remote" src="http://127.0.0.1:9/x.png">')

    rendered = render(page)

    assert "http://127.0.0.1:9/x.png" in rendered.requested_urls
    assert rendered.images[0].natural_width == 0


def test_a_page_that_cannot_be_opened_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"could not open file://.*absent\.html: net::ERR_FILE_NOT_FOUND"):
        render(tmp_path / "absent.html")


def test_running_out_of_time_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"timed out waiting for Chromium's Target\.createTarget"):
        render(write_page(tmp_path, "<p>slow</p>"), timeout_s=0)
