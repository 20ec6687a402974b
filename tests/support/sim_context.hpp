// Shared by the simulator's tests: a decode workload, a context from preset names,
// a Megatron-style plan of given tp and batch.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "model/loader.hpp"

namespace test_support {

inline shardwise::Workload decode(std::int64_t context) {
  shardwise::Workload w;
  w.name = "t";
  w.mode = shardwise::Mode::kDecode;
  w.context = context;
  return w;
}

inline shardwise::SimContext ctx_for(const std::string& model, const std::string& cluster, const shardwise::Workload& w) {
  auto m = shardwise::load_model(model);
  auto c = shardwise::cluster_from_preset(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  return shardwise::make_context(*m, *c, w, shardwise::cost_params_for(c->gpu.name));
}

inline shardwise::Plan plan(std::int32_t tp, std::int64_t batch, shardwise::Sharding s = shardwise::megatron_sharding()) {
  shardwise::Plan p;
  p.deg.tp = tp;
  p.batch = batch;
  p.sharding = s;
  return p;
}

}  // namespace test_support
