/* Small progressive enhancements on top of htmx. Every page works without this file. */
(function () {
  "use strict";

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
    } else if ((status === 400 || status === 429) && e.detail.xhr.responseText.indexOf('id="notice"') !== -1) {
      // Bad input on a seat action comes back as a message: show it, keep the map.
      e.detail.shouldSwap = true;
      e.detail.isError = false;
      e.detail.target = document.getElementById("notice");
      e.detail.swapOverride = "outerHTML";
    } else if (status >= 400) {
      showNotice(status === 404 ? "That is no longer available. Please reload the page." :
        "Something went wrong. Please try again.");
    }
  });

  // A seat click answers with the changed seats only; the map shown now includes that version,
  // so a refresh that left before the click must not bring the older map back.
  function noteSeatChange(xhr) {
    var version = xhr.getResponseHeader("X-Seatmap-Version");
    var shown = document.getElementById("seatmap");
    if (version && shown && Number(version) > Number(shown.dataset.version)) shown.dataset.version = version;
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
    showNotice("We could not reach the box office. Check your connection; we keep trying.");
  });

  function showNotice(text) {
    var area = document.getElementById("notice");
    if (!area) return;
    var p = document.createElement("p");
    p.className = "msg msg-error";
    p.textContent = text;
    area.replaceChildren(p);
  }

  // Hold countdown: starts from the seconds the server computed (its clock, not this one's).
  function tick() {
    var now = performance.now();
    document.querySelectorAll(".countdown[data-seconds]").forEach(function (el) {
      if (!el.dataset.deadline) el.dataset.deadline = String(now + Number(el.dataset.seconds) * 1000);
      var left = Math.max(0, Math.round((Number(el.dataset.deadline) - now) / 1000));
      var out = el.querySelector(".countdown-time");
      if (out) out.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      el.classList.toggle("countdown-urgent", left <= 60);
      if (left === 0 && !el.dataset.done) {
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

  // Zoom for big halls: the seat size follows the available width; these buttons scale it.
  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-zoom]");
    if (!button) return;
    var column = button.closest(".map-column");
    var zoom = Number(column.style.getPropertyValue("--zoom") || 1);
    zoom = button.dataset.zoom === "in" ? Math.min(zoom * 1.25, 3) : Math.max(zoom / 1.25, 0.5);
    column.style.setProperty("--zoom", zoom.toFixed(3));
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".zoom[hidden]").forEach(function (el) { el.hidden = false; });
  });
})();
