// Reading a printed shell command back (the launch and benchmark tests): its words, with the
// single quotes of shell_quote removed, and its flags with their values.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace test_support {

// The words of the first command in `text` that starts with `first` (continuation lines joined).
inline std::vector<std::string> command_words(const std::string& text, const std::string& first) {
  const auto at = text.find(first);
  EXPECT_NE(at, std::string::npos) << first;
  std::vector<std::string> out;
  if (at == std::string::npos) return out;
  std::string cmd;  // the command's lines up to the first one without a continuation
  for (std::size_t i = at; i < text.size(); ++i) {
    if (text[i] == '\n' && (i == 0 || text[i - 1] != '\\')) break;
    cmd += text[i];
  }
  std::string w;
  bool quoted = false;
  for (const char c : cmd + " ") {
    if (c == '\'') {
      quoted = !quoted;
    } else if (!quoted && (c == ' ' || c == '\n' || c == '\\')) {
      if (!w.empty()) out.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  return out;
}

// Each --flag of that command with the word after it ("" when the next word is another flag).
inline std::map<std::string, std::string> command_flags(const std::string& text, const std::string& first) {
  const std::vector<std::string> words = command_words(text, first);
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) continue;
    const bool value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
    out[words[i]] = value ? words[i + 1] : "";
  }
  return out;
}

}  // namespace test_support
