/* Door check-in (templates/checkin/door.html, booking/checkin/views.py).

   - Camera: getUserMedia, frames drawn to a canvas, decoded by jsQR (static/vendor/jsqr-1.4.0).
   - Each scan is checked online (POST scan); the server's one conditional update decides.
   - Offline (or the server unreachable): decided against the ticket list this phone downloaded
     (IndexedDB; ticket codes are known only by their SHA-256), what is let in is queued and
     synced when the network is back (POST sync). A queued check-in the server refuses (used at
     another door meanwhile, canceled) comes back as a conflict and is shown, never dropped.
   - Green or red screen with a beep (Web Audio) and vibration.
   No inline script (CSP): the page's settings come from the JSON in #door-config. */
(function () {
  "use strict";

  const config = JSON.parse(document.getElementById("door-config").textContent);
  // Words from Django's JavaScript catalog (/i18n/js/, kept offline by the service worker); English without it.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const fill = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));
  const urls = config.urls;
  const $ = (id) => document.getElementById(id);
  const els = {
    door: $("door-name"), net: $("net"), video: $("video"), frame: $("frame"), camera: $("camera"),
    cameraStop: $("camera-stop"), cameraNote: $("camera-note"), idle: $("scanner-idle"), result: $("result"),
    countIn: $("count-in"), countSold: $("count-sold"), countDoors: $("count-doors"), countNote: $("count-note"),
    conflicts: $("conflicts"), conflictList: $("conflict-list"), conflictCount: $("conflict-count"),
    manual: $("manual"), code: $("code"), search: $("search"), q: $("q"), hits: $("hits"), logout: $("logout"),
    doorNames: $("door-names"),
  };
  const CODE = /^[A-Za-z0-9_-]{16,64}$/;
  const DOOR_KEY = "checkin.door";
  const CAMERA_KEY = "checkin.camera";
  const clock = new Intl.DateTimeFormat(config.locale || "en-GB", { hour: "2-digit", minute: "2-digit", timeZone: config.timeZone });
  const day = new Intl.DateTimeFormat(config.locale || "en-GB", { weekday: "short", day: "numeric", month: "short", timeZone: config.timeZone });

  const state = {
    tickets: new Map(), // hash -> entry of the downloaded list (with local check-ins)
    listFrom: null, // when the list was made (server time)
    wholeBooking: Boolean(config.wholeBooking), // one scan admits the booking (the theater's setting, as the list said)
    online: navigator.onLine,
    queued: 0,
    syncing: false,
    conflicts: [],
    lastCode: "", lastSeen: 0, busy: false,
    stream: null, resultTimer: 0,
    offlineReady: false,
  };

  // ---------------------------------------------------------------- small helpers

  function text(tag, value, cls) {
    const el = document.createElement(tag);
    if (cls) el.className = cls;
    el.textContent = value;
    return el;
  }

  function time(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    const sameDay = day.format(d) === day.format(new Date());
    return (sameDay ? "" : day.format(d) + " ") + clock.format(d);
  }

  function seatText(t) {
    return (t.section ? t.section + " · " : "") + fill(gettext("Row %(row)s · Seat %(seat)s"), { row: t.row, seat: t.seat });
  }

  function csrf() {
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (m) return decodeURIComponent(m[1]);
    const field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function newId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return btoa(String.fromCharCode.apply(null, bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  async function sha256(value) {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  class Offline extends Error {}
  class Refused extends Error {
    constructor(status, data) {
      super((data && data.error) || fill(gettext("The server refused (%(status)s)."), { status: status }));
      this.status = status;
      this.data = data || {};
    }
  }

  /* A request to our server. Offline for: no network, a timeout, a 5xx (e.g. the database
     unreachable: 503); Refused for a 4xx with its message. */
  async function call(url, options) {
    options = options || {};
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), options.timeout || 6000);
    const headers = { Accept: "application/json" };
    if (options.body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["X-CSRFToken"] = csrf();
    }
    let response;
    try {
      response = await fetch(url, {
        method: options.body !== undefined ? "POST" : "GET",
        headers: headers,
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
        credentials: "same-origin",
        cache: "no-store",
        signal: controller.signal,
      });
    } catch (error) {
      throw new Offline(String(error));
    } finally {
      clearTimeout(timer);
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (response.status >= 500) throw new Offline("server " + response.status);
    if (!response.ok || data === null) throw new Refused(response.status, data);
    setOnline(true);
    return data;
  }

  // ---------------------------------------------------------------- IndexedDB: list and queue

  const DB_NAME = "door-checkin";
  let dbPromise = null;

  function db() {
    if (!dbPromise) {
      dbPromise = new Promise((resolve, reject) => {
        const open = indexedDB.open(DB_NAME, 1);
        open.onupgradeneeded = () => {
          const d = open.result;
          d.createObjectStore("tickets", { keyPath: ["scope", "h"] }).createIndex("scope", "scope");
          d.createObjectStore("queue", { keyPath: "id" }).createIndex("scope", "scope");
          d.createObjectStore("meta", { keyPath: "scope" });
        };
        open.onsuccess = () => resolve(open.result);
        open.onerror = () => reject(open.error);
      });
    }
    return dbPromise;
  }

  async function run(stores, mode, work) {
    const d = await db();
    return new Promise((resolve, reject) => {
      const tx = d.transaction(stores, mode);
      let result;
      tx.oncomplete = () => resolve(result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
      result = work(tx);
    });
  }

  function all(request) {
    return new Promise((resolve, reject) => {
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
  }

  async function loadLocal() {
    const d = await db();
    const tx = d.transaction(["tickets", "meta", "queue"], "readonly");
    const [tickets, meta, queue] = await Promise.all([
      all(tx.objectStore("tickets").index("scope").getAll(config.scope)),
      all(tx.objectStore("meta").get(config.scope)),
      all(tx.objectStore("queue").index("scope").getAll(config.scope)),
    ]);
    state.tickets = new Map(tickets.map((t) => [t.h, t]));
    state.listFrom = meta ? meta.generatedOn : null;
    if (meta && meta.wholeBooking !== undefined) state.wholeBooking = Boolean(meta.wholeBooking);
    state.queued = queue.length;
  }

  async function queuedScans() {
    const d = await db();
    const tx = d.transaction("queue", "readonly");
    const items = await all(tx.objectStore("queue").index("scope").getAll(config.scope));
    return items.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  }

  /* A fresh list from the server replaces this phone's, keeping what this phone let in and has
     not synced yet. */
  async function saveList(data) {
    const pending = new Map((await queuedScans()).filter((s) => s.hash).map((s) => [s.hash, s]));
    const fresh = new Map();
    for (const t of data.tickets) {
      const entry = Object.assign({ scope: config.scope }, t);
      const mine = pending.get(t.h);
      if (mine && !entry.used) entry.used = { at: mine.at, door: mine.door, here: true };
      fresh.set(t.h, entry);
    }
    await run(["tickets", "meta"], "readwrite", (tx) => {
      const store = tx.objectStore("tickets");
      store.delete(IDBKeyRange.bound([config.scope, ""], [config.scope, "\uffff"]));
      for (const entry of fresh.values()) store.put(entry);
      tx.objectStore("meta").put({ scope: config.scope, generatedOn: data.generatedOn, name: data.name, wholeBooking: Boolean(data.wholeBooking) });
    });
    state.tickets = fresh;
    state.listFrom = data.generatedOn;
    state.wholeBooking = Boolean(data.wholeBooking);
  }

  async function markUsed(entry, scanItem) {
    entry.used = { at: scanItem.at, door: scanItem.door, here: true };
    await run(["tickets", "queue"], "readwrite", (tx) => {
      tx.objectStore("tickets").put(entry);
      tx.objectStore("queue").put(scanItem);
    });
    state.queued += 1;
  }

  async function forget() {
    // Signing out: nothing of this door stays on the phone.
    try {
      const d = await db();
      d.close();
    } catch (error) { /* no database */ }
    await new Promise((resolve) => {
      const del = indexedDB.deleteDatabase(DB_NAME);
      del.onsuccess = del.onerror = del.onblocked = () => resolve();
    });
    if (window.caches) {
      const keys = await caches.keys();
      await Promise.all(keys.filter((k) => k.startsWith("door-checkin-")).map((k) => caches.delete(k)));
    }
    localStorage.removeItem(CAMERA_KEY);
  }

  // ---------------------------------------------------------------- network state and counts

  function setOnline(value) {
    if (state.online === value) return;
    state.online = value;
    showNet();
    if (value) {
      syncQueue();
      refresh();
    }
  }

  function showNet() {
    const list = state.listFrom
      ? fill(gettext("%(count)s tickets on this phone (list of %(time)s)"), { count: state.tickets.size, time: time(state.listFrom) })
      : gettext("no ticket list on this phone yet");
    const queue = state.queued ? " · " + fill(gettext("%(count)s to sync"), { count: state.queued }) : "";
    const ready = state.online ? (state.offlineReady ? gettext("ready offline") : gettext("not ready offline yet")) + " · " : "";
    els.net.className = "net " + (state.online ? "on" : "off");
    els.net.textContent = (state.online ? gettext("Online") + " · " + ready : gettext("Offline: checking against this phone's list") + " · ") + list + queue;
    els.net.dataset.queued = String(state.queued);
  }

  function localCounts() {
    let sold = 0, checked = 0;
    const doors = new Map();
    for (const t of state.tickets.values()) {
      if (!t.ok) continue;
      sold += 1;
      if (t.used) {
        checked += 1;
        doors.set(t.used.door, (doors.get(t.used.door) || 0) + 1);
      }
    }
    return {
      sold: sold, checkedIn: checked, openConflicts: null,
      doors: Array.from(doors, ([door, count]) => ({ door: door, count: count })).sort((a, b) => b.count - a.count),
    };
  }

  function showCounts(counts, fromPhone) {
    els.countIn.textContent = counts.checkedIn;
    els.countSold.textContent = counts.sold;
    els.countDoors.replaceChildren(...counts.doors.map((d) => {
      const li = document.createElement("li");
      li.append(text("span", d.door), " ", text("strong", String(d.count)));
      return li;
    }));
    els.countNote.textContent = fromPhone ? gettext("Counted on this phone while offline.") : "";
    const known = new Set(Array.from(els.doorNames.options, (o) => o.value));
    for (const d of counts.doors) {
      if (!known.has(d.door)) els.doorNames.append(new Option(d.door, d.door));
    }
  }

  function conflictItem(c) {
    const li = document.createElement("li");
    li.className = "conflict" + (c.seen ? " seen" : "");
    li.dataset.id = c.id;
    const t = c.ticket || {};
    li.append(text("strong", t.row ? seatText(t) : gettext("Unknown ticket")));
    if (t.name) li.append(text("span", t.name + " · " + t.ref));
    li.append(text("span", c.summary));
    if (c.seen) {
      li.append(text("em", fill(gettext("Seen by %(name)s"), { name: c.seen.by })));
    } else {
      const button = text("button", gettext("Seen"), "btn small");
      button.type = "button";
      button.addEventListener("click", () => markSeen(c.id, button));
      li.append(button);
    }
    return li;
  }

  function showConflicts(list, open) {
    state.conflicts = list;
    els.conflicts.hidden = list.length === 0;
    els.conflictCount.textContent = String(open);
    els.conflictList.replaceChildren(...list.map(conflictItem));
  }

  async function markSeen(id, button) {
    button.disabled = true;
    try {
      await call(urls.seen.replace("000000000000000000000000", id), { body: {} });
      await refreshStats();
    } catch (error) {
      button.disabled = false;
    }
  }

  async function refreshStats() {
    try {
      const data = await call(urls.stats);
      showCounts(data.counts, false);
      showConflicts(data.conflicts, data.counts.openConflicts);
    } catch (error) {
      if (error instanceof Offline) {
        setOnline(false);
        showCounts(localCounts(), true);
      } else if (error instanceof Refused) {
        signedOut(error);
      }
    }
  }

  async function refreshList() {
    try {
      const data = await call(urls.tickets, { timeout: 30000 });
      await saveList(data);
      if (!state.offlineReady) await keepPage();
    } catch (error) {
      if (error instanceof Offline) setOnline(false);
      else if (error instanceof Refused) signedOut(error);
    }
    showNet();
  }

  async function refresh() {
    await refreshList();
    await refreshStats();
    if (els.hits.children.length && els.q.value.trim().length >= 2) await search(els.q.value);
  }

  function signedOut(error) {
    if (error.status === 403) {
      els.net.className = "net off";
      els.net.textContent = error.message + " ";
      const a = text("a", gettext("Sign in"));
      a.href = urls.login + "?next=" + encodeURIComponent(urls.page);
      els.net.append(a);
    }
  }

  // ---------------------------------------------------------------- sync

  async function syncQueue() {
    if (state.syncing) return;
    state.syncing = true;
    try {
      let scans = await queuedScans();
      while (scans.length) {
        const batch = scans.slice(0, 100);
        const body = { scans: batch.map((s) => ({ id: s.id, code: s.code, hash: s.code ? undefined : s.hash, at: s.at, door: s.door })) };
        const data = await call(urls.sync, { body: body, timeout: 20000 });
        const done = new Set();
        const conflicts = [];
        for (const r of data.results) {
          if (!r.id) continue;
          done.add(r.id); // answered: admitted, or a conflict the server now keeps, or never valid
          if (r.conflict) conflicts.push(r.conflict);
        }
        await run("queue", "readwrite", (tx) => {
          for (const id of done) tx.objectStore("queue").delete(id);
        });
        state.queued = Math.max(0, state.queued - done.size);
        if (conflicts.length) announceConflicts(conflicts);
        scans = (await queuedScans()).filter((s) => !done.has(s.id));
        if (done.size === 0) break;
      }
      state.queued = (await queuedScans()).length;
      showNet();
      await refresh();
    } catch (error) {
      if (error instanceof Offline) setOnline(false);
      else if (error instanceof Refused) signedOut(error);
    } finally {
      state.syncing = false;
    }
  }

  function announceConflicts(conflicts) {
    const known = new Set(state.conflicts.map((c) => c.id));
    const list = conflicts.filter((c) => !known.has(c.id)).concat(state.conflicts);
    showConflicts(list, list.filter((c) => !c.seen).length);
    signal(false);
  }

  // ---------------------------------------------------------------- sound, vibration, screen

  let audio = null;
  function unlockAudio() {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return;
    if (!audio) audio = new Ctx();
    if (audio.state === "suspended") audio.resume().catch(() => {});
  }

  function beep(frequency, start, length, type) {
    const osc = audio.createOscillator();
    const gain = audio.createGain();
    osc.type = type;
    osc.frequency.value = frequency;
    const t0 = audio.currentTime + start;
    gain.gain.setValueAtTime(0.0001, t0);
    gain.gain.exponentialRampToValueAtTime(0.3, t0 + 0.01);
    gain.gain.exponentialRampToValueAtTime(0.0001, t0 + length);
    osc.connect(gain).connect(audio.destination);
    osc.start(t0);
    osc.stop(t0 + length + 0.02);
  }

  function signal(good) {
    try {
      if (audio && audio.state === "running") {
        if (good) {
          beep(1320, 0, 0.09, "sine");
          beep(1760, 0.11, 0.12, "sine");
        } else {
          beep(220, 0, 0.45, "square");
        }
      }
      if (navigator.vibrate) navigator.vibrate(good ? 80 : [250, 100, 250]);
    } catch (error) { /* no sound on this phone */ }
  }

  const VERDICT = {
    admitted: gettext("Let in"),
    used: gettext("Already used"),
    not_valid: gettext("Not valid"),
    wrong_session: gettext("Other performance"),
    unknown: gettext("Unknown ticket"),
    invalid: gettext("Not a ticket"),
    undone: gettext("Check-in undone"),
  };

  function showResult(r) {
    const ok = r.status === "admitted";
    const box = document.createElement("div");
    box.className = "result-box";
    const mark = text("p", ok ? "✓" : "✗", "mark");
    mark.setAttribute("aria-hidden", "true");
    box.append(mark, text("p", VERDICT[r.status] || r.status, "verdict"));
    if (r.ticket) {
      box.append(text("p", seatText(r.ticket), "seat"));
      box.append(text("p", r.ticket.category + (r.ticket.type ? " · " + r.ticket.type : ""), "detail"));
      if (r.ticket.comp) box.append(text("p", gettext("Complimentary"), "comp"));
      if (ok && r.party > 1) {
        box.append(text("p", fill(ngettext("The whole booking: %(count)s person let in.", "The whole booking: %(count)s people let in.", r.party), { count: r.party }), "party"));
      }
      if (r.ticket.condition) box.append(text("p", r.ticket.condition, "condition")); // what to ask the holder for
      box.append(text("p", r.ticket.name + " · " + r.ticket.ref, "who"));
    }
    let why = "";
    if (r.status === "used" && r.used) {
      why = fill(gettext("Used at %(door)s, %(time)s"), { door: r.used.door, time: time(r.used.at) })
        + (r.used.by ? " (" + r.used.by + ")" : r.used.here ? " (" + gettext("this phone") + ")" : "");
    } else if (r.status === "wrong_session" && r.session) {
      const when = r.session.start ? ", " + day.format(new Date(r.session.start)) + " " + clock.format(new Date(r.session.start)) : "";
      why = fill(gettext("For %(show)s"), { show: r.session.name }) + when;
    } else if (!ok) {
      why = r.message || "";
    }
    if (why) box.append(text("p", why, "why"));
    if (r.offline) box.append(text("p", ok ? gettext("Offline · syncs when back online") : gettext("Offline · checked against this phone's list"), "tag"));
    if (r.ticket && r.hash && !r.offline && (ok || r.status === "used")) box.append(undoButton(r.hash));
    const next = text("button", gettext("Next ticket"), "btn next");
    next.type = "button";
    next.addEventListener("click", hideResult);
    box.append(next);
    els.result.replaceChildren(box);
    els.result.className = "result " + (ok ? "ok" : "bad");
    els.result.dataset.status = r.status;
    els.result.hidden = false;
    document.body.classList.add("showing-result");
    signal(ok);
    clearTimeout(state.resultTimer);
    if (ok) state.resultTimer = setTimeout(hideResult, 3000);
  }

  /* Staff take a check-in back (online only: the server keeps who undid it and when). */
  function undoButton(hash) {
    const button = text("button", gettext("Undo check-in"), "btn small undo");
    button.type = "button";
    button.addEventListener("click", async () => {
      clearTimeout(state.resultTimer);
      try {
        const answer = await call(urls.undo, { body: { hash: hash } });
        const entry = state.tickets.get(hash);
        if (entry) {
          delete entry.used;
          run("tickets", "readwrite", (tx) => tx.objectStore("tickets").put(entry)).catch(() => {});
        }
        showResult({ status: "undone", message: answer.message });
        scheduleStats();
      } catch (error) {
        showResult({ status: "invalid", message: error.message || String(error) });
      }
    });
    return button;
  }

  function hideResult() {
    clearTimeout(state.resultTimer);
    els.result.hidden = true;
    document.body.classList.remove("showing-result");
  }

  // ---------------------------------------------------------------- checking a ticket

  function door() {
    const value = els.door.value.replace(/\s+/g, " ").trim();
    if (!value) {
      els.door.focus();
      els.door.classList.add("missing");
      showResult({ status: "invalid", message: gettext("Type the name of your door first (top of the page).") });
      return "";
    }
    els.door.classList.remove("missing");
    return value;
  }

  /* A ticket shown at the door: its code (camera, typed) or its hash (picked from a search). */
  function check(ticket) {
    return checkTicket(ticket).catch((error) => {
      showResult({ status: "invalid", message: fill(gettext("This phone could not check the ticket (%(error)s). Try again."), { error: error }) });
    });
  }

  async function checkTicket(ticket) {
    const doorName = door();
    if (!doorName) return;
    if (ticket.code !== undefined && !CODE.test(ticket.code)) {
      showResult({ status: "invalid", message: gettext("This QR code is not one of our tickets.") });
      return;
    }
    const item = { id: newId(), scope: config.scope, door: doorName, at: new Date().toISOString() };
    if (ticket.code !== undefined) item.code = ticket.code;
    item.hash = ticket.hash || (await sha256(ticket.code));
    if (state.online || navigator.onLine) {
      try {
        const body = { door: item.door, scan: item.id };
        if (item.code) body.code = item.code;
        else body.hash = item.hash;
        const result = await call(urls.scan, { body: body, timeout: 5000 });
        const entry = state.tickets.get(item.hash);
        if (entry && result.used) {
          entry.used = { at: result.used.at, door: result.used.door };
          run("tickets", "readwrite", (tx) => tx.objectStore("tickets").put(entry)).catch(() => {});
        }
        showResult(result);
        scheduleStats();
        return;
      } catch (error) {
        if (error instanceof Refused) {
          if (error.status === 403) signedOut(error);
          showResult({ status: "invalid", message: error.message });
          return;
        }
        setOnline(false); // and decide here, with the same scan id (if the request did arrive, the sync says so)
      }
    }
    await checkOffline(item);
  }

  /* Why a listed ticket does not admit, in the words the server uses online. */
  function notValidWhy(entry) {
    if (entry.state === "exchanged") {
      const seat = entry.newSeat;
      if (seat && seat.show) {
        // moved to another performance: say which, or the holder looks for the seat tonight
        return fill(gettext("Replaced by an exchange — new seat: %(seat)s, %(show)s, %(when)s."), { seat: seatText(seat), show: seat.show.name, when: seat.show.when });
      }
      return seat ? fill(gettext("Replaced by an exchange — new seat: %(seat)s."), { seat: seatText(seat) }) : gettext("Replaced by an exchange.");
    }
    const known = {
      canceled: gettext("The booking was canceled."),
      refunded: gettext("The ticket was refunded."),
      transferred: gettext("Handed to someone else: only their new ticket admits."),
      pending_payment: gettext("The booking is not paid."),
      expired: gettext("The booking expired unpaid."),
    };
    return known[entry.state] || fill(gettext("The booking is %(state)s."), { state: entry.state || gettext("not valid") });
  }

  async function checkOffline(item) {
    const entry = state.tickets.get(item.hash);
    const r = { offline: true };
    if (!entry) {
      r.status = "unknown";
      r.message = state.listFrom
        ? fill(gettext("Not in this phone's list of %(time)s. Sold since? Check when online."), { time: time(state.listFrom) })
        : gettext("There is no ticket list on this phone yet: it is downloaded when online.");
    } else {
      r.ticket = entry;
      if (!entry.ok) {
        r.status = "not_valid";
        r.message = notValidWhy(entry);
      } else if (entry.used) {
        r.status = "used";
        r.used = entry.used;
      } else {
        r.status = "admitted";
        await markUsed(entry, item);
        r.party = 1;
        if (state.wholeBooking && entry.ref) {
          // the booking's other unused tickets in this list, each queued as its own scan: the sync
          // admits each once (one used meanwhile elsewhere comes back as a conflict, never twice)
          for (const other of Array.from(state.tickets.values())) {
            if (other === entry || other.ref !== entry.ref || !other.ok || other.used) continue;
            await markUsed(other, { id: newId(), scope: config.scope, door: item.door, at: item.at, hash: other.h, party: item.id });
            r.party += 1;
          }
        }
        showNet();
        showCounts(localCounts(), true);
      }
    }
    showResult(r);
  }

  let statsTimer = 0;
  function scheduleStats() {
    clearTimeout(statsTimer);
    statsTimer = setTimeout(refreshStats, 800);
  }

  // ---------------------------------------------------------------- camera

  let scanTimer = 0;
  async function startCamera() {
    unlockAudio();
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      els.cameraNote.textContent = gettext("This browser cannot use the camera here: type the code or search.");
      return;
    }
    try {
      state.stream = await navigator.mediaDevices.getUserMedia({
        audio: false,
        video: { facingMode: { ideal: "environment" }, width: { ideal: 1280 }, height: { ideal: 720 } },
      });
    } catch (error) {
      els.cameraNote.textContent = fill(gettext("No camera (%(error)s): type the code or search."), { error: error.name });
      localStorage.removeItem(CAMERA_KEY);
      return;
    }
    els.video.srcObject = state.stream;
    els.video.hidden = false;
    els.idle.hidden = true;
    els.cameraStop.hidden = false;
    try {
      await els.video.play();
    } catch (error) { /* autoplay of a muted inline video is allowed; keep going */ }
    localStorage.setItem(CAMERA_KEY, "on");
    scanLoop();
  }

  function stopCamera() {
    clearTimeout(scanTimer);
    if (state.stream) state.stream.getTracks().forEach((t) => t.stop());
    state.stream = null;
    els.video.hidden = true;
    els.idle.hidden = false;
    els.cameraStop.hidden = true;
    localStorage.removeItem(CAMERA_KEY);
  }

  function scanLoop() {
    if (!state.stream) return;
    const video = els.video;
    if (video.readyState >= 2 && video.videoWidth && !state.busy && window.jsQR) {
      const scale = Math.min(1, 640 / Math.max(video.videoWidth, video.videoHeight));
      const w = Math.round(video.videoWidth * scale);
      const h = Math.round(video.videoHeight * scale);
      const canvas = els.frame;
      if (canvas.width !== w) canvas.width = w;
      if (canvas.height !== h) canvas.height = h;
      const ctx = canvas.getContext("2d", { willReadFrequently: true });
      ctx.drawImage(video, 0, 0, w, h);
      const found = window.jsQR(ctx.getImageData(0, 0, w, h).data, w, h, { inversionAttempts: "dontInvert" });
      const now = Date.now();
      if (found && found.data) {
        // The same ticket held in front of the camera is one scan, not one per frame.
        const again = found.data === state.lastCode && now - state.lastSeen < 2500;
        state.lastSeen = now;
        if (!again) {
          state.lastCode = found.data;
          state.busy = true;
          check({ code: found.data.trim() }).finally(() => { state.busy = false; });
        }
      }
    }
    scanTimer = setTimeout(scanLoop, 150);
  }

  // ---------------------------------------------------------------- search

  function hitItem(hit) {
    const li = document.createElement("li");
    li.className = "hit" + (hit.used || !hit.ok ? " hit-off" : "");
    const info = document.createElement("div");
    info.append(text("strong", seatText(hit)));
    info.append(text("span", hit.name + " · " + hit.ref + (hit.type ? " · " + hit.type : "") + (hit.comp ? " · " + gettext("Complimentary") : "")));
    if (hit.condition) info.append(text("span", hit.condition, "condition"));
    if (!hit.ok) info.append(text("em", notValidWhy(hit)));
    else if (hit.used) info.append(text("em", fill(gettext("Used at %(door)s, %(time)s"), { door: hit.used.door, time: time(hit.used.at) })));
    // a ticket that will not admit is still checked (the door sees why, in red), but not offered as "Admit"
    const button = text("button", hit.ok && !hit.used ? gettext("Admit") : gettext("Check"), "btn small");
    button.type = "button";
    button.addEventListener("click", () => {
      unlockAudio();
      check({ hash: hit.h });
    });
    li.append(info, button);
    if (hit.ok && hit.used && state.online) li.append(undoButton(hit.h));
    return li;
  }

  function localSearch(q) {
    const needle = q.toLowerCase();
    const ref = q.toUpperCase().replace(/\s+/g, "");
    const hits = [];
    for (const t of state.tickets.values()) {
      if (t.name.toLowerCase().includes(needle) || t.ref.startsWith(ref)) hits.push(t);
      if (hits.length >= 40) break;
    }
    return hits;
  }

  async function search(q) {
    q = q.replace(/\s+/g, " ").trim();
    if (q.length < 2) {
      els.hits.replaceChildren(text("li", gettext("Type at least two letters of the name or the booking reference."), "note"));
      return;
    }
    let hits;
    try {
      if (!state.online) throw new Offline("offline");
      hits = (await call(urls.search + "?q=" + encodeURIComponent(q))).hits;
    } catch (error) {
      if (error instanceof Refused) {
        els.hits.replaceChildren(text("li", error.message, "error"));
        return;
      }
      setOnline(false);
      hits = localSearch(q);
    }
    els.hits.replaceChildren(...(hits.length ? hits.map(hitItem) : [text("li", fill(gettext("Nobody found for “%(query)s”."), { query: q }), "note")]));
  }

  // ---------------------------------------------------------------- wiring

  function wire() {
    els.door.value = els.door.value || localStorage.getItem(DOOR_KEY) || "";
    els.door.addEventListener("change", () => {
      const value = els.door.value.replace(/\s+/g, " ").trim();
      els.door.value = value;
      if (value) localStorage.setItem(DOOR_KEY, value);
      els.door.classList.toggle("missing", !value);
    });
    els.camera.hidden = false;
    els.cameraNote.textContent = gettext("Or type the code or search below.");
    els.camera.addEventListener("click", startCamera);
    els.cameraStop.addEventListener("click", stopCamera);
    document.addEventListener("pointerdown", unlockAudio, { passive: true });
    els.result.addEventListener("click", (event) => {
      if (event.target === els.result || event.target.classList.contains("next")) hideResult();
    });
    const serverNext = els.result.querySelector(".next");
    if (serverNext) serverNext.addEventListener("click", (event) => { event.preventDefault(); hideResult(); });
    els.manual.addEventListener("submit", (event) => {
      event.preventDefault();
      unlockAudio();
      const code = els.code.value.trim();
      if (!code) return;
      els.code.value = "";
      check({ code: code });
    });
    let searchTimer = 0;
    els.search.addEventListener("submit", (event) => {
      event.preventDefault();
      search(els.q.value);
    });
    els.q.addEventListener("input", () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => { if (els.q.value.trim().length >= 2) search(els.q.value); }, 300);
    });
    els.logout.addEventListener("submit", async (event) => {
      event.preventDefault();
      // Check-ins made offline leave this phone only through the sync: never dropped unasked.
      if (state.queued) await syncQueue();
      if (state.queued && !window.confirm(fill(ngettext("%(count)s check-in made offline is not synced yet and would be lost. Sign out anyway?", "%(count)s check-ins made offline are not synced yet and would be lost. Sign out anyway?", state.queued), { count: state.queued }))) {
        return;
      }
      stopCamera();
      forget().finally(() => els.logout.submit());
    });
    window.addEventListener("online", () => setOnline(true));
    window.addEventListener("offline", () => setOnline(false));
    setInterval(() => {
      if (document.hidden) return;
      if (state.queued) syncQueue();
      refreshStats(); // also finds out that the network is back
    }, 5000);
    setInterval(() => { if (state.online && !document.hidden) refreshList(); }, 60000);
  }

  async function registerWorker() {
    if (!("serviceWorker" in navigator)) return;
    try {
      await navigator.serviceWorker.register(urls.sw, { scope: urls.root });
    } catch (error) { /* the door still works online */ }
    await keepPage();
  }

  /* This page and its scripts must be on the phone before the network goes: the first visit is
     not served by the worker, so the page is put in the worker's cache here, and checked again
     after every list refresh (a visit cut short, a new version of the worker). */
  async function keepPage() {
    if (!window.caches || !("serviceWorker" in navigator)) return;
    try {
      const cache = await caches.open("door-checkin-" + config.offlineVersion);
      if (!(await cache.match(urls.page))) await cache.add(new Request(urls.page, { credentials: "same-origin" }));
      const registration = await Promise.race([
        navigator.serviceWorker.ready,
        new Promise((resolve) => setTimeout(() => resolve(null), 10000)),
      ]);
      const assets = await Promise.all(
        Array.from(document.querySelectorAll("script[src], link[rel=stylesheet]"), (el) => cache.match(el.src || el.href))
      );
      state.offlineReady = Boolean(registration && registration.active && assets.every(Boolean));
    } catch (error) {
      state.offlineReady = false;
    }
    els.net.dataset.offline = state.offlineReady ? "1" : "0";
    showNet();
  }

  async function start() {
    wire();
    try {
      await loadLocal();
    } catch (error) { /* private mode without IndexedDB: online only */ }
    if (!navigator.onLine) state.online = false;
    showNet();
    if (!state.online) showCounts(localCounts(), true);
    const worker = registerWorker();
    if (state.online) {
      await refreshList();
      if (state.queued) await syncQueue();
      else await refreshStats();
    }
    if (localStorage.getItem(CAMERA_KEY) === "on") startCamera();
    await worker;
    els.net.dataset.ready = "1";
  }

  start();
})();
