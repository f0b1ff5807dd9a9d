"""Measure conditional single-document updates per second served to N client threads.

    python -m devmongo.bench [--threads 8] [--processes 1] [--seconds 5] [--uri mongodb://...]

Without --uri an in-process DevMongoServer on a free port is used (then client and server share
one GIL; start ``python -m devmongo --port N`` and pass --uri to measure the server alone).
--processes P splits the client threads over P processes, so that the Python client is not the
bottleneck. Each thread has its own
MongoClient and runs update_one({"_id": show, "seats.r.c": 0/1}, {"$set": ..., "$inc": ...})
against a theater-like document (30x40 seat grid, reservations array), flipping one seat each
time, so every update matches and modifies exactly one document.
"""

import argparse
import multiprocessing
import threading
import time

import pymongo

from devmongo import DevMongoServer

ROWS, COLS = 30, 40


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8, help="client threads in total")
    parser.add_argument("--processes", type=int, default=1, help="spread the client threads over this many processes")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--uri", default=None, help="benchmark an already running server")
    parser.add_argument("--shared-doc", action="store_true", help="all threads update the same show document")
    args = parser.parse_args(argv)

    server = None
    uri = args.uri
    if uri is None:
        server = DevMongoServer(port=0).start()
        uri = server.uri
    setup = pymongo.MongoClient(uri)
    coll = setup.devmongo_bench.shows
    coll.drop()
    n_docs = 1 if args.shared_doc else args.threads
    coll.insert_many(
        [
            {
                "_id": i,
                "seats": [[0] * COLS for _ in range(ROWS)],
                "seatsAvailable": ROWS * COLS,
                "reservations": [{"_id": f"c{j}", "seats": [], "v": 0} for j in range(20)],
            }
            for i in range(n_docs)
        ]
    )

    per_proc = [
        args.threads // args.processes + (1 if p < args.threads % args.processes else 0) for p in range(args.processes)
    ]
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    ready = ctx.Queue()
    results = ctx.Queue()
    procs = []
    first = 0
    for n in per_proc:
        proc = ctx.Process(target=_client_process, args=(uri, first, n, args.shared_doc, go, ready, results))
        proc.start()
        procs.append(proc)
        first += n
    for _ in procs:
        ready.get()
    go.set()
    started = time.perf_counter()
    time.sleep(args.seconds)
    go.clear()
    counts, misses = [], []
    for _ in procs:
        c, m = results.get()
        counts.append(c)
        misses.append(m)
    elapsed = time.perf_counter() - started
    for proc in procs:
        proc.join()
    total = sum(counts) + sum(misses)
    print(
        f"{args.threads} client threads in {args.processes} process(es), {elapsed:.1f}s: {total} conditional updates "
        f"({sum(counts)} modified, {sum(misses)} no match) = {total / elapsed:.0f} updates/s"
    )
    coll.drop()
    setup.close()
    if server is not None:
        server.stop()


def _client_process(uri, first, n, shared_doc, go, ready, results):
    stop = threading.Event()
    counts = [0] * n
    misses = [0] * n
    barrier = threading.Barrier(n + 1)

    def worker(k):
        t = first + k
        client = pymongo.MongoClient(uri)
        c = client.devmongo_bench.shows
        doc_id = 0 if shared_doc else t
        c.find_one({"_id": doc_id}, {"_id": 1})
        barrier.wait()
        i = 0
        while not stop.is_set():
            cell = (t * 997 + i) % (ROWS * COLS) if shared_doc else i % (ROWS * COLS)
            r, col = divmod(cell, COLS)
            flip = (i // (ROWS * COLS)) % 2
            res = c.update_one(
                {"_id": doc_id, f"seats.{r}.{col}": flip},
                {"$set": {f"seats.{r}.{col}": 1 - flip}, "$inc": {"seatsAvailable": -1 if flip == 0 else 1}},
            )
            if res.modified_count == 1:
                counts[k] += 1
            else:
                misses[k] += 1
            i += 1
        client.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for th in threads:
        th.start()
    barrier.wait()
    ready.put(True)
    go.wait()
    while go.is_set():
        time.sleep(0.01)
    stop.set()
    for th in threads:
        th.join()
    results.put((sum(counts), sum(misses)))


if __name__ == "__main__":
    main()
