// Shared by the simulator's tests: a decode workload, a context from preset names,
// a Megatron-style plan of given tp and batch.
#pragma once
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "cost/engine.hpp"
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

// A workload of fixed lengths in `mode` (a serving one's arrivals and every format are the caller's).
inline shardwise::Workload fixed_workload(shardwise::Mode mode, std::int64_t isl, std::int64_t osl) {
  shardwise::Workload w;
  w.name = mode == shardwise::Mode::kServe ? "s" : "o";
  w.mode = mode;
  w.isl = isl;
  w.osl = osl;
  return w;
}
inline shardwise::Workload serve_workload(std::int64_t isl, std::int64_t osl) { return fixed_workload(shardwise::Mode::kServe, isl, osl); }

// A context with or without the kernel tables, under an engine profile (nullptr or "": the generic engine).
inline shardwise::SimContext ctx_with(const std::string& model, const std::string& cluster, const shardwise::Workload& w, bool tables,
                                      const char* engine) {
  auto m = shardwise::load_model(model);
  auto c = shardwise::cluster_from_preset(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  shardwise::CostParams p = shardwise::cost_params_for(c->gpu.name);
  p.kernel_tables = tables;
  shardwise::EngineTraits e;
  if (engine != nullptr && *engine != '\0') {
    auto t = shardwise::load_engine_profile(engine);
    EXPECT_TRUE(t.ok());
    if (t) e = *t;
  }
  return shardwise::make_context(*m, *c, w, p, e);
}

inline shardwise::SimContext ctx_for(const std::string& model, const std::string& cluster, const shardwise::Workload& w) {
  auto m = shardwise::load_model(model);
  auto c = shardwise::cluster_from_preset(cluster);
  EXPECT_TRUE(m.ok() && c.ok());
  return shardwise::make_context(*m, *c, w, shardwise::cost_params_for(c->gpu.name));
}

// The same context on faster silicon, each built whole by make_context (its derived terms
// too): 1.5x every link's bandwidth, 1.5x the HBM bandwidth, 1.5x every tensor-core peak.
inline std::array<shardwise::SimContext, 3> faster_silicon(const shardwise::SimContext& base) {
  shardwise::ClusterSpec net = base.cluster, hbm = base.cluster, flops = base.cluster;
  for (auto& l : net.levels) l.bandwidth = l.bandwidth * 1.5;
  hbm.gpu.hbm_bandwidth = hbm.gpu.hbm_bandwidth * 1.5;
  flops.gpu.bf16 = flops.gpu.bf16 * 1.5;
  flops.gpu.fp8 = flops.gpu.fp8 * 1.5;
  flops.gpu.fp4 = flops.gpu.fp4 * 1.5;
  const auto rebuilt = [&](const shardwise::ClusterSpec& c) { return shardwise::make_context(base.model, c, base.workload, base.params, base.engine); };
  return {rebuilt(net), rebuilt(hbm), rebuilt(flops)};
}

inline shardwise::Plan plan(std::int32_t tp, std::int64_t batch, shardwise::Sharding s = shardwise::megatron_sharding()) {
  shardwise::Plan p;
  p.deg.tp = tp;
  p.batch = batch;
  p.sharding = s;
  return p;
}

// Seesaw's case (docs/phases.md): Llama-2-70B in bf16 on 8 A100-40GB linked by PCIe 4.0 x8
// (pcie_gbs GB/s per GPU, no NVLink), 2,542 prompt and 297 output tokens, no SLOs, in `mode`.
inline shardwise::SimContext seesaw_pcie_ctx(shardwise::Mode mode, double pcie_gbs = 17.18) {
  auto m = shardwise::load_model("llama-2-70b");
  auto c = shardwise::parse_cluster_yaml(
      "gpu: {base: a100-40gb, pcie_bandwidth: " + std::to_string(pcie_gbs) + " GB/s}\nnvlink_domain: 1\nnum_gpus: 8\n", "test");
  EXPECT_TRUE(m.ok() && c.ok());
  shardwise::Workload w;
  w.name = "arxiv";
  w.mode = mode;
  w.isl = 2542;
  w.osl = 297;
  w.weights_dtype = shardwise::DType::kBf16;
  return shardwise::make_context(*m, *c, w, shardwise::cost_params_for("a100-40gb"));
}

}  // namespace test_support
