#include "workload/serving.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"
#include "workload/serving_parse.hpp"
#include "workload/workload.hpp"

namespace shardwise {

const char* to_string(LengthDist::Kind k) {
  switch (k) {
    case LengthDist::Kind::kFixed: return "fixed";
    case LengthDist::Kind::kUniform: return "uniform";
    case LengthDist::Kind::kLognormal: return "lognormal";
    case LengthDist::Kind::kHistogram: return "histogram";
  }
  return "?";
}

const char* to_string(Arrivals::Kind k) {
  switch (k) {
    case Arrivals::Kind::kPoisson: return "poisson";
    case Arrivals::Kind::kClosed: return "closed";
    case Arrivals::Kind::kBurst: return "offline";
    case Arrivals::Kind::kTrace: return "trace";
  }
  return "?";
}

double mean_of(const LengthDist& d) {
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
    case LengthDist::Kind::kLognormal: return d.mean;
    case LengthDist::Kind::kUniform: return (static_cast<double>(d.min) + static_cast<double>(d.max)) / 2.0;
    case LengthDist::Kind::kHistogram: {
      double sw = 0, sv = 0;
      for (const auto& [v, wt] : d.bins) {
        sw += wt;
        sv += wt * static_cast<double>(v);
      }
      return sw > 0 ? sv / sw : 0.0;
    }
  }
  return 0.0;
}

double reported_slo_pct(const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
  if (!pcts.empty()) return pcts.back().pct;
  return mean ? 0.0 : 99.0;
}

std::string slo_stat_name(double pct) {
  if (pct <= 0) return "mean";
  return fmt::format("p{}", pct);
}

namespace detail {

std::optional<double> parse_slo_stat(std::string_view key) {
  if (key == "mean") return 0.0;
  if (key == "p50") return 50.0;
  if (key == "p90") return 90.0;
  if (key == "p95") return 95.0;
  if (key == "p99") return 99.0;
  if (key == "p99.9") return 99.9;
  return std::nullopt;
}

void read_slo(const FieldReader& slo, std::string_view key, double max_ms, std::optional<double>& mean, std::vector<SloBound>& pcts) {
  if (!slo.has(key) || slo.sink().failed()) return;
  const nlohmann::json* v = slo.get(key);
  if (v->is_number()) {
    mean = slo.number(key, 1e-3, max_ms);
    return;
  }
  auto o = slo.object(key, true);
  if (!o) return;
  for (const auto& [k, val] : v->items()) {
    auto pct = parse_slo_stat(k);
    if (!pct) {
      o->fail(k, "a statistic: mean, p50, p90, p95, p99 or p99.9", "'" + k + "'");
      return;
    }
    const double ms = o->number(k, 1e-3, max_ms);
    if (o->sink().failed()) return;
    if (*pct == 0.0) {
      mean = ms;
    } else {
      pcts.push_back(SloBound{*pct, ms});
    }
  }
  std::sort(pcts.begin(), pcts.end(), [](const SloBound& a, const SloBound& b) { return a.pct < b.pct; });
}

namespace {
constexpr const char* kDists = "one of fixed, uniform, lognormal, histogram";
constexpr const char* kPatterns = "one of poisson, closed, offline, trace";

std::optional<LengthDist> read_length(const FieldReader& lengths, std::string_view key) {
  auto o = lengths.object(key, false);
  if (!o) return std::nullopt;
  o->reject_unknown({"dist", "mean", "sigma", "min", "max", "bins"});
  LengthDist d;
  const std::string dist = o->string("dist");
  if (o->sink().failed()) return std::nullopt;
  if (dist == "fixed") {
    d.kind = LengthDist::Kind::kFixed;
    d.mean = static_cast<double>(o->integer_or("mean", 0, 1, kMaxTokens));
  } else if (dist == "uniform") {
    d.kind = LengthDist::Kind::kUniform;
    d.min = o->integer("min", 1, kMaxTokens);
    d.max = o->integer("max", 1, kMaxTokens);
    if (!o->sink().failed() && d.max < d.min) o->fail("max", fmt::format("at least min ({})", d.min), std::to_string(d.max));
  } else if (dist == "lognormal") {
    d.kind = LengthDist::Kind::kLognormal;
    d.mean = o->number_or("mean", 0.0, 1.0, static_cast<double>(kMaxTokens));
    d.sigma = o->number("sigma", 0.0, 4.0);
    d.min = o->integer_or("min", 1, 1, kMaxTokens);
    d.max = o->integer_or("max", 0, 1, kMaxTokens);
    if (!o->sink().failed() && d.max > 0 && d.max < d.min) o->fail("max", fmt::format("at least min ({})", d.min), std::to_string(d.max));
    // a mean outside the clamp would move nearly every draw onto a bound: not the distribution asked for
    if (!o->sink().failed() && d.mean > 0 && (d.mean < static_cast<double>(d.min) || (d.max > 0 && d.mean > static_cast<double>(d.max)))) {
      o->fail("mean", d.max > 0 ? fmt::format("a mean from min to max ({} to {})", d.min, d.max) : fmt::format("a mean of at least min ({})", d.min),
              fmt::format("{}", d.mean));
    }
  } else if (dist == "histogram") {
    d.kind = LengthDist::Kind::kHistogram;
    const nlohmann::json* b = o->get("bins");
    const std::string want = "a list of [tokens, weight] pairs (tokens >= 1, weight >= 0, some weight > 0)";
    if (!b || !b->is_array() || b->empty()) {
      o->fail("bins", want, b ? describe_value(*b) : "nothing (the field is missing)");
      return std::nullopt;
    }
    double total = 0;
    for (const auto& pair : *b) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number() ||
          pair[0].get<std::int64_t>() < 1 || pair[0].get<std::int64_t>() > kMaxTokens || !(pair[1].get<double>() >= 0.0) ||
          !std::isfinite(pair[1].get<double>())) {
        o->fail("bins", want, describe_value(pair));
        return std::nullopt;
      }
      d.bins.emplace_back(pair[0].get<std::int64_t>(), pair[1].get<double>());
      total += pair[1].get<double>();
    }
    if (!(total > 0)) o->fail("bins", want, "every weight 0");
    else if (!std::isfinite(total)) o->fail("bins", "weights whose sum is a finite number (they are relative: scale them down)", "a sum beyond 1e308");
  } else {
    o->fail_value("dist", kDists);
  }
  if (o->sink().failed()) return std::nullopt;
  return d;
}
}  // namespace

