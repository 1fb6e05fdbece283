// Sorting, the page's only script: click a column header to put the best value on top, click
// again to reverse. `#sort=ID[,ID...]` in the address clicks those headers on load.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function sortBy(button) {
    var th = button.closest("th");
    var body = th.closest("table").tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var now = th.getAttribute("aria-sort");
    var dir = now ? (now === "ascending" ? "descending" : "ascending") : th.dataset.firstSort;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].dataset.sort, y = b.cells[index].dataset.sort;
      var nx = parseFloat(x), ny = parseFloat(y);
      var order = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
      return dir === "ascending" ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(th.parentNode.children, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir);
  }

  var buttons = document.querySelectorAll("button.sort");
  Array.prototype.forEach.call(buttons, function (button) {
    button.addEventListener("click", function () { sortBy(button); });
  });

  var wanted = /^#sort=(.+)$/.exec(window.location.hash);
  if (wanted) {
    decodeURIComponent(wanted[1]).split(",").forEach(function (id) {
      Array.prototype.forEach.call(buttons, function (button) {
        if (button.dataset.sortId === id) { button.click(); }
      });
    });
  }
})();
