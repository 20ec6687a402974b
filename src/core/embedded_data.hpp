// Preset files compiled into the binary (generated from data/ by cmake/EmbedData.cmake).
#pragma once
#include <span>
#include <string>

#include "core/error.hpp"

namespace shardwise {
struct EmbeddedFile {
  const char* name;  // preset name, the file name without extension
  const char* path;  // repository-relative path, used in messages
  const char* text;  // file contents
};
std::span<const EmbeddedFile> embedded_models();
std::span<const EmbeddedFile> embedded_workloads();
std::span<const EmbeddedFile> embedded_calibration();  // one file per GPU silicon
std::span<const EmbeddedFile> embedded_engines();      // one profile per serving engine
std::span<const EmbeddedFile> embedded_prices();       // USD per GPU-hour (sweep)
std::span<const EmbeddedFile> embedded_silicon();      // kernel tables (data/silicon/*.csv)

// "a, b, c": the preset names, for messages and listings.
std::string preset_names(std::span<const EmbeddedFile> presets);

// The text behind a command-line value that is a preset name or a file path.
struct InputText {
  std::string name;  // the preset name or the file's stem
  std::string path;  // where it came from, for messages
  std::string text;
};
// `flag` names the option in the error ("--model"), `what` the file kind ("a config.json").
Expected<InputText> preset_or_file(std::span<const EmbeddedFile> presets, const std::string& name_or_path, const char* flag,
                                   const char* what);
}  // namespace shardwise
