"""Each command is atomic: a conditional update raced by many clients has one winner."""

import threading

import pymongo


def test_fifty_threads_one_conditional_update_one_winner(devmongo_server, db):
    db.race.insert_one({"_id": 1, "seats": [[0, 0], [0, 0]]})
    n = 50
    barrier = threading.Barrier(n)
    results = [None] * n
    errors = []

    def worker(i):
        try:
            client = pymongo.MongoClient(devmongo_server.uri)
            try:
                coll = client[db.name].race
                coll.find_one({"_id": 1})  # connect before the barrier
                barrier.wait()
                r = coll.update_one({"_id": 1, "seats.0.0": 0}, {"$set": {"seats.0.0": 1}})
                results[i] = (r.matched_count, r.modified_count)
            finally:
                client.close()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert results.count((1, 1)) == 1
    assert results.count((0, 0)) == n - 1
    assert db.race.find_one({"_id": 1})["seats"] == [[1, 0], [0, 0]]


def test_concurrent_incs_are_not_lost(devmongo_server, db):
    db.ctr.insert_one({"_id": 1, "n": 0})
    client = pymongo.MongoClient(devmongo_server.uri, maxPoolSize=20)

    def worker():
        coll = client[db.name].ctr
        for _ in range(50):
            coll.update_one({"_id": 1}, {"$inc": {"n": 1}})

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert db.ctr.find_one({"_id": 1})["n"] == 500
    client.close()
