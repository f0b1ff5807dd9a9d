/* The staff live seat map: refetched when the buyers' stream (/sessions/<id>/live/) pushes a change,
   at most every REFRESH_GAP_MS; the 5 s poll is dropped while the stream is live and is the fallback
   (no EventSource, a 204: no change streams on the server, or no event soon after opening). */
(function () {
  "use strict";
  var REFRESH_GAP_MS = 300;
  var NO_EVENT_MS = 5000;
  var on = false, forced = false, timer = null;

  function refresh() {
    timer = null;
    var box = document.getElementById("live-map");
    if (!box || !window.htmx) return;
    forced = true;
    window.htmx.trigger(box, "seats-changed");
  }

  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt;
    if (!elt || elt.id !== "live-map") return;
    if (forced) { forced = false; return; }
    if (on) e.preventDefault();  // pushed: the periodic poll is not needed
  });

  // The map is swapped whole on every refresh: keep the staff member's place in a wide hall.
  var kept = null;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var scroller = document.querySelector(".live-map-scroll");
    if (scroller && e.detail.target && e.detail.target.id === "live-map") {
      kept = { left: scroller.scrollLeft, top: window.scrollY };
    }
  });
  document.addEventListener("htmx:afterSwap", function () {
    var scroller = document.querySelector(".live-map-scroll");
    if (scroller && kept) { scroller.scrollLeft = kept.left; kept = null; }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var box = document.getElementById("live-map");
    if (!box || !box.dataset.live || !window.EventSource) return;
    var source = new EventSource(box.dataset.live);
    var heard = false;
    var silent = setTimeout(function () { if (!heard) { source.close(); on = false; } }, NO_EVENT_MS);
    source.addEventListener("hello", function () {
      if (heard) refresh();  // reconnected: changes while away are not known, fetch once
      heard = true;
      clearTimeout(silent);
      on = true;
    });
    source.addEventListener("seats", function () { if (!timer) timer = setTimeout(refresh, REFRESH_GAP_MS); });
    source.addEventListener("error", function () { on = false; });
  });
})();
