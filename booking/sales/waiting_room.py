"""The waiting room for big on-sales: a fair queue in Redis, admission at a set rate.

Staff mark a session, every section of a performance, or several sessions of a series "high
demand": each gets ``waitingRoom`` on its MongoDB document(s) (the source of truth for the
settings: queue id, opening time, on-sale time, admission rate, paused, a revision). The queue
itself lives in Redis, per queue id (the session's id, or the performance's for a sectioned
venue); docs/architecture.md "Waiting room" says why Redis and not MongoDB.

Order: a buyer who joins before the on-sale time gets a uniformly random score in (0, 1) at
join time (a fair shuffle of everybody who came early: nobody can improve their place by coming
earlier or reloading); a buyer who joins after it gets ``now_ms * 1000`` (and at least one more
than the last such score), so later arrivals follow in arrival order, all after the early ones.

Admission: a token bucket driven by time, computed atomically inside the same Lua script that
answers a buyer's poll (``POLL_SCRIPT``). From the on-sale time the bucket gains ``rate`` buyers
per minute (integer arithmetic in units of 1/60000 buyer per ms, so boundaries are exact), holds
at most ``burst`` and starts with one, so the n-th buyer (from 0) is admitted at the first
millisecond at or after ``onSaleAt + n * 60000 / rate`` when everybody polls. While paused it
gains nothing; a rate change counts the old rate up to the change. Every poll first settles the
bucket and admits from the head of the queue, then answers the caller: one round trip (EVALSHA).

Leaving: each poll stamps the buyer's last sign of life; a buyer not seen for
``BOOKING_QUEUE_GRACE_SECONDS`` is dropped when the sweep (part of every poll) or the head of the
queue reaches them. After a gap in which no poll arrived at all (Redis or the site was down), no
one is dropped for one grace period, so an outage does not empty the queue.

A Redis outage: the poll fails, the page says the queue is paused and the buyer keeps the place;
nobody is admitted (admission happens only inside Redis), already admitted buyers keep buying
(their token needs no Redis). Should Redis come back empty, the queue starts a new *epoch*: each
waiting buyer's signed ticket (a cookie with their score and the epoch) puts them back at their
old score on their next poll, once per epoch.
"""

import logging
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import cast

import redis
from bson import ObjectId
from django.conf import settings
from django.core import signing
from django.utils import timezone
from django.utils.translation import gettext
from redis.exceptions import NoScriptError, RedisError

from booking.core import clock, mongo
from booking.core.domain import OrderState, Session, SessionStatus, seats_left
from booking.core.errors import InvalidRequest, NotFound
from booking.core.localized import localized
from booking.sales import admission, hold_facts
from booking.venues import seat_grid

logger = logging.getLogger("booking.waiting_room")

UNIT = 60000  # one buyer in the bucket, in units of (buyers per minute) x ms
TICKET_SALT = "booking.waiting_room.ticket"
TICKET_PREFIX = "wq_"  # the ticket cookie: wq_<queue id>
MAX_RATE = 100_000  # buyers per minute
SWEEP_BATCH = 200  # stale buyers dropped per poll at most
KEY_LIFETIME_MS = 2 * 86400 * 1000  # Redis keys outlive the performance's start by this much

