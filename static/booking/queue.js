/* The waiting room (templates/booking/queue.html). The page works without this file: it then
   reloads itself every 15 seconds (noscript refresh). With it:
   - the countdown to the opening or the sale ticks every second, from the seconds the server
     computed (its clock, not this one's), and asks the server once it reaches zero (spread over
     a few seconds, so the whole room does not ask at the same moment);
   - a poll that failed (network, 5xx) is tried again after a while: htmx would otherwise stop,
     since the next poll is started by the panel the answer brings;
   - the panel is pushed (Server-Sent Events from /queue/<id>/live/, booking/presale/queue_push.py): while
     the stream is heard the page sends no polls at all. No EventSource, a 204 (push off, WSGI) or
     nothing heard within HEARD_MS (a proxy buffering the stream): the page keeps polling. A stream
     that drops: one poll at once and polling from there, until the stream (which EventSource
     reconnects by itself) is heard again. */
(function () {
  "use strict";

  function format(left) {
    var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    var mm = h ? String(m).padStart(2, "0") : String(m);
    return (h ? h + ":" : "") + mm + ":" + String(s).padStart(2, "0");
  }

  function tick() {
    var now = performance.now();
    document.querySelectorAll(".wr-countdown[data-seconds]").forEach(function (el) {
      if (!el.dataset.deadline) el.dataset.deadline = String(now + Number(el.dataset.seconds) * 1000);
      var left = Math.max(0, Math.ceil((Number(el.dataset.deadline) - now) / 1000));
      el.textContent = format(left);
      if (left === 0 && !el.dataset.done) {
        el.dataset.done = "1";
        var panel = document.getElementById("wr-status");
        if (panel && window.htmx) {
          setTimeout(function () { window.htmx.trigger(panel, "wr-now"); }, Math.random() * 3000);
        }
      }
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSwap", tick);

  var HEARD_MS = 10000;
  var live = { on: false, source: null, letThrough: false };

  function pollNow() {
    var panel = document.getElementById("wr-status");
    if (panel && window.htmx) window.htmx.trigger(panel, "wr-now");
  }

  function showPanel(html) {
    var panel = document.getElementById("wr-status");
    if (!panel) return;
    panel.outerHTML = html;
    var fresh = document.getElementById("wr-status");
    if (fresh && window.htmx) window.htmx.process(fresh);
    tick();
  }

  function connect() {
    var box = document.querySelector(".wr-layout[data-live]");
    if (!box || !window.EventSource || live.source) return;
    var source = live.source = new EventSource(box.dataset.live);
    var heard = false;
    setTimeout(function () {
      if (!heard) { source.close(); live.source = null; live.on = false; }  // buffered somewhere: keep polling
    }, HEARD_MS);
    source.addEventListener("status", function (e) {
      heard = true;
      live.on = true;
      showPanel(JSON.parse(e.data).html);
    });
    source.addEventListener("go", function (e) {  // the buyer's turn: the queue page lets them in
      source.close();
      window.location.assign(JSON.parse(e.data).url);
    });
    source.addEventListener("ticket", function () {  // one poll, whose answer keeps the place in a cookie
      live.letThrough = true;
      pollNow();
    });
    source.onerror = function () {
      if (live.on) { live.on = false; pollNow(); }  // dropped: poll until the stream is heard again
    };
  }
  document.addEventListener("DOMContentLoaded", connect);

  // While the stream is heard the panel's own polls are not sent (the pushed panel brings the same).
  document.addEventListener("htmx:beforeRequest", function (e) {
    var panel = document.getElementById("wr-status");
    if (!live.on || !panel || e.detail.elt !== panel) return;
    if (live.letThrough) { live.letThrough = false; return; }
    e.preventDefault();
  });

  document.addEventListener("htmx:afterRequest", function (e) {
    var panel = document.getElementById("wr-status");
    if (!panel || e.detail.elt !== panel || e.detail.successful) return;
    var again = Number(panel.dataset.nextPoll || 5) * 1000;
    setTimeout(function () {
      if (document.getElementById("wr-status") === panel) window.htmx.trigger(panel, "wr-now");
    }, Math.max(3000, again));
  });
})();
