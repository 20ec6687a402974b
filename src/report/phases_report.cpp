#include "report/phases_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/format.hpp"

namespace shardwise {
namespace {

nlohmann::json layout_json(const Plan& p) {
  return {{"tp", p.deg.tp}, {"pp", p.deg.pp}, {"ep", p.deg.ep}, {"attn_dp", p.deg.attn_dp}, {"replicas", p.deg.replicas},
          {"sharding", sharding_to_string(p.sharding)}};
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

std::string phases_serve_json(const PhasePlan& p, const std::string& serve_json) {
  nlohmann::json j = nlohmann::json::parse(serve_json);
  j["phases"] = {{"prefill", layout_json(p.prefill)}, {"decode", layout_json(p.decode)}, {"buffer_seqs", p.buffer_seqs}};
  return j.dump(2);
}

std::string phases_none_json(const std::string& why) { return nlohmann::json{{"found", false}, {"why_none", why}}.dump(2); }

std::string phases_launch_note() {
  return "no mainstream engine (vLLM, SGLang, TensorRT-LLM) switches one instance between a prefill layout and a decode layout: "
         "launch starts the nearest runnable plan (the best static plan, or the disaggregated split on two pools)";
}

std::string phase_cost_text(const PhasePlan& p, const PhaseCost& c, double host_bytes_per_gpu) {
  std::string s;
  s += fmt::format("phases       prefill {} -> decode {}\n", layout_label(p.prefill), layout_label(p.decode));
  if (c.is_static) {
    s += "note         the two layouts are equal: nothing switches, the static plan runs\n";
    s += fmt::format("throughput   {:.1f} output tokens/s per GPU (the static plan, batch {})\n", c.metrics.output_tok_s_per_gpu, c.metrics.batch);
    return s;
  }
  if (!c.metrics.feasible()) {
    s += fmt::format("infeasible   {}\n", c.metrics.reason);
    return s;
  }
  {
    s += fmt::format("buffer       {} sequences per round ({} per GPU of KV cache in host memory; {} allotted: --host-buffer-gib)\n",
                     grouped(c.buffer_seqs), si_bytes(Bytes(c.host_kv_bytes_per_gpu)), si_bytes(Bytes(host_bytes_per_gpu)));
    s += fmt::format("throughput   {:.1f} output tokens/s per GPU (phase plan)\n", c.metrics.output_tok_s_per_gpu);
    s += fmt::format("decode       {} sequences at once per instance, TPOT {}; weights {}\n", c.decode_batch, ms_text(c.metrics.tpot_s * 1e3),
                     c.resident ? "of both layouts resident on the GPUs" : "reloaded from host memory at each switch");
    s += fmt::format("round        {} = prefill {} (KV offload {}, overlapped) + decode {} (KV reload {}, overlapped) + first batch {}"
                     " + KV re-layout {} + weights {} + 2 switches {}\n",
                     ms_text(c.round_s * 1e3), ms_text(c.prefill_s * 1e3), ms_text(c.kv_offload_s * 1e3), ms_text(c.decode_s * 1e3),
                     ms_text(c.kv_reload_s * 1e3), ms_text(c.kv_first_s * 1e3), ms_text(c.kv_relayout_s * 1e3), ms_text(c.weights_s * 1e3),
                     ms_text(c.switch_s * 1e3));
  }
  return s;
}

std::string phases_text(const PhaseSearchResult& r, double host_bytes_per_gpu) {
  std::string s;
  const double st = r.best_static ? r.best_static->static_metrics.output_tok_s_per_gpu : 0.0;
  if (!r.found) {
    s += fmt::format("phases       none: {}\n", r.why_none);
  } else {
    s += phase_cost_text(r.best, r.cost, host_bytes_per_gpu);
  }
  if (r.best_static) {
    s += fmt::format("static       {}, batch {}: {:.1f} output tokens/s per GPU\n", layout_label(r.best_static->plan), r.best_static->static_metrics.batch, st);
  }
  if (r.disagg) {
    s += fmt::format("disaggregated {} GPUs prefill ({}) + {} GPUs decode ({}): {:.1f} output tokens/s per GPU (closed form, KV transfer overlapped)\n",
                     r.disagg->prefill_gpus, layout_label(r.disagg->prefill), r.disagg->decode_gpus, layout_label(r.disagg->decode), r.disagg->output_tok_s_per_gpu);
  }
  if (r.found) {
    const double ph = r.cost.metrics.output_tok_s_per_gpu, dis = r.disagg ? r.disagg->output_tok_s_per_gpu : 0.0;
    const bool beats = ph > st && ph > dis;
    s += fmt::format("verdict      phase plan / best static = {:.3f}x, / best disaggregated = {:.3f}x: {}\n", ratio(ph, st), ratio(ph, dis),
                     beats ? "the phase plan is the best of the three"
                           : (st >= dis ? "the static plan is better here" : "the disaggregated split is better here"));
  }
  s += fmt::format("searched     {} layouts, {} pairs of distinct layouts, {} evaluations in {:.2f} s\n", r.layouts, r.pairs, r.evaluations, r.seconds);
  s += fmt::format("launch       {}\n", phases_launch_note());
  return s;
}

std::string phases_json(const PhaseSearchResult& r, double host_bytes_per_gpu) {
  nlohmann::json j;
  j["found"] = r.found;
  j["host_bytes_per_gpu"] = host_bytes_per_gpu;
  if (r.found) {
    const PhaseCost& c = r.cost;
    j["phases"] = {{"prefill", layout_json(r.best.prefill)}, {"decode", layout_json(r.best.decode)}, {"buffer_seqs", c.buffer_seqs}};
    j["output_tok_s_per_gpu"] = c.metrics.output_tok_s_per_gpu;
    j["tpot_ms"] = c.metrics.tpot_s * 1e3;
    j["ttft_ms"] = c.metrics.ttft_s * 1e3;
    j["decode_batch"] = c.decode_batch;
    j["resident"] = c.resident;
    j["host_tier"] = c.host_tier;
    j["round_s"] = {{"total", c.round_s},          {"prefill", c.prefill_s},   {"kv_offload", c.kv_offload_s},
                    {"decode", c.decode_s},        {"kv_reload", c.kv_reload_s}, {"kv_first", c.kv_first_s},
                    {"kv_relayout", c.kv_relayout_s}, {"weights", c.weights_s}, {"switches", c.switch_s}};
    j["host_kv_bytes_per_gpu"] = c.host_kv_bytes_per_gpu;
  } else {
    j["why_none"] = r.why_none;
  }
  if (r.best_static) {
    j["static"] = {{"plan", layout_json(r.best_static->plan)},
                   {"batch", r.best_static->static_metrics.batch},
                   {"output_tok_s_per_gpu", r.best_static->static_metrics.output_tok_s_per_gpu}};
  }
  if (r.disagg) {
    j["disaggregated"] = {{"prefill", layout_json(r.disagg->prefill)},
                          {"decode", layout_json(r.disagg->decode)},
                          {"prefill_gpus", r.disagg->prefill_gpus},
                          {"decode_gpus", r.disagg->decode_gpus},
                          {"output_tok_s_per_gpu", r.disagg->output_tok_s_per_gpu}};
  }
  j["layouts"] = r.layouts;
  j["pairs"] = r.pairs;
  j["evaluations"] = r.evaluations;
  j["seconds"] = r.seconds;
  j["launch"] = phases_launch_note();
  return j.dump(2);
}

}  // namespace shardwise
