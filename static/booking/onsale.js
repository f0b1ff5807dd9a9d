// A session page before its on-sale time: count down to the second by the server's clock (the
// page carries the server's time; the difference to this device's clock is kept), then make the
// read-only map clickable without a reload. The server's hold refuses anything sent early anyway.
(function () {
  "use strict";
  // Django's JavaScript catalog (/i18n/js/, loaded first) translates; English without it.
  var gettext = window.gettext || String;
  var ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };
  var box = document.getElementById("sale-countdown");
  if (!box) return;
  var opens = Number(box.dataset.opensMs);
  // The server's clock minus ours, taken when the page's answer began to arrive (not when this
  // deferred script runs, which on a busy device can be a second later and would unlock late).
  // Never early: the server wrote its time before we received it. Only while the page itself is
  // still loading (a deferred script): a page swapped in later (htmx) came after the navigation.
  var loading = document.readyState !== "complete";
  var nav = loading && window.performance && performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
  var receivedAt = nav && nav.responseStart > 0 ? performance.timeOrigin + nav.responseStart : Date.now();
  if (!(receivedAt <= Date.now())) receivedAt = Date.now();
  var offset = Number(box.dataset.serverNowMs) - receivedAt;
  var left = box.querySelector(".countdown-left");
  var open = false;

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function format(ms) {
    var s = Math.ceil(ms / 1000);
    var days = Math.floor(s / 86400);
    s -= days * 86400;
    var h = Math.floor(s / 3600);
    s -= h * 3600;
    var m = Math.floor(s / 60);
    s -= m * 60;
    var dayText = days ? ngettext("%(count)s day", "%(count)s days", days).replace("%(count)s", days) + ", " : "";
    return dayText + pad(h) + ":" + pad(m) + ":" + pad(s);
  }

  function unlock() {
    // Also a map the live refresh swapped in that was built just before the second.
    document.querySelectorAll("fieldset.map-lock[disabled]").forEach(function (f) { f.disabled = false; });
    document.querySelectorAll("[data-onsale-show][hidden]").forEach(function (e) { e.hidden = false; });
    document.querySelectorAll(".sale-pending").forEach(function (e) { e.hidden = true; });
  }

  function tick() {
    var ms = opens - (Date.now() + offset);
    if (ms > 0) {
      left.textContent = format(ms);
      setTimeout(tick, Math.min(200, ms));  // the last wait ends at the second itself
      return;
    }
    setTimeout(tick, 200);  // a map swapped in by the live refresh is unlocked too
    if (!open) {
      open = true;
      box.classList.add("countdown-open");
      box.textContent = gettext("On sale now: choose your seats.");
    }
    unlock();
  }

  tick();
})();