# KEYS: 1 cfg (hash), 2 waiting (zset owner -> score), 3 seen (zset owner -> last poll ms),
#       4 admitted (zset owner -> admitted at ms), 5 members (hash owner -> w|a|g|l, this epoch),
#       6 log (list "owner score", in admission order)
# ARGV: 1 now ms, 2 owner ('' = nobody: staff, configuration), 3 join (1/0), 4 random score,
#       5 ticket epoch, 6 ticket score, 7 rev, 8 opens ms, 9 on-sale ms, 10 rate/min, 11 burst,
#       12 paused (1/0), 13 grace ms, 14 admission ms, 15 keys expire at ms, 16 gap ms,
#       17 epoch for a new queue, 18 most stale buyers dropped per call, 19 first creation (1/0),
#       20 regather ms: a queue re-created in Redis (it lost the data) admits nobody for this long,
#          so every buyer's page can come back with its ticket before anybody is let in
POLL_SCRIPT = """
local cfgk, zk, seenk, admk, memk, logk = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local now = tonumber(ARGV[1])
local owner = ARGV[2]
local UNIT = 60000
local function num(x) return string.format('%.0f', x) end

local c = {}
local raw = redis.call('HGETALL', cfgk)
for i = 1, #raw, 2 do c[raw[i]] = raw[i + 1] end
local rev = tonumber(c.rev or '-1')
local opens, onsale = tonumber(c.opens or ARGV[8]), tonumber(c.onsale or ARGV[9])
local rate, burst = tonumber(c.rate or ARGV[10]), tonumber(c.burst or ARGV[11])
local paused = tonumber(c.paused or ARGV[12])
local grace, ttl = tonumber(ARGV[13]), tonumber(ARGV[14])  -- deploy settings: as the caller has them
local tokens = tonumber(c.tokens or UNIT)
local last = tonumber(c.last or now)
local lastcall = tonumber(c.lastcall or now)
local resumed = tonumber(c.resumed or now)
local lastlate = tonumber(c.lastlate or '0')
local epoch = c.epoch or ARGV[17]
local gather = tonumber(c.gather or '0')
if c.epoch == nil and ARGV[19] ~= '1' then gather = now + tonumber(ARGV[20]) end
local n_adm, n_left, n_lapsed = tonumber(c.admitted or '0'), tonumber(c.left or '0'), tonumber(c.lapsed or '0')
local n_joined, n_restored = tonumber(c.joined or '0'), tonumber(c.restored or '0')
local soldout = c.soldout or '0'  -- set by SUPPLY_SCRIPT: no seat left that a buyer could take

-- the bucket up to now, under the settings in force until now
local function settle()
  local from = math.max(last, onsale)
  if paused == 0 and now > from then
    tokens = math.min(math.max(1, burst) * UNIT, tokens + (now - from) * rate)
  end
  if now > last then last = now end
end
settle()
-- newer settings (staff changed them): they apply from now on
if tonumber(ARGV[7]) > rev then
  rev = tonumber(ARGV[7])
  opens, onsale, rate, burst = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
  paused = tonumber(ARGV[12])
  tokens = math.min(tokens, math.max(1, burst) * UNIT)
end
-- nobody polled for a while (an outage): give everybody a grace period to come back
if now - lastcall > tonumber(ARGV[16]) then resumed = now end
if now > lastcall then lastcall = now end

local cutoff = now - grace
local sweeping = cutoff >= resumed
if sweeping then
  local stale = redis.call('ZRANGEBYSCORE', seenk, '-inf', '(' .. num(cutoff), 'LIMIT', 0, tonumber(ARGV[18]))
  for _, who in ipairs(stale) do
    redis.call('ZREM', zk, who)
    redis.call('ZREM', seenk, who)
    redis.call('HSET', memk, who, 'g')
    n_left = n_left + 1
  end
end

-- the caller: an admission that ended makes them a newcomer; a newcomer joins (once the room is open)
local note = ''
if owner ~= '' then
  local was = redis.call('HGET', memk, owner)
  if was == 'a' then
    local at = tonumber(redis.call('ZSCORE', admk, owner) or '0')
    if now - at >= ttl then
      redis.call('ZREM', admk, owner)
      redis.call('HSET', memk, owner, 'l')
      n_lapsed = n_lapsed + 1
      was = 'l'
    end
  end
  if was ~= 'a' and not redis.call('ZSCORE', zk, owner) then
    if ARGV[3] == '1' and now >= opens then
      local score
      if ARGV[5] ~= '' and ARGV[5] ~= epoch and not was then
        score = ARGV[6]                      -- back at the place this buyer had before Redis lost it
        n_restored = n_restored + 1
        note = 'restored'
      elseif now < onsale then
        score = ARGV[4]                      -- early: a random place among the early
      else
        local late = math.max(now * 1000, lastlate + 1)
        lastlate = late
        score = num(late)                    -- late: arrival order, after every early buyer
      end
      if was == 'g' then note = 'left' elseif was == 'l' then note = 'lapsed' end
      redis.call('ZADD', zk, score, owner)
      redis.call('HSET', memk, owner, 'w')
      n_joined = n_joined + 1
    end
  end
  if redis.call('ZSCORE', zk, owner) then redis.call('ZADD', seenk, num(now), owner) end
end

-- admit from the head of the queue while the bucket has whole buyers
if paused == 0 and soldout ~= '1' and now >= onsale and now >= gather then
  local guard = 0
  while tokens >= UNIT and guard < 5000 do
    guard = guard + 1
    local head = redis.call('ZRANGE', zk, 0, 0, 'WITHSCORES')
    if #head == 0 then break end
    local who, score = head[1], head[2]
    local seen = tonumber(redis.call('ZSCORE', seenk, who) or '0')
    redis.call('ZREM', zk, who)
    redis.call('ZREM', seenk, who)
    if sweeping and seen < cutoff then
      redis.call('HSET', memk, who, 'g')
      n_left = n_left + 1
    else
      redis.call('ZADD', admk, num(now), who)
      redis.call('HSET', memk, who, 'a')
      redis.call('RPUSH', logk, who .. ' ' .. score)
      n_adm = n_adm + 1
      tokens = tokens - UNIT
    end
  end
end

-- the caller's state after all that
local state, rank, score, admitted_at = 'out', -1, '', ''
if owner ~= '' then
  if redis.call('HGET', memk, owner) == 'a' then
    state, admitted_at = 'admitted', num(tonumber(redis.call('ZSCORE', admk, owner)))
  else
    local s = redis.call('ZSCORE', zk, owner)
    if s then state, score, rank = 'waiting', s, redis.call('ZRANK', zk, owner) end
  end
end

redis.call('HSET', cfgk, 'rev', num(rev), 'opens', num(opens), 'onsale', num(onsale), 'rate', num(rate),
  'burst', num(burst), 'paused', num(paused), 'grace', num(grace), 'ttl', num(ttl), 'tokens', num(tokens),
  'last', num(last), 'lastcall', num(lastcall), 'resumed', num(resumed), 'lastlate', num(lastlate),
  'epoch', epoch, 'admitted', num(n_adm), 'left', num(n_left), 'lapsed', num(n_lapsed),
  'joined', num(n_joined), 'restored', num(n_restored), 'gather', num(gather))
for i = 1, 6 do redis.call('PEXPIREAT', KEYS[i], ARGV[15]) end
return {state, rank, redis.call('ZCARD', zk), score, admitted_at, epoch, note,
  num(paused), num(rate), num(onsale), num(opens), num(rev), num(now), soldout, c.back or '0'}
"""

