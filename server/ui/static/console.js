// The catalogue's live search: rows are filtered as one types (the search
// form also works without JavaScript, on the server).
(function () {
  var q = document.getElementById("q");
  var table = document.getElementById("tools");
  if (!q || !table) return;
  var rows = table.tBodies[0].rows;
  var count = document.getElementById("count");
  function filter() {
    var words = q.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].getAttribute("data-search") || "";
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].hidden = !ok;
      if (ok) shown++;
    }
    if (count) count.textContent = shown;
  }
  q.addEventListener("input", filter);
})();
