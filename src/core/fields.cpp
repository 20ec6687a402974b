#include "core/fields.hpp"

#include <cerrno>
#include <charconv>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace shardwise {
using nlohmann::json;

namespace {
constexpr int kMaxNesting = 64;  // deeper documents are rejected, never recursed into
// YAML aliases can make a small document expand exponentially ("billion laughs");
// the conversion stops after this many nodes.
constexpr std::size_t kMaxYamlNodes = 200000;

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return std::string(s.substr(b, e - b));
}

std::optional<std::int64_t> to_int(const std::string& s) {
  std::int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e) return std::nullopt;
  return v;
}

std::optional<double> to_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  // Only plain decimal/exponent forms: reject inf, nan and hex floats.
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  return v;
}

int json_depth_ok(const json& j, int depth) {
  if (depth > kMaxNesting) return 0;
  if (j.is_object() || j.is_array()) {
    for (const auto& c : j) {
      if (!json_depth_ok(c, depth + 1)) return 0;
    }
  }
  return 1;
}

// `path` is the node's field path ("arrivals." for the mapping under arrivals), for messages.
Expected<json> yaml_to_json(const YAML::Node& n, const std::string& file, int depth, std::size_t& budget, const std::string& path) {
  if (budget == 0) return Error{file, "", fmt::format("at most {} values (aliases expand too far)", kMaxYamlNodes), "more"};
  --budget;
  if (depth > kMaxNesting) return Error{file, "", fmt::format("at most {} levels of nesting", kMaxNesting), "deeper nesting"};
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return json(s);  // quoted: always a string
      if (s == "~" || s == "null" || s == "Null" || s == "NULL" || s.empty()) return json(nullptr);
      if (s == "true" || s == "True" || s == "TRUE") return json(true);
      if (s == "false" || s == "False" || s == "FALSE") return json(false);
      if (auto i = to_int(s)) return json(*i);
      if (auto d = to_double(s)) return json(*d);
      return json(s);
    }
    case YAML::NodeType::Sequence: {
      json arr = json::array();
      for (const auto& c : n) {
        auto v = yaml_to_json(c, file, depth + 1, budget, fmt::format("{}[{}].", path.empty() ? "" : path.substr(0, path.size() - 1), arr.size()));
        if (!v) return v.error();
        arr.push_back(std::move(v).value());
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      json obj = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return Error{file, "", "mapping keys to be plain strings", "a non-scalar key"};
        const std::string key = kv.first.Scalar();
        if (obj.contains(key)) return Error{file, path + key, "each key once", "a duplicate key"};
        auto v = yaml_to_json(kv.second, file, depth + 1, budget, path + key + ".");
        if (!v) return v.error();
        obj[key] = std::move(v).value();
      }
      return obj;
    }
  }
  return json(nullptr);
}

// yaml-cpp recurses once per nesting level while parsing; bound flow and block
// nesting before handing it the text, so hostile input cannot exhaust the stack.
bool nesting_within_limit(std::string_view text) {
  int flow = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[' || c == '{') {
      if (++flow > kMaxNesting) return false;
    } else if (c == ']' || c == '}') {
      if (flow > 0) --flow;
    }
  }
  // Block nesting: indentation depth and "- - - -" chains on one line.
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t i = line_start;
    int indent = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '-' || text[i] == '?' || text[i] == ':')) {
      ++indent;
      ++i;
    }
    if (indent > 4 * kMaxNesting) return false;
    const std::size_t nl = text.find('\n', line_start);
    if (nl == std::string_view::npos) break;
    line_start = nl + 1;
  }
  return true;
}