# What a web process read of the queue's seats (``publish_supply``): sold out or not, and the
# latest expiry of the seats held now. A reading older than the one stored (a smaller sum of the
# sessions' versions) changes nothing, so a process with a stale read cannot undo a newer one;
# nor does it create the queue (the poll script does that, with its epoch).
# KEYS: 1 cfg  ARGV: 1 sold out (1/0), 2 held seats back by (ms, 0: none held), 3 seats version
SUPPLY_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local stored = tonumber(redis.call('HGET', KEYS[1], 'supplyver') or '-1')
if tonumber(ARGV[3]) < stored then return 0 end
redis.call('HSET', KEYS[1], 'soldout', ARGV[1], 'back', ARGV[2], 'supplyver', ARGV[3])
return 1
"""


class QueueUnavailable(Exception):
    """Redis cannot be reached: the queue is paused for everybody (places are kept)."""


@dataclass(frozen=True)
class RoomConfig:
    """A queue's settings as stored on its session document(s)."""

    queue_id: ObjectId
    session_ids: tuple
    opens_at: datetime
    on_sale_at: datetime
    rate: int  # buyers per minute
    paused: bool
    rev: int
    start: datetime  # the performance's start (the keys expire after it)
    name: str = ""
    theater: str = ""
    sectioned: bool = False
    name_de: str = ""  # the staff's German title (booking/core/localized.py)
    theater_de: str = ""  # the staff's German venue name
    seats_available: int = 1  # when the settings were read (kept seconds): "sold out" on the page

    @property
    def title(self) -> str:
        """The show's name in the buyer's language."""
        return localized({"name": self.name, "nameDe": self.name_de}, "name")

    @property
    def venue(self) -> str:
        """The theater's (or stadium's) name in the buyer's language."""
        return localized({"name": self.theater, "nameDe": self.theater_de}, "name")

    @property
    def burst(self) -> int:
        """Most buyers admitted at once after a quiet spell: ten seconds' worth, at least one."""
        return max(1, math.ceil(self.rate / 6))


@dataclass
class PollResult:
    state: str  # "waiting" | "admitted" | "out" (not joined: before the room opens)
    position: int = 0  # 1-based place among those waiting; 0 when not waiting
    waiting: int = 0
    score: str = ""
    admitted_at_ms: int = 0
    epoch: str = ""
    note: str = ""  # "restored" | "left" (lost the place, joined again) | "lapsed" (turn ended)
    paused: bool = False
    rate: int = 0
    on_sale_ms: int = 0
    opens_ms: int = 0
    now_ms: int = 0
    sold_out: bool = False  # no seat left that a buyer could take: nobody is let in
    seats_back_ms: int = 0  # when sold out: the latest expiry of the seats held now (0: none held)

    @property
    def before_sale(self) -> bool:
        return self.now_ms < self.on_sale_ms

    def wait_seconds(self) -> int | None:
        """An estimate of the wait until admission; None while paused."""
        if self.paused or self.rate <= 0:
            return None
        ahead = max(0, self.position - 1)
        return max(0, (self.on_sale_ms - self.now_ms) // 1000) + math.ceil(ahead * 60 / self.rate)


@dataclass
class RoomStats:
    waiting: int = 0
    admitted: int = 0
    buying: int = 0  # admitted and their admission still runs
    left: int = 0  # dropped from the queue after not polling for the grace period
    lapsed: int = 0  # admitted but their admission ran out (counted when they came back)
    joined: int = 0
    restored: int = 0
    done: int = 0  # paid orders for the queue's sessions since the on-sale (from MongoDB)
    rate: int = 0
    paused: bool = False
    available: bool = True  # Redis reachable
    extra: dict = field(default_factory=dict)


# --- Redis ---


_clients: dict = {}
_clients_lock = threading.Lock()


def store() -> redis.Redis:
    """One client (and connection pool) per process and URL, failing fast while Redis is down."""
    url = settings.REDIS_URL
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            timeout = settings.BOOKING_QUEUE_REDIS_TIMEOUT_SECONDS
            client = _clients[url] = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout, health_check_interval=0
            )
        return client


