/* The exchange's seat picker stays live: seats other buyers hold or buy meanwhile can no longer
   be ticked, seats given back can. Changes come by push (the seat map's stream, /sessions/<id>/live/,
   as on the buyer's map) or, without it, by looking at the page again every few seconds; the
   buyer's ticks and focus stay where they are. The server refuses a seat taken anyway. */
(function () {
  "use strict";
  var POLL_MS = 4000;

  function map() { return document.getElementById("pick-map"); }

  function setSeat(key, state) {
    var box = map() && map().querySelector('input[name="seat"][value="' + key + '"]');
    if (!box) return;
    var free = state === 0;
    box.disabled = !free;
    if (!free) box.checked = false;
    box.parentElement.classList.toggle("taken", !free);
  }

  function refetch() {
    var here = map();
    if (!here) return;
    fetch(here.dataset.refresh, { credentials: "same-origin", headers: { "X-Picker": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("pick-map");
        if (!fresh) return;
        fresh.querySelectorAll('input[name="seat"]').forEach(function (box) {
          setSeat(box.value, box.disabled ? 2 : 0);
        });
        here.dataset.version = fresh.dataset.version;
      })
      .catch(function () {});
  }

  function start() {
    var here = map();
    if (!here) return;
    var pushed = false;
    if (window.EventSource && here.dataset.live) {
      var source = new EventSource(here.dataset.live);
      source.addEventListener("hello", function (e) {
        pushed = true;
        if (JSON.parse(e.data).v > Number(here.dataset.version)) refetch();
      });
      source.addEventListener("seats", function (e) {
        var msg = JSON.parse(e.data);
        var shown = Number(here.dataset.version);
        if (msg.reload || msg.v !== shown + 1) { if (msg.v === null || msg.v > shown) refetch(); return; }
        Object.keys(msg.seats).forEach(function (key) { setSeat(key, msg.seats[key]); });
        here.dataset.version = String(msg.v);
      });
      source.addEventListener("error", function () { pushed = false; });
    }
    setInterval(function () { if (!pushed && !document.hidden) refetch(); }, POLL_MS);
  }
  document.addEventListener("DOMContentLoaded", start);
})();
