"""A ticket as an Apple Wallet pass (``.pkpass``), built to the format's documented structure: a zip
of ``pass.json`` (an event ticket whose barcode carries the same ticket code as the QR on the
e-ticket and the PDF), the images, ``manifest.json`` (the SHA-1 of every other file) and
``signature``, a detached PKCS#7 signature of the manifest (``cryptography``).

The signer is the theater's Pass Type ID certificate when configured (``BOOKING_WALLET_CERTIFICATE``,
``BOOKING_WALLET_KEY`` and Apple's WWDR intermediate ``BOOKING_WALLET_WWDR_CERTIFICATE``, PEM
files); otherwise a self-made development certificate, generated once and kept under
``BOOKING_WALLET_DEV_DIR`` (outside git). Wallet on a phone accepts only Apple-issued signers, so a
development pass is for looking at and for tests.

Why no library: of those installable, ``wallet-py3k`` (2018) and ``applepassgenerator`` (2023) are
unmaintained and sign through M2Crypto or the ``openssl`` command; ``py-pkpass`` is young. The
structure is small and documented, and ``cryptography`` (well kept) makes the signature.
"""

import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID
from django.utils import timezone
from django.utils.translation import gettext
from PIL import Image

from booking.core.domain import SEAT_OWNING_ORDER_STATES, Order
from booking.core.localized import localized
from booking.sales.order_venues import PerformanceVenue
from booking.venues.addresses import address_lines, directions_text

CONTENT_TYPE = "application/vnd.apple.pkpass"
DEV_FILE = "wallet-dev-signer.pem"  # key and certificate in one file, replaced atomically
THEATER_COLOUR = (122, 31, 61)  # the site's wine red: the pass's background and its icon
# Wallet wants these images at these sizes (points; @2x is twice as big)
IMAGES = {"icon.png": 29, "icon@2x.png": 58, "logo.png": 50, "logo@2x.png": 100}


@dataclass(frozen=True)
class Signer:
    certificate: x509.Certificate
    key: rsa.RSAPrivateKey
    chain: tuple[x509.Certificate, ...] = ()  # Apple's WWDR intermediate with a real certificate
    development: bool = False


@dataclass(frozen=True)
class PassIdentity:
    """Who the pass says it is from (Apple's Pass Type ID and team) and who signs it."""

    pass_type_id: str
    team_id: str
    organization: str
    signer: Signer


def load_signer(*, certificate: str, key: str, key_password: str, wwdr: str, dev_dir: str) -> Signer:
    """The theater's signer from PEM files when ``certificate`` and ``key`` are given, else the
    development signer under ``dev_dir`` (made the first time)."""
    if certificate and key:
        cert = x509.load_pem_x509_certificate(Path(certificate).read_bytes())
        private = serialization.load_pem_private_key(Path(key).read_bytes(), key_password.encode() or None)
        if not isinstance(private, rsa.RSAPrivateKey):
            raise ValueError("the wallet pass key must be an RSA key")
        chain = (x509.load_pem_x509_certificate(Path(wwdr).read_bytes()),) if wwdr else ()
        return Signer(cert, private, chain)
    return development_signer(Path(dev_dir))


def development_signer(directory: Path) -> Signer:
    """A self-signed certificate for development, generated once and kept in ``directory``."""
    path = directory / DEV_FILE
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Theater wallet pass (development)")])
        now = datetime.now(UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=3650))
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
            .sign(key, hashes.SHA256())
        )
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ) + cert.public_bytes(serialization.Encoding.PEM)
        # a temporary file renamed: a process racing this one reads one whole pair or the other
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=".signer-")
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    pem = path.read_bytes()
    private = serialization.load_pem_private_key(pem, None)
    if not isinstance(private, rsa.RSAPrivateKey):
        raise ValueError(f"{path} does not hold an RSA key")
    return Signer(x509.load_pem_x509_certificate(pem), private, (), development=True)


def is_valid_ticket(order: Order, code: str) -> bool:
    """The code is one of the order's tickets that still lets someone in and was not handed on
    (a friend's ticket is theirs: the booking's page shows no code of it)."""
    return order.get("state") in SEAT_OWNING_ORDER_STATES and any(
        line["ticket"] == code and not line.get("holder") for line in order.get("lines", [])
    )