_scripts: dict = {}


def _poll_script():
    client = store()
    script = _scripts.get(id(client))
    if script is None:
        script = _scripts[id(client)] = client.register_script(POLL_SCRIPT)  # for its SHA (_run_all)
    return script


def keys(queue_id) -> list[str]:
    tag = f"wr:{{{queue_id}}}"  # one hash slot per queue (Redis Cluster)
    return [f"{tag}:cfg", f"{tag}:q", f"{tag}:seen", f"{tag}:adm", f"{tag}:m", f"{tag}:log"]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _args(
    config: RoomConfig, owner: str, join: bool, now_ms: int, ticket: tuple[str, str] | None = None, first=False
) -> list:
    """POLL_SCRIPT's ARGV for one caller."""
    epoch, ticket_score = ticket or ("", "")
    return [
        now_ms,
        owner,
        1 if join else 0,
        repr(secrets.randbits(52) / (1 << 52) or 0.5),  # a uniform place in (0, 1) among the early
        epoch,
        ticket_score,
        config.rev,
        _ms(config.opens_at),
        _ms(config.on_sale_at),
        config.rate,
        config.burst,
        1 if config.paused else 0,
        settings.BOOKING_QUEUE_GRACE_SECONDS * 1000,
        settings.BOOKING_QUEUE_ADMISSION_SECONDS * 1000,
        _ms(config.start) + KEY_LIFETIME_MS,
        max(10_000, 2 * settings.BOOKING_QUEUE_POLL_MAX_SECONDS * 1000),
        secrets.token_hex(6),
        SWEEP_BATCH,
        1 if first else 0,
        regather_ms(),
    ]


def _run(
    config: RoomConfig, owner: str, join: bool, now_ms: int, ticket: tuple[str, str] | None = None, first=False
) -> list:
    return _run_all(config, [_args(config, owner, join, now_ms, ticket, first)])[0]


def _run_all(config: RoomConfig, calls: list[list]) -> list[list]:
    """POLL_SCRIPT on the queue's keys once for each ARGV of ``calls``, in order, in one round trip
    (a pipeline of EVALSHA; not redis-py's pipelined Script, which first asks SCRIPT EXISTS every
    time). A Redis that does not know the script (restarted) refuses every call unrun: it is
    loaded and the calls are sent again. Raises QueueUnavailable."""
    client = store()
    sha = _poll_script().sha
    queue_keys = keys(config.queue_id)
    try:
        for attempt in (1, 2):
            with client.pipeline(transaction=False) as pipe:
                for args in calls:
                    pipe.evalsha(sha, len(queue_keys), *queue_keys, *args)
                try:
                    return pipe.execute()
                except NoScriptError:
                    if attempt == 2:
                        raise
            client.script_load(POLL_SCRIPT)
        raise AssertionError("unreachable")
    except (RedisError, OSError) as exc:
        logger.warning("waiting room %s: Redis unreachable: %s", config.queue_id, exc)
        raise QueueUnavailable(str(exc)) from exc


def regather_ms() -> int:
    """How long a queue Redis lost waits for its buyers to come back before admitting anybody:
    longer than the slowest poll (jitter included) and the retry while Redis was away."""
    return int(1.5 * max(settings.BOOKING_QUEUE_POLL_MAX_SECONDS, 5) * 1000)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def poll(
    config: RoomConfig, owner: str, *, ticket: tuple[str, str] | None = None, now: datetime | None = None, join=True
) -> PollResult:
    """A buyer's look at the queue (and their join, when ``join`` and the room is open): one
    round trip to Redis, which also admits whoever's turn it is. Raises QueueUnavailable."""
    if not owner:
        raise InvalidRequest(gettext("A buyer is needed to join the queue."))
    refresh_supply(config)
    return _result(_run(config, owner, join, _ms(now or clock.now()), ticket))


def poll_many(
    config: RoomConfig, callers: list[tuple[str, tuple[str, str] | None]], *, now: datetime | None = None
) -> list[PollResult]:
    """``poll`` (joining) for each ``(owner, ticket)`` of ``callers``, in that order, in one round
    trip to Redis (a pipeline of the script, each call atomic as always): what the pushed waiting
    room asks for every viewer of a web process that is due. Raises QueueUnavailable."""
    if not callers:
        return []
    refresh_supply(config)
    now_ms = _ms(now or clock.now())
    calls = [_args(config, owner, True, now_ms, ticket) for owner, ticket in callers]
    return [_result(raw) for raw in _run_all(config, calls)]


