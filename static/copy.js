// Copy buttons: <button type="button" data-copy="ID" data-copied="Copied." hidden> copies the text of #ID and
// says so in #ID-status. Without script (or a clipboard) the buttons stay hidden; the text is there to select.
(function () {
  "use strict";
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.dataset.copy);
    var status = document.getElementById(button.dataset.copy + "-status");
    if (!source || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent).then(function () {
        if (status) { status.textContent = button.dataset.copied; }
      }, function () {
        window.getSelection().selectAllChildren(source);  // the browser refused: select it for Ctrl+C
      });
    });
  });
})();
