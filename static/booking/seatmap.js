/* The seat map made for thumbs and for everyone, on top of site.js and htmx:
 * - zoom: the + and − buttons and a two-finger pinch scale the seats (the map's --zoom), keeping
 *   the point under the fingers in place; one finger pans (the box scrolls natively);
 * - an overview (mini-map) and a hint while part of the hall is off-screen;
 * - a tap on a seat (touch) opens a small sheet with its row, number, category, price and notes,
 *   and holds from there; a seat smaller than 24 px is zoomed to first. A mouse click still holds
 *   at once, with the same facts in a tooltip on hover and keyboard focus; a free wheelchair space
 *   opens the sheet however it is chosen, which asks whether the buyer needs it (the hold then
 *   carries ``wheelchair=1``; the server refuses it without);
 * - notices (seat just taken, rate limit, orphan seat) pop up by what the buyer touched; the
 *   notice area announces them (aria-live);
 * - a list of the available seats by row and price, with hold buttons (a switch on the map).
 * Without this file the map is the plain form of seat buttons it always was.
 */
(function () {
  "use strict";

  var SEAT = "#seatmap button.s";
  var MIN_TARGET = 24;   // px: the smallest seat a finger may choose
  var ZOOM_TO = 30;      // px: a small seat tapped is zoomed to this size
  var ZOOM_MIN = 0.35, ZOOM_MAX = 3;
  var words = {};
  var bypass = null;     // a seat click coming from the sheet or the list: let it through

  function $(selector) { return document.querySelector(selector); }
  function column() { return $(".map-column"); }
  function box() { return $("#seatmap .map-scroll"); }

  // --- zoom -------------------------------------------------------------------------------

  function zoomOf() { var c = column(); return c ? Number(c.style.getPropertyValue("--zoom") || 1) : 1; }

  // Scale the seats to ``zoom``, keeping the map point under (x, y) (viewport coordinates; the
  // box's centre when absent) where it is.
  function setZoom(zoom, x, y) {
    var c = column(), b = box();
    if (!c || !b) return;
    var before = zoomOf();
    zoom = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, zoom));
    if (Math.abs(zoom - before) < 0.001) return;
    var rect = b.getBoundingClientRect();
    var ox = (x === undefined ? rect.left + rect.width / 2 : x) - rect.left;
    var oy = (y === undefined ? rect.top + rect.height / 2 : y) - rect.top;
    var px = b.scrollLeft + ox, py = b.scrollTop + oy;
    c.style.setProperty("--zoom", zoom.toFixed(3));
    var k = zoom / before;
    b.scrollLeft = px * k - ox;
    b.scrollTop = py * k - oy;
    overview();
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-zoom]");
    if (!button) return;
    setZoom(button.dataset.zoom === "in" ? zoomOf() * 1.25 : zoomOf() / 1.25);
  });

  // Pinch: two fingers on the map. touch-action (site.css) keeps the browser from zooming the
  // page there, so the gesture is the map's.
  var pinch = null;
  function spread(touches) {
    var a = touches[0], b = touches[1];
    return { d: Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY) || 1,
             x: (a.clientX + b.clientX) / 2, y: (a.clientY + b.clientY) / 2 };
  }
  document.addEventListener("touchstart", function (e) {
    if (e.touches.length === 2 && e.target.closest && e.target.closest("#seatmap .map-scroll")) {
      pinch = { start: spread(e.touches), zoom: zoomOf() };
      hideSheet();
    }
  }, { passive: true });
  document.addEventListener("touchmove", function (e) {
    if (!pinch || e.touches.length !== 2) return;
    var now = spread(e.touches);
    e.preventDefault();
    setZoom(pinch.zoom * now.d / pinch.start.d, now.x, now.y);
  }, { passive: false });
  document.addEventListener("touchend", function (e) {
    if (pinch && e.touches.length < 2) { pinch = null; pinchEnded = Date.now(); }
  }, { passive: true });
  var pinchEnded = 0;

  // --- overview (mini-map) and the off-screen hint ----------------------------------------

  function overview() {
    var b = box(), mini = $("[data-minimap]"), hint = $("[data-pan-hint]");
    if (!b || !mini) return;
    var wide = b.scrollWidth > b.clientWidth + 2, tall = b.scrollHeight > b.clientHeight + 2;
    var listing = column() && column().classList.contains("as-list");
    mini.hidden = !(wide || tall) || listing;
    if (hint) hint.hidden = mini.hidden;
    if (mini.hidden) return;
    var view = mini.querySelector(".mm-view");
    var w = mini.clientWidth, h = mini.clientHeight;
    view.style.left = (b.scrollLeft / b.scrollWidth * w) + "px";
    view.style.top = (b.scrollTop / b.scrollHeight * h) + "px";
    view.style.width = Math.max(4, b.clientWidth / b.scrollWidth * w) + "px";
    view.style.height = Math.max(4, b.clientHeight / b.scrollHeight * h) + "px";
  }
  document.addEventListener("click", function (e) {
    var mini = e.target.closest && e.target.closest("[data-minimap]");
    var b = box();
    if (!mini || !b) return;
    var r = mini.getBoundingClientRect();
    b.scrollLeft = (e.clientX - r.left) / r.width * b.scrollWidth - b.clientWidth / 2;
    b.scrollTop = (e.clientY - r.top) / r.height * b.scrollHeight - b.clientHeight / 2;
    overview();
  });
  document.addEventListener("scroll", function (e) {
    if (e.target.classList && e.target.classList.contains("map-scroll")) { overview(); hideTip(); }
  }, true);
  window.addEventListener("resize", overview);

  // --- a seat's facts ---------------------------------------------------------------------

  function categories() {
    var found = {};
    document.querySelectorAll(".legend .sw.cat").forEach(function (sw) {
      var code = (sw.className.match(/\bc-([a-z])\b/) || [])[1];
      var li = sw.parentElement, price = li.querySelector("strong");
      if (!code) return;
      found[code] = { name: li.textContent.replace(price ? price.textContent : "", "").trim(),
                      price: price ? price.textContent : "" };
    });
    return found;
  }

  function facts(seat) {
    var code = (seat.className.match(/\bc-([a-z])\b/) || [])[1];
    var cat = categories()[code] || { name: "", price: "" };
    var row = seat.closest(".r").querySelector(".rl");
    var notes = [];
    if (seat.classList.contains("wc")) notes.push(words.wheelchair);
    if (seat.classList.contains("cp")) notes.push(words.companion);
    var mine = seat.classList.contains("me");
    var free = !mine && !seat.hasAttribute("aria-disabled");
    return {
      title: words.row + " " + (row ? row.textContent : "") + ", " + words.seat + " " + (seat.dataset.l || seat.textContent),
      info: [cat.name, cat.price].concat(notes).filter(Boolean).join(" · "),
      state: mine ? words.mine : (free ? "" : stateWords(seat)),
      mine: mine, free: free
    };
  }

  function stateWords(seat) {
    var m = (seat.getAttribute("aria-label") || "").match(/, ([^,]+)$/);
    return m ? m[1] : words.taken;
  }

  // --- the sheet (touch) ------------------------------------------------------------------

  var sheetSeat = null;
  var sheetAsks = false;  // the sheet asks whether the buyer needs this wheelchair space
  var declared = null;    // the seat key whose hold says the buyer needs the wheelchair space

  // A free wheelchair space is held only for a buyer who says they need it (sales/holds.py):
  // every way to it (tap, click, Enter, the list) opens the sheet, which asks.
  function asksFirst(seat) {
    return seat.classList.contains("wc") && !seat.classList.contains("me") && !seat.hasAttribute("aria-disabled");
  }

  function showSheet(seat, by) {
    var sheet = $("#seat-sheet");
    if (!sheet) return;
    var f = facts(seat);
    sheetSeat = seat.id;
    sheetAsks = asksFirst(seat);
    sheet.querySelector(".sheet-title").textContent = f.title;
    sheet.querySelector(".sheet-info").textContent = f.info + (f.state ? " · " + f.state : "");
    var ask = sheet.querySelector(".sheet-ask");
    if (ask) { ask.textContent = words.needIt; ask.hidden = !sheetAsks; }
    var hold = sheet.querySelector("[data-sheet-hold]");
    hold.textContent = f.mine ? words.release : (sheetAsks ? words.holdNeeded : (f.free ? words.hold : words.taken));
    hold.disabled = !f.mine && !f.free;
    sheet.querySelector("[data-sheet-close]").textContent = sheetAsks ? words.notNeeded : words.close;
    sheet.hidden = false;
    placeSheet(sheet, seat, !!by);
    hold.focus({ preventScroll: true });
  }

  // On a touch screen the sheet sits at the bottom (site.css), the page moved up if it would
  // cover the seat tapped; opened by mouse or keyboard (a wheelchair space's question) it sits
  // by the seat, below it or above. Never over the seat.
  function placeSheet(sheet, seat, bySeat) {
    sheet.classList.toggle("by-seat", bySeat);
    if (!bySeat) {
      sheet.style.left = sheet.style.top = "";
      var covered = seat.getBoundingClientRect().bottom + 8 - sheet.getBoundingClientRect().top;
      if (covered > 0) window.scrollBy({ top: covered, behavior: "instant" });
      return;
    }
    var r = seat.getBoundingClientRect();
    var width = document.documentElement.clientWidth;
    var left = Math.max(8, Math.min(r.left + r.width / 2 - sheet.offsetWidth / 2, width - sheet.offsetWidth - 8));
    var top = r.bottom + 8 + sheet.offsetHeight <= window.innerHeight ? r.bottom + 8 : r.top - 8 - sheet.offsetHeight;
    sheet.style.left = (left + window.scrollX) + "px";
    sheet.style.top = (Math.max(4, top) + window.scrollY) + "px";
  }
  function hideSheet() {
    var sheet = $("#seat-sheet");
    if (sheet && !sheet.hidden) sheet.hidden = true;
    sheetSeat = null;
    sheetAsks = false;
  }
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("[data-sheet-close]")) { restoreFocus(); hideSheet(); }
    if (e.target.closest && e.target.closest("[data-sheet-hold]")) {
      var seat = sheetSeat && document.getElementById(sheetSeat);
      var needed = sheetAsks;
      hideSheet();
      if (seat) {
        declared = needed ? seat.value : null;
        bypass = seat.id; seat.focus({ preventScroll: true }); seat.click(); bypass = null;
      }
    }
  });
  // The hold of a wheelchair space the buyer said they need carries the declaration.
  document.addEventListener("htmx:configRequest", function (e) {
    var p = e.detail.parameters;
    if (!declared || !p) return;
    if ((p.get ? p.get("seat") : p.seat) === declared) {
      if (p.set) p.set("wheelchair", "1"); else p.wheelchair = "1";
    }
    declared = null;
  });
  function restoreFocus() {
    var seat = sheetSeat && document.getElementById(sheetSeat);
    if (seat) seat.focus({ preventScroll: true });
  }
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && sheetSeat) { restoreFocus(); hideSheet(); }
    if (e.key === "Escape") hideTip();
  });

  // A touch on a seat: zoom first if it is too small to choose, else its sheet. A mouse click or
  // Enter holds at once, as before (capture: before htmx sees the form's submit).
  document.addEventListener("click", function (e) {
    var seat = e.target.closest && e.target.closest(SEAT);
    if (!seat) return;
    touched(seat);
    if (bypass === seat.id) return;
    var touch = (e.pointerType || lastPointer) === "touch";
    if (!touch && !asksFirst(seat)) return;
    e.preventDefault();
    e.stopPropagation();
    if (!touch) { hideTip(); showSheet(seat, seat); return; }  // a wheelchair space: the sheet asks first
    if (Date.now() - pinchEnded < 300) return;  // the end of a pinch is not a tap
    var size = seat.getBoundingClientRect().width;
    if (size < MIN_TARGET) {
      var r = seat.getBoundingClientRect();
      setZoom(zoomOf() * ZOOM_TO / size, r.left + r.width / 2, r.top + r.height / 2);
      announce(words.zoomFirst);
      return;
    }
    showSheet(seat);
  }, true);

  // --- the tooltip (mouse hover, keyboard focus) --------------------------------------------

  var lastPointer = "";
  document.addEventListener("pointerdown", function (e) { lastPointer = e.pointerType; }, true);
  document.addEventListener("keydown", function () { lastPointer = "keyboard"; }, true);

  function showTip(seat) {
    var tip = $("#seat-tip");
    if (!tip || lastPointer === "touch") return;
    var f = facts(seat);
    tip.textContent = f.title + " · " + f.info + (f.state ? " · " + f.state : "");
    tip.hidden = false;
    var r = seat.getBoundingClientRect();
    var left = Math.max(4, Math.min(r.left + r.width / 2 - tip.offsetWidth / 2, document.documentElement.clientWidth - tip.offsetWidth - 4));
    var top = r.top - tip.offsetHeight - 6;
    if (top < 4) top = r.bottom + 6;
    tip.style.left = (left + window.scrollX) + "px";
    tip.style.top = (top + window.scrollY) + "px";
  }
  function hideTip() { var tip = $("#seat-tip"); if (tip) tip.hidden = true; }
  document.addEventListener("mouseover", function (e) {
    var seat = e.target.closest && e.target.closest(SEAT);
    if (seat && lastPointer !== "touch") showTip(seat);
  });
  document.addEventListener("mouseout", function (e) {
    if (e.target.closest && e.target.closest(SEAT)) hideTip();
  });
  document.addEventListener("focusin", function (e) {
    if (e.target.matches && e.target.matches(SEAT)) showTip(e.target); else hideTip();
  });
  document.addEventListener("focusout", function (e) {
    if (e.target.matches && e.target.matches(SEAT)) hideTip();
  });

  // --- notices next to what was touched ------------------------------------------------------

  var lastTouch = null;  // {el: id or element, at}
  function touched(el) { lastTouch = { id: el.id, el: el, at: Date.now() }; }
  document.addEventListener("submit", function (e) { touched(e.submitter || e.target); }, true);

  function announce(text) {
    var area = document.getElementById("notice");
    if (!area) return;
    var p = document.createElement("p");
    p.className = "msg msg-info";
    p.textContent = text;
    area.replaceChildren(p);
  }

  function popNotice() {
    var old = $(".notice-pop");
    if (old) old.remove();
    var area = document.getElementById("notice");
    var msg = area && area.querySelector(".msg");
    if (!msg) return;
    var target = lastTouch && Date.now() - lastTouch.at < 8000 &&
      ((lastTouch.id && document.getElementById(lastTouch.id)) || lastTouch.el);
    if (!target || !target.isConnected || !target.getClientRects().length || msg.querySelector("a, button, input")) {
      // nothing touched to show it by, or a way on (a link) in it: the notice area above the map shows it
      area.classList.add("shown");
      return;
    }
    // best available answers in its own panel, right under the form the buyer used
    if (target.closest(".best, #best-result") && $("#best-result") && $("#best-result").children.length) return;
    var pop = msg.cloneNode(true);
    pop.classList.add("notice-pop");
    pop.setAttribute("aria-hidden", "true");  // the notice area says it to screen readers
    document.body.appendChild(pop);
    var r = target.getBoundingClientRect();
    var width = document.documentElement.clientWidth;
    var bar = $("#cart-bar");
    var bottom = window.innerHeight - (bar && !bar.hidden && bar.offsetHeight ? bar.offsetHeight : 0);
    var left = Math.max(8, Math.min(r.left, width - pop.offsetWidth - 8));
    var top = r.bottom + 8 + pop.offsetHeight <= bottom ? r.bottom + 8 : r.top - 8 - pop.offsetHeight;  // below, else above
    pop.style.left = (left + window.scrollX) + "px";
    pop.style.top = (Math.max(4, top) + window.scrollY) + "px";
    setTimeout(function () { pop.remove(); }, 6000);
  }
  document.addEventListener("pointerdown", function () { var pop = $(".notice-pop"); if (pop) pop.remove(); });


  // --- the list of seats (screen readers, keyboards) -----------------------------------------

  function listing() { var c = column(); return c && c.classList.contains("as-list"); }

  function buildList() {
    var list = $("#seat-list");
    if (!list || !listing()) return;
    var focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.dataset.for : null;
    var cats = categories();
    var out = document.createDocumentFragment();
    var any = false;
    document.querySelectorAll("#seatmap .r").forEach(function (row) {
      var label = row.querySelector(".rl");
      var groups = {};
      var order = [];
      row.querySelectorAll("button.s").forEach(function (seat) {
        var mine = seat.classList.contains("me");
        if (seat.hasAttribute("aria-disabled") && !mine) return;
        var code = (seat.className.match(/\bc-([a-z])\b/) || [])[1];
        var key = mine ? "mine" : code;
        if (!groups[key]) { groups[key] = []; order.push(key); }
        groups[key].push(seat);
      });
      if (!order.length) return;
      any = true;
      var h = document.createElement("h3");
      h.textContent = words.listRow.replace("%(row)s", label ? label.textContent : "");
      out.appendChild(h);
      order.forEach(function (key) {
        var p = document.createElement("p");
        var cat = cats[key];
        p.className = "small";
        p.textContent = key === "mine" ? words.mine : (cat ? cat.name + " · " + cat.price : "");
        out.appendChild(p);
        var ul = document.createElement("ul");
        groups[key].forEach(function (seat) {
          var li = document.createElement("li");
          var b = document.createElement("button");
          var f = facts(seat);
          b.type = "button";
          b.className = "btn btn-quiet btn-small";
          b.dataset.for = seat.id;
          b.textContent = seat.dataset.l || seat.textContent;
          b.setAttribute("aria-label", (key === "mine" ? words.release : words.hold) + ": " + f.title + ", " + f.info);
          li.appendChild(b);
          ul.appendChild(li);
        });
        out.appendChild(ul);
      });
    });
    if (!any) {
      var none = document.createElement("p");
      none.textContent = words.listEmpty;
      out.appendChild(none);
    }
    list.replaceChildren(out);
    var again = focused && list.querySelector('[data-for="' + focused + '"]');
    if (again) again.focus();
    else if (focused && list.querySelector("button")) list.querySelector("button").focus();
  }

  function setListing(on) {
    var c = column(), list = $("#seat-list"), button = $("[data-view-switch]");
    if (!c || !list || !button) return;
    c.classList.toggle("as-list", on);
    list.hidden = !on;
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.textContent = on ? words.listOn : words.listOff;
    try { window.localStorage.setItem("seatView", on ? "list" : "map"); } catch (err) { /* private mode */ }
    if (on) buildList();
    overview();
  }

  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("[data-view-switch]")) { setListing(!listing()); return; }
    var b = e.target.closest && e.target.closest("#seat-list button[data-for]");
    var seat = b && document.getElementById(b.dataset.for);
    if (!seat) return;
    touched(b);
    if (asksFirst(seat)) { showSheet(seat, lastPointer === "touch" ? null : b); return; }  // it asks first
    bypass = seat.id;
    seat.click();
    bypass = null;
  });

  var rebuild = null;
  function soon() { if (listing()) { clearTimeout(rebuild); rebuild = setTimeout(buildList, 50); } }
  document.addEventListener("seatmap:changed", soon);

  // --- after every swap and at the start ----------------------------------------------------

  // A new notice (a refusal, 400/403/429, is the answer's target; others come out of band) pops
  // up once htmx has settled it (settling puts the swapped element's classes back).
  var noticeFresh = false;
  function freshNotice() {
    noticeFresh = true;
    setTimeout(function () { if (noticeFresh) { noticeFresh = false; popNotice(); } }, 60);
  }
  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "notice") freshNotice();
  });
  document.addEventListener("htmx:oobAfterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "notice") freshNotice();
  });
  // Best available's split offer is shown on the map too, before the buyer takes it: its seats
  // (the offer's "accept" keys, "row:col") are outlined until the offer goes; marked again after
  // every swap or pushed change, which may have replaced those seats' buttons.
  function markOffer() {
    var marked = document.querySelectorAll("#seatmap .s.of");
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove("of");
    var accept = document.querySelector("#best-result input[name=accept]");
    if (!accept || !accept.value) return;
    accept.value.split(",").forEach(function (key) {
      var seat = document.getElementById("s" + key.replace(":", "-"));
      if (seat && !seat.classList.contains("me")) seat.classList.add("of");
    });
  }
  document.addEventListener("seatmap:changed", markOffer);

  document.addEventListener("htmx:afterSettle", function () {
    hideTip();  // its seat may have been swapped for a new one
    overview();
    soon();
    markOffer();
    if (sheetSeat && !document.getElementById(sheetSeat)) hideSheet();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var template = document.getElementById("map-words");
    if (!template) return;
    // Notices pop up by what the buyer touched; the notice area above the map stays in the page
    // only to announce them (aria-live), unless nothing was touched (site.css).
    document.documentElement.classList.add("map-js");
    var d = template.dataset;
    words = { hold: d.hold, release: d.release, taken: d.taken, row: d.row, seat: d.seat,
              wheelchair: d.wheelchair, companion: d.companion, mine: d.mine, zoomFirst: d.zoomFirst,
              listOn: d.listOn, listOff: d.listOff, listEmpty: d.listEmpty, listRow: d.listRow,
              needIt: d.needIt, holdNeeded: d.holdNeeded, notNeeded: d.notNeeded, close: d.close };
    var button = $("[data-view-switch]");
    if (button) button.hidden = false;
    var saved = null;
    try { saved = window.localStorage.getItem("seatView"); } catch (err) { /* private mode */ }
    if (saved === "list") setListing(true);
    overview();
  });
})();