MARK_BATCH = 1000  # buyers marked present per write


def mark_present(queue_id, owners: list[str], *, now: datetime | None = None) -> None:
    """Mark these buyers still there, without a look: their pages hold the queue's stream open.
    Only buyers still in line are marked (one sorted-set write per thousand, ``XX``): nobody let
    in or dropped comes back by it. Raises QueueUnavailable."""
    seen_key, now_ms = keys(queue_id)[2], _ms(now or clock.now())
    try:
        with store().pipeline(transaction=False) as pipe:
            for start in range(0, len(owners), MARK_BATCH):
                pipe.zadd(seen_key, dict.fromkeys(owners[start : start + MARK_BATCH], now_ms), xx=True)
            pipe.execute()
    except (RedisError, OSError) as exc:
        raise QueueUnavailable(str(exc)) from exc


def _result(raw: list) -> PollResult:
    state, rank, waiting, score, admitted_at, epoch, note, paused, rate, onsale, opens, _rev, now_back = raw[:13]
    sold_out, back = raw[13:]
    return PollResult(
        state=_text(state),
        position=int(rank) + 1 if int(rank) >= 0 else 0,
        waiting=int(waiting),
        score=_text(score),
        admitted_at_ms=int(_text(admitted_at)) if _text(admitted_at) else 0,
        epoch=_text(epoch),
        note=_text(note),
        paused=_text(paused) == "1",
        rate=int(_text(rate)),
        on_sale_ms=int(_text(onsale)),
        opens_ms=int(_text(opens)),
        now_ms=int(_text(now_back)),
        sold_out=_text(sold_out) == "1",
        seats_back_ms=int(_text(back)),
    )


def tick(config: RoomConfig, now: datetime | None = None, *, first: bool = False) -> None:
    """Settle the bucket and admit whoever's turn it is, for nobody in particular (and bring the
    settings in Redis up to ``config``; ``first``: the room was just opened). Raises QueueUnavailable."""
    _run(config, "", False, _ms(now or clock.now()), first=first)


def stats(config: RoomConfig, now: datetime | None = None) -> RoomStats:
    """What staff see: one pipelined round trip to Redis, one count of orders in MongoDB."""
    now_ms = _ms(now or clock.now())
    result = RoomStats(rate=config.rate, paused=config.paused)
    sold_since = {"state": OrderState.PAID, "createdOn": {"$gte": config.on_sale_at}}
    result.done = mongo.orders().count_documents({"lines.sessionId": {"$in": list(config.session_ids)}, **sold_since})
    cfg, waiting, _seen, admitted, _members, _log = keys(config.queue_id)
    try:
        tick(config, now)
        pipe = store().pipeline(transaction=False)
        pipe.hgetall(cfg)
        pipe.zcard(waiting)
        pipe.zcount(admitted, now_ms - settings.BOOKING_QUEUE_ADMISSION_SECONDS * 1000 + 1, "+inf")
        values, result.waiting, result.buying = pipe.execute()
    except (QueueUnavailable, RedisError, OSError):
        result.available = False
        return result
    values = {_text(k): _text(v) for k, v in values.items()}
    for name in ("admitted", "left", "lapsed", "joined", "restored"):
        setattr(result, name, int(values.get(name, 0)))
    result.rate = int(values.get("rate", config.rate))
    result.paused = values.get("paused", "0") == "1"
    return result


# --- supply: whether any seat is left that a waiting buyer could take ---


SUPPLY_SECONDS = 3.0  # a web process reads the queue's seats at most this often
_supplies: dict = {}
_supplies_lock = threading.Lock()


@dataclass(frozen=True)
class Supply:
    """The queue's seats as one read found them."""

    takeable: int  # free seats some buyer could take (``seat_grid.takeable_seats``)
    held: int  # seats held in carts now (they may come back)
    seats_back_at: datetime | None  # the latest expiry of those holds; None when nothing is held
    version: int  # the sum of the sessions' versions (every seat change adds one)

    @property
    def sold_out(self) -> bool:
        return self.takeable <= 0


def read_supply(session_ids: tuple) -> Supply | None:
    """The seats of a queue's sessions now: one read of their seat states and holders, one of
    the holding carts' expiry (layouts are kept per process). None without sessions."""
    if not session_ids:
        return None
    fields = {"seats": 1, "reservations._id": 1, "version": 1, "layoutRev": 1}
    docs = list(mongo.sessions().find({"_id": {"$in": list(session_ids)}}, fields))
    if not docs:
        return None
    takeable = held = version = 0
    holders = []
    for doc in docs:
        layout = hold_facts.session_layout(doc["_id"], doc.get("layoutRev", 0))
        grid = doc.get("seats")
        if layout is not None and grid:
            takeable += seat_grid.takeable_seats(layout, grid)
            held += seat_grid.count_state(grid, seat_grid.HELD)
        version += int(doc.get("version", 0))
        holders += [res["_id"] for res in doc.get("reservations", [])]
    back = None
    if holders:
        latest = mongo.carts().find({"_id": {"$in": holders}}, {"expiresAt": 1}).sort("expiresAt", -1).limit(1)
        back = next((cart["expiresAt"].replace(tzinfo=UTC) for cart in latest if cart.get("expiresAt")), None)
    return Supply(takeable=takeable, held=held, seats_back_at=back, version=version)


