// A Sundown form on another site: <script src="https://INBOX/embed.js" data-form="SLUG" defer></script>.
// Enhances a <form> on the page that posts to INBOX/f/SLUG (the block the form's page offers, rendered from the
// same field descriptions as here: app/forms/embed.py), or renders the form into
// <div data-sundown-form="SLUG">, or right after the script. It solves the spam check while the
// visitor types, sends with fetch (CORS, no credentials), shows errors next to their fields and a
// thank-you in place, in the visitor's language (the server's answers). No cookie, no third party,
// no inline style or script: the host page themes it with embed.css's custom properties, or its own.
(function () {
  "use strict";

  var script = document.currentScript || document.querySelector("script[data-form][src$='/embed.js']");
  if (!script || !window.fetch || !window.crypto || !window.crypto.subtle) { return; }
  var slug = script.dataset.form;
  var base = new URL(script.src).origin;
  var SUBMIT_WAIT_MS = 15000;
  var HASHES = { "PBKDF2/SHA-256": "SHA-256", "PBKDF2/SHA-384": "SHA-384", "PBKDF2/SHA-512": "SHA-512" };

  function make(tag, attributes, text) {
    var element = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) {
      if (attributes[name] !== null && attributes[name] !== undefined && attributes[name] !== false) {
        element.setAttribute(name, attributes[name] === true ? "" : attributes[name]);
      }
    });
    if (text) { element.textContent = text; }
    return element;
  }

  function fromHex(hex) {
    var bytes = new Uint8Array(hex.length / 2);
    for (var i = 0; i < bytes.length; i++) { bytes[i] = parseInt(hex.substr(i * 2, 2), 16); }
    return bytes;
  }

  function toHex(buffer) {
    return Array.from(new Uint8Array(buffer), function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  // ALTCHA v2 (PBKDF2): the counter whose derived key starts with keyPrefix; WebCrypto works off the page's thread.
  async function solve(parameters) {
    var hash = HASHES[parameters.algorithm];
    if (!hash) { throw new Error("unsupported algorithm"); }
    var nonce = fromHex(parameters.nonce), salt = fromHex(parameters.salt), prefix = parameters.keyPrefix.toLowerCase();
    for (var start = 0; start < 0xffffffff; start += 8) {
      var tries = [];
      for (var i = 0; i < 8; i++) {
        var password = new Uint8Array(nonce.length + 4);
        password.set(nonce);
        new DataView(password.buffer).setUint32(nonce.length, start + i);
        tries.push(crypto.subtle.importKey("raw", password, "PBKDF2", false, ["deriveBits"]).then(function (key) {
          return crypto.subtle.deriveBits({ name: "PBKDF2", hash: hash, salt: salt, iterations: parameters.cost },
            key, parameters.keyLength * 8);
        }));
      }
      var keys = (await Promise.all(tries)).map(toHex);
      for (var j = 0; j < keys.length; j++) {
        if (keys[j].startsWith(prefix)) { return { counter: start + j, derivedKey: keys[j] }; }
      }
    }
    throw new Error("no solution");
  }

  function renderField(field, texts) {
    var id = "sundown-" + slug + "-" + field.key;
    if (field.type === "hidden") { return make("input", { type: "hidden", name: field.key, value: field.value || "" }); }
    var box = make(field.type === "radio" || field.type === "checkboxes" ? "fieldset" : "div",
      { "class": "sundown-field", "data-field": field.key });
    var help = field.help ? make("p", { "class": "sundown-help", id: id + "-help" }, field.help) : null;
    var described = help ? id + "-help" : null;
    if (field.type === "radio" || field.type === "checkboxes") {
      box.appendChild(make("legend", {}, field.label));
      if (help) { box.appendChild(help); }
      field.choices.forEach(function (choice, index) {
        var label = make("label", { "class": "sundown-choice" });
        label.appendChild(make("input", { type: field.type === "radio" ? "radio" : "checkbox", name: field.key,
          value: choice.value, id: id + "-" + (index + 1), required: field.required && field.type === "radio" }));
        label.appendChild(document.createTextNode(" " + choice.label));
        box.appendChild(label);
      });
      return box;
    }
    if (field.type === "consent") {
      var consent = make("label", { "class": "sundown-choice", "for": id });
      consent.appendChild(make("input", { type: "checkbox", id: id, name: field.key, value: "yes", required: true,
        "aria-describedby": described }));
      consent.appendChild(document.createTextNode(" " + field.label));
      box.appendChild(consent);
      if (help) { box.appendChild(help); }
      return box;
    }
    var label = make("label", { "for": id }, field.label);
    if (!field.required) { label.appendChild(make("span", { "class": "sundown-optional" }, " " + texts.optional)); }
    box.appendChild(label);
    if (help) { box.appendChild(help); }
    var common = { id: id, name: field.key, required: field.required, "aria-describedby": described };
    var input;
    if (field.type === "textarea") {
      input = make("textarea", Object.assign({ rows: 6, maxlength: field.maxlength }, common));
    } else if (field.type === "select") {
      input = make("select", common);
      input.appendChild(make("option", { value: "" }, texts.choose));
      field.choices.forEach(function (choice) { input.appendChild(make("option", { value: choice.value }, choice.label)); });
    } else {
      input = make("input", Object.assign({ type: field.type, maxlength: field.maxlength, min: field.min, max: field.max,
        step: field.type === "number" ? "any" : null, accept: field.accept, multiple: field.files > 1,
        autocomplete: field.autocomplete },
        common));
    }
    box.appendChild(input);
    if (field.limits) { box.appendChild(make("p", { "class": "sundown-help" }, field.limits)); }
    return box;
  }

  function render(place, description) {
    var form = make("form", { "class": "sundown-form", action: description.page, method: "post", novalidate: true,
      lang: description.lang });
    if (description.title) { form.appendChild(make("h2", { "class": "sundown-title" }, description.title)); }
    if (description.description) { form.appendChild(make("p", { "class": "sundown-lead" }, description.description)); }
    description.fields.forEach(function (field) { form.appendChild(renderField(field, description.texts)); });
    var trap = make("div", { "class": "sundown-trap", hidden: true });
    var trapLabel = make("label", {}, description.texts.trap + " ");
    trapLabel.appendChild(make("input", { type: "text", name: "website", tabindex: "-1", autocomplete: "off" }));
    trap.appendChild(trapLabel);
    form.appendChild(trap);
    form.appendChild(make("button", { type: "submit", "class": "sundown-send" }, description.texts.send));
    place.appendChild(form);
    return form;
  }

  function values(form, description) {
    var data = new FormData(form), body = {};
    description.fields.forEach(function (field) {
      if (field.type === "file") { return; }  // sent as files (multipart)
      if (field.type === "checkboxes") { body[field.key] = data.getAll(field.key); return; }
      if (field.type === "consent") { body[field.key] = data.get(field.key) !== null; return; }
      var value = data.get(field.key);
      body[field.key] = value === null ? "" : String(value);
    });
    body.website = data.get("website") || "";
    // Fields the form does not know (a form moved from another service keeps its names): sent as they are.
    var known = {};
    description.fields.forEach(function (field) { known[field.key] = true; });
    data.forEach(function (value, key) {
      if (known[key] || key === "website" || typeof value !== "string") { return; }
      body[key] = body.hasOwnProperty(key) ? [].concat(body[key], value) : value;
    });
    return body;
  }

  // A form with files is sent as multipart/form-data, the same answers as fields and the files as files.
  function multipart(form, description, body) {
    var data = new FormData();
    Object.keys(body).forEach(function (key) {
      if (Array.isArray(body[key])) { body[key].forEach(function (value) { data.append(key, value); }); }
      else if (body[key] !== false) { data.append(key, body[key] === true ? "yes" : body[key]); }
    });
    description.fields.forEach(function (field) {
      if (field.type !== "file") { return; }
      new FormData(form).getAll(field.key).forEach(function (file) { if (file.name) { data.append(field.key, file); } });
    });
    return data;
  }

  function clearErrors(form) {
    form.querySelectorAll(".sundown-error, .sundown-summary").forEach(function (node) { node.remove(); });
    form.querySelectorAll("[aria-invalid]").forEach(function (node) { node.removeAttribute("aria-invalid"); });
  }

  function showErrors(form, errors, texts) {
    var summary = make("div", { "class": "sundown-summary", role: "alert", tabindex: "-1" });
    summary.appendChild(make("p", {}, texts.errors));
    var list = make("ul");
    Object.keys(errors).forEach(function (key) {
      var message = errors[key];
      var input = form.querySelector("[name='" + CSS.escape(key) + "']");
      list.appendChild(make("li", {}, message));
      if (!input) { return; }
      var errorId = "sundown-" + slug + "-" + key + "-error";
      var box = input.closest(".sundown-field") || input.parentNode;
      box.appendChild(make("p", { "class": "sundown-error", id: errorId }, message));
      form.querySelectorAll("[name='" + CSS.escape(key) + "']").forEach(function (each) {
        each.setAttribute("aria-invalid", "true");
        var ids = (each.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
        if (ids.indexOf(errorId) < 0) { ids.push(errorId); }
        each.setAttribute("aria-describedby", ids.join(" "));
      });
    });
    summary.appendChild(list);
    form.insertBefore(summary, form.firstChild);
    summary.focus();
  }

  function attach(form, description) {
    var texts = description.texts, challenge = description.challenge, solution = null, sending = false;
    function start() {
      solution = solve(challenge.parameters).then(function (found) {
        form.dataset.spamCheck = "solved";
        return btoa(JSON.stringify({ challenge: challenge, solution: found }));
      }).catch(function () { return ""; });
      var ttl = description.challenge_ttl;
      setTimeout(function () {
        fetch(description.challenge_url, { credentials: "omit", cache: "no-store" })
          .then(function (response) { return response.json(); })
          .then(function (fresh) { challenge = fresh; start(); })
          .catch(function () { return null; });
      }, Math.max(ttl - 60, ttl / 2) * 1000);
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (sending) { return; }
      sending = true;
      clearErrors(form);
      var button = form.querySelector("[type=submit]");
      if (button) { button.disabled = true; button.dataset.label = button.textContent; button.textContent = texts.sending; }
      var waited = new Promise(function (resolve) { setTimeout(function () { resolve(""); }, SUBMIT_WAIT_MS); });
      Promise.race([solution, waited]).then(function (payload) {
        var body = values(form, description);
        body.altcha = payload;
        if (description.fields.some(function (field) { return field.type === "file"; })) {
          return fetch(description.action, { method: "POST", credentials: "omit", mode: "cors",
            body: multipart(form, description, body) });
        }
        return fetch(description.action, { method: "POST", credentials: "omit", mode: "cors",
          headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      }).then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (answer) {
          if (response.status === 201) {
            var done = make("p", { "class": "sundown-thanks", role: "status", tabindex: "-1" }, texts.thanks);
            form.replaceWith(done);
            done.focus();
            return;
          }
          var errors = answer.errors || { _: answer.error || answer.message || texts.failed };
          showErrors(form, errors, texts);
          if (response.status !== 422) { start(); }
        });
      }).catch(function () {
        showErrors(form, { _: texts.failed }, texts);
      }).finally(function () {
        sending = false;
        if (button) { button.disabled = false; button.textContent = button.dataset.label; }
      });
    });
    start();
  }

  fetch(base + "/api/forms/" + encodeURIComponent(slug) + "/embed", { credentials: "omit", cache: "no-store" })
    .then(function (response) { if (!response.ok) { throw new Error("HTTP " + response.status); } return response.json(); })
    .then(function (description) {
      var existing = Array.from(document.querySelectorAll("form")).find(function (form) {
        return form.action === description.page;
      });
      var form = existing;
      if (!form) {
        var place = document.querySelector("[data-sundown-form='" + CSS.escape(slug) + "']");
        if (!place) { place = make("div"); script.after(place); }
        form = render(place, description);
      }
      attach(form, description);
    })
    .catch(function () { return null; }); // the plain form, if there is one, still posts to Sundown
})();
