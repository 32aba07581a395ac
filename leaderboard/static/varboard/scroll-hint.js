// Every box that scrolls sideways (a chart or a table wider than the screen) and does overflow now gets a
// one-line hint before it: a touch screen shows no scroll bar, so a cut-off table looked complete (found
// by a new user at 390 px). Marked boxes: data-scroll-hint="shown"; the hint: p.scroll-hint.
(function () {
  "use strict";
  var SELECTOR = ".chart-scroll, .table-wrap, .table.pairs, .preview-table-wrap";

  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (box) {
      var overflows = box.getClientRects().length > 0 && box.scrollWidth - box.clientWidth > 2;
      var hint = box.previousElementSibling;
      var has = hint && hint.classList.contains("scroll-hint");
      if (overflows && !has) {
        hint = document.createElement("p");
        hint.className = "scroll-hint";
        hint.textContent = "Wider than the screen: swipe sideways for the rest →";
        box.parentNode.insertBefore(hint, box);
      } else if (!overflows && has) {
        hint.remove();
      }
      box.setAttribute("data-scroll-hint", overflows ? "shown" : "none");
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark);
  else mark();
  window.addEventListener("resize", mark);
  document.addEventListener("toggle", mark, true); // a <details> opened: the boxes inside it now have a width
})();
