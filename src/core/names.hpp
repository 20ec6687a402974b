// Names typed by a person: case-insensitive matches and the closest known name for a
// "did you mean" hint (presets, GPUs, engines, flags).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardwise {

std::string lower_ascii(std::string_view s);
// The edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The known name closest to `typed` when it is close enough to be a slip: at most 2 edits, or
// a third of the longer name's length; the first of equally close names. nullopt otherwise.
std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& known);
// " (did you mean X?)" for the closest name, or "".
std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known);

}  // namespace shardwise
