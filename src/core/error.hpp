// Errors for bad input (the first of the three tiers in ARCHITECTURE.md):
// every loader returns Expected<T>, whose error names the file, the field, what
// was expected and what was found. Library code never exits or aborts on input.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace shardwise {

struct Error {
  std::string file;      // file path or a label such as "preset 'h100x8'" or "--batch"
  std::string field;     // dotted field path ("topology[1].bandwidth"); empty for whole-file errors
  std::string expected;  // what was expected
  std::string found;     // what was found (may be empty)

  // "<file>: field '<field>': expected <expected>, found <found>"
  [[nodiscard]] std::string message() const;
};

// The text with control bytes escaped (\n, \t, \r, \xNN): input as typed, safe to print
// to a terminal (no ANSI escapes, no line breaks that forge output).
std::string printable(std::string_view s);

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Error e) : v_(std::move(e)) {}      // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  [[nodiscard]] const T& value() const& { return std::get<0>(v_); }
  [[nodiscard]] T& value() & { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Error> v_;
};

// An always-on check for broken invariants (the second tier): a bug, not bad input.
// It throws InternalError, which the CLI and the Python module turn into exit code 1
// (or an exception) with the message: never a signal.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};
[[noreturn]] void invariant_failed(const char* expr, const char* file, int line, const char* msg);
#define SW_CHECK(cond, msg)                                                       \
  do {                                                                            \
    if (!(cond)) ::shardwise::invariant_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)

}  // namespace shardwise
