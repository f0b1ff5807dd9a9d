"""Reading the PDFs the project makes with ReportLab (tickets, receipts) in tests."""

import base64
import re
import zlib


def _string(raw: bytes) -> str:
    """A PDF string's text: its escapes undone; ReportLab's standard fonts draw cp1252 ("€")."""
    raw = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), raw)
    return re.sub(rb"\\(.)", rb"\1", raw).decode("cp1252", errors="replace")


def pdf_text(data: bytes) -> str:
    """The text a PDF from ReportLab shows: its page streams (ASCII85, then Flate) decoded, the
    strings its Tj operators draw, escapes undone."""
    texts = []
    for stream in re.findall(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:
            content = zlib.decompress(base64.a85decode(b"<~" + stream.strip(), adobe=True))
        except (ValueError, zlib.error):
            continue  # not a page's content (an image, a font)
        texts += [_string(t) for t in re.findall(rb"\(((?:[^()\\]|\\.)*)\)\s*Tj", content)]
    return " ".join(texts)


def page_count(data: bytes) -> int:
    return data.count(b"/Type /Page") - data.count(b"/Type /Pages")
