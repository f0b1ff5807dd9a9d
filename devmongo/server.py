"""The TCP side: a mockupdb server whose connections execute commands on the Engine."""

import logging
import socket
import struct
import threading

import bson
from bson.codec_options import CodecOptions
from mockupdb import OP_MSG, OPCODES, Command, MockupDB, OpReply

from .engine import Engine
from .errors import MongoError
from .limits import MAX_MESSAGE_SIZE
from .persistence import SnapshotWriter, load_snapshot
from .ttl import TTLMonitor

log = logging.getLogger("devmongo")

_HEADER = struct.Struct("<iiii")
_UINT = struct.Struct("<I")
_INT = struct.Struct("<i")
_CODEC = CodecOptions(document_class=dict, tz_aware=False)
_MORE_TO_COME = 1 << 1
_CHECKSUM_PRESENT = 1 << 0
_OP_COMPRESSED = 2012


_RECV_SIZE = 65536
_MAX_LENGTH = MAX_MESSAGE_SIZE + 16 * 1024 * 1024


class BadLength(ValueError):
    """A message header announcing an impossible length: the connection is closed."""


class MessageReader:
    """Whole wire messages from a socket, usually with one ``recv`` per message (pymongo sends
    one message and waits for the reply, so one read brings exactly one message)."""

    __slots__ = ("sock", "pending")

    def __init__(self, sock):
        self.sock = sock
        self.pending = b""

    def _fill(self, data, needed):
        """``data`` extended with further reads to at least ``needed`` bytes; None at EOF. A large
        remainder is read into one buffer of its exact size."""
        chunks = [data]
        have = len(data)
        while have < needed:
            want = needed - have
            chunk = self._recv_exactly(want) if want > _RECV_SIZE else self.sock.recv(_RECV_SIZE)
            if not chunk:
                return None
            chunks.append(chunk)
            have += len(chunk)
        return b"".join(chunks)

    def _recv_exactly(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if not k:
                return None
            got += k
        return buf

    def next_message(self):
        """(length, request id, opcode, body) of the next message, or None at EOF."""
        data = self.pending or self.sock.recv(_RECV_SIZE)
        if len(data) < 16:
            if not data:
                return None
            data = self._fill(data, 16)
            if data is None:
                return None
        length, request_id, _response_to, opcode = _HEADER.unpack_from(data)
        if length < 16 or length > _MAX_LENGTH:
            raise BadLength(length)
        if len(data) < length:
            data = self._fill(data, length)
            if data is None:
                return None
        self.pending = data[length:]
        return length, request_id, opcode, data[16:length]


def parse_op_msg(body):
    """Parse an OP_MSG body into (flags, command document).

    Document sequences (payload type 1, used by pymongo for insert/update/delete batches) are
    merged into the command under their identifier, as the server does.
    """
    flags = _UINT.unpack_from(body, 0)[0]
    end = len(body) - (4 if flags & _CHECKSUM_PRESENT else 0)
    if end >= 9 and body[4] == 0 and _INT.unpack_from(body, 5)[0] == end - 5:
        # The common case: one body section and nothing else.
        return flags, bson.decode(body[5:end], _CODEC)
    pos = 4
    cmd = None
    sequences = []
    while pos < end:
        kind = body[pos]
        pos += 1
        size = _INT.unpack_from(body, pos)[0]
        if kind == 0:
            cmd = bson.decode(bytes(body[pos : pos + size]), _CODEC)
        elif kind == 1:
            ident_end = body.index(0, pos + 4)
            ident = bytes(body[pos + 4 : ident_end]).decode()
            docs = bson.decode_all(bytes(body[ident_end + 1 : pos + size]), _CODEC)
            sequences.append((ident, docs))
        else:
            raise ValueError(f"unknown OP_MSG payload type {kind}")
        pos += size
    if cmd is None:
        raise ValueError("OP_MSG without a body section")
    for ident, docs in sequences:
        cmd[ident] = docs
    return flags, cmd


def op_msg_reply(request_id, doc):
    payload = bson.encode(doc)
    return _HEADER.pack(16 + 5 + len(payload), 0, request_id, OP_MSG) + b"\x00\x00\x00\x00\x00" + payload


class _WireServer(MockupDB):
    """mockupdb's listener and accept loop; each connection runs commands on the Engine."""

    def __init__(self, engine, host, port):
        super().__init__(port=port or None, auto_ismaster=False, request_timeout=int(1e6))
        self._address = (host, port or 0)
        self._engine = engine
        self._conn_lock = threading.Lock()
        self._next_conn = 0
        self._clients = set()  # open client sockets (drop_connections)

    def _log(self, msg):
        pass  # mockupdb's own messages; devmongo logs one line per connection itself

    def _server_loop(self, client, client_addr):
        with self._conn_lock:
            self._next_conn += 1
            conn_id = self._next_conn
            self._clients.add(client)
        engine = self._engine
        engine.connections += 1
        log.debug("conn%d: connection accepted from %s:%s", conn_id, *client_addr[:2])
        try:
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        reader = MessageReader(client)
        try:
            while not self._stopped:
                try:
                    message = reader.next_message()
                except BadLength as exc:
                    log.debug("conn%d: bad message length %d, closing", conn_id, exc.args[0])
                    break
                if message is None:
                    break
                _length, request_id, opcode, body = message
                if opcode == OP_MSG:
                    try:
                        flags, cmd = parse_op_msg(body)
                    except Exception as exc:  # noqa: BLE001
                        log.debug("conn%d: malformed OP_MSG: %s", conn_id, exc)
                        client.sendall(op_msg_reply(request_id, MongoError(9, f"malformed OP_MSG: {exc}").to_reply()))
                        continue
                    db = cmd.pop("$db", None)
                    reply = engine.run_command(db, cmd, conn_id)
                    if not flags & _MORE_TO_COME:
                        client.sendall(op_msg_reply(request_id, reply))
                elif opcode in OPCODES and opcode != _OP_COMPRESSED:
                    request = OPCODES[opcode].unpack(bytes(body), client, self, request_id)
                    if isinstance(request, Command):
                        cmd = dict(request.doc)
                        if "$query" in cmd:
                            cmd = dict(cmd["$query"])
                        reply = engine.run_command(request.namespace, cmd, conn_id)
                        client.sendall(OpReply(reply).reply_bytes(request))
                    elif opcode == 2004:  # legacy OP_QUERY find: not supported by MongoDB 7
                        client.sendall(
                            OpReply(
                                {"$err": "OP_QUERY is no longer supported", "code": 5739101, "ok": 0.0}, flags=2
                            ).reply_bytes(request)
                        )
                    else:
                        log.debug("conn%d: unsupported legacy opcode %d, closing", conn_id, opcode)
                        break
                else:
                    log.debug("conn%d: unsupported opcode %d, closing", conn_id, opcode)
                    break
        except OSError:
            pass
        except Exception:  # noqa: BLE001
            log.warning("conn%d: connection handler failed", conn_id, exc_info=True)
        finally:
            engine.connections -= 1
            with self._conn_lock:
                self._clients.discard(client)
            try:
                client.close()
            except OSError:
                pass

    def drop_connections(self):
        """Close every client connection (as a network failure would); the listener stays."""
        with self._conn_lock:
            clients = list(self._clients)
        for client in clients:
            try:
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class DevMongoServer:
    """A MongoDB wire-protocol server for development and tests.

    >>> server = DevMongoServer(port=0).start()
    >>> server.uri  # doctest: +SKIP
    'mongodb://127.0.0.1:54321/'
    >>> server.stop()

    ``replset="rs0"``: the replica-set mode (the primary of a one-member set named rs0; change
    streams, retryable writes); ``server.uri`` then names the set (``?replicaSet=rs0``).
    ``oplog_size_mb`` bounds its change history. ``advertise_host``: the host name the set's
    member announces (default: ``host``, or this machine's name when listening on all addresses).
    """

    def __init__(
        self,
        host="127.0.0.1",
        port=0,
        data_path=None,
        snapshot_interval=2.0,
        replset=None,
        oplog_size_mb=16,
        advertise_host=None,
        notablescan=False,
        notablescan_strict=False,
        random_tie_break=False,
        ttl_monitor_sleep_secs=60,
    ):
        self.host = host
        self._requested_port = port
        self.data_path = data_path
        self.snapshot_interval = snapshot_interval
        self.replset = replset
        self.engine = Engine(replset=replset, oplog_bytes=int(oplog_size_mb * 1024 * 1024))
        self.engine.notablescan = bool(notablescan or notablescan_strict)
        self.engine.notablescan_strict = bool(notablescan_strict)
        self.engine.random_tie_break = bool(random_tie_break)
        self.engine.ttl_sleep_secs = int(ttl_monitor_sleep_secs)
        self._ttl = TTLMonitor(self.engine)
        if advertise_host is None:
            advertise_host = socket.gethostname() if host in ("", "0.0.0.0", "::") else host
        self.advertise_host = advertise_host
        self._wire = None
        self._snapshots = None
        self.port = None

    @property
    def uri(self):
        if self.replset:
            return f"mongodb://{self.advertise_host}:{self.port}/?replicaSet={self.replset}"
        return f"mongodb://{self.host}:{self.port}/"

    def start(self):
        if self._wire is not None:
            raise RuntimeError("server already started")
        if self.data_path:
            load_snapshot(self.engine, self.data_path)
            self._snapshots = SnapshotWriter(self.engine, self.data_path, self.snapshot_interval)
        self._wire = _WireServer(self.engine, self.host, self._requested_port)
        self.port = self._wire.run()
        if self.engine.replset is not None:
            self.engine.replset.me = f"{self.advertise_host}:{self.port}"
        if self._snapshots is not None:
            self._snapshots.start()
        self._ttl.start()
        return self

    def stop(self):
        if self._wire is None:
            return
        wire, self._wire = self._wire, None
        self._ttl.stop()
        self.engine.stopped.set()
        if self.engine.changes is not None:
            self.engine.changes.stop()
        wire.stop()
        wire.drop_connections()
        if self._snapshots is not None:
            self._snapshots.stop()
            self._snapshots = None

    def run_ttl_monitor(self):
        """Run one pass of the TTL monitor now (it runs every ttlMonitorSleepSecs, 60 s by
        default, as MongoDB's); returns the number of documents deleted."""
        return self._ttl.run_once()

    def drop_connections(self):
        """Close every client connection, as a network failure would (tests: clients resume)."""
        if self._wire is not None:
            self._wire.drop_connections()

    def snapshot(self):
        """Write the snapshot now (no-op without data_path)."""
        if self._snapshots is not None:
            self._snapshots.write()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
