// Appended (by sweep_browser_test.sh) to a page holding one sweep chart inline; measures
// what Chromium laid out and writes the verdict into the DOM, which --dump-dom prints.
// window.PROBE_SWEEP = {series: N, counts: [8, 16, 32]}: the series and x values expected.
(function () {
  var want = window.PROBE_SWEEP;
  var out = [];
  var fail = function (what) { out.push("FAIL " + what); };
  var ok = function (what) { out.push("OK " + what); };
  var svg = document.querySelector('svg[data-chart="sweep"]');
  if (!svg) { fail("no sweep chart"); finish(); return; }
  var box = svg.getBoundingClientRect();
  // 1. a visible title inside the chart
  var title = svg.querySelector(".charttitle");
  var tb = title ? title.getBBox() : null;
  if (title && tb.width > 100 && tb.x >= 0 && tb.x + tb.width <= svg.viewBox.baseVal.width) {
    ok("title '" + title.textContent + "' " + Math.round(tb.width) + " px wide inside the chart");
  } else {
    fail("title missing or outside the chart");
  }
  // 2. one legend entry per series, as many as expected
  var lines = svg.querySelectorAll("path.series");
  var legend = svg.querySelectorAll(".legend text");
  if (lines.length === want.series && legend.length === want.series) {
    ok("legend: " + legend.length + " entries for " + lines.length + " series");
  } else {
    fail("legend: " + legend.length + " entries for " + lines.length + " series (expected " + want.series + ")");
  }
  var names = {};
  legend.forEach(function (t) { names[t.textContent] = (names[t.textContent] || 0) + 1; });
  var repeated = Object.keys(names).filter(function (k) { return names[k] > 1; });
  if (repeated.length === 0) ok("legend names distinct"); else fail("legend names repeated: " + repeated.join(", "));
  // 3. every series looks different: colour, glyph and dash
  var looks = {};
  var groups = svg.querySelectorAll("g.points");
  for (var i = 0; i < lines.length; i++) {
    var g = groups[i];
    // the glyph: its element and path commands (circle, rect, MLLZ triangle, MLLLZ diamond, MLML cross)
    var first = g ? g.firstElementChild : null;
    var glyph = first ? first.tagName + ":" + (first.getAttribute("d") || "").replace(/[^A-Za-z]/g, "") : "none";
    var key = lines[i].getAttribute("stroke") + "|" + glyph + "|" + (lines[i].getAttribute("stroke-dasharray") || "");
    looks[key] = (looks[key] || 0) + 1;
  }
  var same = Object.keys(looks).filter(function (k) { return looks[k] > 1; });
  if (same.length === 0) ok(Object.keys(looks).length + " distinct looks (colour, glyph, dash)"); else fail("series drawn alike: " + same.join("; "));
  // 4. the x axis fitted to the data: its ticks are the counts swept, the marks span the plot
  var clip = svg.querySelector("clipPath rect");
  var px = clip.x.baseVal.value + 6, pw = clip.width.baseVal.value - 12, py = clip.y.baseVal.value + 6, ph = clip.height.baseVal.value - 12;
  var xticks = [];
  svg.querySelectorAll('.axis text[text-anchor="middle"]:not(.axislabel)').forEach(function (t) { xticks.push(Number(t.textContent)); });
  if (JSON.stringify(xticks) === JSON.stringify(want.counts)) ok("x ticks " + xticks.join(", ") + " = the counts"); else
    fail("x ticks " + xticks.join(", ") + " (counts " + want.counts.join(", ") + ")");
  var xs = [], inside = true, marks = 0;
  groups.forEach(function (g) {
    Array.prototype.forEach.call(g.children, function (el) {
      var b = el.getBBox();
      var cx = b.x + b.width / 2, cy = b.y + b.height / 2;
      marks++;
      xs.push(cx);
      if (cx < px - 0.5 || cx > px + pw + 0.5 || cy < py - 0.5 || cy > py + ph + 0.5) inside = false;
    });
  });
  var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
  if (marks > 0 && inside) ok(marks + " marks inside the plot area"); else fail(marks + " marks, some outside the plot area");
  // the data spans at least 80% of the plot's width (not squeezed into a decade's corner)
  if (marks > 0 && (hi - lo) >= 0.8 * pw) ok("data spans " + Math.round(100 * (hi - lo) / pw) + "% of the plot width"); else
    fail("data spans " + Math.round(100 * (hi - lo) / pw) + "% of the plot width");
  if (box.width > 600 && box.height > 300) ok("laid out " + Math.round(box.width) + "x" + Math.round(box.height)); else fail("size " + box.width + "x" + box.height);
  finish();
  function finish() {
    var pre = document.createElement("pre");
    pre.id = "probe-verdict";
    pre.textContent = "PROBE-BEGIN\n" + out.join("\n") + "\nPROBE-END";
    document.body.appendChild(pre);
  }
})();