def publish_supply(config: RoomConfig, supply: Supply) -> bool:
    """Tell the queue in Redis whether it is sold out (it then lets nobody in) and when held seats
    might come back. False when Redis is down or a newer reading is there already."""
    client = store()
    back_ms = _ms(supply.seats_back_at) if supply.seats_back_at is not None else 0
    try:
        done = client.eval(SUPPLY_SCRIPT, 1, keys(config.queue_id)[0], int(supply.sold_out), back_ms, supply.version)
    except (RedisError, OSError) as exc:
        logger.warning("waiting room %s: Redis unreachable: %s", config.queue_id, exc)
        return False
    return int(cast(int, done)) == 1


def refresh_supply(config: RoomConfig, *, fresh: bool = False) -> Supply | None:
    """This process's reading of the queue's seats, read again (and published to Redis) when
    older than ``SUPPLY_SECONDS``: a waiting buyer's look costs no MongoDB read of its own, and a
    sell-out (or seats coming back) reaches the queue within that time of any look."""
    now = time.monotonic()
    with _supplies_lock:
        kept = _supplies.get(config.queue_id)
        if not fresh and kept is not None and kept[0] > now:
            return kept[1]
        # the other looks of this process meanwhile keep the old reading (one reader at a time)
        _supplies[config.queue_id] = (now + SUPPLY_SECONDS, kept[1] if kept else None)
    supply = read_supply(config.session_ids)
    if supply is not None:
        publish_supply(config, supply)
    with _supplies_lock:
        _supplies[config.queue_id] = (now + SUPPLY_SECONDS, supply)
        if len(_supplies) > 1000:
            _supplies.clear()
    return supply


def admission_log(queue_id) -> list[tuple[str, str]]:
    """(owner, queue score) of every admitted buyer, in admission order (tests, the simulation)."""
    # Each entry is "owner score" (see the admission script), so it splits in two.
    return [
        cast(tuple[str, str], tuple(_text(entry).split(" ", 1))) for entry in store().lrange(keys(queue_id)[5], 0, -1)
    ]


def drop(queue_id) -> None:
    """Forget a queue in Redis (the room was ended)."""
    store().delete(*keys(queue_id))


# --- settings on the session documents (MongoDB, the source of truth) ---


CACHE_SECONDS = 5.0
_configs: dict = {}
_configs_lock = threading.Lock()


def _queue_filter(queue_id: ObjectId) -> dict:
    return {"waitingRoom.queueId": queue_id}


ROOM_FIELDS = {
    "waitingRoom": 1,
    "start": 1,
    "name": 1,
    "nameDe": 1,
    "theaterName": 1,
    "theaterNameDe": 1,
    "venueName": 1,
    "venueNameDe": 1,
    "performanceId": 1,
    "seatsAvailable": 1,
    "quotaFloor": 1,
}


def _documents(queue_id: ObjectId) -> list[dict]:
    """The session documents of a queue: the session itself (queue id = its id) or a
    performance's sections (queue id = performanceId), through indexed reads."""
    docs = list(mongo.sessions().find({"_id": queue_id, **_queue_filter(queue_id)}, ROOM_FIELDS))
    if not docs:
        docs = list(mongo.sessions().find({"performanceId": queue_id, **_queue_filter(queue_id)}, ROOM_FIELDS))
    return docs


def _config_from(queue_id: ObjectId, docs: list[dict]) -> RoomConfig | None:
    if not docs:
        return None
    room = docs[0]["waitingRoom"]
    return RoomConfig(
        queue_id=queue_id,
        session_ids=tuple(d["_id"] for d in docs),
        opens_at=room["opensAt"].replace(tzinfo=UTC),
        on_sale_at=room["onSaleAt"].replace(tzinfo=UTC),
        rate=int(room["rate"]),
        paused=bool(room.get("paused")),
        rev=int(room.get("rev", 1)),
        start=docs[0]["start"].replace(tzinfo=UTC),
        name=docs[0].get("name", ""),
        theater=docs[0].get("venueName") or docs[0].get("theaterName", ""),
        sectioned=docs[0].get("performanceId") is not None,
        name_de=docs[0].get("nameDe", ""),
        theater_de=(docs[0].get("venueNameDe") if docs[0].get("venueName") else docs[0].get("theaterNameDe")) or "",
        seats_available=sum(seats_left(d) for d in docs),
    )


