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
    svg.querySelectorAll(".bars rect, .series, .series circle, .series path").forEach(function (el) {
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
  var pre = document.createElement("pre");
  pre.id = "probe-verdict";
  pre.textContent = "PROBE-BEGIN\n" + out.join("\n") + "\nPROBE-END";
  document.body.appendChild(pre);
})();
