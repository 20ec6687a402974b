#include "core/names.hpp"

#include <algorithm>
#include <cctype>

namespace shardwise {

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t edit_distance(std::string_view a_in, std::string_view b_in) {
  const std::string a = lower_ascii(a_in), b = lower_ascii(b_in);
  const std::size_t n = a.size(), m = b.size();
  // optimal string alignment: three rows of the dynamic programme
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[m];
}

std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& known) {
  if (typed.empty() || typed.size() > 200) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_d = 0;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(typed, k);
    const std::size_t allowed = std::max<std::size_t>(2, std::max(typed.size(), k.size()) / 3);
    if (d > allowed) continue;
    if (!best || d < best_d) {
      best = k;
      best_d = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& known) {
  const auto c = closest_name(typed, known);
  return c ? " (did you mean " + *c + "?)" : "";
}

}  // namespace shardwise