def get_config(queue_id: ObjectId, *, fresh: bool = False) -> RoomConfig | None:
    """A queue's settings; kept ``CACHE_SECONDS`` per process (a poll then costs no MongoDB read).
    Staff changes reach Redis at once (they push them); a process's stale copy cannot undo them:
    Redis applies only a newer revision."""
    now = time.monotonic()
    if not fresh:
        found, config = kept_config(queue_id)
        if found:
            return config
    config = _config_from(queue_id, _documents(queue_id))
    with _configs_lock:
        _configs[queue_id] = (now + CACHE_SECONDS, config)
        if len(_configs) > 1000:
            _configs.clear()
    return config


def kept_config(queue_id: ObjectId) -> tuple[bool, RoomConfig | None]:
    """``(True, config)`` when this process's copy is fresh (no I/O: an event loop may ask),
    ``(False, None)`` when ``get_config`` must read it."""
    with _configs_lock:
        kept = _configs.get(queue_id)
    if kept is not None and kept[0] > time.monotonic():
        return True, kept[1]
    return False, None


def forget_cached(queue_id: ObjectId) -> None:
    with _configs_lock:
        _configs.pop(queue_id, None)
        for session_id in [sid for sid, (_until, queue) in _queued_sessions.items() if queue == queue_id]:
            del _queued_sessions[session_id]


def queue_of(session: Session) -> ObjectId | None:
    room = session.get("waitingRoom")
    return room.get("queueId") if isinstance(room, dict) else None


_queued_sessions: dict = {}  # session id -> (kept until, its queue's id): see keep_queue_of


def keep_queue_of(session: Session) -> ObjectId | None:
    """``queue_of``, and a queued session noted for ``CACHE_SECONDS`` in this process: in an
    on-sale rush the seat map sends each arrival on to the queue without a read (``kept_queue_of``)."""
    queue_id = queue_of(session)
    with _configs_lock:
        if queue_id is None:  # (the room ended: no kept note sends anybody on any more)
            _queued_sessions.pop(session["_id"], None)
            return None
        if len(_queued_sessions) >= 1000:
            _queued_sessions.clear()
        _queued_sessions[session["_id"]] = (time.monotonic() + CACHE_SECONDS, queue_id)
    return queue_id


def kept_queue_of(session_id: ObjectId) -> ObjectId | None:
    """The queue of a session this process read as queued within ``CACHE_SECONDS`` (no I/O)."""
    with _configs_lock:
        kept = _queued_sessions.get(session_id)
    return kept[1] if kept is not None and kept[0] > time.monotonic() else None


def _validate(opens_at: datetime, on_sale_at: datetime, rate, start: datetime, sale_opens=None) -> dict:
    """``sale_opens``: the session's own sale window opening, if it has one: admitting
    buyers before it would hand out turns nobody can use."""
    fields = {}
    if not isinstance(rate, int) or not 1 <= rate <= MAX_RATE:
        fields["rate"] = f"Admit between 1 and {MAX_RATE:,} buyers per minute."
    if opens_at > on_sale_at:
        fields["opens_at"] = gettext("The waiting room must open before (or when) the sale does.")
    if on_sale_at >= start:
        fields["on_sale_at"] = gettext("The sale must open before the performance starts.")
    elif sale_opens is not None and on_sale_at < sale_opens:
        when = timezone.localtime(sale_opens).strftime("%d %b %Y %H:%M")
        fields["on_sale_at"] = f"The sale window of this performance opens at {when}: let buyers in from then on."
    if fields:
        raise InvalidRequest(" ".join(fields.values()), fields=fields)
    return fields


def enable(target_id: ObjectId, *, opens_at: datetime, on_sale_at: datetime, rate: int) -> RoomConfig:
    """Mark a session, or a sectioned performance (all its sections, one queue), high demand."""
    fields = {"start": 1, "status": 1, "performanceId": 1, "saleOpens": 1}
    docs = list(mongo.sessions().find({"_id": target_id}, fields))
    queue_id, match = target_id, {"_id": target_id}
    if not docs:
        docs = list(mongo.sessions().find({"performanceId": target_id}, fields))
        match = {"performanceId": target_id}
    elif docs[0].get("performanceId") is not None:  # a section: the queue is the performance's
        queue_id = docs[0]["performanceId"]
        match = {"performanceId": queue_id}
        docs = list(mongo.sessions().find(match, fields))
    if not docs:
        raise NotFound(gettext("No such performance."))
    if docs[0].get("status") != SessionStatus.ON_SALE or docs[0]["start"].replace(tzinfo=UTC) <= clock.now():
        raise InvalidRequest(gettext("Only a performance on sale and still ahead can get a waiting room."))
    _validate(opens_at, on_sale_at, rate, docs[0]["start"].replace(tzinfo=UTC), docs[0].get("saleOpens"))
    room = {
        "queueId": queue_id,
        "opensAt": opens_at,
        "onSaleAt": on_sale_at,
        "rate": rate,
        "paused": False,
        "rev": 1,
        "createdOn": clock.now(),
    }
    result = mongo.sessions().update_many({**match, "waitingRoom": {"$exists": False}}, {"$set": {"waitingRoom": room}})
    if result.matched_count == 0:
        raise InvalidRequest(gettext("This performance has a waiting room already."))
    forget_cached(queue_id)
    config = get_config(queue_id, fresh=True)
    if config is None:  # ended in between
        raise NotFound(gettext("This performance has no waiting room."))
    _push(config, first=True)
    return config


