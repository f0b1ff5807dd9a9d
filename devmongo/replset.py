"""The replica-set mode: devmongo answers as the primary of a one-member replica set.

What it changes (the rest is the same server):

* ``hello`` names the set (``setName``, ``hosts``, ``primary``, ``me``, ``topologyVersion``...), so
  pymongo with ``?replicaSet=NAME`` discovers a primary; awaitable ``hello`` (pymongo's streaming
  monitor) waits ``maxAwaitTimeMS`` before answering, as MongoDB does when nothing changed.
* Retryable writes (``lsid`` + ``txnNumber`` on insert, update, delete, findAndModify): executed
  once; a retry of the same (session, txnNumber) answers with the first execution's reply.
* Write concerns: ``w: "majority"`` and ``w: 1`` are acknowledged; a ``w`` this one member cannot
  satisfy gets MongoDB's ``writeConcernError`` after the write.
* Every reply carries ``operationTime`` and ``$clusterTime``.
* Writes are recorded in the change log (``oplog.py``) for change streams (``changestreams.py``).

Transactions (``startTransaction``/``autocommit``) are refused in both modes.
"""

import datetime
import time
import uuid

from bson.binary import Binary
from bson.int64 import Int64
from bson.objectid import ObjectId

from .errors import MongoError
from .oplog import key_ts

RETRYABLE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})
SESSION_TIMEOUT = 30 * 60.0  # logicalSessionTimeoutMinutes
_ZERO_SIGNATURE = {"hash": Binary(b"\x00" * 20, 0), "keyId": Int64(0)}


class ReplSet:
    """The set's configuration: its name and its one member's advertised ``host:port``."""

    def __init__(self, name):
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"invalid replica set name: {name!r}")
        self.name = name
        self.me = None  # "host:port", set when the server is listening
        self.process_id = ObjectId()
        self.election_id = ObjectId("7fffffff0000000000000001")
        self.started = time.time()

    def hello_fields(self, engine):
        """The replica-set part of a ``hello`` reply (the primary of a one-member set)."""
        ts = key_ts(engine.changes.last)
        wall = engine.changes.last_wall
        optime = {"ts": ts, "t": Int64(1)}
        return {
            "topologyVersion": {"processId": self.process_id, "counter": Int64(0)},
            "hosts": [self.me],
            "setName": self.name,
            "setVersion": 1,
            "secondary": False,
            "primary": self.me,
            "me": self.me,
            "electionId": self.election_id,
            "lastWrite": {"opTime": optime, "lastWriteDate": wall, "majorityOpTime": optime, "majorityWriteDate": wall},
        }

    def status(self, engine):
        """``replSetGetStatus``, minimal."""
        ts = key_ts(engine.changes.last)
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        optime = {"ts": ts, "t": Int64(1)}
        return {
            "set": self.name,
            "date": now,
            "myState": 1,
            "term": Int64(1),
            "heartbeatIntervalMillis": Int64(2000),
            "majorityVoteCount": 1,
            "writeMajorityCount": 1,
            "votingMembersCount": 1,
            "writableVotingMembersCount": 1,
            "optimes": {"lastCommittedOpTime": optime, "appliedOpTime": optime, "durableOpTime": optime},
            "members": [
                {
                    "_id": 0,
                    "name": self.me,
                    "health": 1.0,
                    "state": 1,
                    "stateStr": "PRIMARY",
                    "uptime": int(time.time() - self.started),
                    "optime": optime,
                    "optimeDate": now,
                    "syncSourceHost": "",
                    "syncSourceId": -1,
                    "infoMessage": "",
                    "electionTime": ts,
                    "electionDate": now,
                    "configVersion": 1,
                    "configTerm": 1,
                    "self": True,
                    "lastHeartbeatMessage": "",
                }
            ],
            "ok": 1.0,
        }

    def config(self):
        """``replSetGetConfig``."""
        return {
            "config": {
                "_id": self.name,
                "version": 1,
                "term": 1,
                "protocolVersion": Int64(1),
                "writeConcernMajorityJournalDefault": True,
                "members": [
                    {
                        "_id": 0,
                        "host": self.me,
                        "arbiterOnly": False,
                        "buildIndexes": True,
                        "hidden": False,
                        "priority": 1.0,
                        "tags": {},
                        "secondaryDelaySecs": Int64(0),
                        "votes": 1,
                    }
                ],
                "settings": {
                    "chainingAllowed": True,
                    "heartbeatIntervalMillis": 2000,
                    "electionTimeoutMillis": 10000,
                    "getLastErrorModes": {},
                    "getLastErrorDefaults": {"w": 1, "wtimeout": 0},
                    "replicaSetId": self.process_id,
                },
            },
            "ok": 1.0,
        }