// Whether the text holds a second YAML document: a document marker ("---" or "...", at
// column 0, alone or before a space) after some content, with more content after it. A
// marker line cannot occur inside a scalar (YAML forbids it there), so a line scan is
// exact. (YAML::LoadAll would tell, but never returns on some inputs, such as a lone ",".)
bool has_second_document(std::string_view text) {
  bool content = false, after_marker = false;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    at = nl + 1;
    const bool marker = (line.substr(0, 3) == "---" || line.substr(0, 3) == "...") &&
                        (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
    if (marker) {
      if (content) after_marker = true;
      // "--- value" carries content on the marker line itself
      const std::string_view rest = line.substr(3);
      const std::size_t c = rest.find_first_not_of(" \t");
      if (c != std::string_view::npos && rest[c] != '#') {
        if (after_marker) return true;
        content = true;
      }
      continue;
    }
    const std::size_t c = line.find_first_not_of(" \t");
    if (c == std::string_view::npos || line[c] == '#' || line[0] == '%') continue;  // blank, comment, directive
    if (after_marker) return true;
    content = true;
  }
  return false;
}

}  // namespace

bool json_nesting_within_limit(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

Expected<json> parse_json_text(std::string_view text, const std::string& file) {
  // bounded before parsing: a deep document must not be built (memory) nor recursed into
  if (!json_nesting_within_limit(text)) return Error{file, "", fmt::format("at most {} levels of nesting", kMaxNesting), "deeper nesting"};
  // a key given twice in one object: the parser would keep the last silently; the first
  // duplicate is refused with its full path ("quantization_config.bits", "layers[2].name")
  struct Frame {
    bool array = false;
    std::int64_t index = -1;
    std::vector<std::string> keys;
    std::string key;
  };
  std::vector<Frame> frames;
  std::string duplicate;
  const auto path_of = [&](const std::string& last) {
    std::string p;
    for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
      if (frames[i].array) p += fmt::format("[{}]", frames[i].index);
      else p += (p.empty() ? "" : ".") + frames[i].key;
    }
    return p + (p.empty() ? "" : ".") + last;
  };
  const auto element = [&] {
    if (!frames.empty() && frames.back().array) ++frames.back().index;
  };
  const json::parser_callback_t watch = [&](int, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        element();
        frames.emplace_back();
        frames.back().array = ev == json::parse_event_t::array_start;
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) {
          Frame& f = frames.back();
          const std::string& k = parsed.get_ref<const std::string&>();
          if (duplicate.empty() && std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end()) duplicate = path_of(k);
          if (f.keys.size() < 4096) f.keys.push_back(k);  // bounded: a huge object is checked on its first keys
          f.key = k;
        }
        break;
      case json::parse_event_t::value:
        element();
        break;
    }
    return true;
  };
  try {
    json j = json::parse(text.begin(), text.end(), watch);
    if (!duplicate.empty()) return Error{file, duplicate, "each key once", "a duplicate key"};
    if (!json_depth_ok(j, 0)) return Error{file, "", fmt::format("at most {} levels of nesting", kMaxNesting), "deeper nesting"};
    return j;
  } catch (const json::parse_error& e) {
    // Translate the byte offset into line and column.
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < e.byte && i < text.size() + 1 && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    std::string what = e.what();
    const auto pos = what.find("syntax error");
    if (pos != std::string::npos) what = what.substr(pos);
    return Error{file, "", "valid JSON", fmt::format("a syntax error at line {}, column {} ({})", line, col, what)};
  } catch (const json::exception& e) {
    return Error{file, "", "valid JSON", e.what()};
  }
}

Expected<json> parse_yaml_text(std::string_view text, const std::string& file) {
  if (!nesting_within_limit(text)) return Error{file, "", fmt::format("at most {} levels of nesting", kMaxNesting), "deeper nesting"};
  try {
    // one document: YAML::Load reads the first and ignores the rest silently
    if (has_second_document(text)) return Error{file, "", "one YAML document", "a second document (after a '---' line)"};
    const YAML::Node root = YAML::Load(std::string(text));
    std::size_t budget = kMaxYamlNodes;
    return yaml_to_json(root, file, 0, budget, "");
  } catch (const YAML::Exception& e) {
    return Error{file, "", "valid YAML",
                 fmt::format("a syntax error at line {}, column {} ({})", e.mark.line + 1, e.mark.column + 1, e.msg)};
  } catch (const std::exception& e) {
    return Error{file, "", "valid YAML", e.what()};
  }
}

