#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace shardwise::svg {
namespace {
constexpr double kWidth = 920;
constexpr double kFont = 12;
constexpr double kCharW = 6.6;  // average glyph width of the sans-serif font at 12 px

double text_width(std::string_view s) { return static_cast<double>(s.size()) * kCharW; }

std::string num(double v) { return fmt::format("{:.1f}", v); }

struct LegendItem {
  std::string name, color;
  int glyph = -1;  // XySeries::Glyph of a series drawn with one, else -1 (a swatch)
  std::string dash;
};

std::string glyph_svg(int glyph, double x, double y, double r, const std::string& color) {
  switch (glyph) {
    case XySeries::kSquare:
      return fmt::format(R"~(<rect x="{}" y="{}" width="{}" height="{}" fill="{}")~", num(x - r), num(y - r), num(2 * r), num(2 * r), color);
    case XySeries::kTriangle:
      return fmt::format(R"~(<path d="M{} {} L{} {} L{} {} Z" fill="{}")~", num(x), num(y - 1.2 * r), num(x + 1.1 * r), num(y + 0.8 * r),
                         num(x - 1.1 * r), num(y + 0.8 * r), color);
    case XySeries::kDiamond:
      return fmt::format(R"~(<path d="M{} {} L{} {} L{} {} L{} {} Z" fill="{}")~", num(x), num(y - 1.3 * r), num(x + 1.3 * r), num(y), num(x),
                         num(y + 1.3 * r), num(x - 1.3 * r), num(y), color);
    case XySeries::kCross:
      return fmt::format(R"~(<path d="M{} {} L{} {} M{} {} L{} {}" stroke="{}" stroke-width="2.2" fill="none")~", num(x - r), num(y - r), num(x + r),
                         num(y + r), num(x - r), num(y + r), num(x + r), num(y - r), color);
    default:
      return fmt::format(R"~(<circle cx="{}" cy="{}" r="{}" fill="{}")~", num(x), num(y), num(r), color);
  }
}
// the element's closing tag for glyph_svg's opening
const char* glyph_end(int glyph) {
  return glyph == XySeries::kSquare ? "</rect>" : (glyph == XySeries::kTriangle || glyph == XySeries::kDiamond || glyph == XySeries::kCross) ? "</path>" : "</circle>";
}

// Legend rows of coloured swatches (a short line and the glyph for a series drawn with one)
// from (x0, y0), wrapping at the chart's width; `rows` receives the number of rows used.
std::string legend(const std::vector<LegendItem>& items, double x0, double y0, int* rows) {
  std::string out = "<g class=\"legend\">";
  double x = x0, y = y0;
  *rows = 1;
  for (const LegendItem& it : items) {
    const double w = 16 + (it.glyph >= 0 ? 12 : 0) + text_width(it.name) + 18;
    if (x > x0 && x + w > kWidth - 8) {
      x = x0;
      y += 18;
      ++*rows;
    }
    if (it.glyph >= 0) {
      out += fmt::format(R"~(<g class="key"><line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}" stroke-width="2.2"{}/>)~", num(x), num(x + 24),
                         num(y - 4), num(y - 4), it.color, it.dash.empty() ? "" : fmt::format(R"~( stroke-dasharray="{}")~", it.dash));
      out += glyph_svg(it.glyph, x + 12, y - 4, 4, it.color) + "/></g>";
      out += fmt::format(R"~(<text x="{}" y="{}">{}</text>)~", num(x + 28), num(y), escape(it.name));
    } else {
      out += fmt::format(R"~(<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>)~", num(x), num(y - 10),
                         it.color, num(x + 16), num(y), escape(it.name));
    }
    x += w;
  }
  return out + "</g>";
}
}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi)) hi = lo + 1;
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // from the multiple of step at or below lo to the one at or above hi: the ticks cover the data
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> t;
  for (double k = first; k <= last + 0.5; k += 1) t.push_back(std::fabs(k) < 0.5 ? 0 : k * step);
  return t;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  if (!(lo > 0) || !(hi > lo)) return {lo > 0 ? lo : 1};
  const int a = static_cast<int>(std::floor(std::log10(lo))), b = static_cast<int>(std::ceil(std::log10(hi)));
  const bool fine = b - a <= 2;
  for (int e = a; e <= b; ++e) {
    for (const double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
    }
  }
  return t;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e6) return trim(fmt::format("{:.2f}", v / 1e6)) + "M";
  if (a >= 1e4) return trim(fmt::format("{:.1f}", v / 1e3)) + "k";
  if (a >= 100 || a == 0) return fmt::format("{:.0f}", v);
  if (a >= 1) return trim(fmt::format("{:.2f}", v));
  return trim(fmt::format("{:.4f}", v));
}

