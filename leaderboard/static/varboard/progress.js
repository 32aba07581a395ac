// Submission page: poll the API every 2 s while the submission is queued or running;
// move the progress bar, and reload the page once the submission has ended.
(function () {
  "use strict";
  var card = document.querySelector("[data-progress-url]");
  if (!card) return;
  var url = card.getAttribute("data-progress-url");
  var fill = card.querySelector(".bar-fill");
  var bar = card.querySelector(".bar");
  var text = card.querySelector("[data-progress-text]");
  var status = card.querySelector("[data-status]");
  var ACTIVE = { queued: true, running: true };

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) return setTimeout(poll, 2000);
        var p = data.progress;
        fill.style.width = (100 * Math.min(p.fraction, 1)).toFixed(1) + "%";
        bar.setAttribute("aria-valuenow", p.finished);
        text.textContent = p.finished + " / " + p.expected + " runs finished, " + p.succeeded + " succeeded";
        status.textContent = data.status.charAt(0).toUpperCase() + data.status.slice(1);
        status.className = "status status-" + data.status;
        if (ACTIVE[data.status]) setTimeout(poll, 2000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