Expected<std::string> read_text_file(const std::string& path) {
  std::error_code ec;  // the non-throwing overloads: a name too long or a loop is an answer, not an exception
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st)) return Error{path, "", "a file", "a directory"};
  // a FIFO, socket or device would block the read or never end: refused before opening
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    const char* kind = std::filesystem::is_fifo(st)                ? "a FIFO (named pipe): it can block forever"
                       : std::filesystem::is_socket(st)            ? "a socket"
                       : std::filesystem::is_character_file(st)    ? "a character device"
                       : std::filesystem::is_block_file(st)        ? "a block device"
                                                                   : "not a regular file";
    return Error{path, "", "a regular file", kind};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "", "a readable file", "no such file or no permission"};
  // read in chunks up to a bound: a device such as /dev/zero or a stray multi-gigabyte
  // file must not exhaust memory (every input this program reads is far smaller)
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > kMaxInputFileBytes) {
      return Error{path, "", fmt::format("a file of at most {} MiB", kMaxInputFileBytes >> 20), "a larger file"};
    }
  }
  if (in.bad()) return Error{path, "", "a readable file", "a read error"};
  return out;
}

std::string describe_value(const json& v) {
  // the value as typed (compact, cut at 60 characters; control bytes escaped by Error::message)
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  if (v.is_object()) return "the mapping " + s;
  if (v.is_array()) return fmt::format("the list {} ({} item{})", s, v.size(), v.size() == 1 ? "" : "s");
  if (v.is_string()) return "the string " + s;
  if (v.is_null()) return "null";
  if (v.is_boolean()) return s;
  return s;
}

const char* quantity_example(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "a size with a unit, such as '80 GB' or '141 GiB'";
    case Dimension::kBandwidth: return "a bandwidth with a unit, such as '450 GB/s' or '400 Gb/s'";
    case Dimension::kFlopRate: return "a compute rate with a unit, such as '989 TFLOP/s'";
    case Dimension::kTime: return "a duration with a unit, such as '2.5 us' or '10 ms'";
  }
  return "a quantity with a unit";
}

// The smallest plausible value of each dimension: anything below is a unit slip (a
// bandwidth of 1e-300 B/s would make every plan "feasible" with an infinite step).
double quantity_minimum(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return 1e6;        // 1 MB
    case Dimension::kBandwidth: return 1e6;    // 1 MB/s
    case Dimension::kFlopRate: return 1e9;     // 1 GFLOP/s
    case Dimension::kTime: return 0.0;         // latencies: any positive value
  }
  return 0.0;
}
const char* quantity_minimum_text(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "1 MB";
    case Dimension::kBandwidth: return "1 MB/s";
    case Dimension::kFlopRate: return "1 GFLOP/s";
    case Dimension::kTime: return "0 s";
  }
  return "0";
}

