#include "model/model_spec.hpp"

#include <algorithm>

namespace shardwise {

std::int64_t ModelSpec::num_moe_layers() const {
  return static_cast<std::int64_t>(std::count(layer_is_moe.begin(), layer_is_moe.end(), true));
}

std::vector<LayerClass> ModelSpec::layer_classes() const {
  std::vector<LayerClass> out;
  for (std::size_t i = 0; i < layer_is_moe.size(); ++i) {
    const LayerClass key{layer_is_moe[i], layer_window[i], 0};
    auto it = std::find_if(out.begin(), out.end(), [&](const LayerClass& c) { return c.moe == key.moe && c.window == key.window; });
    if (it == out.end()) {
      out.push_back(key);
      it = out.end() - 1;
    }
    ++it->count;
  }
  return out;
}

const char* to_string(AttentionKind k) { return k == AttentionKind::kMla ? "MLA" : "GQA"; }

}  // namespace shardwise
