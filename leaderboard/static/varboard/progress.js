// Submission page: poll the API every 2 s while the submission is queued or running; move the
// progress bar and update each run's row as runs finish (recipes run one task per run), and
// reload the page once the submission has ended (logs and errors are rendered server-side).
(function () {
  "use strict";

  // Half to even, as numpy's rint and Python's round of a float.
  function rint(x) {
    var r = Math.round(x);
    return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  }

  // A figure rounded as the pages round it (leaderboard/web/numbers.py, evaluation.boards.shown_score): half-way,
  // read to 9 decimals of value * 10^digits, to the even digit; toFixed alone rounds the binary value, so a run's
  // score drawn by the server as 0.4245 became 0.4244 when this script updated its row.
  function shown(value, digits) {
    var scale = Math.pow(10, digits), cleaning = 1e9, scaled = value * scale;
    if (!isFinite(scaled) || Math.abs(scaled) >= Math.pow(2, 52)) return value;
    return rint(rint(scaled * cleaning) / cleaning) / scale + 0;
  }

  // A run's score as the server draws it (leaderboard.web.numbers.number): scientific notation, with a two-digit
  // exponent, outside [1e-4, 1e9) (toFixed printed all the digits of 1e18), else shown at 4 decimals.
  function score(value) {
    if (value === null || value === undefined) return "—";
    if (isFinite(value) && value !== 0 && !(Math.abs(value) >= 1e-4 && Math.abs(value) < 1e9)) {
      return value.toExponential(4).replace(/e([+-])(\d)$/, "e$10$2");
    }
    return shown(value, 4).toFixed(4);
  }
  window.varboardScore = score;  // for the browser test that holds it to the pages' rule

  var card = document.querySelector("[data-progress-url]");
  if (!card) return;
  var url = card.getAttribute("data-progress-url");
  var fill = card.querySelector(".bar-fill");
  var bar = card.querySelector(".bar");
  var text = card.querySelector("[data-progress-text]");
  var status = card.querySelector("[data-status]");
  var ACTIVE = { queued: true, running: true };

  function label(value) {
    return value.charAt(0).toUpperCase() + value.slice(1);
  }

  function number(value, digits, suffix) {
    return value === null || value === undefined ? "—" : shown(value, digits).toFixed(digits) + (suffix || "");
  }

  function updateRuns(runs) {
    (runs || []).forEach(function (run) {
      var row = document.querySelector('tr[data-run="' + run.index + '"]');
      if (!row) return;
      var cell = row.querySelector("[data-run-status]");
      if (cell) {
        cell.textContent = label(run.status);
        cell.className = "status status-" + run.status;
      }
      var fields = { "[data-run-test]": score(run.test_score), "[data-run-valid]": score(run.valid_score),
                     "[data-run-duration]": number(run.duration_s, 2, " s"), "[data-run-device]": run.device || "—" };
      Object.keys(fields).forEach(function (selector) {
        var target = row.querySelector(selector);
        if (target) target.textContent = fields[selector];
      });
    });
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) return setTimeout(poll, 2000);
        var p = data.progress;
        fill.style.width = (100 * Math.min(p.fraction, 1)).toFixed(1) + "%";
        bar.setAttribute("aria-valuenow", p.finished);
        text.textContent = p.finished + " / " + p.expected + " run" + (p.expected === 1 ? "" : "s") +
          " finished, " + p.succeeded + " succeeded";
        status.textContent = label(data.status);
        status.className = "status status-" + data.status;
        updateRuns(data.runs);
        if (ACTIVE[data.status]) setTimeout(poll, 2000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
