// On a phone a wide staff table scrolls inside its own box (admin.css); a keyboard user reaches
// such a box only if it can take focus, so every table that scrolls gets tabindex="0".
(function () {
  function markScrollingTables() {
    document.querySelectorAll("#content table").forEach(function (table) {
      var scrolls = table.scrollWidth > table.clientWidth + 1;
      if (scrolls && !table.hasAttribute("tabindex")) {
        table.setAttribute("tabindex", "0");
        table.dataset.scrollRegion = "1";
      } else if (!scrolls && table.dataset.scrollRegion) {
        table.removeAttribute("tabindex");
        delete table.dataset.scrollRegion;
      }
    });
  }
  document.addEventListener("DOMContentLoaded", markScrollingTables);
  window.addEventListener("resize", markScrollingTables);
  document.addEventListener("htmx:afterSettle", markScrollingTables);
})();
