// Preset files compiled into the binary (generated from data/ by cmake/EmbedData.cmake).
#pragma once
#include <span>

namespace shardwise {
struct EmbeddedFile {
  const char* name;  // preset name, the file name without extension
  const char* path;  // repository-relative path, used in messages
  const char* text;  // file contents
};
std::span<const EmbeddedFile> embedded_models();
std::span<const EmbeddedFile> embedded_workloads();
std::span<const EmbeddedFile> embedded_calibration();  // one file per GPU type
}  // namespace shardwise