void read_serve_spec(const FieldReader& r, ServeSpec& s, std::int64_t max_tokens) {
  (void)max_tokens;
  if (auto a = r.object("arrivals", false)) {
    a->reject_unknown({"pattern", "rate", "concurrency", "file"});
    const std::string p = a->string("pattern");
    if (a->sink().failed()) return;
    // each pattern its own field: another pattern's would be ignored silently
    for (const auto& [field, pattern] : {std::pair{"rate", "poisson"}, {"concurrency", "closed"}, {"file", "trace"}}) {
      if (a->has(field) && p != pattern) {
        a->fail(field, fmt::format("no {} with pattern {} ({} belongs to pattern {})", field, p, field, pattern),
                std::string(field) + ": " + describe_value(*a->get(field)));
        return;
      }
    }
    if (p == "poisson") {
      s.arrivals.kind = Arrivals::Kind::kPoisson;
      s.arrivals.rate = a->number("rate", 1e-6, 1e7);
    } else if (p == "closed") {
      s.arrivals.kind = Arrivals::Kind::kClosed;
      s.arrivals.concurrency = a->integer("concurrency", 1, kMaxBatch);
    } else if (p == "offline") {
      s.arrivals.kind = Arrivals::Kind::kBurst;
    } else if (p == "trace") {
      s.arrivals.kind = Arrivals::Kind::kTrace;
      s.trace_file = a->string("file");
      if (a->sink().failed()) return;
      // relative to the workload file's folder
      std::string path = s.trace_file;
      const std::string& wf = r.file();
      const auto slash = wf.find_last_of('/');
      if (!path.empty() && path[0] != '/' && slash != std::string::npos) path = wf.substr(0, slash + 1) + path;
      auto t = load_trace(path);
      if (!t) {
        r.sink().set(t.error());
        return;
      }
      s.trace = std::move(*t);
    } else {
      a->fail_value("pattern", kPatterns);
    }
  }
  if (r.has("requests")) s.requests = r.integer("requests", 1, kMaxRequests);
  if (r.has("seed")) s.seed = static_cast<std::uint64_t>(r.integer("seed", 0, std::int64_t{1} << 62));
  if (auto l = r.object("lengths", false)) {
    l->reject_unknown({"input", "output"});
    s.input = read_length(*l, "input");
    s.output = read_length(*l, "output");
  }
}

}  // namespace detail

namespace {
// Splits one CSV line on commas (a trace holds numbers and three names): each cell trimmed of
// surrounding blanks and one pair of double quotes; what is inside stays as typed.
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    std::string cell = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t b = cell.find_first_not_of(" \t\r"), e = cell.find_last_not_of(" \t\r");
    cell = b == std::string::npos ? std::string() : cell.substr(b, e - b + 1);
    if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = cell.substr(1, cell.size() - 2);
    out.push_back(std::move(cell));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// A decimal number as written: digits, one point, an exponent; no hex ("0x10"), no blanks
// inside ("5 12"), no sign, no inf or nan.
bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return false;
  }
  if (!std::isdigit(static_cast<unsigned char>(s[0])) && s[0] != '.') return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

// The JSONL line's keys at the top level, to refuse duplicates (the parser keeps the last).
struct TopKeys {
  std::vector<std::string> seen;
  std::string duplicate;
};
}  // namespace