def change(queue_id: ObjectId, **changes) -> RoomConfig:
    """Change a queue's settings live (``rate``, ``paused``, ``opens_at``, ``on_sale_at``): the
    documents first (source of truth, revision + 1), then Redis at once. Redis down: the change
    is kept and reaches Redis with the next poll after it is back."""
    current = get_config(queue_id, fresh=True)
    if current is None:
        raise NotFound(gettext("This performance has no waiting room."))
    names = {"rate": "rate", "paused": "paused", "opens_at": "opensAt", "on_sale_at": "onSaleAt"}
    unknown = set(changes) - set(names)
    if unknown:
        raise InvalidRequest(f"Unknown setting: {', '.join(sorted(unknown))}.")
    window = mongo.sessions().find_one({"_id": current.session_ids[0]}, {"saleOpens": 1}) or {}
    _validate(
        changes.get("opens_at", current.opens_at),
        changes.get("on_sale_at", current.on_sale_at),
        changes.get("rate", current.rate),
        current.start,
        window.get("saleOpens"),
    )
    update = {f"waitingRoom.{names[k]}": v for k, v in changes.items()}
    mongo.sessions().update_many(_queue_filter(queue_id), {"$set": update, "$inc": {"waitingRoom.rev": 1}})
    forget_cached(queue_id)
    config = get_config(queue_id, fresh=True)
    if config is None:  # ended in between
        raise NotFound(gettext("This performance has no waiting room."))
    _push(config)
    return config


def pause(queue_id: ObjectId) -> RoomConfig:
    return change(queue_id, paused=True)


def resume(queue_id: ObjectId) -> RoomConfig:
    return change(queue_id, paused=False)


def set_rate(queue_id: ObjectId, rate: int) -> RoomConfig:
    return change(queue_id, rate=rate)


def disable(queue_id: ObjectId) -> int:
    """End the waiting room: seats are sold to everybody again. Returns the sessions changed."""
    result = mongo.sessions().update_many(_queue_filter(queue_id), {"$unset": {"waitingRoom": ""}})
    forget_cached(queue_id)
    try:
        drop(queue_id)
    except (RedisError, OSError) as exc:
        logger.warning("waiting room %s ended; its Redis keys stay until they expire: %s", queue_id, exc)
    return result.modified_count


def _push(config: RoomConfig | None, first: bool = False) -> bool:
    """Bring Redis up to these settings now; False when Redis is down (they follow later)."""
    if config is None:
        return False
    try:
        tick(config, first=first)
    except QueueUnavailable:
        return False
    return True


def rooms() -> list[RoomConfig]:
    """Every queue (staff list): the sessions carrying a waiting room, one entry per queue."""
    found: dict = {}
    for doc in mongo.sessions().find({"waitingRoom.queueId": {"$exists": True}}, ROOM_FIELDS).sort("start", 1):
        found.setdefault(doc["waitingRoom"]["queueId"], []).append(doc)
    return [config for queue_id, docs in found.items() if (config := _config_from(queue_id, docs)) is not None]


# --- the ticket: a waiting buyer's place, signed, for a Redis that comes back empty ---


def ticket_cookie_name(queue_id) -> str:
    return f"{TICKET_PREFIX}{queue_id}"


def sign_ticket(queue_id, owner: str, epoch: str, score: str) -> str:
    digest = admission.owner_digest(owner)
    return signing.Signer(salt=TICKET_SALT).sign(f"{queue_id}|{digest}|{epoch}|{score}")


def read_ticket(value: str | None, queue_id, owner: str | None) -> tuple[str, str] | None:
    """(epoch, score) from a ticket this buyer got for this queue, else None."""
    if not value or not owner or len(value) > 200:
        return None
    try:
        queue, digest, epoch, score = signing.Signer(salt=TICKET_SALT).unsign(value).split("|")
        float(score)
    except (signing.BadSignature, ValueError):
        return None
    if queue != str(queue_id) or digest != admission.owner_digest(owner):
        return None
    return epoch, score
