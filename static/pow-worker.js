// Solves one ALTCHA v2 proof-of-work challenge (PBKDF2) off the page's thread.
// Posted: the challenge's parameters. Answers {counter, derivedKey, time} or {error}.
// The password is the nonce followed by the counter as a big-endian uint32
// (the altcha package's default "uint32" counter mode); the counter that gives
// a derived key starting with keyPrefix is the solution.
"use strict";

var HASHES = { "PBKDF2/SHA-256": "SHA-256", "PBKDF2/SHA-384": "SHA-384", "PBKDF2/SHA-512": "SHA-512" };
var BATCH = 8; // tries in flight at once: WebCrypto runs them concurrently
var LAST_COUNTER = 0xffffffff;

function fromHex(hex) {
  var bytes = new Uint8Array(hex.length / 2);
  for (var i = 0; i < bytes.length; i++) { bytes[i] = parseInt(hex.substr(i * 2, 2), 16); }
  return bytes;
}

function toHex(buffer) {
  return Array.from(new Uint8Array(buffer), function (b) { return b.toString(16).padStart(2, "0"); }).join("");
}

function deriver(parameters) {
  var hash = HASHES[parameters.algorithm];
  if (!hash) { throw new Error("unsupported algorithm " + parameters.algorithm); }
  var nonce = fromHex(parameters.nonce);
  var salt = fromHex(parameters.salt);
  var bits = parameters.keyLength * 8;
  return function (counter) {
    var password = new Uint8Array(nonce.length + 4);
    password.set(nonce);
    new DataView(password.buffer).setUint32(nonce.length, counter);
    return crypto.subtle.importKey("raw", password, "PBKDF2", false, ["deriveBits"]).then(function (key) {
      var options = { name: "PBKDF2", hash: hash, salt: salt, iterations: parameters.cost };
      return crypto.subtle.deriveBits(options, key, bits);
    });
  };
}

async function solve(parameters) {
  var started = performance.now();
  var derive = deriver(parameters);
  var prefix = parameters.keyPrefix.toLowerCase();
  for (var start = 0; start <= LAST_COUNTER; start += BATCH) {
    var tries = [];
    for (var i = 0; i < BATCH && start + i <= LAST_COUNTER; i++) { tries.push(derive(start + i)); }
    var keys = (await Promise.all(tries)).map(toHex);
    for (var j = 0; j < keys.length; j++) {
      if (keys[j].startsWith(prefix)) {
        return { counter: start + j, derivedKey: keys[j], time: performance.now() - started };
      }
    }
  }
  throw new Error("no counter matches");
}

self.onmessage = function (event) {
  solve(event.data).then(self.postMessage, function (error) { self.postMessage({ error: String(error) }); });
};
