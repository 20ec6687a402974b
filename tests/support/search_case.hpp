// A search case for the tests: the simulator context and the search space of a model,
// cluster and workload preset, with the cluster GPU's calibration. One helper instead
// of a copy per test file.
#pragma once
#include <string>

#include <gtest/gtest.h>

#include "model/loader.hpp"
#include "search/search.hpp"

namespace shardwise::test_support {

struct SearchCase {
  SimContext ctx;
  SearchSpace space;
};

inline SearchCase make_search_case(const std::string& model, const std::string& cluster, const std::string& workload) {
  auto m = load_model(model);
  auto c = cluster_from_preset(cluster);
  auto w = load_workload(workload);
  EXPECT_TRUE(m.ok() && c.ok() && w.ok()) << model << " " << cluster << " " << workload;
  return {make_context(*m, *c, *w, cost_params_for(c->gpu.name)), make_space(*m, *c, *w)};
}

}  // namespace shardwise::test_support
