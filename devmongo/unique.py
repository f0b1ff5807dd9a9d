"""Unique indexes: per collection and index, a map from index key to the owning document's
``_id`` key, built on first use and kept current by every write."""

from .errors import MongoError
from .keys import fmt_key_value, index_keys, key_value
from .update import MISSING, clone


def unique_specs(store):
    if not store.indexes:
        return ()
    return [(n, s) for n, s in store.indexes.items() if s.get("unique")]


def dup_error(db, coll, name, spec, doc):
    kv = key_value(spec, doc)
    return MongoError(
        11000,
        f"E11000 duplicate key error collection: {db}.{coll} index: {name} dup key: {fmt_key_value(kv)}",
        keyPattern=dict(spec["key"]),
        keyValue=clone(kv),
    )


class UniqueIndexes:
    """The unique-key maps of every collection: ``(db, coll) -> {index name: {key: id key}}``."""

    __slots__ = ("maps",)

    def __init__(self):
        self.maps = {}

    def map_for(self, db, coll, store, name, spec):
        maps = self.maps.setdefault((db, coll), {})
        m = maps.get(name)
        if m is None:
            m = {}
            for k, d in store._documents.items():
                for key in index_keys(spec, d):
                    m.setdefault(key, k)
            maps[name] = m
        return m

    def check(self, db, coll, store, doc, own_key, specs):
        """Raise 11000 if ``doc`` collides with another document; return its keys."""
        new_keys = []
        for name, spec in specs:
            m = self.map_for(db, coll, store, name, spec)
            keys = index_keys(spec, doc)
            for k in keys:
                owner = m.get(k, MISSING)
                if owner is MISSING or owner == own_key:
                    continue
                other = store._documents.get(owner)
                if other is not None and other is not doc and k in index_keys(spec, other):
                    raise dup_error(db, coll, name, spec, doc)
            new_keys.append((m, keys))
        return new_keys

    def current_keys(self, db, coll, store, doc, specs):
        """The keys ``doc`` holds now in each unique index (before an update changes it)."""
        return [(self.map_for(db, coll, store, n, s), index_keys(s, doc)) for n, s in specs]

    @staticmethod
    def register(new_keys, own_key, old_keys=None):
        if old_keys:
            for (m, keys), (_m2, new) in zip(old_keys, new_keys, strict=True):
                for k in keys - new:
                    if m.get(k) == own_key:
                        del m[k]
        for m, keys in new_keys:
            for k in keys:
                m[k] = own_key

    def unregister(self, db, coll, store, doc, own_key):
        maps = self.maps.get((db, coll))
        if not maps:
            return
        for name, spec in unique_specs(store):
            m = maps.get(name)
            if m is None:
                continue
            for k in index_keys(spec, doc):
                if m.get(k) == own_key:
                    del m[k]

    def forget(self, db, coll=None):
        """Drop the maps of a collection (all of ``db``'s when ``coll`` is None)."""
        if coll is None:
            for key in [k for k in self.maps if k[0] == db]:
                del self.maps[key]
        else:
            self.maps.pop((db, coll), None)
