"""Handshake and administration: hello, ping, buildInfo, serverStatus, getParameter... These run
without the global lock."""

import datetime
import os
import time

from bson.int64 import Int64

from ..errors import MongoError
from ..limits import MAX_BSON_SIZE, MAX_MESSAGE_SIZE, MAX_WRITE_BATCH


def hello(engine, db, cmd, conn_id):
    replset = engine.replset
    if replset is not None:
        _await_topology_change(engine, cmd)
    now = datetime.datetime.now(datetime.UTC)
    name = next(iter(cmd))
    reply = {"helloOk": True}
    if replset is not None:
        reply["topologyVersion"] = None  # first, as MongoDB orders it
    if name == "hello":
        reply["isWritablePrimary"] = True
    else:
        reply["ismaster"] = True
    if replset is not None:
        reply.update(replset.hello_fields(engine))
    reply.update(
        {
            "maxBsonObjectSize": MAX_BSON_SIZE,
            "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": MAX_WRITE_BATCH,
            "localTime": now.replace(microsecond=now.microsecond // 1000 * 1000),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": conn_id,
            "minWireVersion": 0,
            "maxWireVersion": 21,
            "readOnly": False,
            "ok": 1.0,
        }
    )
    return reply


def _await_topology_change(engine, cmd):
    """Awaitable hello (pymongo's streaming monitor sends the topologyVersion it knows and
    ``maxAwaitTimeMS``): the topology of a one-member set never changes, so the answer comes after
    ``maxAwaitTimeMS``, or at once when the server stops, as MongoDB does."""
    known = cmd.get("topologyVersion")
    wait = cmd.get("maxAwaitTimeMS")
    if not isinstance(known, dict) or not isinstance(wait, (int, float)) or wait <= 0:
        return
    if known.get("processId") != engine.replset.process_id or known.get("counter") != 0:
        return
    engine.stopped.wait(min(wait, 3600 * 1000) / 1000.0)


def ok(engine, db, cmd, conn_id):
    return {"ok": 1.0}


def build_info(engine, db, cmd, conn_id):
    return {
        "version": "7.0.0",
        "gitVersion": "devmongo",
        "versionArray": [7, 0, 0, 0],
        "modules": [],
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "bits": 64,
        "debug": False,
        "maxBsonObjectSize": MAX_BSON_SIZE,
        "storageEngines": ["devmongo"],
        "openssl": {"running": "disabled"},
        "ok": 1.0,
    }


def connection_status(engine, db, cmd, conn_id):
    return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []}, "ok": 1.0}


def host_info(engine, db, cmd, conn_id):
    return {
        "system": {"hostname": os.uname().nodename, "cpuArch": os.uname().machine, "numCores": os.cpu_count() or 1},
        "os": {"type": os.uname().sysname},
        "extra": {},
        "ok": 1.0,
    }


def server_status(engine, db, cmd, conn_id):
    return {
        "host": os.uname().nodename,
        "version": "7.0.0",
        "process": "devmongo",
        "pid": Int64(os.getpid()),
        "uptime": float(time.time() - engine.started),
        "localTime": datetime.datetime.now(datetime.UTC),
        "connections": {"current": engine.connections},
        "ok": 1.0,
    }


# Server parameters: name -> (Engine attribute, type). notablescan, ttlMonitorEnabled and
# ttlMonitorSleepSecs are MongoDB's (ttlMonitorSleepSecs is startup-only there, runtime here);
# the devmongo* ones are devmongo's own (README: "Server parameters").
PARAMETERS = {
    "notablescan": ("notablescan", bool),
    "ttlMonitorEnabled": ("ttl_enabled", bool),
    "ttlMonitorSleepSecs": ("ttl_sleep_secs", int),
    "devmongoNotablescanStrict": ("notablescan_strict", bool),
    "devmongoRandomTieBreak": ("random_tie_break", bool),
}
_NOT_PARAMETERS = frozenset(
    {
        "getParameter",
        "setParameter",
        "comment",
        "lsid",
        "$clusterTime",
        "$readPreference",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
    }
)


def get_parameter(engine, db, cmd, conn_id):
    _admin_only(db, "getParameter")
    everything = cmd.get("getParameter") == "*"
    reply = {}
    if everything or cmd.get("featureCompatibilityVersion"):
        reply["featureCompatibilityVersion"] = {"version": "7.0"}
    for name, (attr, _kind) in PARAMETERS.items():
        if everything or name in cmd:
            reply[name] = getattr(engine, attr)
    if not reply:
        raise MongoError(72, "no option found to get")
    reply["ok"] = 1.0
    return reply


def set_parameter(engine, db, cmd, conn_id):
    _admin_only(db, "setParameter")
    names = [k for k in cmd if k not in _NOT_PARAMETERS]
    if not names:
        raise MongoError(72, "no option found to set, use help:true to see options ")
    values = {}
    for name in names:
        known = PARAMETERS.get(name)
        if known is None:
            raise MongoError(72, f"attempted to set unrecognized parameter [{name}], use help:true to see options ")
        attr, kind = known
        value = cmd[name]
        if kind is bool:
            if not isinstance(value, (bool, int, float)):
                raise MongoError(14, f"Unsupported type for parameter {name}")
            value = bool(value)
        else:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
                raise MongoError(2, f"Invalid value for parameter {name}: {value!r}")
            value = int(value)
        values[attr] = value
    reply = {"was": getattr(engine, PARAMETERS[names[0]][0])}
    for attr, value in values.items():
        setattr(engine, attr, value)
    reply["ok"] = 1.0
    return reply


def get_cmd_line_opts(engine, db, cmd, conn_id):
    return {"argv": ["devmongo"], "parsed": {}, "ok": 1.0}


def end_sessions(engine, db, cmd, conn_id):
    if engine.retryable is not None:
        with engine.lock:
            engine.retryable.end(cmd.get("endSessions"))
    return {"ok": 1.0}


def _need_replset(engine):
    if engine.replset is None:
        raise MongoError(76, "not running with --replSet")
    return engine.replset


def repl_set_get_status(engine, db, cmd, conn_id):
    _admin_only(db, "replSetGetStatus")
    return _need_replset(engine).status(engine)


def repl_set_get_config(engine, db, cmd, conn_id):
    _admin_only(db, "replSetGetConfig")
    return _need_replset(engine).config()


def repl_set_initiate(engine, db, cmd, conn_id):
    _admin_only(db, "replSetInitiate")
    _need_replset(engine)
    raise MongoError(23, "already initialized")


def _admin_only(db, name):
    if db != "admin":
        raise MongoError(13, f"{name} may only be run against the admin database.")
