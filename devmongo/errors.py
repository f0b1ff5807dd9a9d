"""MongoDB error codes and the exception devmongo raises to produce an error reply."""

import bson
import mongomock

CODE_NAMES = {
    1: "InternalError",
    2: "BadValue",
    9: "FailedToParse",
    13: "Unauthorized",
    14: "TypeMismatch",
    16: "InvalidLength",
    20: "IllegalOperation",
    23: "AlreadyInitialized",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    28: "PathNotViable",
    40: "ConflictingUpdateOperators",
    43: "CursorNotFound",
    48: "NamespaceExists",
    52: "DollarPrefixedFieldName",
    53: "InvalidIdField",
    56: "EmptyFieldName",
    59: "CommandNotFound",
    66: "ImmutableField",
    67: "CannotCreateIndex",
    72: "InvalidOptions",
    73: "InvalidNamespace",
    76: "NoReplicationEnabled",
    79: "UnknownReplWriteConcern",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    100: "UnsatisfiableWriteConcern",
    115: "CommandNotSupported",
    168: "InvalidPipelineOperator",
    225: "TransactionTooOld",
    260: "InvalidResumeToken",
    280: "ChangeStreamFatalError",
    286: "ChangeStreamHistoryLost",
    291: "NoQueryExecutionPlans",
    11000: "DuplicateKey",
}


class MongoError(Exception):
    """An error that becomes a MongoDB error reply (ok: 0, code, codeName, errmsg)."""

    def __init__(self, code, errmsg, **extra):
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg
        self.extra = extra

    @property
    def code_name(self):
        return CODE_NAMES.get(self.code, f"Location{self.code}")

    def to_reply(self):
        reply = {"ok": 0.0, "errmsg": self.errmsg, "code": self.code, "codeName": self.code_name}
        reply.update(self.extra)
        return reply

    def to_write_error(self, index):
        err = {"index": index, "code": self.code, "errmsg": self.errmsg}
        err.update(self.extra)
        return err


def to_mongo_error(exc):
    """Turn any exception raised while executing a command into a MongoError."""
    if isinstance(exc, MongoError):
        return exc
    if isinstance(exc, mongomock.DuplicateKeyError):
        return MongoError(11000, str(exc) or "E11000 duplicate key error")
    if isinstance(exc, mongomock.OperationFailure):
        code = getattr(exc, "code", None) or 2
        return MongoError(code, str(exc))
    if isinstance(exc, NotImplementedError):
        return MongoError(115, f"devmongo does not support this operation: {exc}")
    if isinstance(exc, (ValueError, TypeError, bson.errors.InvalidDocument)):
        return MongoError(2, f"{exc}")
    return MongoError(1, f"devmongo internal error: {type(exc).__name__}: {exc}")
