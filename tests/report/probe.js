// Appended (by report_browser_test.sh) to a copy of the report with its CSP
// removed; measures what Chromium laid out and writes the verdict into the DOM,
// which --dump-dom prints. One line per chart: "chart ID OK|FAIL details".
(function () {
  // the serving report sets PROBE_EXPECTED (report_browser_test.sh) to its own charts
  var expected = window.PROBE_EXPECTED || ["time-chosen", "time-megatron", "memory", "convergence", "frontier"];
  var out = [];
  expected.forEach(function (id) {
    var svg = document.querySelector('svg[data-chart="' + id + '"]');
    if (!svg) { out.push("chart " + id + " FAIL missing"); return; }
    var box = svg.getBoundingClientRect();
    // data marks: bars, series paths, dots, markers with a non-empty drawn box
    var marks = 0;
    svg.querySelectorAll(".bars rect, .series, .series circle, .series path, .points > *").forEach(function (el) {
      var b = el.getBBox();
      if (b.width > 0 || b.height > 0) marks++;
    });
    var ticks = svg.querySelectorAll(".axis text").length;
    var labels = svg.querySelectorAll(".axislabel").length;
    var legend = svg.querySelectorAll(".legend text").length;
    var ok = box.width > 300 && box.height > 80 && marks > 0 && ticks >= 3 && labels >= 1 && legend >= 1;
    out.push("chart " + id + " " + (ok ? "OK" : "FAIL") + " size " + Math.round(box.width) + "x" + Math.round(box.height) +
             " marks " + marks + " ticks " + ticks + " axis-labels " + labels + " legend " + legend);
  });
  // the serving report (PROBE_NOWRAP): no figure of the candidate tables wraps onto a second
  // line, and the engines section lists the three engines with their launch commands
  if (window.PROBE_NOWRAP) {
    var wrapped = 0, cells = 0;
    document.querySelectorAll("#candidates td").forEach(function (td) {
      var range = document.createRange();
      range.selectNodeContents(td);
      var tops = {};
      Array.prototype.forEach.call(range.getClientRects(), function (r) { if (r.width > 0) tops[Math.round(r.top)] = 1; });
      cells++;
      if (Object.keys(tops).length > 1) wrapped++;
    });
    out.push("cells " + (cells > 0 && wrapped === 0 ? "OK" : "FAIL") + " " + cells + " candidate cells, " + wrapped + " wrapped");
    var rows = document.querySelectorAll("#engines tr").length - 1, cmds = document.querySelectorAll("#engines details pre").length;
    out.push("engines " + (rows === 3 && cmds === 3 ? "OK" : "FAIL") + " " + rows + " engines, " + cmds + " launch command blocks");
  }
  var pre = document.createElement("pre");
  pre.id = "probe-verdict";
  pre.textContent = "PROBE-BEGIN\n" + out.join("\n") + "\nPROBE-END";
  document.body.appendChild(pre);
})();
