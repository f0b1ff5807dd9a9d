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
    name = "t_" + "".join(ch if ch.isalnum() else "_" for ch in request.node.name)[:50]
    client.drop_database(name)
    yield client[name]
    client.drop_database(name)