std::string bar_chart(const BarChart& c) {
  double label_w = 60;
  for (const auto& r : c.rows) label_w = std::max(label_w, text_width(r));
  const double left = std::min(label_w + 14, 300.0), right = 30, row_h = 22, axis_h = 46;
  std::vector<LegendItem> items;
  for (const auto& se : c.series) items.push_back({se.name, se.color, -1, ""});
  if (c.marker > 0) items.push_back({c.marker_label, "#e15759", -1, ""});
  int legend_rows = 1;
  const std::string legend_svg = legend(items, left, 16, &legend_rows);
  const double top = 16 + 18.0 * legend_rows;
  const double plot_w = kWidth - left - right;
  const double height = top + row_h * static_cast<double>(c.rows.size()) + axis_h;
  double xmax = c.x_max;
  for (const auto& row : c.values) {
    double sum = 0;
    for (const double v : row) sum += std::isfinite(v) ? std::max(0.0, v) : 0.0;
    xmax = std::max(xmax, sum);
  }
  xmax = std::max({xmax, c.marker * 1.05, 1e-12});
  const auto ticks = nice_ticks(0, xmax, 6);
  xmax = std::max(xmax, ticks.back());
  auto X = [&](double v) { return left + plot_w * v / xmax; };

  std::string s = fmt::format(R"~(<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{}" viewBox="0 0 {} {}" width="{}" height="{}" font-size="{}" role="img"><title>{}</title>)~",
                              escape(c.id), num(kWidth), num(height), num(kWidth), num(height), kFont, escape(c.title));
  s += legend_svg;
  const double plot_bottom = top + row_h * static_cast<double>(c.rows.size());
  s += "<g class=\"grid\">";
  for (const double t : ticks) {
    s += fmt::format(R"~(<line x1="{0}" x2="{0}" y1="{1}" y2="{2}"/>)~", num(X(t)), num(top), num(plot_bottom));
  }
  s += "</g><g class=\"bars\">";
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    const double y = top + row_h * static_cast<double>(r);
    s += fmt::format(R"~(<text class="rowlabel" x="{}" y="{}" text-anchor="end">{}</text>)~", num(left - 8), num(y + row_h * 0.68), escape(c.rows[r]));
    double x0 = 0;
    for (std::size_t k = 0; k < c.series.size() && k < c.values[r].size(); ++k) {
      const double v = std::isfinite(c.values[r][k]) ? std::max(0.0, c.values[r][k]) : 0.0;
      if (v <= 0) continue;
      s += fmt::format(R"~(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>)~", num(X(x0)), num(y + 3),
                       fmt::format("{:.2f}", std::max(0.5, X(x0 + v) - X(x0))), num(row_h - 6), c.series[k].color, escape(c.rows[r]),
                       escape(c.series[k].name), tick_label(v));
      x0 += v;
    }
  }
  s += "</g>";
  if (c.marker > 0) {
    s += fmt::format(R"~(<line class="marker" x1="{0}" x2="{0}" y1="{1}" y2="{2}" stroke="#e15759" stroke-width="2" stroke-dasharray="6 3"/>)~",
                     num(X(c.marker)), num(top - 4), num(plot_bottom + 4));
  }
  s += fmt::format(R"~(<g class="axis"><line x1="{0}" x2="{1}" y1="{2}" y2="{2}"/>)~", num(left), num(left + plot_w), num(plot_bottom));
  for (const double t : ticks) {
    s += fmt::format(R"~(<line x1="{0}" x2="{0}" y1="{1}" y2="{2}"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>)~", num(X(t)),
                     num(plot_bottom), num(plot_bottom + 5), num(plot_bottom + 18), tick_label(t));
  }
  s += fmt::format(R"~(<text class="axislabel" x="{}" y="{}" text-anchor="middle">{}</text></g>)~", num(left + plot_w / 2),
                   num(plot_bottom + 38), escape(c.x_label));
  return s + "</svg>";
}

