"""``python -m devmongo``: run the development MongoDB stand-in."""

import argparse
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
                    "to it like to any mongod.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=27017,
                        help="TCP port to listen on; 0 picks a free port (default: 27017)")
    parser.add_argument("--data", metavar="PATH", default=None,
                        help="snapshot file: loaded at start, rewritten atomically every ~2s "
                             "when data changed and on shutdown. Without it data lives in "
                             "memory only.")
    parser.add_argument("--snapshot-interval", type=float, default=2.0, metavar="SECONDS",
                        help="how often to write the snapshot when data changed (default: 2)")
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"],
                        help="logging level; debug logs one line per connection and per failed "
                             "command (default: info)")
    args = parser.parse_args(argv)

    logging.basicConfig(level=getattr(logging, args.log_level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("devmongo")

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    server = DevMongoServer(host=args.host, port=args.port, data_path=args.data,
                            snapshot_interval=args.snapshot_interval)
    try:
        server.start()
    except OSError as exc:
        log.error("devmongo: cannot listen on %s:%s: %s", args.host, args.port, exc)
        return 1
    log.info("devmongo listening on %s", server.uri)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        log.info("devmongo stopping")
        server.stop()
        log.info("devmongo stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
