#include "report/sweep_report.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/svg.hpp"

namespace shardwise {
namespace {
std::string shape(const Plan& p) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp{}", d.tp);
  if (d.attn_dp > 1) s += fmt::format(" dp{}", d.attn_dp);
  if (d.pp > 1) s += fmt::format(" pp{}", d.pp);
  if (d.ep > 1) s += fmt::format(" ep{}", d.ep);
  if (d.replicas > 1) s += fmt::format(" x{}", d.replicas);
  if (p.two_batch_overlap) s += " tbo";
  return s;
}
std::string or_auto(const std::string& s) { return s.empty() ? "auto" : s; }
std::string or_any(const std::string& s) { return s.empty() ? "generic" : s; }
}  // namespace

std::string sweep_text(const std::string& model, const std::string& workload, const std::vector<SweepPoint>& points) {
  std::string s = fmt::format("sweep        {} at {}: {} points (best plan at each; * the fewest GPUs of a type within the SLOs)\n\n", model,
                              workload, points.size());
  s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<20} {:>5} {:>10} {:>11} {:>8} {:>9} {:>9} {:>9}\n", "gpu", "GPUs", "dtype", "engine", "plan",
                   "used", "tok/s/GPU", "total tok/s", "TPOT ms", "TTFT ms", "GB/GPU", "$/M tok");
  for (const SweepPoint& p : points) {
    if (!p.found) {
      s += fmt::format("{:<6} {:>5} {:<6} {:<8} no plan: {}\n", p.gpu, p.count, or_auto(p.dtype), or_any(p.engine), p.reason);
      continue;
    }
    const Metrics& m = p.metrics;
    const double total = m.objective * static_cast<double>(p.plan.deg.total_gpus());
    s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<20} {:>5} {:>10.1f} {:>11.0f} {:>8.2f} {:>9.1f} {:>9.1f} {:>9}{}\n", p.gpu, p.count, or_auto(p.dtype),
                     or_any(p.engine), shape(p.plan), p.plan.deg.total_gpus(), m.objective, total, m.tpot_s * 1e3, m.ttft_s * 1e3,
                     m.memory.total().value() / 1e9, p.usd_per_mtok > 0 ? fmt::format("{:.3f}", p.usd_per_mtok) : "-", p.fewest ? " *" : "");
  }
  return s;
}

std::string sweep_csv(const std::vector<SweepPoint>& points) {
  std::string s = "gpu,gpus,dtype,engine,found,tp,pp,ep,attn_dp,replicas,batch,gpus_used,tok_s_per_gpu,total_tok_s,tpot_ms,ttft_ms,"
                  "memory_gb_per_gpu,usd_per_mtok,fewest,two_batch_overlap,reason\n";
  for (const SweepPoint& p : points) {
    const Degrees& d = p.plan.deg;
    const Metrics& m = p.metrics;
    std::string reason = p.reason;
    for (char& c : reason) c = (c == ',' || c == '\n') ? ';' : c;
    if (p.found) {
      s += fmt::format("{},{},{},{},1,{},{},{},{},{},{},{},{:.3f},{:.1f},{:.4f},{:.3f},{:.3f},{:.5f},{},{},\n", p.gpu, p.count, or_auto(p.dtype),
                       or_any(p.engine), d.tp, d.pp, d.ep, d.attn_dp, d.replicas, m.batch, d.total_gpus(), m.objective,
                       m.objective * static_cast<double>(d.total_gpus()), m.tpot_s * 1e3, m.ttft_s * 1e3, m.memory.total().value() / 1e9,
                       p.usd_per_mtok, p.fewest ? 1 : 0, p.plan.two_batch_overlap ? 1 : 0);
    } else {
      s += fmt::format("{},{},{},{},0,,,,,,,,,,,,,,0,0,{}\n", p.gpu, p.count, or_auto(p.dtype), or_any(p.engine), reason);
    }
  }
  return s;
}

std::string sweep_svg(const std::string& title, const std::vector<SweepPoint>& points) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};
  svg::XyChart c;
  c.id = "sweep";
  c.title = title;
  c.x_label = "GPUs in the cluster";
  c.y_label = "USD per million output tokens";
  c.log_x = true;
  std::vector<std::string> keys;
  for (const SweepPoint& p : points) {
    const std::string key = p.gpu + (p.dtype.empty() ? "" : " " + p.dtype) + (p.engine.empty() ? "" : " " + p.engine);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  for (std::size_t k = 0; k < keys.size(); ++k) {
    svg::XySeries line;
    line.name = keys[k];
    line.color = colors[k % 8];
    line.kind = svg::XySeries::kLine;
    svg::XySeries dots = line;
    dots.kind = svg::XySeries::kDots;
    dots.name = keys[k] + " points";
    for (const SweepPoint& p : points) {
      const std::string key = p.gpu + (p.dtype.empty() ? "" : " " + p.dtype) + (p.engine.empty() ? "" : " " + p.engine);
      if (key != keys[k] || !p.found || p.usd_per_mtok <= 0) continue;
      line.x.push_back(static_cast<double>(p.count));
      line.y.push_back(p.usd_per_mtok);
      dots.x.push_back(static_cast<double>(p.count));
      dots.y.push_back(p.usd_per_mtok);
      dots.tips.push_back(fmt::format("{} x{}: {} at {:.1f} tok/s/GPU, ${:.3f}/M tokens{}", p.gpu, p.count, shape(p.plan), p.metrics.objective,
                                      p.usd_per_mtok, p.fewest ? " (fewest GPUs)" : ""));
    }
    c.series.push_back(line);
    c.series.push_back(dots);
  }
  c.empty_note = "no point with a plan and a price";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg::xy_chart(c);
}

std::string sweep_json(const std::string& model, const std::string& workload, const std::vector<SweepPoint>& points) {
  using nlohmann::json;
  json arr = json::array();
  for (const SweepPoint& p : points) {
    json j{{"gpu", p.gpu}, {"gpus", p.count}, {"dtype", or_auto(p.dtype)}, {"engine", or_any(p.engine)}, {"found", p.found}};
    if (p.found) {
      const Degrees& d = p.plan.deg;
      j["degrees"] = {{"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}, {"attn_dp", d.attn_dp}, {"replicas", d.replicas}};
      j["two_batch_overlap"] = p.plan.two_batch_overlap;
      j["batch"] = p.metrics.batch;
      j["gpus_used"] = d.total_gpus();
      j["tok_s_per_gpu"] = p.metrics.objective;
      j["total_tok_s"] = p.metrics.objective * static_cast<double>(d.total_gpus());
      j["tpot_ms"] = p.metrics.tpot_s * 1e3;
      j["ttft_ms"] = p.metrics.ttft_s * 1e3;
      j["memory_gb_per_gpu"] = p.metrics.memory.total().value() / 1e9;
      j["usd_per_mtok"] = p.usd_per_mtok > 0 ? json(p.usd_per_mtok) : json(nullptr);
      j["fewest"] = p.fewest;
    } else {
      j["reason"] = p.reason;
    }
    arr.push_back(j);
  }
  return json{{"model", model}, {"workload", workload}, {"points", arr}}.dump(2);
}

}  // namespace shardwise
