// Typed field reading with precise messages, shared by every loader. A loader
// reads all its fields through a FieldReader; the first failure is latched in
// an ErrorSink (later reads become no-ops that return the fallback) and the
// loader returns it once at the end. YAML documents are converted to the same
// JSON value type first (parse_yaml_text), so one code path serves both.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"
#include "core/units.hpp"

namespace shardwise {

// Parses JSON text; a syntax error names the file, line and column.
Expected<nlohmann::json> parse_json_text(std::string_view text, const std::string& file);
// Parses one YAML document into a JSON value: plain scalars become integers,
// floats, booleans or null where they read as such; quoted scalars stay strings.
Expected<nlohmann::json> parse_yaml_text(std::string_view text, const std::string& file);
// Whether JSON text nests at most 64 arrays/objects deep (strings skipped): checked before a
// parse, so that a deep document is neither built nor recursed into.
bool json_nesting_within_limit(std::string_view text);
// Reads a whole file; an unreadable file, a directory or a file over kMaxInputFileBytes
// is an Error naming it.
constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;
Expected<std::string> read_text_file(const std::string& path);

// Renders a JSON value for a "found ..." clause: short and typed.
std::string describe_value(const nlohmann::json& v);

// Parses "450 GB/s", "80 GiB", "989 TFLOP/s", "2.5 us" into SI values.
enum class Dimension { kBytes, kBandwidth, kFlopRate, kTime };
std::optional<double> parse_quantity(std::string_view text, Dimension dim);
const char* quantity_example(Dimension dim);
// The smallest plausible value of a dimension (FieldReader::quantity refuses less).
double quantity_minimum(Dimension dim);
const char* quantity_minimum_text(Dimension dim);

struct ErrorSink {
  std::optional<Error> first;
  void set(Error e) {
    if (!first) first = std::move(e);
  }
  [[nodiscard]] bool failed() const { return first.has_value(); }
};

class FieldReader {
 public:
  FieldReader(const nlohmann::json& obj, std::string file, ErrorSink& sink, std::string prefix = "");

  [[nodiscard]] bool has(std::string_view key) const;  // present and not null
  [[nodiscard]] const nlohmann::json* get(std::string_view key) const;
  [[nodiscard]] std::string path(std::string_view key) const;  // prefix + key
  [[nodiscard]] const std::string& file() const { return file_; }
  void fail(std::string_view key, std::string expected, std::string found = {}) const;
  void fail_value(std::string_view key, std::string expected) const;  // found = the key's value

  std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const;
  std::optional<std::int64_t> opt_integer(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  double number(std::string_view key, double lo, double hi) const;
  double number_or(std::string_view key, double fallback, double lo, double hi) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  // A quantity with a unit ("450 GB/s"); must lie in (0, hi].
  double quantity(std::string_view key, Dimension dim, double hi) const;
  double quantity_or(std::string_view key, Dimension dim, double fallback, double hi) const;
  std::vector<std::int64_t> integer_list_or(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  std::vector<std::string> string_list_or(std::string_view key) const;
  // Fails if the object has keys outside `known` (catches typos in our own formats).
  void reject_unknown(std::initializer_list<std::string_view> known) const;

  // A reader over a nested object (required / optional).
  [[nodiscard]] std::optional<FieldReader> object(std::string_view key, bool required) const;
  [[nodiscard]] ErrorSink& sink() const { return *sink_; }

 private:
  const nlohmann::json* obj_;
  std::string file_;
  ErrorSink* sink_;
  std::string prefix_;
};

// A reader over a whole document that must be an object (else the sink fails).
FieldReader root_reader(const nlohmann::json& doc, const std::string& file, ErrorSink& sink);

}  // namespace shardwise
