"""Reading py-spy's raw samples (bench/spy.py): the shares docs/performance.md's CPU profile quotes."""

from bench import spy

# py-spy's raw format: one distinct stack per line, outermost frame first, then its sample count.
RAW = "\n".join(
    [
        "<module> (bench/profile.py:333);main.<locals>.hold_release_once (bench/profile.py:229);"
        "hold (/srv/app/booking/presale/views/seats.py:175);"
        "Collection.find_one_and_update (/v/lib/python3.12/site-packages/pymongo/synchronous/collection.py:3507);"
        "decode_all (/v/lib/python3.12/site-packages/bson/__init__.py:1150) 30",
        "<module> (bench/profile.py:333);main.<locals>.hold_release_once (bench/profile.py:229);"
        "hold (/srv/app/booking/presale/views/seats.py:180) 10",
        "<module> (bench/profile.py:333);main.<locals>.hold_release_once (bench/profile.py:229);"
        "hold (/srv/app/booking/presale/views/seats.py:175);"
        "Collection.find_one_and_update (/v/lib/python3.12/site-packages/pymongo/synchronous/collection.py:3510) 40",
        "<module> (bench/profile.py:333);main.<locals>.hold_release_once (bench/profile.py:229);"
        "inner (/v/lib/python3.12/site-packages/django/core/handlers/exception.py:56);"
        "inner (/v/lib/python3.12/site-packages/django/core/handlers/exception.py:56);"
        "socket.sendall (socket.py:12) 20",
        # outside the timed function (the stack's setup): not counted
        "<module> (bench/profile.py:333);Stack.__enter__ (bench/stack.py:200) 500",
        "",
        # a line cut short (no count): skipped
        "<module> (bench/profile.py:333);main.<locals>.hold_release_once (bench/profile.py:229);"
        "hold (/srv/app/booking/presale/views/seats.py:175)",
    ]
)


def by_frame(shares: list[spy.Share]) -> dict[str, float]:
    return {share.frame: round(share.percent, 6) for share in shares}


def test_shares_count_only_samples_inside_the_named_function_and_merge_line_numbers():
    total, inclusive, own = spy.shares(RAW, within="hold_release_once", root="/srv/app/")

    assert total == 100
    inclusive_shares = by_frame(inclusive)
    assert inclusive_shares["hold (booking/presale/views/seats.py)"] == 80  # two lines of one function, merged
    assert inclusive_shares["Collection.find_one_and_update (pymongo/synchronous/collection.py)"] == 70
    assert inclusive_shares["main.<locals>.hold_release_once (bench/profile.py)"] == 100
    assert inclusive_shares["inner (django/core/handlers/exception.py)"] == 20  # twice on one stack, counted once
    assert "Stack.__enter__ (bench/stack.py)" not in inclusive_shares
    assert by_frame(own) == {
        "Collection.find_one_and_update (pymongo/synchronous/collection.py)": 40,
        "decode_all (bson/__init__.py)": 30,
        "socket.sendall (socket.py)": 20,
        "hold (booking/presale/views/seats.py)": 10,
    }
    assert [share.percent for share in inclusive] == sorted((share.percent for share in inclusive), reverse=True)


def test_own_shares_sum_by_package_with_the_standard_library_apart():
    _total, _inclusive, own = spy.shares(RAW, within="hold_release_once", root="/srv/app/")

    assert by_frame(spy.by_package(own)) == {"pymongo": 40, "bson": 30, "stdlib": 20, "booking": 10}


def test_no_sample_inside_the_function_is_no_share():
    assert spy.shares(RAW, within="checkout_once") == (0, [], [])
