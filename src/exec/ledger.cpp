#include "exec/ledger.hpp"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "cost/params.hpp"
#include "cost/simulator.hpp"

namespace shardwise::exec {

std::string to_string(const LedgerKey& k) {
  const std::string where = k.layer < 0 ? std::string("model") : fmt::format("layer {}", k.layer);
  return fmt::format("{} {} {} {} over {}", to_string(k.phase), where, k.op, to_string(k.kind), k.group);
}

Expected<Ledger> expected_ledger(const Case& c) {
  const ClusterSpec cluster = exec_cluster(c.ranks());
  Ledger out;
  const std::int64_t w = c.plan.deg.stage_width(), pp = c.plan.deg.pp;
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    const double steps = phase == Phase::kPrefill ? 1.0 : static_cast<double>(c.decode_steps);
    if (steps == 0) continue;
    const SimContext ctx = make_context(c.model, cluster, exec_workload(c, phase == Phase::kPrefill ? Mode::kPrefill : Mode::kDecode),
                                        cost_params_for(cluster.gpu.name));
    std::int32_t m = 0;
    const Breakdown bd = breakdown_step(ctx, c.plan, phase, c.plan.batch, c.isl, &m);
    if (m != c.m) {
      return Error{"the simulator", "micro_batches", fmt::format("the case's {}", c.m), std::to_string(m)};
    }
    const double per_run = static_cast<double>(w) * static_cast<double>(m) * steps;
    for (const OpCost& op : bd.ops) {
      for (const CollRecord& r : op.colls) {
        if (op.layer_class < 0) {
          const double times = op.op == "pp_send_recv" ? static_cast<double>(pp - 1) : 1.0;
          out[LedgerKey{phase, -1, op.op, r.kind, r.group}] += per_run * times * r.bytes_per_gpu;
          continue;
        }
        for (std::size_t i = 0; i < ctx.graph.layer_class.size(); ++i) {
          if (ctx.graph.layer_class[i] != op.layer_class) continue;
          out[LedgerKey{phase, static_cast<std::int64_t>(i), op.op, r.kind, r.group}] += per_run * r.bytes_per_gpu;
        }
      }
    }
  }
  return out;
}

bool LedgerRow::match() const { return std::abs(measured - expected) <= 1e-9 * std::max(1.0, std::abs(expected)); }

std::vector<LedgerRow> compare_ledgers(const Ledger& measured, const Ledger& expected) {
  std::map<LedgerKey, LedgerRow> rows;
  for (const auto& [k, v] : measured) {
    rows[k].key = k;
    rows[k].measured = v;
  }
  for (const auto& [k, v] : expected) {
    rows[k].key = k;
    rows[k].expected = v;
  }
  std::vector<LedgerRow> out;
  for (auto& [k, r] : rows) out.push_back(r);
  return out;
}

std::string serialize(const Ledger& l) {
  std::string s;
  for (const auto& [k, v] : l) {
    s += fmt::format("{} {} {} {} {} {:.17g}\n", static_cast<int>(k.phase), k.layer, k.op, static_cast<int>(k.kind), k.group, v);
  }
  return s;
}

Ledger deserialize_ledger(const std::string& text) {
  Ledger l;
  std::istringstream in(text);
  int phase = 0, kind = 0;
  LedgerKey k;
  double v = 0;
  while (in >> phase >> k.layer >> k.op >> kind >> k.group >> v) {
    k.phase = static_cast<Phase>(phase);
    k.kind = static_cast<CollKind>(kind);
    l[k] += v;
  }
  return l;
}

}  // namespace shardwise::exec
