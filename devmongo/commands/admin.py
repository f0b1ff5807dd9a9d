"""Handshake and administration: hello, ping, buildInfo, serverStatus, getParameter... These run
without the global lock."""

import datetime
import os
import time

from bson.int64 import Int64

from ..errors import MongoError
from ..limits import MAX_BSON_SIZE, MAX_MESSAGE_SIZE, MAX_WRITE_BATCH


def hello(engine, db, cmd, conn_id):
    now = datetime.datetime.now(datetime.UTC)
    name = next(iter(cmd))
    reply = {"helloOk": True}
    if name == "hello":
        reply["isWritablePrimary"] = True
    else:
        reply["ismaster"] = True
    reply.update({
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
    })
    return reply


def ok(engine, db, cmd, conn_id):
    return {"ok": 1.0}


def build_info(engine, db, cmd, conn_id):
    return {"version": "7.0.0", "gitVersion": "devmongo", "versionArray": [7, 0, 0, 0],
            "modules": [], "allocator": "system", "javascriptEngine": "none",
            "sysInfo": "deprecated", "bits": 64, "debug": False,
            "maxBsonObjectSize": MAX_BSON_SIZE, "storageEngines": ["devmongo"],
            "openssl": {"running": "disabled"}, "ok": 1.0}


def connection_status(engine, db, cmd, conn_id):
    return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []},
            "ok": 1.0}


def host_info(engine, db, cmd, conn_id):
    return {"system": {"hostname": os.uname().nodename, "cpuArch": os.uname().machine,
                       "numCores": os.cpu_count() or 1},
            "os": {"type": os.uname().sysname}, "extra": {}, "ok": 1.0}


def server_status(engine, db, cmd, conn_id):
    return {"host": os.uname().nodename, "version": "7.0.0", "process": "devmongo",
            "pid": Int64(os.getpid()), "uptime": float(time.time() - engine.started),
            "localTime": datetime.datetime.now(datetime.UTC),
            "connections": {"current": engine.connections}, "ok": 1.0}


def get_parameter(engine, db, cmd, conn_id):
    reply = {}
    if cmd.get("featureCompatibilityVersion") or cmd.get("getParameter") == "*":
        reply["featureCompatibilityVersion"] = {"version": "7.0"}
    if not reply:
        raise MongoError(72, "no option found to get")
    reply["ok"] = 1.0
    return reply


def get_cmd_line_opts(engine, db, cmd, conn_id):
    return {"argv": ["devmongo"], "parsed": {}, "ok": 1.0}
