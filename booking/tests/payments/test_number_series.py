"""Gap-free number series: many threads and processes taking numbers at once all get one, each
number once, none skipped; a crash at every step is finished by the owner trying again, by the
next finish or by reconcile."""

import multiprocessing
import threading

import pytest
from bson import ObjectId

from booking.core import faults, mongo
from booking.payments import number_series
from booking.upkeep import reconcile

SERIES = "test:one"
TARGET = number_series.Target(collection="numbered", field="no", set={"series": SERIES}, stamp="numberedOn")


def things(count: int) -> list[ObjectId]:
    ids = [ObjectId() for _ in range(count)]
    mongo.get_db()["numbered"].insert_many([{"_id": i, "ref": str(i)[-6:]} for i in ids])
    return ids


def take(owner: ObjectId, series: str = SERIES) -> int:
    return number_series.take(series=series, owner=owner, key={"ref": str(owner)[-6:]}, target=TARGET)


def numbers() -> list[int]:
    return sorted(d["no"] for d in mongo.get_db()["numbered"].find({"no": {"$exists": True}}).hint([("_id", 1)]))


def log_length() -> int:
    return len(number_series.series_documents().find_one({"_id": SERIES})["open"])


def test_numbers_count_up_per_series_and_a_repeat_keeps_its_number():
    a, b, c = things(3)
    assert take(a) == 1
    assert take(b) == 2
    assert take(c, series="test:other") == 1
    assert take(a) == 1
    written = mongo.get_db()["numbered"].find_one({"_id": b})
    assert written["series"] == SERIES and written["numberedOn"] is not None


def test_a_series_starts_after_the_number_given_before_it():
    (a,) = things(1)
    first = number_series.take(series=SERIES, owner=a, target=TARGET, start_after=lambda: 41)
    assert first == 42


def test_no_such_owner_is_refused_and_takes_no_number():
    with pytest.raises(LookupError):
        take(ObjectId())
    (a,) = things(1)
    assert take(a) == 1


def test_a_crash_after_taking_keeps_the_number_for_its_owner_trying_again(crash_at):
    a, b = things(2)
    crash_at("series.after_take")
    with pytest.raises(faults.InjectedCrash):
        take(a)
    faults.set_hook(None)
    assert numbers() == []  # died before its write: the log says whose number 1 is
    assert take(b) == 2
    assert take(a) == 1
    assert numbers() == [1, 2]


def test_a_number_whose_owner_never_comes_back_is_written_by_reconcile(crash_at):
    a, b = things(2)
    crash_at("series.after_take")
    with pytest.raises(faults.InjectedCrash):
        take(a)
    faults.set_hook(None)
    take(b)
    assert reconcile.reconcile().numbers_written == 1
    assert numbers() == [1, 2]
    assert log_length() == 0
    assert take(a) == 1  # and its payment, finished later, keeps it


def test_a_crash_before_trimming_the_log_leaves_nothing_given_twice(crash_at):
    owners = things(number_series.PRUNE_EVERY + 1)
    for owner in owners[:-2]:
        take(owner)
    crash_at("series.before_trim")
    with pytest.raises(faults.InjectedCrash):
        take(owners[-2])  # the 64th: its write done, then the finish dies before the trim
    faults.set_hook(None)
    assert log_length() == number_series.PRUNE_EVERY
    assert take(owners[-2]) == number_series.PRUNE_EVERY
    assert take(owners[-1]) == number_series.PRUNE_EVERY + 1
    assert number_series.finish_all() == 0
    assert log_length() == 0
    assert numbers() == list(range(1, number_series.PRUNE_EVERY + 2))


def test_the_log_stays_short():
    owners = things(3 * number_series.PRUNE_EVERY + 5)
    for owner in owners:
        take(owner)
    assert log_length() == 5  # trimmed at each 64th number
    assert numbers() == list(range(1, len(owners) + 1))


def test_threads_racing_for_numbers_each_get_one_with_no_gap_and_none_twice():
    """32 threads over 300 owners (four trims of the log on the way), each owner asked for by two
    threads at once: nobody fails, nobody waits for a retry budget."""
    owners = things(300)
    errors: list[str] = []
    got: dict[ObjectId, set[int]] = {owner: set() for owner in owners}
    start = threading.Barrier(32)

    def work(mine):
        start.wait()
        try:
            for owner in mine:
                got[owner].add(take(owner))
        except Exception as exc:  # noqa: BLE001 - every failure is the test's finding
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=((owners * 2)[i::32],)) for i in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert all(len(n) == 1 for n in got.values())  # both askers were told the same number
    assert numbers() == list(range(1, 301))


def _take_in_child(owners, queue):
    mongo.close_client()  # the parent's sockets are not this process's
    try:
        for owner in owners:
            take(owner)
        queue.put("")
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put(repr(exc))


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_processes_racing_for_numbers_each_get_one_with_no_gap_and_none_twice():
    owners = things(200)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    mongo.close_client()
    children = [context.Process(target=_take_in_child, args=(owners[i::4], queue)) for i in range(4)]
    for child in children:
        child.start()
    errors = [queue.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=30)
    assert errors == ["", "", "", ""]
    assert numbers() == list(range(1, 201))


def test_takers_dying_mid_race_leave_no_gap_once_reconciled(fault_hook):
    """Every 7th taker dies after taking its number while 8 threads race on."""
    owners = things(120)
    dying = set(owners[::7])
    local = threading.local()

    def hook(name):
        if name == "series.after_take" and getattr(local, "owner", None) in dying:
            raise faults.InjectedCrash(name)

    fault_hook(hook)
    errors: list[str] = []

    def work(mine):
        for owner in mine:
            local.owner = owner
            try:
                take(owner)
            except faults.InjectedCrash:
                pass
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(owners[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    faults.set_hook(None)
    assert errors == []
    number_series.finish_all()
    assert numbers() == list(range(1, 121))
