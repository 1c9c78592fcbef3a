// The inbox's select-all checkbox: progressive enhancement of the "All" link
// (which reloads the page with every box ticked when scripts are off).
(function () {
  "use strict";
  var master = document.querySelector("[data-select-all]");
  var link = document.querySelector("[data-select-all-link]");
  if (!master) { return; }
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input[type="checkbox"][name="ids"]'));

  function sync() {
    var ticked = boxes.filter(function (box) { return box.checked; }).length;
    master.checked = ticked > 0 && ticked === boxes.length;
    master.indeterminate = ticked > 0 && ticked < boxes.length;
  }

  master.hidden = false;
  if (link) { link.hidden = true; }
  master.addEventListener("change", function () {
    boxes.forEach(function (box) { box.checked = master.checked; });
    sync();
  });
  boxes.forEach(function (box) { box.addEventListener("change", sync); });
  sync();
})();
