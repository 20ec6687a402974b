// Inline SVG charts for the HTML report: axes with ticks, units and legends,
// no script and nothing fetched. Pure functions from data to markup.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace shardwise::svg {

std::string escape(std::string_view s);  // & < > " ' as XML entities

// "Nice" tick values covering [lo, hi] (1, 2, 5 x 10^k steps), about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);
// Decades (and 2, 5 between when few) covering [lo, hi] > 0, for a log axis.
std::vector<double> log_ticks(double lo, double hi);
std::string tick_label(double v);  // 0.25, 40, 1.5k, 2M: short and exact enough for an axis

struct Series {
  std::string name;
  std::string color;  // CSS colour
};

// Horizontal stacked bars: one row per label, one segment per series. An
// optional marker line (e.g. memory capacity) is drawn across all rows.
struct BarChart {
  std::string id;  // data-chart attribute
  std::string title, x_label;
  std::vector<Series> series;
  std::vector<std::string> rows;
  std::vector<std::vector<double>> values;  // [row][series], >= 0
  double x_max = 0;                         // 0: from the data
  double marker = 0;                        // 0: none
  std::string marker_label;
};
std::string bar_chart(const BarChart& c);

// An x-y chart of line and scatter series with reference lines.
struct XySeries {
  std::string name, color;
  enum Kind { kStepLine, kLine, kDots, kMarker } kind = kDots;
  // the glyph of a kLine's points and a kDots series (the legend shows it too), and a dash
  // pattern of a line ("" solid; "6 3" dashed): series told apart beyond their colour
  enum Glyph { kCircle, kSquare, kTriangle, kDiamond, kCross } glyph = kCircle;
  std::string dash;
  std::vector<double> x, y;
  std::vector<std::string> tips;  // optional: a hover tooltip per point
  double radius = 2.5;
};
struct RefLine {
  bool vertical = true;
  double at = 0;
  std::string label, color;
};
struct XyChart {
  std::string id, title, x_label, y_label;
  bool log_x = false;
  bool show_title = false;  // the title drawn above the legend (a chart of its own file); else only its <title>
  // the x axis fitted to the data: from a little below the smallest x to a little above the
  // largest, ticked at the data's x values (up to 12 of them) rather than at decades
  bool fit_x = false;
  std::vector<XySeries> series;
  std::vector<RefLine> refs;
  std::string empty_note;  // printed in the plot area when no series has data
};
std::string xy_chart(const XyChart& c);

}  // namespace shardwise::svg
