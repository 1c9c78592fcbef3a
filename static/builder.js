// The form editor, enhanced. Without this script every button posts the form and the page comes back in its
// new shape; with it, the same form does that in place and still posts the same fields: a field card shows
// the inputs its new type needs, Move and Remove act at once, and the preview follows every change (the server
// renders it from the form's fields, admin.preview_form).
(function () {
  "use strict";
  var form = document.getElementById("form-editor");
  var preview = document.getElementById("preview-body");
  if (!form || !preview) { return; }
  var timer = null;
  var asked = 0;

  // Show the parts of a card its type needs; a hidden part's inputs are disabled, so they are not posted.
  function showParts(card) {
    var kind = card.querySelector("select.field-type").value;
    card.querySelectorAll("[data-types]").forEach(function (part) {
      var needed = part.dataset.types.split(" ").indexOf(kind) >= 0;
      part.hidden = !needed;
      part.querySelectorAll("input, textarea, select").forEach(function (input) { input.disabled = !needed; });
    });
    // Minimum and maximum are lengths, a number's values or how many files: their labels say which.
    var unit = kind === "number" ? "values" : (kind === "file" ? "files" : "lengths");
    card.querySelectorAll("label[data-lengths]").forEach(function (label) { label.textContent = label.dataset[unit]; });
  }

  function cards() {
    return Array.prototype.slice.call(form.querySelectorAll(".field-card:not(.new-field)"));
  }

  // Positions, legends and the first and last Move buttons follow the cards' order on the page.
  function renumber() {
    var list = cards();
    list.forEach(function (card, index) {
      var legend = card.querySelector("legend");
      card.querySelector("input[name$='-position']").value = index + 1;
      legend.textContent = legend.dataset.legend.replace("{n}", index + 1);
      card.querySelector("[data-move='up']").disabled = index === 0;
      card.querySelector("[data-move='down']").disabled = index === list.length - 1;
    });
    var blank = form.querySelector(".new-field input[name$='-position']");
    if (blank) { blank.value = list.length + 1; }
  }

  function move(button) {
    var card = button.closest(".field-card");
    var list = cards();
    var index = list.indexOf(card);
    if (button.dataset.move === "up" && index > 0) {
      card.parentNode.insertBefore(card, list[index - 1]);
    } else if (button.dataset.move === "down" && index < list.length - 1) {
      card.parentNode.insertBefore(list[index + 1], card);
    }
    renumber();
    // Moving the card took the focus away; give it back, to the other Move button when this one is now off.
    var target = button.disabled ? card.querySelector("[data-move]:not([disabled])") : button;
    (target || card.querySelector("[data-remove]")).focus();
  }

  function remove(button) {
    button.closest(".field-card").remove();
    renumber();
    document.getElementById("fields-title").focus();
  }

  // The preview as the server renders it from the form's fields; only the latest answer is shown.
  function refresh() {
    var ticket = ++asked;
    fetch(form.dataset.preview, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html !== null && ticket === asked) { preview.innerHTML = html; }
      }, function () { /* offline for a moment: the next change tries again */ });
  }

  function later() {
    window.clearTimeout(timer);
    timer = window.setTimeout(refresh, 300);
  }

  form.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-move], button[data-remove]");
    if (!button) { return; }
    event.preventDefault();
    if (button.dataset.move) { move(button); } else { remove(button); }
    later();
  });
  form.addEventListener("change", function (event) {
    if (event.target.matches("select.field-type")) { showParts(event.target.closest(".field-card")); }
    later();
  });
  form.addEventListener("input", later);
})();
