#include "report/plan_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/simulate.hpp"

namespace shardwise {
namespace {
using nlohmann::json;

std::string degrees_text(const Plan& p) {
  return fmt::format("tp {} x attn_dp {} x pp {} (ep {}), batch {}, replicas {}", p.deg.tp, p.deg.attn_dp, p.deg.pp, p.deg.ep, p.batch,
                     p.deg.replicas);
}
// The closest plan to feasible and the limit it broke, or why every plan was refused.
std::string closest_text(const PlanOutcome& o) {
  std::string out;
  if (o.closest && o.closest_metrics) {
    const Metrics& m = *o.closest_metrics;
    Plan p = *o.closest;
    p.batch = m.batch;
    if (m.feasible()) {  // a smaller batch than any the search tried fits
      out += fmt::format("closest      {} ({}): feasible at this batch, which the search did not try (raise --budget, or --search exact)\n",
                         degrees_text(p), sharding_to_string(p.sharding));
    } else {
      out += fmt::format("closest      {} ({}): {}\n", degrees_text(p), sharding_to_string(p.sharding), to_string(m.infeasible));
      out += fmt::format("why          {}\n", m.reason);
    }
  } else if (!o.invalid_example.empty()) {
    out += fmt::format("why          every plan evaluated broke a rule of the model or cluster, e.g. {}\n", o.invalid_example);
  }
  return out;
}
}  // namespace

// What stops the plan's batch from growing: the limit the next batch (one more sequence
// per attention group) breaks, or the batch the workload fixes.
std::string binding_constraint(const SimContext& ctx, const Plan& plan, const Metrics& m) {
  if (ctx.workload.batch) return fmt::format("the workload's batch ({})", *ctx.workload.batch);
  if (const std::int64_t cap = engine_batch_cap(ctx); cap > 0 && m.batch >= cap * scheduler_lanes(ctx.engine, plan.deg)) {
    return fmt::format("{}'s cap of {} running sequences {} (--max-num-seqs raises it)", ctx.engine.name, cap, running_cap_unit(ctx.engine, plan.deg));
  }
  Plan next = plan;
  next.batch = m.batch + plan.deg.attn_dp;
  const Metrics n = evaluate(ctx, next);
  switch (n.infeasible) {
    case Infeasible::kMemory: return fmt::format("memory: batch {} would need more than HBM ({})", next.batch, n.reason);
    case Infeasible::kTpotSlo: return fmt::format("the TPOT SLO: at batch {}, {}", next.batch, n.reason);
    case Infeasible::kTtftSlo: return fmt::format("the TTFT SLO: at batch {}, {}", next.batch, n.reason);
    case Infeasible::kInvalidPlan: return fmt::format("the plan's rules at batch {} ({})", next.batch, n.reason);
    case Infeasible::kNone: break;
  }
  return fmt::format("the search's batch values (batch {} would also run, at {:.1f} tokens/s per GPU)", next.batch, n.objective);
}

std::string plan_text(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o) {
  const SearchResult& s = o.search;
  std::string out =
      s.engine == "exact"
          ? fmt::format("search       exact optimum over {:.3g} joint configurations: {} grouped simulator evaluations in {:.2f} s{}\n",
                        o.space_size, s.calls, s.wall_s, s.stopped_by_time ? " (time limit: not proven optimal)" : "")
          : fmt::format("search       {} over {:.3g} joint configurations: {} calls ({} infeasible) in {:.2f} s{}\n", s.engine,
                        o.space_size, s.calls, s.invalid_calls, s.wall_s, s.stopped_by_time ? " (time limit)" : "");
  if (o.auto_search) {
    out += "choice       --search auto: exact, the certified optimum of the closed form (rl, rw, sa, ga: --search NAME)\n";
  }
  if (!s.batch_note.empty()) out += "refined      " + s.batch_note + " (as exact takes each winner's)\n";
  if (!s.overlap_note.empty()) out += "refined      " + s.overlap_note + " (docs/cost-model.md, \"Two-batch overlap\")\n";
  if (s.engine == "rl") {
    // rl runs no network (docs/search.md): its policy steps are uniform masked samples and elite mutations
    out += fmt::format("time split   proposals {:.2f} s (no network: a masked local search), simulator {:.2f} s; {} of {} calls from "
                       "policy steps\n", s.policy_s, s.simulator_s, s.policy_calls, s.calls);
  } else if (s.policy_s > 0) {
    out += fmt::format("time split   policy network {:.2f} s, simulator {:.2f} s; {} of {} calls from policy steps\n", s.policy_s,
                       s.simulator_s, s.policy_calls, s.calls);
  }
  if (!s.found || !o.metrics) {
    out += "result       no feasible plan was found";
    if (o.baseline.found) out += " (the Megatron baseline found one: see below)";
    out += "\n";
    out += closest_text(o);
  } else {
    if (s.engine != "exact") out += fmt::format("first best   at call {}\n", s.best_call);
    const Metrics& m = *o.metrics;
    const std::string body = simulate_text(ctx, file.plan, m, o.breakdown);
    // after the plan's lines: the whole deployment, and what stops a larger batch
    const auto cut = body.find("\nworkload");
    out += body.substr(0, cut + 1);
    const Degrees& d = file.plan.deg;
    const double total = (m.objective) * static_cast<double>(d.total_gpus());
    out += fmt::format("deployment   {:.1f} {} tokens/s on {} of the cluster's {} GPUs{}\n", total,
                       ctx.workload.mode == Mode::kPrefill ? "input" : "output", d.total_gpus(), ctx.cluster.num_gpus,
                       d.total_gpus() < ctx.cluster.num_gpus
                           ? fmt::format(" ({} idle: the objective is tokens/s per GPU used, and another instance of this shape does not fit them)", ctx.cluster.num_gpus - d.total_gpus())
                           : "");
    out += "bound by     " + binding_constraint(ctx, file.plan, m) + "\n";
    out += body.substr(cut + 1);
  }
  out += "\nbaseline     Megatron heuristic (Megatron sharding, degrees and batch exhaustive: " +
         fmt::format("{} calls, {:.2f} s)\n", o.baseline.calls, o.baseline.wall_s);
  if (o.baseline.found && o.baseline_metrics) {
    const Metrics& b = *o.baseline_metrics;
    out += fmt::format("             {}: {:.1f} tokens/s per GPU", degrees_text(o.baseline.best), b.objective);
    if (s.found && o.metrics && b.objective > 0) out += fmt::format("; chosen plan / Megatron = {:.3f}x", o.metrics->objective / b.objective);
    out += "\n";
  } else {
    out += "             no feasible Megatron plan\n";
  }
  if (!o.compared.empty()) {
    out += fmt::format("\n{:<10} {:>14} {:>10} {:>8} {:>10} {:>12} {:>8}\n", "engine", "best", "of chosen", "calls", "infeasible",
                       "best at call", "wall s");
    // the searches compared as they searched: the chosen one's value before the two-batch
    // overlap its plan gained after the search (the compared engines' winners are not refined so)
    const double chosen = s.searched_value();
    const bool overlapped = chosen != s.best_value;
    std::vector<const SearchResult*> runs{&s};
    for (const auto& r : o.compared) runs.push_back(&r);
    for (const SearchResult* r : runs) {
      const double v = r == &s ? chosen : r->best_value;
      out += fmt::format("{:<10} {:>14.1f} {:>9.1f}% {:>8} {:>10} {:>12} {:>8.2f}\n", r->engine, v, chosen > 0 ? 100.0 * v / chosen : 0.0,
                         r->calls, r->invalid_calls, r->best_call, r->wall_s);
    }
    if (overlapped) {
      out += fmt::format("(the searches' own results: the chosen plan then gained the two-batch overlap, {:.1f} tokens/s per GPU, which none "
                         "of the rows includes)\n",
                         s.best_value);
    }
  }
  return out;
}

std::string plan_json(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o) {
  json j;
  j["plan"] = json::parse(plan_to_json(file));
  j["found"] = o.search.found;
  j["engine"] = o.search.engine;
  j["search_auto"] = o.auto_search;  // --search auto chose the engine
  j["space_size"] = o.space_size;
  j["evaluations"] = o.search.calls;
  j["invalid_evaluations"] = o.search.invalid_calls;
  j["first_best_call"] = o.search.best_call;
  j["wall_s"] = o.search.wall_s;
  j["policy_s"] = o.search.policy_s;
  j["simulator_s"] = o.search.simulator_s;
  j["policy_calls"] = o.search.policy_calls;
  j["stopped_by_time_limit"] = o.search.stopped_by_time;
  j["two_batch_overlap_added"] = !o.search.overlap_note.empty();  // by refine_two_batch_overlap, after the search
  // the search's own best before that overlap (what `compared` runs are comparable with); null without it
  j["search_objective_before_overlap"] = o.search.searched_value() == o.search.best_value ? json(nullptr) : json(o.search.searched_value());
  j["metrics"] = o.metrics ? json::parse(simulate_json(ctx, file.plan, *o.metrics, o.breakdown)) : json(nullptr);
  if (!o.search.found) {
    json c;
    if (o.closest && o.closest_metrics) {
      PlanFile cf = file;
      cf.plan = *o.closest;
      cf.plan.batch = o.closest_metrics->batch;
      c["plan"] = json::parse(plan_to_json(cf));
      c["infeasible"] = to_string(o.closest_metrics->infeasible);
      c["reason"] = o.closest_metrics->reason;
    } else if (!o.invalid_example.empty()) {
      c["infeasible"] = to_string(Infeasible::kInvalidPlan);
      c["reason"] = o.invalid_example;
    }
    j["closest"] = c.empty() ? json(nullptr) : c;
  }
  json base;
  base["found"] = o.baseline.found;
  base["evaluations"] = o.baseline.calls;
  base["wall_s"] = o.baseline.wall_s;
  if (o.baseline.found && o.baseline_metrics) {
    PlanFile bf = file;
    bf.plan = o.baseline.best;
    base["plan"] = json::parse(plan_to_json(bf));
    base["throughput_tok_s_per_gpu"] = o.baseline_metrics->output_tok_s_per_gpu;
    base["objective"] = o.baseline_metrics->objective;
    if (o.metrics && o.baseline_metrics->objective > 0) j["ratio_vs_megatron"] = o.metrics->objective / o.baseline_metrics->objective;
  }
  j["baseline_megatron"] = base;
  json cmp = json::array();
  for (const auto& r : o.compared) {
    cmp.push_back({{"engine", r.engine}, {"found", r.found}, {"best_objective", r.best_value}, {"evaluations", r.calls},
                   {"invalid_evaluations", r.invalid_calls}, {"first_best_call", r.best_call}, {"wall_s", r.wall_s}});
  }
  j["compared"] = cmp;
  return j.dump(2);
}

}  // namespace shardwise
