// Passkey ceremonies for Sundown: login, enrollment, and adding a passkey.
// Buttons carry data-passkey="login" | "register" plus the options and verify
// URLs; the CSRF token comes from <meta name="csrf-token">.
(function () {
  "use strict";

  // Messages in the page's language: <body data-messages> holds them, keyed by
  // their English text (app.i18n.SCRIPT_MESSAGES); English when one is missing.
  var MESSAGES = (function () {
    try { return JSON.parse(document.body.dataset.messages || "{}"); } catch (e) { return {}; }
  })();
  function t(text) { return MESSAGES[text] || text; }

  function b64urlToBuffer(value) {
    var base64 = value.replace(/-/g, "+").replace(/_/g, "/");
    while (base64.length % 4) { base64 += "="; }
    var binary = atob(base64);
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    return bytes.buffer;
  }

  function bufferToB64url(buffer) {
    var bytes = new Uint8Array(buffer);
    var binary = "";
    for (var i = 0; i < bytes.length; i++) { binary += String.fromCharCode(bytes[i]); }
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function withBuffers(descriptors) {
    return (descriptors || []).map(function (d) {
      return Object.assign({}, d, { id: b64urlToBuffer(d.id) });
    });
  }

  // Fallbacks for browsers without parse*OptionsFromJSON / toJSON.
  function creationOptions(json) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) {
      return PublicKeyCredential.parseCreationOptionsFromJSON(json);
    }
    return Object.assign({}, json, {
      challenge: b64urlToBuffer(json.challenge),
      user: Object.assign({}, json.user, { id: b64urlToBuffer(json.user.id) }),
      excludeCredentials: withBuffers(json.excludeCredentials)
    });
  }

  function requestOptions(json) {
    if (PublicKeyCredential.parseRequestOptionsFromJSON) {
      return PublicKeyCredential.parseRequestOptionsFromJSON(json);
    }
    return Object.assign({}, json, {
      challenge: b64urlToBuffer(json.challenge),
      allowCredentials: withBuffers(json.allowCredentials)
    });
  }

  function credentialJSON(credential) {
    if (typeof credential.toJSON === "function") { return credential.toJSON(); }
    var r = credential.response;
    var response = { clientDataJSON: bufferToB64url(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = bufferToB64url(r.attestationObject);
      response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      response.authenticatorData = bufferToB64url(r.authenticatorData);
      response.signature = bufferToB64url(r.signature);
      if (r.userHandle) { response.userHandle = bufferToB64url(r.userHandle); }
    }
    return {
      id: credential.id,
      rawId: bufferToB64url(credential.rawId),
      type: credential.type,
      authenticatorAttachment: credential.authenticatorAttachment || null,
      clientExtensionResults: credential.getClientExtensionResults(),
      response: response
    };
  }

  function localPath(value) {
    return typeof value === "string" && value.charAt(0) === "/" &&
      value.charAt(1) !== "/" && value.indexOf("\\") === -1 ? value : null;
  }

  function postJSON(url, body) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": meta ? meta.content : ""
      },
      body: JSON.stringify(body || {})
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (!response.ok) {
          throw new Error(data.error || t("The server answered {status}. Please try again.").replace("{status}", response.status));
        }
        return data;
      });
    });
  }

  function explain(error) {
    if (error && error.name === "NotAllowedError") {
      return t("The passkey request was cancelled or timed out. You can try again.");
    }
    if (error && error.name === "InvalidStateError") {
      return t("This passkey is already registered here.");
    }
    if (error && error.name === "SecurityError") {
      return t("This page's address does not match the site's passkey settings.");
    }
    return (error && error.message) || t("Something went wrong. Please try again.");
  }

  // A failure shows in its own alert (role="alert", read out at once), not in the quiet status line.
  function showError(status, message) {
    var alert = document.querySelector("[data-passkey-error]");
    if (!alert) { status.textContent = message; return; }
    status.textContent = "";
    alert.textContent = message;
    alert.hidden = !message;
  }

  function run(button, status) {
    var login = button.dataset.passkey === "login";
    var next = localPath(button.dataset.next);
    showError(status, "");
    status.textContent = login ? t("Waiting for your passkey…") : t("Follow your browser's prompts to create a passkey…");
    button.disabled = true;
    return postJSON(button.dataset.optionsUrl)
      .then(function (options) {
        return login
          ? navigator.credentials.get({ publicKey: requestOptions(options) })
          : navigator.credentials.create({ publicKey: creationOptions(options) });
      })
      .then(function (credential) {
        var body = { credential: credentialJSON(credential) };
        var chosen = document.querySelector("[data-display-name]");
        if (chosen) { body.display_name = chosen.value; }
        if (next) { body.next = next; }
        return postJSON(button.dataset.verifyUrl, body);
      })
      .then(function (result) {
        status.textContent = login ? t("Logged in.") : t("Passkey created.");
        window.location.assign(localPath(result.redirect) || "/admin/");
      })
      .catch(function (error) {
        showError(status, explain(error));
        button.disabled = false;
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var buttons = document.querySelectorAll("[data-passkey]");
    var status = document.querySelector("[data-passkey-status]");
    Array.prototype.forEach.call(buttons, function (button) {
      if (!window.PublicKeyCredential || !navigator.credentials) {
        button.disabled = true;
        if (status) { status.textContent = t("This browser does not support passkeys. Please use a current browser."); }
        return;
      }
      button.addEventListener("click", function () { run(button, status); });
    });
  });
})();
