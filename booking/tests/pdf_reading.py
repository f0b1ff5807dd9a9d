"""Where a ReportLab PDF draws its text: each string with its font, size, position and width, read
from the page streams, so a test can measure that columns never run into each other."""

import base64
import re
import zlib
from dataclasses import dataclass

from reportlab.pdfbase.pdfmetrics import stringWidth

TOKEN = re.compile(rb"\((?:[^()\\]|\\.)*\)|/[^\s/\[\]()<>]+|[-+]?\d*\.?\d+|[A-Za-z*']+|\S", re.S)
ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


@dataclass(frozen=True)
class Drawn:
    text: str
    font: str
    size: float
    x: float  # the baseline's start, in points from the page's lower left corner
    y: float
    page: int

    @property
    def width(self) -> float:
        return stringWidth(self.text, self.font, self.size)

    @property
    def end(self) -> float:
        return self.x + self.width


def _string(token: bytes) -> str:
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        if body[i : i + 1] == b"\\":
            octal = re.match(rb"[0-7]{1,3}", body[i + 1 : i + 4])
            if octal:
                out.append(int(octal.group(), 8))
                i += 1 + len(octal.group())
                continue
            out += ESCAPES.get(body[i + 1 : i + 2], body[i + 1 : i + 2])
            i += 2
            continue
        out += body[i : i + 1]
        i += 1
    return out.decode("cp1252")  # ReportLab's standard fonts: WinAnsiEncoding


def _page_streams(data: bytes) -> list[bytes]:
    pages = []
    for stream in re.findall(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:
            pages.append(zlib.decompress(base64.a85decode(b"<~" + stream.strip(), adobe=True)))
        except (ValueError, zlib.error):
            continue  # not a page's content (an image, a font)
    return pages


def drawn_strings(data: bytes) -> list[Drawn]:
    """Every string a ReportLab PDF draws (Tj), where it starts. Understands what ReportLab writes:
    q/Q, translations by cm, BT/ET, Tf, TL, Tm, Td, T* (not rotation or scaling)."""
    fonts = {
        name.decode(): base.decode() for base, name in re.findall(rb"/BaseFont /(\S+).*?/Name /(F\d+)", data, re.S)
    }
    drawn: list[Drawn] = []
    for page, content in enumerate(_page_streams(data), start=1):
        origin, saved = (0.0, 0.0), []
        font, size, leading = "Helvetica", 10.0, 0.0
        line = at = (0.0, 0.0)
        operands: list[bytes] = []
        for token in TOKEN.findall(content):
            if token[:1] in b"(/" or re.fullmatch(rb"[-+]?\d*\.?\d+", token):
                operands.append(token)
                continue
            numbers = [float(t) for t in operands if t[:1] not in b"(/"]
            if token == b"q":
                saved.append((origin, font, size, leading))
            elif token == b"Q":
                origin, font, size, leading = saved.pop()
            elif token == b"cm":
                origin = (origin[0] + numbers[4], origin[1] + numbers[5])
            elif token == b"BT":
                line = at = (0.0, 0.0)
            elif token == b"Tf":
                font, size = fonts[operands[0][1:].decode()], numbers[-1]
            elif token == b"TL":
                leading = numbers[-1]
            elif token == b"Tm":
                line = at = (numbers[4], numbers[5])
            elif token == b"Td":
                line = at = (line[0] + numbers[0], line[1] + numbers[1])
            elif token == b"T*":
                line = at = (line[0], line[1] - leading)
            elif token == b"Tj":
                text = _string(operands[-1])
                drawn.append(Drawn(text, font, size, origin[0] + at[0], origin[1] + at[1], page))
                at = (at[0] + stringWidth(text, font, size), at[1])
            operands = []
    return drawn


def collisions(drawn: list[Drawn]) -> list[tuple[str, str]]:
    """Pairs of strings on one baseline of one page that overlap (the pieces of one paragraph's
    line, in another font, touch: those are fine)."""
    rows: dict[tuple[int, float], list[Drawn]] = {}
    for d in drawn:
        if d.text.strip():
            rows.setdefault((d.page, round(d.y, 1)), []).append(d)
    found = []
    for row in rows.values():
        row.sort(key=lambda d: d.x)
        found += [(a.text, b.text) for a, b in zip(row, row[1:], strict=False) if a.end > b.x + 0.01]
    return found