std::string xy_chart(const XyChart& c) {
  const double left = 78, right = 24, plot_h = 330, axis_h = 50;
  std::vector<LegendItem> items;
  for (const auto& se : c.series) {
    const bool glyphs = c.fit_x && (se.kind == XySeries::kLine || se.kind == XySeries::kDots);  // a chart that tells series by glyph
    items.push_back({se.name, se.color, glyphs ? static_cast<int>(se.glyph) : -1, se.dash});
  }
  for (const auto& r : c.refs) items.push_back({r.label, r.color, -1, ""});
  const double title_h = c.show_title ? 26 : 0;
  int legend_rows = 1;
  const std::string legend_svg = legend(items, left, 16 + title_h, &legend_rows);
  const double top = 22 + title_h + 18.0 * legend_rows;
  const double plot_w = kWidth - left - right, height = top + plot_h + axis_h;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, yhi = 0;
  bool any = false;
  for (const auto& se : c.series) {
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (c.log_x && !(se.x[i] > 0)) continue;
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
      xlo = std::min(xlo, se.x[i]);
      xhi = std::max(xhi, se.x[i]);
      yhi = std::max(yhi, se.y[i]);
      any = true;
    }
  }
  for (const auto& r : c.refs) {
    if (r.vertical && (!c.log_x || r.at > 0)) {
      xlo = std::min(xlo, r.at);
      xhi = std::max(xhi, r.at);
    } else if (!r.vertical) {
      yhi = std::max(yhi, r.at);
    }
  }
  if (!std::isfinite(xlo)) xlo = c.log_x ? 1 : 0, xhi = xlo + 1;
  std::vector<double> xt;
  if (c.log_x && c.fit_x && any) {
    // a little room beyond the data on each side; ticks at the data's own x values
    std::vector<double> xs;
    for (const auto& se : c.series) {
      for (const double x : se.x) {
        if (x > 0 && std::isfinite(x) && std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
      }
    }
    std::sort(xs.begin(), xs.end());
    const double pad = xhi > xlo ? std::pow(xhi / xlo, 0.06) : 1.5;
    xlo /= pad;
    xhi *= pad;
    xt = xs.size() <= 12 ? xs : log_ticks(xlo, xhi);
    if (xs.size() > 12) std::erase_if(xt, [&](double t) { return t < xlo || t > xhi; });
  } else if (c.log_x) {
    xlo = std::pow(10.0, std::floor(std::log10(xlo)));
    xhi = std::pow(10.0, std::ceil(std::log10(std::max(xhi, xlo * 1.0001))));
    if (xhi <= xlo) xhi = xlo * 10;
    xt = log_ticks(xlo, xhi);
  } else {
    const double pad = (xhi - xlo) * 0.04 + (xhi == xlo ? 1 : 0);
    xt = nice_ticks(std::max(0.0, xlo - pad), xhi + pad, 7);
    xlo = xt.front();
    xhi = xt.back();
  }
  const auto yt = nice_ticks(0, yhi > 0 ? yhi * 1.05 : 1, 6);
  const double ymax = yt.back();
  auto X = [&](double v) {
    const double f = c.log_x ? (std::log10(v) - std::log10(xlo)) / (std::log10(xhi) - std::log10(xlo)) : (v - xlo) / (xhi - xlo);
    return left + plot_w * f;
  };
  auto Y = [&](double v) { return top + plot_h * (1 - v / ymax); };

  std::string s = fmt::format(R"~(<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{}" viewBox="0 0 {} {}" width="{}" height="{}" font-size="{}" role="img"><title>{}</title>)~",
                              escape(c.id), num(kWidth), num(height), num(kWidth), num(height), kFont, escape(c.title));
  if (c.show_title) {
    s += fmt::format(R"~(<text class="charttitle" x="12" y="20" font-size="15" font-weight="bold">{}</text>)~", escape(c.title));
  }
  s += legend_svg;
  s += "<g class=\"grid\">";
  for (const double t : xt) s += fmt::format(R"~(<line x1="{0}" x2="{0}" y1="{1}" y2="{2}"/>)~", num(X(t)), num(top), num(top + plot_h));
  for (const double t : yt) s += fmt::format(R"~(<line x1="{0}" x2="{1}" y1="{2}" y2="{2}"/>)~", num(left), num(left + plot_w), num(Y(t)));
  s += "</g>";
  s += fmt::format(R"~(<clipPath id="clip-{}"><rect x="{}" y="{}" width="{}" height="{}"/></clipPath><g class="data" clip-path="url(#clip-{})">)~",
                   escape(c.id), num(left - 6), num(top - 6), num(plot_w + 12), num(plot_h + 12), escape(c.id));
  for (const auto& se : c.series) {
    std::vector<std::pair<double, double>> pts;
    std::vector<std::string> tips;
    for (std::size_t i = 0; i < se.x.size(); ++i) {
      if (c.log_x && !(se.x[i] > 0)) continue;
      if (!std::isfinite(se.x[i]) || !std::isfinite(se.y[i])) continue;
      pts.emplace_back(X(se.x[i]), Y(se.y[i]));
      tips.push_back(i < se.tips.size() ? se.tips[i] : std::string());
    }
    if (pts.empty()) continue;
    if (se.kind == XySeries::kStepLine || se.kind == XySeries::kLine) {
      // best-so-far lines step: hold the value until the next improvement, then rise
      std::string d = fmt::format("M{} {}", num(pts[0].first), num(pts[0].second));
      for (std::size_t i = 1; i < pts.size(); ++i) {
        d += se.kind == XySeries::kStepLine ? fmt::format(" H{} V{}", num(pts[i].first), num(pts[i].second))
                                            : fmt::format(" L{} {}", num(pts[i].first), num(pts[i].second));
      }
      s += fmt::format(R"~(<path class="series" d="{}" fill="none" stroke="{}" stroke-width="2.2"{}><title>{}</title></path>)~", d, se.color,
                       se.dash.empty() ? "" : fmt::format(R"~( stroke-dasharray="{}")~", se.dash), escape(se.name));
      if (se.kind == XySeries::kLine) {
        // each point a glyph (its tip on hover) in a group of its own series
        s += fmt::format(R"~(<g class="points" data-series="{}">)~", escape(se.name));
        for (std::size_t i = 0; i < pts.size(); ++i) {
          if (tips[i].empty() && !c.fit_x) continue;
          s += glyph_svg(c.fit_x ? static_cast<int>(se.glyph) : XySeries::kCircle, pts[i].first, pts[i].second, c.fit_x ? 4.5 : 3, se.color) +
               fmt::format("><title>{}</title>", escape(tips[i])) + glyph_end(c.fit_x ? static_cast<int>(se.glyph) : XySeries::kCircle);
        }
        s += "</g>";
      }
    } else {
      const bool marker = se.kind == XySeries::kMarker;
      s += fmt::format(R"~(<g class="series" fill="{}"{}>)~", se.color,
                       marker ? R"~( stroke="#222" stroke-width="1.5")~" : R"~( fill-opacity="0.55")~");
      for (std::size_t i = 0; i < pts.size(); ++i) {
        if (marker) {
          const double r = se.radius, x = pts[i].first, y = pts[i].second;
          s += fmt::format(R"~(<path d="M{} {} L{} {} L{} {} L{} {} Z">)~", num(x), num(y - r), num(x + r), num(y), num(x), num(y + r), num(x - r),
                           num(y));
        } else {
          s += fmt::format(R"~(<circle cx="{}" cy="{}" r="{}">)~", num(pts[i].first), num(pts[i].second), se.radius);
        }
        s += tips[i].empty() ? "" : fmt::format("<title>{}</title>", escape(tips[i]));
        s += marker ? "</path>" : "</circle>";
      }
      s += "</g>";
    }
  }
  s += "</g>";
  for (const auto& r : c.refs) {
    if (r.vertical) {
      if (c.log_x && !(r.at > 0)) continue;
      s += fmt::format(R"~(<line class="ref" x1="{0}" x2="{0}" y1="{1}" y2="{2}" stroke="{3}" stroke-width="2" stroke-dasharray="6 3"/>)~",
                       num(X(r.at)), num(top), num(top + plot_h), r.color);
      s += fmt::format(R"~(<text x="{}" y="{}" fill="{}">{}</text>)~", num(X(r.at) + 4), num(top + 12), r.color, escape(r.label));
    } else {
      s += fmt::format(R"~(<line class="ref" x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="{3}" stroke-width="2" stroke-dasharray="6 3"/>)~",
                       num(left), num(left + plot_w), num(Y(r.at)), r.color);
      s += fmt::format(R"~(<text x="{}" y="{}" fill="{}" text-anchor="end">{}</text>)~", num(left + plot_w - 4), num(Y(r.at) - 5), r.color,
                       escape(r.label));
    }
  }
  if (!any && !c.empty_note.empty()) {
    s += fmt::format(R"~(<text class="empty" x="{}" y="{}" text-anchor="middle">{}</text>)~", num(left + plot_w / 2), num(top + plot_h / 2),
                     escape(c.empty_note));
  }
  const double bottom = top + plot_h;
  s += fmt::format(R"~(<g class="axis"><line x1="{0}" x2="{1}" y1="{2}" y2="{2}"/><line x1="{0}" x2="{0}" y1="{3}" y2="{2}"/>)~", num(left),
                   num(left + plot_w), num(bottom), num(top));
  for (const double t : xt) {
    s += fmt::format(R"~(<line x1="{0}" x2="{0}" y1="{1}" y2="{2}"/><text x="{0}" y="{3}" text-anchor="middle">{4}</text>)~", num(X(t)),
                     num(bottom), num(bottom + 5), num(bottom + 18), tick_label(t));
  }
  for (const double t : yt) {
    s += fmt::format(R"~(<line x1="{0}" x2="{1}" y1="{2}" y2="{2}"/><text x="{3}" y="{4}" text-anchor="end">{5}</text>)~", num(left - 5),
                     num(left), num(Y(t)), num(left - 8), num(Y(t) + 4), tick_label(t));
  }
  s += fmt::format(R"~(<text class="axislabel" x="{}" y="{}" text-anchor="middle">{}</text>)~", num(left + plot_w / 2), num(bottom + 40),
                   escape(c.x_label));
  s += fmt::format(R"~(<text class="axislabel" transform="translate({} {}) rotate(-90)" text-anchor="middle">{}</text></g>)~", 18,
                   num(top + plot_h / 2), escape(c.y_label));
  return s + "</svg>";
}

}  // namespace shardwise::svg
