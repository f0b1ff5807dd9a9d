import pymongo
import pytest

from devmongo import DevMongoServer


@pytest.fixture(scope="session")
def devmongo_server():
    server = DevMongoServer(port=0).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def client(devmongo_server):
    c = pymongo.MongoClient(devmongo_server.uri, serverSelectionTimeoutMS=5000)
    yield c
    c.close()


@pytest.fixture
def db(client, request):
    db = _fresh_db(client, request, "t_")
    yield db
    client.drop_database(db.name)


def _fresh_db(client, request, prefix: str):
    """A database of the test's own name, dropped before and after."""
    name = prefix + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)[:50]
    client.drop_database(name)
    return client[name]


@pytest.fixture(scope="module")
def rs_server():
    """A devmongo of its own as the one member of replica set rs0."""
    server = DevMongoServer(port=0, replset="rs0").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def rs_client(rs_server):
    c = pymongo.MongoClient(rs_server.uri, serverSelectionTimeoutMS=5000)
    yield c
    c.close()


@pytest.fixture
def rdb(rs_client, request):
    db = _fresh_db(rs_client, request, "r_")
    yield db
    rs_client.drop_database(db.name)
