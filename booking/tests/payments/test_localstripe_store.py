"""The dev stack's localstripe (scripts/localstripe_server.py) keeps its objects in the file it is
given, across restarts, and starts, empty, from a file it cannot read (localstripe itself wrote
one fixed /tmp file for every instance on the machine: a truncated one stopped ``run.sh``)."""

import subprocess
import sys

import pytest
import stripe

from booking.tests.localstripe import SERVER
from booking.tests.ports import free_port, listening

pytestmark = pytest.mark.slow


def start(port: int, data) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert listening(port, proc, 20), proc.stderr and proc.stderr.read().decode()
    return proc


def customers(port: int, monkeypatch) -> list[str | None]:
    monkeypatch.setattr(stripe, "api_base", f"http://127.0.0.1:{port}")
    return [c.email for c in stripe.Customer.list(api_key="sk_test_store").data]


def test_objects_survive_a_restart_and_an_unreadable_file_is_set_aside(tmp_path, monkeypatch):
    data = tmp_path / "localstripe.pickle"
    data.write_bytes(b"\x80\x05truncated")  # what a localstripe killed while writing leaves
    port = free_port()
    proc = start(port, data)
    try:
        assert customers(port, monkeypatch) == []
        stripe.Customer.create(email="ada@example.org", api_key="sk_test_store")
    finally:
        proc.terminate()
        warning = proc.communicate(timeout=10)[1].decode()
    assert "could not be read" in warning
    assert (tmp_path / "localstripe.pickle.unreadable").read_bytes() == b"\x80\x05truncated"
    port = free_port()
    proc = start(port, data)
    try:
        assert customers(port, monkeypatch) == ["ada@example.org"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
