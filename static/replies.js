// An inquiry's page: a reply shown "Queued" becomes "Sent" (or "Retrying", "Failed") in place, without a
// reload, once the outbox has sent it. Without JavaScript the page shows the state as of its loading.
//
// The states come from GET <data-reply-states> (app/admin/replies.py), in the page's language. It is
// asked only while a reply waits, less and less often, and never after STOP_AFTER_MS: a reply that
// waits longer is retried by the outbox for hours, and a reload shows it then.
(function () {
  "use strict";
  var list = document.querySelector("[data-reply-states]");
  if (!list || !window.fetch) { return; }
  var url = list.getAttribute("data-reply-states");
  var WAITING = ["queued", "retrying"];
  var FIRST_DELAY_MS = 1000;
  var MAX_DELAY_MS = 15000;
  var STOP_AFTER_MS = 5 * 60 * 1000;
  var started = Date.now();
  var delay = FIRST_DELAY_MS;

  function waiting() {
    var badges = list.querySelectorAll(".reply-state[data-state]");
    return Array.prototype.some.call(badges, function (badge) {
      return WAITING.indexOf(badge.getAttribute("data-state")) !== -1;
    });
  }

  if (!waiting()) { return; }

  // Announced by screen readers when a state changes; the badges themselves change silently.
  var live = document.createElement("p");
  live.className = "visually-hidden";
  live.id = "reply-states-live";
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  list.parentNode.insertBefore(live, list.nextSibling);

  function showError(item, text) {
    var error = item.querySelector(".reply-error");
    if (!text) {
      if (error) { error.parentNode.removeChild(error); }
      return;
    }
    if (!error) {
      error = document.createElement("p");
      error.className = "hint reply-error";
      var meta = item.querySelector(".reply-meta");
      item.insertBefore(error, meta ? meta.nextSibling : item.firstChild);
    }
    error.textContent = text;
  }

  // Show one reply's state; true when it changed.
  function apply(reply) {
    var item = document.getElementById("reply-" + reply.id);
    var badge = item && item.querySelector(".reply-state");
    if (!badge || badge.getAttribute("data-state") === reply.state) { return false; }
    badge.setAttribute("data-state", reply.state);
    badge.textContent = reply.words;
    badge.classList.toggle("ok", reply.state === "sent");
    badge.classList.toggle("error", reply.state === "failed");
    showError(item, reply.error);
    return true;
  }

  function update(data) {
    var said = [];
    data.replies.forEach(function (reply) {
      if (apply(reply)) { said.push(reply.announce); }
    });
    if (said.length) { live.textContent = said.join(" "); }
    if (data.waiting && waiting()) { later(); }
  }

  function ask() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        // Logged out, the inquiry gone, the server down: stop; the page keeps what it shows.
        return response.ok ? response.json() : null;
      })
      .then(function (data) { if (data) { update(data); } })
      .catch(function () { /* the network failed: stop asking, as above */ });
  }

  function later() {
    if (Date.now() - started + delay > STOP_AFTER_MS) { return; }
    window.setTimeout(ask, delay);
    delay = Math.min(delay * 2, MAX_DELAY_MS);
  }

  later();
})();
