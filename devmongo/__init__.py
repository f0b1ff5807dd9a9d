"""devmongo: a MongoDB wire-protocol server for development and tests.

Built on mockupdb (wire protocol) and mongomock (query semantics). See README.md.
"""

from .server import DevMongoServer

__all__ = ["DevMongoServer"]
