// Output files written whole or not at all (ARCHITECTURE.md: "Files are written whole or
// not at all"): the text goes to a temporary file in the target's own folder and replaces
// the target only after every byte was written, flushed and closed. A target that exists and
// is not a regular file (/dev/stdout, /dev/full, a FIFO) is written in place, every write
// checked. Every failure is an Error naming the path; the old file is then left untouched.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace shardwise {

// Writes `text` to `path` whole (see above). `label` names the flag in the error
// ("--out"); the error's file is the path as typed.
std::optional<Error> write_file_whole(const std::string& path, std::string_view text, const std::string& label = "");

// Two output flags that name one file (the same path, or two names of one existing file):
// the first clash as an Error naming both flags, else nullopt. Each entry is (flag, path);
// empty paths are not outputs.
std::optional<Error> distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Standard output flushed and checked: an Error when any write to it failed (a full disk, a
// closed pipe), else nullopt.
std::optional<Error> flush_stdout();

}  // namespace shardwise