Expected<std::vector<TraceRequest>> load_trace(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  std::vector<TraceRequest> out;
  std::istringstream in(*text);
  std::string line;
  const bool jsonl = path.size() >= 6 && path.substr(path.size() - 6) == ".jsonl";
  const char* want_cols = "columns arrival_s (or timestamp), input_tokens, output_tokens";
  int col_t = -1, col_i = -1, col_o = -1;
  std::int64_t lineno = 0;
  const auto check = [&](double t, double i, double o, const std::string& where) -> std::optional<Error> {
    if (!(t >= 0.0) || t > 1e9) return Error{path, where + " arrival_s", "a time in seconds from 0 to 1e9", fmt::format("{}", t)};
    if (!(i >= 1.0) || i > static_cast<double>(kMaxTokens) || i != std::floor(i))
      return Error{path, where + " input_tokens", fmt::format("a whole token count from 1 to {}", kMaxTokens), fmt::format("{}", i)};
    if (!(o >= 1.0) || o > static_cast<double>(kMaxTokens) || o != std::floor(o))
      return Error{path, where + " output_tokens", fmt::format("a whole token count from 1 to {}", kMaxTokens), fmt::format("{}", o)};
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("line {}", lineno);
    double t = 0, i = 0, o = 0;
    if (jsonl) {
      if (!json_nesting_within_limit(line)) return Error{path, where, "one JSON object per line, nested at most 64 deep", "deeper nesting"};
      TopKeys top;
      const nlohmann::json::parser_callback_t cb = [&top](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
        if (ev == nlohmann::json::parse_event_t::key && depth == 1) {
          const std::string k = parsed.get<std::string>();
          if (std::find(top.seen.begin(), top.seen.end(), k) != top.seen.end()) top.duplicate = k;
          top.seen.push_back(k);
        }
        // the values of other keys are not kept: only the three numbers are read
        return !(depth >= 2 && (ev == nlohmann::json::parse_event_t::value || ev == nlohmann::json::parse_event_t::object_end ||
                                ev == nlohmann::json::parse_event_t::array_end));
      };
      nlohmann::json j = nlohmann::json::parse(line, cb, false);
      if (j.is_discarded() || !j.is_object()) return Error{path, where, "one JSON object per line", line.substr(0, 60)};
      if (!top.duplicate.empty()) return Error{path, where + " " + top.duplicate, "each key once", "it twice"};
      if (j.contains("arrival_s") && j.contains("timestamp")) {
        return Error{path, where, "one of arrival_s and timestamp", "both"};
      }
      const auto num = [&](std::initializer_list<const char*> keys, double& v) {
        for (const char* k : keys) {
          if (j.contains(k) && j[k].is_number()) {
            v = j[k].get<double>();
            return true;
          }
        }
        return false;
      };
      if (!num({"arrival_s", "timestamp"}, t) || !num({"input_tokens"}, i) || !num({"output_tokens"}, o)) {
        return Error{path, where, "keys arrival_s (or timestamp), input_tokens, output_tokens with numbers", line.substr(0, 60)};
      }
    } else {
      const auto cells = split_csv(line);
      if (col_t < 0) {  // the header
        for (std::size_t c = 0; c < cells.size(); ++c) {
          int* col = cells[c] == "arrival_s" || cells[c] == "timestamp" ? &col_t
                     : cells[c] == "input_tokens"                       ? &col_i
                     : cells[c] == "output_tokens"                      ? &col_o
                                                                        : nullptr;
          if (col == nullptr) continue;
          if (*col >= 0) {
            return Error{path, fmt::format("line 1 (header) column {}", c + 1), "each of arrival_s (or timestamp), input_tokens, output_tokens once",
                         fmt::format("'{}' again", cells[c])};
          }
          *col = static_cast<int>(c);
        }
        if (col_t < 0 || col_i < 0 || col_o < 0) return Error{path, "line 1 (header)", want_cols, line.substr(0, 80)};
        continue;
      }
      const auto max_col = static_cast<std::size_t>(std::max({col_t, col_i, col_o}));
      if (cells.size() <= max_col || !parse_number(cells[static_cast<std::size_t>(col_t)], t) ||
          !parse_number(cells[static_cast<std::size_t>(col_i)], i) || !parse_number(cells[static_cast<std::size_t>(col_o)], o)) {
        return Error{path, where, fmt::format("numbers in the {}", want_cols), line.substr(0, 80)};
      }
    }
    if (auto e = check(t, i, o, where)) return *e;
    out.push_back(TraceRequest{t, static_cast<std::int64_t>(i), static_cast<std::int64_t>(o)});
    if (static_cast<std::int64_t>(out.size()) > kMaxRequests) return Error{path, "", fmt::format("at most {} requests", kMaxRequests), "more"};
  }
  if (out.empty()) return Error{path, "", "at least one request (" + std::string(want_cols) + ")", "none"};
  std::stable_sort(out.begin(), out.end(), [](const TraceRequest& a, const TraceRequest& b) { return a.arrival_s < b.arrival_s; });
  const double t0 = out.front().arrival_s;
  for (auto& r : out) r.arrival_s -= t0;
  return out;
}

}  // namespace shardwise
