/* Small progressive enhancements on top of htmx. Every page works without this file. */
(function () {
  "use strict";
  // Django's JavaScript catalog (/i18n/js/, loaded first by base.html) translates; English without it.
  var gettext = window.gettext || function (text) { return text; };

  // Live map: ask "changed since this version?" so an unchanged map costs a 304 and no swap.
  document.addEventListener("htmx:configRequest", function (e) {
    var etag = e.detail.elt && e.detail.elt.dataset && e.detail.elt.dataset.etag;
    if (etag && e.detail.verb === "get") e.detail.headers["If-None-Match"] = etag;
  });

  document.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    noteSeatChange(e.detail.xhr);
    if (status === 304 || isOlderMap(e.detail)) {
      // Unchanged, or a refresh that left before the buyer's own click and came back after it.
      e.detail.shouldSwap = false;
      e.detail.isError = false;
    } else if (isFormAnswer(e.detail)) {
      // A form refused its input (400, 409): its answer is the form again with the messages.
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    } else if (isSeatMessage(e.detail.xhr)) {
      // Bad input on a seat action comes back as a message: show it, keep the map.
      e.detail.shouldSwap = true;
      e.detail.isError = false;
      e.detail.target = document.getElementById("notice");
      e.detail.swapOverride = "outerHTML";
    } else if (status >= 400) {
      showNotice(status === 404 ? gettext("That is no longer available. Please reload the page.") :
        gettext("Something went wrong. Please try again."));
    }
  });

  // A refused seat choice (400), a missing waiting-room admission (403) or a rate limit (429)
  // answers with a message for the notice area.
  function isSeatMessage(xhr) {
    return (xhr.status === 400 || xhr.status === 403 || xhr.status === 429) &&
      xhr.responseText.indexOf('id="notice"') !== -1;
  }

  function isFormAnswer(detail) {
    var status = detail.xhr.status;
    var elt = detail.requestConfig && detail.requestConfig.elt;
    return (status === 400 || status === 409) && !!elt && elt.hasAttribute("data-form-answers");
  }

  // With DEBUG on, django-htmx's development helper shows every 400 answer as an error page in
  // place of the whole document. A seat message is an answer for the buyer, not an error page:
  // keep it from that helper (caught on its way down, before it reaches document listeners);
  // htmx itself goes on and the beforeSwap handler above puts it in the notice area.
  window.addEventListener("htmx:beforeOnLoad", function (e) {
    if (isSeatMessage(e.detail.xhr) || isFormAnswer(e.detail)) e.stopPropagation();
  }, true);

  // A seat click answers with the changed seats only; the map shown now includes that version,
  // so a refresh that left before the click must not bring the older map back.
  // With push, only the next version is taken (the pushed changes before it are still to come).
  function noteSeatChange(xhr) {
    var version = xhr.getResponseHeader("X-Seatmap-Version");
    var shown = document.getElementById("seatmap");
    if (!version || !shown || Number(version) <= Number(shown.dataset.version)) return;
    if (live.on && Number(version) !== Number(shown.dataset.version) + 1) return;
    shown.dataset.version = version;
  }

  function isOlderMap(detail) {
    var shown = document.getElementById("seatmap");
    var etag = detail.xhr.getResponseHeader("ETag");
    if (!shown || !etag || detail.requestConfig.verb !== "get") return false;
    return Number(etag.replace(/\D/g, "")) < Number(shown.dataset.version);
  }

  // Keep the buyer's place in a big hall when the map is replaced (their click or a live update).
  var mapScroll = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var box = document.querySelector("#seatmap .map-scroll");
    if (box) mapScroll = { left: box.scrollLeft, top: box.scrollTop };
  });
  document.addEventListener("htmx:afterSwap", function () {
    var box = document.querySelector("#seatmap .map-scroll");
    if (box && mapScroll) { box.scrollLeft = mapScroll.left; box.scrollTop = mapScroll.top; }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var box = document.querySelector("#seatmap .map-scroll");  // start at the centre of a wide hall
    if (box && box.scrollWidth > box.clientWidth) box.scrollLeft = (box.scrollWidth - box.clientWidth) / 2;
  });

  document.addEventListener("htmx:sendError", function () {
    showNotice(gettext("We could not reach the box office. Check your connection; we keep trying."));
  });

  function showNotice(text) {
    var area = document.getElementById("notice");
    if (!area) return;
    var p = document.createElement("p");
    p.className = "msg msg-error";
    p.textContent = text;
    area.replaceChildren(p);
  }

  // Live map by push: Server-Sent Events from /sessions/<id>/live/ (booking/web/live.py) carry the
  // seats each change made; they are applied in place, in version order. A version missed (a gap),
  // or a change that is more than seats, makes the page fetch the map once. Polling (the htmx
  // "every" trigger on #seatmap) stays as the fallback: its requests are dropped only while the
  // stream is live; no EventSource, ?push=0, a 204 (no change streams on the server) or no event
  // within NO_EVENT_MS of opening (a proxy buffering the stream) leave the page polling.
  var STATE_WORDS = ["available", "held by someone else", "sold", "not for sale"];
  var WORDS_AT_END = /, (available|held by someone else|sold|not for sale|held by you)$/;
  var NO_EVENT_MS = 5000;
  var live = { source: null, on: false, fetching: false };

  function startPush() {
    var map = document.getElementById("seatmap");
    if (live.source || !map || !map.dataset.live || !window.EventSource) return;
    if (/[?&]push=0(&|$)/.test(window.location.search)) return;
    var source = live.source = new EventSource(map.dataset.live);
    var heard = false;
    var timer = setTimeout(function () {
      if (!heard) { source.close(); live.on = false; }  // buffered somewhere: keep polling
    }, NO_EVENT_MS);
    source.addEventListener("hello", function (e) {
      heard = true;
      clearTimeout(timer);
      live.on = true;
      var map = document.getElementById("seatmap");
      var v = JSON.parse(e.data).v;
      if (map && v > Number(map.dataset.version)) fetchMap();  // changed before the stream opened
    });
    source.addEventListener("seats", function (e) { applyChange(JSON.parse(e.data)); });
    source.addEventListener("error", function () {
      live.on = false;  // polling until the next hello (EventSource reconnects by itself)
      if (source.readyState === 2) clearTimeout(timer);  // closed for good (204): polling stays
    });
  }
  document.addEventListener("DOMContentLoaded", startPush);

  function applyChange(msg) {
    var map = document.getElementById("seatmap");
    if (!map) return;
    var shown = Number(map.dataset.version);
    if (msg.reload) {
      if (msg.v === null || msg.v > shown) fetchMap();
      return;
    }
    if (msg.v <= shown) return;  // already shown (the map or the buyer's own click was newer)
    if (msg.v !== shown + 1) { fetchMap(); return; }  // a version was missed
    Object.keys(msg.seats).forEach(function (key) { setSeat(key, msg.seats[key]); });
    map.dataset.version = String(msg.v);
    document.dispatchEvent(new CustomEvent("seatmap:changed"));
    map.dataset.etag = '"' + msg.v + '"';  // the map now is that version's: a poll may answer 304
  }

  function setSeat(key, state) {
    var rc = key.split(":");
    var b = document.getElementById("s" + rc[0] + "-" + rc[1]);
    if (!b || state < 0) return;
    if (state === 1 && b.classList.contains("me")) return;  // the buyer's own hold stays theirs
    b.classList.remove("me", "pk", "h", "x");
    if (state === 1) b.classList.add("h");
    else if (state !== 0) b.classList.add("x");
    if (state === 0) b.removeAttribute("aria-disabled");
    else b.setAttribute("aria-disabled", "true");
    var label = b.getAttribute("aria-label") || "";
    b.setAttribute("aria-label", label.replace(WORDS_AT_END, ", " + (STATE_WORDS[state] || "not for sale")));
  }

  function fetchMap() {
    var map = document.getElementById("seatmap");
    if (live.fetching || !map || !window.htmx) return;
    live.fetching = true;
    var done = function () { live.fetching = false; };
    window.htmx.ajax("GET", map.getAttribute("hx-get"), { source: map, target: map, swap: "outerHTML" }).then(done, done);
  }

  // While the stream is live the periodic poll is not sent (a fetch for a gap is).
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt;
    if (live.on && !live.fetching && elt && elt.id === "seatmap" && e.detail.requestConfig.verb === "get") {
      e.preventDefault();
    }
  });

  // Hold countdown: starts from the seconds the server computed (its clock, not this one's).
  function tick() {
    var now = performance.now();
    // the cart's countdown, and the sticky cart bar's (which leaves the hold's end to the cart's)
    document.querySelectorAll(".countdown[data-seconds], .countdown-bar[data-seconds]").forEach(function (el) {
      if (!el.dataset.deadline) el.dataset.deadline = String(now + Number(el.dataset.seconds) * 1000);
      var left = Math.max(0, Math.round((Number(el.dataset.deadline) - now) / 1000));
      var out = el.querySelector(".countdown-time");
      if (out) out.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      el.classList.toggle("countdown-urgent", left <= 60);
      if (left === 0 && el.classList.contains("countdown-bar")) {
        var bar = el.closest(".cart-bar");
        if (bar) bar.hidden = true;  // the hold ended: the cart says so, nothing left to check out
      }
      if (left === 0 && !el.dataset.done && el.classList.contains("countdown")) {
        el.dataset.done = "1";
        holdExpired();
      }
    });
  }

  function holdExpired() {
    if (document.querySelector("[data-reload-on-expiry]")) {
      window.location.reload();
    } else if (document.getElementById("cart-summary") && window.htmx) {
      // The cart endpoint ends the hold; the live map shows the seats free on its next refresh.
      window.htmx.ajax("GET", "/cart/", { target: "#cart-summary", swap: "outerHTML" });
    }
  }

  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);

  // Zoom (buttons and pinch), the overview, the seat's sheet and tooltip, notices by the seat and
  // the list of seats: static/booking/seatmap.js.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".zoom[hidden], .keys-hint[hidden]").forEach(function (el) { el.hidden = false; });
  });

  // Keyboard on the seat map (WAI-ARIA grid pattern, "roving tabindex"): the map is one Tab stop,
  // the arrow keys move between seats, Home/End go to the row's ends, Enter/Space click as always.
  // One Tab stop because a hall has hundreds of seats: tabbing through all of them to reach the
  // cart or "Best available" is what would surprise; the hint above the map names the keys.
  // Without this file every seat is a Tab stop of its own, as before.
  var SEAT = "#seatmap button.s";
  var lastSeat = null;  // id of the seat focused last (elements are replaced by swaps, ids stay)
  var goal = null;      // {id, x}: the horizontal place kept through Up/Down moves, as an editor does

  // Exactly one seat is reachable with Tab: the last focused one, else the first free one.
  // Every htmx swap brings seats without tabindex (the map, or single seats after a click), so
  // this runs again after each swap; htmx has already moved focus to the new seat of the same id.
  function rove() {
    var seats = document.querySelectorAll(SEAT);
    if (!seats.length) return;
    var stop = (lastSeat && document.getElementById(lastSeat)) ||
      document.querySelector(SEAT + ":not([aria-disabled])") || seats[0];
    seats.forEach(function (b) { if (b.tabIndex !== (b === stop ? 0 : -1)) b.tabIndex = b === stop ? 0 : -1; });
  }
  document.addEventListener("DOMContentLoaded", rove);
  document.addEventListener("htmx:afterSwap", rove);

  document.addEventListener("focusin", function (e) {
    if (!e.target.matches || !e.target.matches(SEAT) || e.target.id === lastSeat) return;
    var old = lastSeat && document.getElementById(lastSeat);
    if (old) old.tabIndex = -1;
    e.target.tabIndex = 0;
    lastSeat = e.target.id;
  });

  document.addEventListener("keydown", function (e) {
    var seat = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.isComposing || e.defaultPrevented) return;
    if (!seat.matches || !seat.matches(SEAT)) return;
    var row = seat.closest(".r");
    var inRow = row.querySelectorAll("button.s");
    var at = Array.prototype.indexOf.call(inRow, seat);
    var next = null;
    switch (e.key) {
      case "ArrowLeft": next = inRow[at - 1]; break;
      case "ArrowRight": next = inRow[at + 1]; break;  // gaps are <i>, not buttons: skipped
      case "Home": next = inRow[0]; break;
      case "End": next = inRow[inRow.length - 1]; break;
      case "ArrowUp": next = nearestInRow(seat, row, "previousElementSibling"); break;
      case "ArrowDown": next = nearestInRow(seat, row, "nextElementSibling"); break;
      default: return;  // any other key: not ours
    }
    e.preventDefault();  // a move (or none at an edge) never scrolls the map box or the page itself
    if (!next) return;
    if (e.key !== "ArrowUp" && e.key !== "ArrowDown") goal = null;
    // Into view in a wide hall's .map-scroll (sideways too) and the page. focus() alone would not
    // scroll a seat that is visible under the sticky row labels; scrollIntoView keeps clear of
    // them (the box's scroll-padding in site.css) and scrolls only as far as needed.
    next.focus({ preventScroll: true });
    next.scrollIntoView({ block: "nearest", inline: "nearest" });
  });

  // The seat of the next row up or down (rows without seats are passed over) whose centre is
  // nearest to the goal: this seat's centre, or the one the Up/Down moves started from, so
  // passing a shorter row or an aisle does not drift sideways. Measured as a fraction of the map's
  // width (unchanged by scrolling and zoom). On a tie the left one.
  function nearestInRow(seat, row, step) {
    var map = row.parentElement.getBoundingClientRect();
    var x = goal && goal.id === seat.id ? goal.x : centre(seat, map);
    for (row = row[step]; row; row = row[step]) {
      var best = null, bestDistance = Infinity;
      row.querySelectorAll("button.s").forEach(function (b) {
        var d = Math.abs(centre(b, map) - x);
        if (d < bestDistance - 0.001) { best = b; bestDistance = d; }
      });
      if (best) {
        goal = { id: best.id, x: x };
        return best;
      }
    }
    return null;
  }

  function centre(el, map) {
    var box = el.getBoundingClientRect();
    return (box.left + box.width / 2 - map.left) / map.width;
  }
})();
