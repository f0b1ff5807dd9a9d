"""--data: snapshot on stop and periodically, loaded at start, indexes included."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pymongo
import pytest
from pymongo.errors import DuplicateKeyError

from devmongo import DevMongoServer

from .cli_support import free_port, start_cli

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # servers started and stopped (each stop waits up to a second), CLI subprocesses


def test_restart_keeps_data_and_indexes(tmp_path):
    path = str(tmp_path / "data.bson")
    server = DevMongoServer(port=0, data_path=path).start()
    client = pymongo.MongoClient(server.uri)
    db = client.app
    db.users.create_index("email", unique=True)
    db.users.insert_many([{"_id": i, "email": f"u{i}@x"} for i in range(100)])
    db.shows.insert_one({"_id": "s", "seats": [[0, 1], [1, 0]]})
    db.create_collection("empty")
    client.close()
    server.stop()
    assert os.path.exists(path)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]

    server = DevMongoServer(port=0, data_path=path).start()
    client = pymongo.MongoClient(server.uri)
    db = client.app
    assert db.users.count_documents({}) == 100
    assert db.shows.find_one() == {"_id": "s", "seats": [[0, 1], [1, 0]]}
    assert sorted(db.list_collection_names()) == ["empty", "shows", "users"]
    assert "email_1" in db.users.index_information()
    with pytest.raises(DuplicateKeyError):
        db.users.insert_one({"email": "u5@x"})
    client.close()
    server.stop()


def test_periodic_snapshot_without_stop(tmp_path):
    path = str(tmp_path / "data.bson")
    server = DevMongoServer(port=0, data_path=path, snapshot_interval=0.2).start()
    client = pymongo.MongoClient(server.uri)
    client.app.c.insert_one({"_id": 1})
    deadline = time.time() + 5
    while time.time() < deadline and not os.path.exists(path):
        time.sleep(0.05)
    assert os.path.exists(path)
    # Load the periodic snapshot in a second server while the first is still running.
    time.sleep(0.5)
    other = DevMongoServer(port=0, data_path=path)
    other.start()
    c2 = pymongo.MongoClient(other.uri)
    assert c2.app.c.find_one() == {"_id": 1}
    c2.close()
    other._snapshots = None  # do not write from the reader
    other.stop()
    client.close()
    server.stop()


def test_cli_sigterm_then_restart(tmp_path):
    path = str(tmp_path / "cli.bson")
    port = free_port()
    proc = start_cli(port, path, "--log-level", "debug")
    try:
        client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/")
        client.app.c.create_index("k", unique=True)
        client.app.c.insert_many([{"k": i} for i in range(10)])
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "connection accepted" in out
    proc = start_cli(port, path, "--log-level", "debug")
    try:
        client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/")
        assert client.app.c.count_documents({}) == 10
        with pytest.raises(DuplicateKeyError):
            client.app.c.insert_one({"k": 3})
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_cli_help():
    out = subprocess.run(
        [sys.executable, "-m", "devmongo", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0
    for option in ("--host", "--port", "--data", "--log-level"):
        assert option in out.stdout


def test_version_1_snapshot_loads(tmp_path):
    import bson

    path = tmp_path / "v1.bson"
    meta = {"collection": {"db": "app", "name": "c", "indexes": [], "count": 1}}
    path.write_bytes(
        bson.encode({"devmongo": "snapshot", "version": 1}) + bson.encode(meta) + bson.encode({"_id": 1, "a": "x"})
    )
    for replset in (None, "rs0"):
        server = DevMongoServer(port=0, data_path=str(path), replset=replset).start()
        client = pymongo.MongoClient(server.uri)
        assert client.app.c.find_one() == {"_id": 1, "a": "x"}
        client.close()
        server._snapshots = None  # leave the file as it is
        server.stop()
