#include "core/embedded_data.hpp"

#include <vector>

#include "core/names.hpp"

#include <filesystem>

#include "core/fields.hpp"

namespace shardwise {

std::string preset_names(std::span<const EmbeddedFile> presets) {
  std::string s;
  for (const auto& e : presets) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

Expected<InputText> preset_or_file(std::span<const EmbeddedFile> presets, const std::string& name_or_path, const char* flag,
                                   const char* what) {
  for (const auto& e : presets) {
    if (name_or_path == e.name) return InputText{e.name, e.path, e.text};
  }
  std::error_code ec;
  // a path that exists but is no regular file (a FIFO, a device) is read_text_file's to refuse, with the reason
  if (!std::filesystem::exists(name_or_path, ec) || std::filesystem::is_directory(name_or_path, ec)) {
    // no such file: a preset's name in other letter case is that preset (DeepSeek-V3, Chat-1K-1K)
    std::vector<std::string> names;
    for (const auto& e : presets) {
      if (lower_ascii(name_or_path) == lower_ascii(e.name)) return InputText{e.name, e.path, e.text};
      names.emplace_back(e.name);
    }
    return Error{flag, "", "a preset name (" + preset_names(presets) + ") or the path of " + what,
                 "'" + name_or_path + "'" + did_you_mean(name_or_path, names)};
  }
  auto text = read_text_file(name_or_path);
  if (!text) return text.error();
  return InputText{std::filesystem::path(name_or_path).stem().string(), name_or_path, std::move(text).value()};
}

}  // namespace shardwise
