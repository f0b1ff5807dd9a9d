"""A fake camera for Chromium: a Y4M video (``--use-file-for-fake-video-capture``) showing a QR code.

Y4M is a header line, then per frame ``FRAME\\n`` and the planes Y, U, V (4:2:0: U and V at half
width and height). The QR is drawn by segno as a PNG, as the ticket page draws it, and put on a
sheet of paper (light grey, a little darker at the edges) in the middle of the frame with Pillow.
"""

import io
from pathlib import Path

import segno
from PIL import Image, ImageDraw


def qr_frame(text: str, width: int = 640, height: int = 480, qr_size: int = 300) -> Image.Image:
    png = io.BytesIO()
    segno.make(text, error="m").save(png, kind="png", scale=10, border=4)
    qr = Image.open(io.BytesIO(png.getvalue())).convert("L").resize((qr_size, qr_size), Image.Resampling.NEAREST)
    frame = Image.new("L", (width, height), 90)  # a dim room
    paper = ImageDraw.Draw(frame)
    left, top = (width - qr_size) // 2, (height - qr_size) // 2
    paper.rectangle([left - 30, top - 30, left + qr_size + 30, top + qr_size + 30], fill=235)
    frame.paste(qr, (left, top))
    return frame


def write_y4m(path: Path, image: Image.Image, frames: int = 5) -> Path:
    """A few identical frames (Chromium plays the file in a loop)."""
    luma = image.convert("L")
    width, height = luma.size
    assert width % 2 == 0 and height % 2 == 0
    y = luma.tobytes()
    chroma = bytes([128]) * ((width // 2) * (height // 2))  # no colour
    with open(path, "wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
        for _ in range(frames):
            out.write(b"FRAME\n")
            out.write(y)
            out.write(chroma)
            out.write(chroma)
    return path
