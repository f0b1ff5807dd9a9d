/* The waiting room (templates/booking/queue.html). The page works without this file: it then
   reloads itself every 15 seconds (noscript refresh). With it:
   - the countdown to the opening or the sale ticks every second, from the seconds the server
     computed (its clock, not this one's), and asks the server once it reaches zero (spread over
     a few seconds, so the whole room does not ask at the same moment);
   - a poll that failed (network, 5xx) is tried again after a while: htmx would otherwise stop,
     since the next poll is started by the panel the answer brings. */
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

  document.addEventListener("htmx:afterRequest", function (e) {
    var panel = document.getElementById("wr-status");
    if (!panel || e.detail.elt !== panel || e.detail.successful) return;
    var again = Number(panel.dataset.nextPoll || 5) * 1000;
    setTimeout(function () {
      if (document.getElementById("wr-status") === panel) window.htmx.trigger(panel, "wr-now");
    }, Math.max(3000, again));
  });
})();