def pass_json(*, order: Order, code: str, venue: PerformanceVenue, identity: PassIdentity, order_url: str) -> dict:
    """The pass's description of one ticket (``code``: one of the order's lines)."""
    line = next(line for line in order["lines"] if line["ticket"] == code)
    session: Mapping[str, Any] = next((s for s in order.get("sessions", []) if s["_id"] == line["sessionId"]), {})
    start = session.get("start")
    theater = localized(session, "theaterName")
    place = ", ".join(part for part in [theater, *address_lines(venue.address)] if part)
    back = [
        {"key": "booking", "label": gettext("Booking"), "value": order["ref"]},
        {"key": "venue", "label": gettext("Venue"), "value": place},
        {"key": "link", "label": gettext("Your booking"), "value": order_url},
    ]
    directions = directions_text(venue.address)
    if directions:
        back.insert(2, {"key": "directions", "label": gettext("Getting there"), "value": directions})
    barcode = {"format": "PKBarcodeFormatQR", "message": code, "messageEncoding": "iso-8859-1", "altText": code}
    data: dict = {
        "formatVersion": 1,
        "passTypeIdentifier": identity.pass_type_id,
        "teamIdentifier": identity.team_id,
        "organizationName": identity.organization,
        "serialNumber": code,
        "description": gettext("Ticket for %(show)s") % {"show": localized(session, "name")},
        "logoText": theater,
        "backgroundColor": "rgb({}, {}, {})".format(*THEATER_COLOUR),
        "foregroundColor": "rgb(255, 255, 255)",
        "labelColor": "rgb(255, 224, 232)",
        "barcodes": [barcode],
        "barcode": barcode,  # iOS before 9 reads this one
        "eventTicket": {
            "primaryFields": [{"key": "show", "label": theater, "value": localized(session, "name")}],
            "secondaryFields": [
                {"key": "row", "label": gettext("Row"), "value": line["row"]},
                {"key": "seat", "label": gettext("Seat"), "value": line["seat"]},
            ],
            "auxiliaryFields": [],
            "backFields": back,
        },
    }
    if start is not None:
        local = timezone.localtime(start)
        data["relevantDate"] = start.astimezone(UTC).isoformat()
        data["eventTicket"]["auxiliaryFields"].append(
            {
                "key": "start",
                "label": gettext("When"),
                "value": local.isoformat(),
                "dateStyle": "PKDateStyleMedium",
                "timeStyle": "PKDateStyleShort",
            }
        )
    return data


def _image(size: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (size, size), THEATER_COLOUR).save(out, format="PNG")
    return out.getvalue()


def manifest_of(files: dict[str, bytes]) -> bytes:
    return json.dumps({name: hashlib.sha1(body).hexdigest() for name, body in sorted(files.items())}).encode()  # noqa: S324 - the format's hash


def sign(manifest: bytes, signer: Signer) -> bytes:
    """The detached PKCS#7 (DER) signature of the manifest, with the signer's chain."""
    builder = (
        pkcs7.PKCS7SignatureBuilder().set_data(manifest).add_signer(signer.certificate, signer.key, hashes.SHA256())
    )
    for certificate in signer.chain:
        builder = builder.add_certificate(certificate)
    return builder.sign(serialization.Encoding.DER, [pkcs7.PKCS7Options.DetachedSignature, pkcs7.PKCS7Options.Binary])


def build_pass(*, order: Order, code: str, venue: PerformanceVenue, identity: PassIdentity, order_url: str) -> bytes:
    """The ``.pkpass`` of one ticket of the order."""
    description = pass_json(order=order, code=code, venue=venue, identity=identity, order_url=order_url)
    files = {"pass.json": json.dumps(description, ensure_ascii=False).encode()}
    files.update({name: _image(size) for name, size in IMAGES.items()})
    manifest = manifest_of(files)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in files.items():
            archive.writestr(name, body)
        archive.writestr("manifest.json", manifest)
        archive.writestr("signature", sign(manifest, identity.signer))
    return out.getvalue()