std::optional<double> parse_quantity(std::string_view text, Dimension dim) {
  const std::string t = trim(text);
  std::size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.' || t[i] == 'e' || t[i] == 'E' ||
                          t[i] == '+' || t[i] == '-')) {
    // Stop at an 'e'/'E' that begins a unit (e.g. "EB") rather than an exponent.
    if ((t[i] == 'e' || t[i] == 'E') && (i + 1 >= t.size() || !(std::isdigit(static_cast<unsigned char>(t[i + 1])) || t[i + 1] == '-' || t[i + 1] == '+'))) break;
    ++i;
  }
  auto num = to_double(t.substr(0, i));
  if (!num) return std::nullopt;
  const std::string unit = trim(std::string_view(t).substr(i));
  struct U {
    const char* name;
    double scale;
  };
  static constexpr U bytes[] = {{"B", 1},          {"KB", 1e3},       {"MB", 1e6},        {"GB", 1e9},
                                {"TB", 1e12},      {"KiB", 1024.0},   {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                {"TiB", 1099511627776.0}};
  static constexpr U bw[] = {{"B/s", 1},      {"KB/s", 1e3},     {"MB/s", 1e6},    {"GB/s", 1e9},   {"TB/s", 1e12},
                             {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8}, {"Gbps", 1e9 / 8}, {"GBps", 1e9}};
  static constexpr U flops[] = {{"FLOP/s", 1},       {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
                                {"TFLOPS", 1e12},    {"PFLOPS", 1e15}, {"GFLOPS", 1e9}};
  static constexpr U time[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ns", 1e-9}};
  const U* begin = nullptr;
  std::size_t n = 0;
  switch (dim) {
    case Dimension::kBytes: begin = bytes; n = std::size(bytes); break;
    case Dimension::kBandwidth: begin = bw; n = std::size(bw); break;
    case Dimension::kFlopRate: begin = flops; n = std::size(flops); break;
    case Dimension::kTime: begin = time; n = std::size(time); break;
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (unit == begin[k].name) return *num * begin[k].scale;
  }
  return std::nullopt;
}

FieldReader::FieldReader(const json& obj, std::string file, ErrorSink& sink, std::string prefix)
    : obj_(&obj), file_(std::move(file)), sink_(&sink), prefix_(std::move(prefix)) {}

FieldReader root_reader(const json& doc, const std::string& file, ErrorSink& sink) {
  if (!doc.is_object()) sink.set(Error{file, "", "a mapping of fields at the top level", describe_value(doc)});
  static const json empty = json::object();
  return FieldReader(doc.is_object() ? doc : empty, file, sink);
}

std::string FieldReader::path(std::string_view key) const { return prefix_ + std::string(key); }

const json* FieldReader::get(std::string_view key) const {
  if (!obj_->is_object()) return nullptr;
  auto it = obj_->find(key);
  if (it == obj_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool FieldReader::has(std::string_view key) const { return get(key) != nullptr; }

void FieldReader::fail(std::string_view key, std::string expected, std::string found) const {
  sink_->set(Error{file_, path(key), std::move(expected), std::move(found)});
}

void FieldReader::fail_value(std::string_view key, std::string expected) const {
  const json* v = get(key);
  fail(key, std::move(expected), v ? describe_value(*v) : std::string("nothing (the field is missing)"));
}

namespace {
std::optional<std::int64_t> as_integer(const json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return v.get<std::int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}
std::string range_text(std::int64_t lo, std::int64_t hi) {
  if (hi == std::numeric_limits<std::int64_t>::max()) {
    if (lo == 1) return "a positive integer";
    if (lo == 0) return "a non-negative integer";
    return fmt::format("an integer >= {}", lo);
  }
  return fmt::format("an integer from {} to {}", lo, hi);
}
}  // namespace

std::optional<std::int64_t> FieldReader::opt_integer(std::string_view key, std::int64_t lo, std::int64_t hi) const {
  if (sink_->failed()) return std::nullopt;
  const json* v = get(key);
  if (!v) return std::nullopt;
  auto i = as_integer(*v);
  if (!i || *i < lo || *i > hi) {
    fail(key, range_text(lo, hi), describe_value(*v));
    return std::nullopt;
  }
  return i;
}

std::int64_t FieldReader::integer(std::string_view key, std::int64_t lo, std::int64_t hi) const {
  if (sink_->failed()) return lo;
  if (!has(key)) {
    fail(key, range_text(lo, hi), "nothing (the field is missing)");
    return lo;
  }
  return opt_integer(key, lo, hi).value_or(lo);
}

std::int64_t FieldReader::integer_or(std::string_view key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const {
  return opt_integer(key, lo, hi).value_or(fallback);
}

double FieldReader::number(std::string_view key, double lo, double hi) const {
  if (sink_->failed()) return lo;
  const json* v = get(key);
  const std::string want = fmt::format("a number from {} to {}", lo, hi);
  if (!v) {
    fail(key, want, "nothing (the field is missing)");
    return lo;
  }
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo || v->get<double>() > hi) {
    fail(key, want, describe_value(*v));
    return lo;
  }
  return v->get<double>();
}

double FieldReader::number_or(std::string_view key, double fallback, double lo, double hi) const {
  return has(key) ? number(key, lo, hi) : fallback;
}

bool FieldReader::boolean_or(std::string_view key, bool fallback) const {
  if (sink_->failed()) return fallback;
  const json* v = get(key);
  if (!v) return fallback;
  if (!v->is_boolean()) {
    fail(key, "true or false", describe_value(*v));
    return fallback;
  }
  return v->get<bool>();
}

std::string FieldReader::string(std::string_view key) const {
  if (sink_->failed()) return {};
  const json* v = get(key);
  if (!v || !v->is_string() || v->get<std::string>().empty()) {
    fail(key, "a non-empty string", v ? describe_value(*v) : "nothing (the field is missing)");
    return {};
  }
  return v->get<std::string>();
}

std::string FieldReader::string_or(std::string_view key, std::string fallback) const {
  return has(key) ? string(key) : fallback;
}

double FieldReader::quantity(std::string_view key, Dimension dim, double hi) const {
  if (sink_->failed()) return 1.0;
  const json* v = get(key);
  std::optional<double> q;
  if (v && v->is_string()) q = parse_quantity(v->get<std::string>(), dim);
  const double lo = quantity_minimum(dim);
  if (!q || !(*q > 0.0) || *q > hi || *q < lo) {
    std::string want = quantity_example(dim);
    if (q && *q > hi) want += " (implausibly large)";
    if (q && !(*q > 0.0)) want += " (positive)";
    if (q && *q > 0.0 && *q < lo) want += fmt::format(" (implausibly small: at least {})", quantity_minimum_text(dim));
    fail(key, want, v ? describe_value(*v) : "nothing (the field is missing)");
    return 1.0;
  }
  return *q;
}

double FieldReader::quantity_or(std::string_view key, Dimension dim, double fallback, double hi) const {
  return has(key) ? quantity(key, dim, hi) : fallback;
}

std::vector<std::int64_t> FieldReader::integer_list_or(std::string_view key, std::int64_t lo, std::int64_t hi) const {
  std::vector<std::int64_t> out;
  if (sink_->failed()) return out;
  const json* v = get(key);
  if (!v) return out;
  if (!v->is_array()) {
    fail(key, "a list of integers", describe_value(*v));
    return out;
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    auto x = as_integer((*v)[i]);
    if (!x || *x < lo || *x > hi) {
      fail(fmt::format("{}[{}]", key, i), range_text(lo, hi), describe_value((*v)[i]));
      return {};
    }
    out.push_back(*x);
  }
  return out;
}

std::vector<std::string> FieldReader::string_list_or(std::string_view key) const {
  std::vector<std::string> out;
  if (sink_->failed()) return out;
  const json* v = get(key);
  if (!v) return out;
  if (!v->is_array()) {
    fail(key, "a list of strings", describe_value(*v));
    return out;
  }
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      fail(fmt::format("{}[{}]", key, i), "a string", describe_value((*v)[i]));
      return {};
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

void FieldReader::reject_unknown(std::initializer_list<std::string_view> known) const {
  if (sink_->failed() || !obj_->is_object()) return;
  for (const auto& [k, v] : obj_->items()) {
    bool ok = false;
    for (auto n : known) ok = ok || (k == n);
    if (!ok) {
      std::string list;
      for (auto n : known) list += (list.empty() ? "" : ", ") + std::string(n);
      fail(k, "one of the known fields (" + list + ")", "an unknown field");
      return;
    }
  }
}

std::optional<FieldReader> FieldReader::object(std::string_view key, bool required) const {
  const json* v = get(key);
  if (!v) {
    if (required) fail(key, "an object", "nothing (the field is missing)");
    return std::nullopt;
  }
  if (!v->is_object()) {
    fail(key, "an object", describe_value(*v));
    return std::nullopt;
  }
  return FieldReader(*v, file_, *sink_, path(key) + ".");
}

}  // namespace shardwise
