"""``python -m devmongo``: run the development MongoDB stand-in."""

import argparse
import gc
import logging
import signal
import sys
import threading

from .server import DevMongoServer


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m devmongo" if sys.argv[0].endswith("__main__.py") else "devmongo",
        description="devmongo: a MongoDB 7.0-compatible wire-protocol server for development and "
        "tests (in-memory, single node, no auth, no transactions). pymongo connects "
        "to it like to any mongod (with --replset, as to a one-member replica set).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=27017, help="TCP port to listen on; 0 picks a free port (default: 27017)"
    )
    parser.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="snapshot file: loaded at start, rewritten atomically every ~2s "
        "when data changed and on shutdown. Without it data lives in "
        "memory only.",
    )
    parser.add_argument(
        "--snapshot-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to write the snapshot when data changed (default: 2)",
    )
    parser.add_argument(
        "--replset",
        metavar="NAME",
        default=None,
        help="replica-set mode: answer as the primary of a one-member replica set "
        "named NAME (connect with ?replicaSet=NAME): change streams, "
        "retryable writes, majority write concern",
    )
    parser.add_argument(
        "--oplog-size",
        type=float,
        default=16,
        metavar="MB",
        help="replica-set mode: bound of the change history kept for change streams, in megabytes (default: 16)",
    )
    parser.add_argument(
        "--advertise-host",
        default=None,
        metavar="HOST",
        help="replica-set mode: host name the member announces in hello "
        "(default: --host, or this machine's name for 0.0.0.0)",
    )
    parser.add_argument(
        "--notablescan",
        action="store_true",
        help="refuse queries that need a collection scan, as MongoDB's notablescan parameter (error 291)",
    )
    parser.add_argument(
        "--notablescan-strict",
        action="store_true",
        help="--notablescan, and also refuse queries with an empty filter that "
        "no index serves (MongoDB lets those through)",
    )
    parser.add_argument(
        "--random-tie-break",
        action="store_true",
        help="return documents whose sort keys tie in a random order (MongoDB promises no order among them)",
    )
    parser.add_argument(
        "--ttl-monitor-sleep-secs",
        type=int,
        default=60,
        metavar="SECONDS",
        help="how often the TTL monitor deletes expired documents (default: 60, as MongoDB)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="logging level; debug logs one line per connection and per failed command (default: info)",
    )
    args = parser.parse_args(argv)

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("devmongo")

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server = DevMongoServer(
        host=args.host,
        port=args.port,
        data_path=args.data,
        snapshot_interval=args.snapshot_interval,
        replset=args.replset,
        oplog_size_mb=args.oplog_size,
        advertise_host=args.advertise_host,
        notablescan=args.notablescan,
        notablescan_strict=args.notablescan_strict,
        random_tie_break=args.random_tie_break,
        ttl_monitor_sleep_secs=args.ttl_monitor_sleep_secs,
    )
    try:
        server.start()
    except OSError as exc:
        log.error("devmongo: cannot listen on %s:%s: %s", args.host, args.port, exc)
        return 1
    log.info("devmongo listening on %s", server.uri)
    keep_full_collections_short()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        log.info("devmongo stopping")
        server.stop()
        log.info("devmongo stopped")
    return 0


def keep_full_collections_short() -> None:
    """Python's full garbage collection walks every object the server holds, every stored document
    included, with the GIL held: on the benchmark's data one took 135 ms, a stall of every command
    that MongoDB (no garbage collector) does not have. After each full collection its survivors are
    frozen (``gc.freeze``), so the next one walks only what was allocated since. Reference counting
    still frees a deleted document at once; only a reference cycle among frozen objects is never
    collected (documents are trees; the server's own objects are long-lived)."""

    def freeze_after_full_collection(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    gc.collect()
    gc.freeze()  # what start() loaded (a --data snapshot)
    gc.callbacks.append(freeze_after_full_collection)


if __name__ == "__main__":
    sys.exit(main())
