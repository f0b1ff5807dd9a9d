"""A ticket as an Apple Wallet pass: unpacked, its manifest's hashes match every file, its detached
PKCS#7 signature verifies (openssl) against the signer's certificate, and its barcode carries the
ticket's code; signed with the theater's certificate when configured, else a development one."""

import hashlib
import io
import json
import subprocess
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from django.test import Client
from django.urls import reverse

from booking.notifications import wallet_pass
from booking.sales.cancels import cancel_order
from booking.tests.admin_support import sell
from booking.tests.factories import make_session, make_theater
from booking.venues.addresses import update_address

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def dev_dir(settings, tmp_path):
    settings.BOOKING_WALLET_DEV_DIR = str(tmp_path / "wallet")
    return tmp_path / "wallet"


@pytest.fixture
def paid():
    theater = make_theater(name="Old Opera")
    update_address(
        theater_id=theater["_id"],
        street="Opernplatz 1",
        postal_code="60313",
        city="Frankfurt",
        directions="U6 to Alte Oper.",
        directions_de="U6 bis Alte Oper.",
    )
    session = make_session(theater, name="Tosca")
    return sell(session["_id"], ["0:0", "0:1"], email="ada@example.com")


def pass_url(order, code) -> str:
    return reverse("booking:ticket_wallet_pass", kwargs={"ref": order["ref"], "code": code})


def download(order, code, client=None):
    return (client or Client()).get(pass_url(order, code) + "?email=ada@example.com")


def unpack(body: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def verify_with_openssl(tmp_path: Path, files: dict[str, bytes], certificate_pem: bytes) -> subprocess.CompletedProcess:
    (tmp_path / "manifest.json").write_bytes(files["manifest.json"])
    (tmp_path / "signature").write_bytes(files["signature"])
    (tmp_path / "signer.pem").write_bytes(certificate_pem)
    return subprocess.run(  # noqa: S603 - fixed arguments
        [
            "openssl", "smime", "-verify", "-binary", "-inform", "DER",
            "-in", str(tmp_path / "signature"), "-content", str(tmp_path / "manifest.json"),
            "-CAfile", str(tmp_path / "signer.pem"), "-purpose", "any", "-out", "/dev/null",
        ],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip


def test_the_pass_unpacks_with_matching_hashes_and_a_signature_that_verifies(paid, dev_dir, tmp_path):
    code = paid["lines"][0]["ticket"]
    response = download(paid, code)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.apple.pkpass"
    files = unpack(response.content)
    assert {"pass.json", "manifest.json", "signature", "icon.png", "icon@2x.png"} <= set(files)

    manifest = json.loads(files["manifest.json"])
    assert set(manifest) == set(files) - {"manifest.json", "signature"}
    for name, digest in manifest.items():
        assert hashlib.sha1(files[name]).hexdigest() == digest  # noqa: S324 - the format's hash

    certificate = (dev_dir / wallet_pass.DEV_FILE).read_bytes()
    checked = verify_with_openssl(tmp_path, files, certificate)
    assert checked.returncode == 0, checked.stderr

    description = json.loads(files["pass.json"])
    assert description["barcodes"][0]["message"] == code and description["serialNumber"] == code
    assert description["eventTicket"]["primaryFields"][0]["value"] == "Tosca"
    seat = {f["key"]: f["value"] for f in description["eventTicket"]["secondaryFields"]}
    assert seat == {"row": "A", "seat": paid["lines"][0]["seat"]}
    back = {f["key"]: f["value"] for f in description["eventTicket"]["backFields"]}
    assert back["venue"] == "Old Opera, Opernplatz 1, 60313 Frankfurt" and back["directions"] == "U6 to Alte Oper."


def test_a_changed_file_no_longer_matches_the_signed_manifest(paid, dev_dir, tmp_path):
    files = unpack(download(paid, paid["lines"][0]["ticket"]).content)
    files["manifest.json"] = files["manifest.json"].replace(b'"', b"'", 1)
    checked = verify_with_openssl(tmp_path, files, (dev_dir / wallet_pass.DEV_FILE).read_bytes())
    assert checked.returncode != 0


def test_the_development_certificate_is_made_once(paid, dev_dir):
    download(paid, paid["lines"][0]["ticket"])
    made = (dev_dir / wallet_pass.DEV_FILE).read_bytes()
    download(paid, paid["lines"][1]["ticket"])
    assert (dev_dir / wallet_pass.DEV_FILE).read_bytes() == made


def _certificate(name: str, key, issuer_name: str, issuer_key) -> x509.Certificate:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=name == issuer_name, path_length=None), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )


def test_the_theaters_certificate_signs_when_configured(paid, settings, tmp_path, dev_dir):
    root_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    root = _certificate("Test WWDR", root_key, "Test WWDR", root_key)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    certificate = _certificate("Pass Type ID: pass.test.theater", key, "Test WWDR", root_key)
    pem = serialization.Encoding.PEM
    (tmp_path / "cert.pem").write_bytes(certificate.public_bytes(pem))
    (tmp_path / "wwdr.pem").write_bytes(root.public_bytes(pem))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"s3cret"))
    )
    settings.BOOKING_WALLET_CERTIFICATE = str(tmp_path / "cert.pem")
    settings.BOOKING_WALLET_KEY = str(tmp_path / "key.pem")
    settings.BOOKING_WALLET_KEY_PASSWORD = "s3cret"
    settings.BOOKING_WALLET_WWDR_CERTIFICATE = str(tmp_path / "wwdr.pem")
    settings.BOOKING_WALLET_PASS_TYPE_ID = "pass.test.theater"

    files = unpack(download(paid, paid["lines"][0]["ticket"]).content)

    assert not dev_dir.exists()  # no development certificate was made
    checked = verify_with_openssl(tmp_path, files, root.public_bytes(pem))  # the chain up to the WWDR root
    assert checked.returncode == 0, checked.stderr
    assert json.loads(files["pass.json"])["passTypeIdentifier"] == "pass.test.theater"


def test_someone_elses_booking_or_an_unknown_ticket_is_a_404(paid):
    code = paid["lines"][0]["ticket"]
    assert Client().get(pass_url(paid, code)).status_code == 404  # not this browser's booking
    assert download(paid, code[:-1] + ("A" if code[-1] != "A" else "B")).status_code == 404


def test_a_canceled_bookings_ticket_has_no_pass(paid):
    cancel_order(paid["_id"], by="test")
    assert download(paid, paid["lines"][0]["ticket"]).status_code == 404


@pytest.mark.parametrize("language, words", [("en", "Add to Apple Wallet"), ("de", "Zu Apple Wallet hinzufügen")])
def test_the_order_page_links_each_tickets_pass(paid, language, words):
    page = Client(HTTP_ACCEPT_LANGUAGE=language).get(
        reverse("booking:order", kwargs={"ref": paid["ref"]}) + "?email=ada@example.com"
    )
    text = page.content.decode()
    for line in paid["lines"]:
        assert pass_url(paid, line["ticket"]) in text
    assert text.count(words) == len(paid["lines"])
