// The inquiry form: focus the error summary, and solve the spam check in the background.
// The form carries data-challenge-url, data-challenge-ttl (seconds) and
// data-worker-url; the solution goes into the hidden field "altcha" as the
// ALTCHA payload (base64 JSON of the challenge and its solution). Nothing is
// shown or announced unless the check fails: then #spam-check (a status
// region) gets its data-failed text. Without it the form still sends; the
// inquiry is then filed as spam, never refused.
(function () {
  "use strict";

  var SUBMIT_WAIT_MS = 15000; // how long "Send" waits for a solution still being found
  var REFRESH_MARGIN_S = 60; // fetch a new challenge this long before the old one expires

  var summary = document.querySelector("[data-summary]");
  if (summary) { summary.focus(); }
  document.querySelectorAll(".error-list a[href^='#']").forEach(function (link) {
    link.addEventListener("click", function (event) {
      var field = document.getElementById(link.getAttribute("href").slice(1));
      if (field) { event.preventDefault(); field.focus(); }
    });
  });

  var form = document.querySelector("form[data-challenge-url]");
  if (!form) { return; }
  var field = form.querySelector("input[name='altcha']");
  var status = document.getElementById("spam-check");
  var worker = null;
  var timer = null;
  var done = null; // resolves when the current attempt has a solution (or has failed)
  var sending = false;

  function fail() {
    if (status) { status.textContent = status.dataset.failed; }
  }

  function solveIn(challenge) {
    return new Promise(function (resolve, reject) {
      worker = new Worker(form.dataset.workerUrl);
      worker.onmessage = function (event) {
        worker.terminate();
        if (event.data.error) { reject(new Error(event.data.error)); return; }
        resolve(event.data);
      };
      worker.onerror = function (event) { worker.terminate(); reject(new Error(event.message)); };
      worker.postMessage(challenge.parameters);
    });
  }

  function start() {
    if (worker) { worker.terminate(); }
    clearTimeout(timer);
    field.value = "";
    if (!window.Worker || !window.crypto || !window.crypto.subtle) { fail(); done = Promise.resolve(); return; }
    var ttl = Number(form.dataset.challengeTtl);
    timer = setTimeout(start, Math.max(ttl - REFRESH_MARGIN_S, ttl / 2) * 1000);
    done = fetch(form.dataset.challengeUrl, { cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("challenge: HTTP " + response.status); }
        return response.json();
      })
      .then(function (challenge) {
        return solveIn(challenge).then(function (solution) {
          field.value = btoa(JSON.stringify({ challenge: challenge, solution: solution }));
          form.dataset.spamCheck = "solved";
        });
      })
      .catch(fail);
  }

  form.addEventListener("submit", function (event) {
    if (field.value || sending) { return; }
    event.preventDefault();
    sending = true;
    var waited = new Promise(function (resolve) { setTimeout(resolve, SUBMIT_WAIT_MS); });
    Promise.race([done, waited]).then(function () { form.submit(); });
  });

  // Back to a page kept in the browser's cache: its solution may have been used already.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) { sending = false; start(); }
  });

  start();
})();