_cluster_time = (None, None)  # (key, (operationTime, $clusterTime)): replies share them


def cluster_time_fields(engine):
    """``operationTime`` and ``$clusterTime`` as a replica-set member adds them to every reply."""
    global _cluster_time
    key = engine.changes.last
    cached_key, fields = _cluster_time
    if cached_key != key:
        ts = engine.changes.cluster_time()
        fields = (ts, {"clusterTime": ts, "signature": _ZERO_SIGNATURE})
        _cluster_time = (key, fields)
    return fields


# --------------------------------------------------------------------------- write concern


def check_write_concern(replset, wc):
    """Validate a command's ``writeConcern`` as MongoDB does before running the write: raises
    MongoDB's error for one it refuses outright (standalone), returns the ``writeConcernError``
    to add to the reply for one a one-member set cannot satisfy, else None."""
    if not isinstance(wc, dict):
        raise MongoError(14, "BSON field 'writeConcern' is the wrong type, expected type 'object'")
    w = wc.get("w", 1)
    if isinstance(w, bool) or not isinstance(w, (int, float, str)):
        raise MongoError(14, "w has to be a number or string")
    if isinstance(w, (int, float)):
        if w < 0 or w > 50:
            raise MongoError(9, f"w has to be a non-negative number and not greater than 50; found: {w}")
        if w <= 1:
            return None
        if replset is None:
            raise MongoError(2, "cannot use 'w' > 1 when a host is not replicated")
        return _wc_error(100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes", wc)
    if w == "majority":
        return None
    if replset is None:
        raise MongoError(2, f"cannot use non-majority 'w' mode {w} when a host is not a member of a replica set")
    return _wc_error(
        79, "UnknownReplWriteConcern", f"No write concern mode named '{w}' found in replica set configuration", wc
    )


def _wc_error(code, name, errmsg, wc):
    info = {"w": wc.get("w"), "wtimeout": wc.get("wtimeout", 0), "provenance": "clientSupplied"}
    return {"code": code, "codeName": name, "errmsg": errmsg, "errInfo": {"writeConcern": info}}


# --------------------------------------------------------------------------- retryable writes


def session_key(lsid):
    """The hashable identity of a logical session (``lsid.id``, a UUID)."""
    if not isinstance(lsid, dict) or "id" not in lsid:
        raise MongoError(40414, "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field")
    sid = lsid["id"]
    return bytes(sid) if isinstance(sid, (bytes, Binary)) else repr(sid)


class RetryableWrites:
    """Per logical session, the highest txnNumber seen and the reply of its execution."""

    __slots__ = ("sessions", "_stores")

    def __init__(self):
        self.sessions = {}  # session key -> [txnNumber, reply, last used]
        self._stores = 0

    def replay(self, key, txn, lsid):
        """The recorded reply when (session, txn) already ran; None when it has to run now.
        An older txnNumber than the session's newest is refused (TransactionTooOld)."""
        entry = self.sessions.get(key)
        if entry is None:
            return None
        entry[2] = time.monotonic()
        if txn == entry[0]:
            return entry[1]
        if txn < entry[0]:
            raise MongoError(
                225,
                f"Retryable write with txnNumber {txn} is prohibited on session "
                f"{_fmt_lsid(lsid)} because a newer retryable write with "
                f"txnNumber {entry[0]} has already started on this session.",
            )
        return None

    def record(self, key, txn, reply):
        now = time.monotonic()
        self.sessions[key] = [txn, reply, now]
        self._stores += 1
        if self._stores % 1024 == 0:
            for k in [k for k, e in self.sessions.items() if now - e[2] > SESSION_TIMEOUT]:
                del self.sessions[k]

    def end(self, lsids):
        for lsid in lsids or ():
            try:
                self.sessions.pop(session_key(lsid), None)
            except MongoError:
                pass


def _fmt_lsid(lsid):
    sid = lsid.get("id") if isinstance(lsid, dict) else lsid
    try:
        return str(uuid.UUID(bytes=bytes(sid)))
    except (TypeError, ValueError):
        return repr(sid)
