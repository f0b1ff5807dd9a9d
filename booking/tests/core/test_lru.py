import threading

from booking.core.lru import LRUCache


def test_keeps_at_most_size_entries_and_drops_the_least_recently_used():
    cache = LRUCache[str, int](2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") == 1
    assert cache.get("c") == 3
    assert len(cache) == 2


def test_peek_does_not_count_as_a_use():
    cache = LRUCache[str, int](2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1
    cache.put("c", 3)
    assert cache.get("a") is None


def test_get_or_build_builds_once_per_key_and_keeps_it():
    cache = LRUCache[str, list](4)
    built = []

    def build():
        built.append(1)
        return ["value"]

    first = cache.get_or_build("k", build)
    assert cache.get_or_build("k", build) is first
    assert built == [1]


def test_threads_putting_at_once_never_exceed_the_size():
    cache = LRUCache[int, int](50)

    def fill(offset):
        for i in range(2000):
            cache.put(offset + i, i)
            cache.get(offset + i // 2)

    threads = [threading.Thread(target=fill, args=(n * 10_000,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50
