#include "report/sweep_report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/format.hpp"
#include "report/serve_report.hpp"
#include "report/svg.hpp"

namespace shardwise {
namespace {
using nlohmann::json;

// "tp4 dp2 ep8 x3 tbo": degrees, replicas (`with_replicas`) and the overlap
std::string shape(const Plan& p, bool with_replicas = true) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp{}", d.tp);
  if (d.attn_dp > 1) s += fmt::format(" dp{}", d.attn_dp);
  if (d.pp > 1) s += fmt::format(" pp{}", d.pp);
  if (d.ep > 1) s += fmt::format(" ep{}", d.ep);
  if (with_replicas && d.replicas > 1) s += fmt::format(" x{}", d.replicas);
  if (p.two_batch_overlap) s += " tbo";
  return s;
}
// A serving point's deployment: "tp4 x4" or "2P tp2 + 3D tp4"
std::string deployment(const SweepPoint& p) {
  if (!p.serving || !p.serving->disaggregated) return shape(p.plan);
  return fmt::format("{}P {} + {}D {}", p.serving->prefill.deg.replicas, shape(p.serving->prefill, false), p.plan.deg.replicas,
                     shape(p.plan, false));
}
std::string or_auto(const std::string& s) { return s.empty() ? "auto" : s; }
std::string or_any(const std::string& s) { return s.empty() ? "generic" : s; }
std::string key_of(const SweepPoint& p) { return p.gpu + (p.dtype.empty() ? "" : " " + p.dtype) + (p.engine.empty() ? "" : " " + p.engine); }

// Why a point with a plan has no price (empty when it has one).
std::string price_note(const SweepHeader& h, const SweepPoint& p) {
  if (!p.found || p.usd_per_mtok > 0) return "";
  if (h.prices.find(p.gpu) == h.prices.end()) {
    return fmt::format("no price for {} in the price table (the shipped data/prices/default.yaml prices {}): give one with --prices FILE",
                       p.gpu, [&] {
                         std::string s;
                         for (const auto& [g, usd] : h.prices) s += (s.empty() ? "" : ", ") + g;
                         return s.empty() ? std::string("none") : s;
                       }());
  }
  return "no output tokens to price (the workload's mode produces none)";
}

// The skipped pairs, one line each: "trtllm on mi300x (8, 16, 32 GPUs): ..."
std::vector<std::string> skipped_lines(const std::vector<SweepPoint>& points) {
  std::vector<std::pair<std::string, std::string>> groups;  // (key, reason) in order
  std::map<std::string, std::string> counts;
  for (const SweepPoint& p : points) {
    if (p.skipped.empty()) continue;
    const std::string k = or_any(p.engine) + " on " + p.gpu + (p.dtype.empty() ? "" : " " + p.dtype);
    if (!counts.contains(k)) groups.emplace_back(k, p.skipped);
    counts[k] += (counts[k].empty() ? "" : ", ") + std::to_string(p.count);
  }
  std::vector<std::string> out;
  for (const auto& [k, why] : groups) out.push_back(fmt::format("skipped      {} ({} GPUs): {}", k, counts[k], why));
  return out;
}

std::string notes_text(const SweepHeader& h, const std::vector<SweepPoint>& points) {
  std::string s;
  for (const std::string& line : skipped_lines(points)) s += line + "\n";
  std::vector<std::string> seen;
  for (const SweepPoint& p : points) {
    const std::string n = price_note(h, p);
    if (n.empty() || std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    s += fmt::format("price '-'     {}\n", n);
  }
  return s.empty() ? s : "\n" + s;
}

std::string usd_text(double v, const char* f) { return v > 0 ? fmt::format(fmt::runtime(f), v) : "-"; }

std::string serving_text(const SweepHeader& h, const std::vector<SweepPoint>& points) {
  const Workload& w = h.w;
  std::string s = fmt::format("sweep        {} at {}, serving: {} points ({}; * the fewest GPUs of a type within the SLOs)\n", h.model,
                              h.workload, points.size(),
                              h.target_rate > 0 ? fmt::format("at each, the fewest of its GPUs that serve {} requests/s", h.target_rate)
                                                : std::string("at each, the deployment serving the most requests/s within the SLOs"));
  s += fmt::format("SLOs         {}\n\n", slo_label(w));
  // the statistics reported are the SLOs' (the same for every point)
  std::string ttft_stat = "p99", tpot_stat = "p99";
  for (const SweepPoint& p : points) {
    if (p.serving) {
      ttft_stat = slo_stat_name(p.serving->ttft_pct);
      tpot_stat = slo_stat_name(p.serving->tpot_pct);
      break;
    }
  }
  s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<26} {:>5} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "gpu", "GPUs", "dtype", "engine",
                   "deployment", "used", "req/s", "req/s/GPU", "TTFT " + ttft_stat, "TPOT " + tpot_stat, "out t/s/GPU", "$/M tok", "$/k req");
  for (const SweepPoint& p : points) {
    if (!p.skipped.empty()) continue;
    if (!p.found || !p.serving) {
      s += fmt::format("{:<6} {:>5} {:<6} {:<8} none: {}\n", p.gpu, p.count, or_auto(p.dtype), or_any(p.engine), p.reason);
      continue;
    }
    const SweepServing& v = *p.serving;
    s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<26} {:>5} {:>9.3f} {:>9.4f} {:>10} {:>10} {:>10.1f} {:>8} {:>8}{}\n", p.gpu, p.count,
                     or_auto(p.dtype), or_any(p.engine), deployment(p), v.gpus, v.rate, v.per_gpu(), ms_text(v.ttft_ms), ms_text(v.tpot_ms),
                     v.output_tok_s_per_gpu, usd_text(p.usd_per_mtok, "{:.3f}"), usd_text(v.usd_per_kreq, "{:.4f}"), p.fewest ? " *" : "");
  }
  s += "(req/s: the whole deployment's within the SLOs (Poisson arrivals); TTFT, TPOT and output tokens/s at that rate;\n"
       " nP + mD: n prefill and m decode instances (disaggregated); $: the GPUs used, at the price table's USD per GPU-hour)\n";
  return s + notes_text(h, points);
}

}  // namespace

std::string sweep_title(const SweepHeader& h) {
  if (h.w.mode == Mode::kServe) {
    return fmt::format("{} at {}: USD per million output tokens, {} within the SLOs", h.model, h.workload,
                       h.target_rate > 0 ? fmt::format("{} req/s", h.target_rate) : std::string("serving"));
  }
  return fmt::format("{} at {}: USD per million output tokens", h.model, h.workload);
}

std::string sweep_text(const SweepHeader& h, const std::vector<SweepPoint>& points) {
  if (h.w.mode == Mode::kServe) return serving_text(h, points);
  std::string s = fmt::format("sweep        {} at {}: {} points (best plan at each; * the fewest GPUs of a type within the SLOs)\n\n", h.model,
                              h.workload, points.size());
  s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<20} {:>5} {:>10} {:>11} {:>8} {:>9} {:>9} {:>9}\n", "gpu", "GPUs", "dtype", "engine", "plan",
                   "used", "tok/s/GPU", "total tok/s", "TPOT ms", "TTFT ms", "GB/GPU", "$/M tok");
  for (const SweepPoint& p : points) {
    if (!p.skipped.empty()) continue;
    if (!p.found) {
      s += fmt::format("{:<6} {:>5} {:<6} {:<8} no plan: {}\n", p.gpu, p.count, or_auto(p.dtype), or_any(p.engine), p.reason);
      continue;
    }
    const Metrics& m = p.metrics;
    const double total = m.objective * static_cast<double>(p.plan.deg.total_gpus());
    s += fmt::format("{:<6} {:>5} {:<6} {:<8} {:<20} {:>5} {:>10.1f} {:>11.0f} {:>8.2f} {:>9.1f} {:>9.1f} {:>9}{}\n", p.gpu, p.count, or_auto(p.dtype),
                     or_any(p.engine), shape(p.plan), p.plan.deg.total_gpus(), m.objective, total, m.tpot_s * 1e3, m.ttft_s * 1e3,
                     m.memory.total().value() / 1e9, usd_text(p.usd_per_mtok, "{:.3f}"), p.fewest ? " *" : "");
  }
  return s + notes_text(h, points);
}

std::string sweep_csv(const std::vector<SweepPoint>& points) {
  std::string s = "gpu,gpus,dtype,engine,found,tp,pp,ep,attn_dp,replicas,batch,gpus_used,tok_s_per_gpu,total_tok_s,tpot_ms,ttft_ms,"
                  "memory_gb_per_gpu,usd_per_mtok,fewest,two_batch_overlap,reason,"
                  "disaggregated,prefill_tp,prefill_pp,prefill_ep,prefill_attn_dp,prefill_instances,req_s,req_s_per_gpu,ttft_stat,tpot_stat,"
                  "usd_per_kreq,skipped\n";
  const auto clean = [](std::string t) {
    for (char& c : t) c = (c == ',' || c == '\n') ? ';' : c;
    return t;
  };
  for (const SweepPoint& p : points) {
    const Degrees& d = p.plan.deg;
    const Metrics& m = p.metrics;
    const std::string head = fmt::format("{},{},{},{}", p.gpu, p.count, or_auto(p.dtype), or_any(p.engine));
    if (!p.found) {
      s += fmt::format("{},0,,,,,,,,,,,,,,0,0,{},,,,,,,,,,,,,{}\n", head, clean(p.reason), clean(p.skipped));
      continue;
    }
    if (!p.serving) {
      s += fmt::format("{},1,{},{},{},{},{},{},{},{:.3f},{:.1f},{:.4f},{:.3f},{:.3f},{:.5f},{},{},,,,,,,,,,,,,\n", head, d.tp, d.pp, d.ep, d.attn_dp,
                       d.replicas, m.batch, d.total_gpus(), m.objective, m.objective * static_cast<double>(d.total_gpus()), m.tpot_s * 1e3,
                       m.ttft_s * 1e3, m.memory.total().value() / 1e9, p.usd_per_mtok, p.fewest ? 1 : 0, p.plan.two_batch_overlap ? 1 : 0);
      continue;
    }
    // a serving point: the (decode pool's) degrees, its figures at the rate served within the SLOs
    const SweepServing& v = *p.serving;
    const Degrees& q = v.prefill.deg;
    const std::string pre = v.disaggregated ? fmt::format("1,{},{},{},{},{}", q.tp, q.pp, q.ep, q.attn_dp, q.replicas) : "0,,,,,";
    s += fmt::format("{},1,{},{},{},{},{},,{},{:.3f},{:.1f},{:.4f},{:.3f},{:.3f},{:.5f},{},{},,{},{:.4f},{:.5f},{},{},{:.5f},\n", head, d.tp, d.pp, d.ep,
                     d.attn_dp, d.replicas, v.gpus, v.output_tok_s_per_gpu, v.output_tok_s_per_gpu * static_cast<double>(v.gpus), v.tpot_ms,
                     v.ttft_ms, m.memory.total().value() / 1e9, p.usd_per_mtok, p.fewest ? 1 : 0, p.plan.two_batch_overlap ? 1 : 0, pre, v.rate,
                     v.per_gpu(), slo_stat_name(v.ttft_pct), slo_stat_name(v.tpot_pct), v.usd_per_kreq);
  }
  return s;
}

std::string sweep_svg(const SweepHeader& h, const std::vector<SweepPoint>& points) {
  // colour by GPU type, glyph (and dash beyond five) by format and engine: every series its own pair
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#17becf"};
  static const char* dashes[] = {"", "7 4", "2 3"};
  svg::XyChart c;
  c.id = "sweep";
  c.title = sweep_title(h);
  c.show_title = true;
  c.fit_x = true;
  c.x_label = "GPUs in the cluster";
  c.y_label = "USD per million output tokens";
  c.log_x = true;
  std::vector<std::string> gpus, variants, keys;
  for (const SweepPoint& p : points) {
    const std::string var = (p.dtype.empty() ? "" : p.dtype + " ") + p.engine;
    if (std::find(gpus.begin(), gpus.end(), p.gpu) == gpus.end()) gpus.push_back(p.gpu);
    if (std::find(variants.begin(), variants.end(), var) == variants.end()) variants.push_back(var);
  }
  for (const std::string& g : gpus) {
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      svg::XySeries line;
      line.kind = svg::XySeries::kLine;
      for (const SweepPoint& p : points) {
        if (p.gpu != g || (p.dtype.empty() ? "" : p.dtype + " ") + p.engine != variants[vi] || !p.found || p.usd_per_mtok <= 0) continue;
        line.name = key_of(p);
        line.x.push_back(static_cast<double>(p.count));
        line.y.push_back(p.usd_per_mtok);
        line.tips.push_back(p.serving ? fmt::format("{} x{}: {} ({} GPUs), {:.3f} requests/s, ${:.3f}/M tokens{}", p.gpu, p.count, deployment(p),
                                                    p.serving->gpus, p.serving->rate, p.usd_per_mtok, p.fewest ? " (fewest GPUs)" : "")
                                      : fmt::format("{} x{}: {} at {:.1f} tok/s/GPU, ${:.3f}/M tokens{}", p.gpu, p.count, shape(p.plan),
                                                    p.metrics.objective, p.usd_per_mtok, p.fewest ? " (fewest GPUs)" : ""));
      }
      if (line.x.empty()) continue;  // no priced point: no series (and no legend entry)
      const std::size_t gi = static_cast<std::size_t>(std::find(gpus.begin(), gpus.end(), g) - gpus.begin());
      const std::size_t colour = gpus.size() > 1 ? gi : vi;
      line.color = colors[colour % 10];
      line.glyph = static_cast<svg::XySeries::Glyph>(gpus.size() > 1 ? vi % 5 : (vi / 10) % 5);
      line.dash = dashes[(gpus.size() > 1 ? vi / 5 : vi / 50) % 3];
      c.series.push_back(std::move(line));
    }
  }
  c.empty_note = "no point with a plan and a price";
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg::xy_chart(c);
}

std::string sweep_json(const SweepHeader& h, const std::vector<SweepPoint>& points) {
  json arr = json::array();
  for (const SweepPoint& p : points) {
    json j{{"gpu", p.gpu}, {"gpus", p.count}, {"dtype", or_auto(p.dtype)}, {"engine", or_any(p.engine)}, {"found", p.found}};
    if (!p.skipped.empty()) j["skipped"] = p.skipped;
    if (p.found) {
      const Degrees& d = p.plan.deg;
      j["degrees"] = {{"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}, {"attn_dp", d.attn_dp}, {"replicas", d.replicas}};
      j["two_batch_overlap"] = p.plan.two_batch_overlap;
      j["batch"] = p.metrics.batch;
      j["gpus_used"] = p.serving ? p.serving->gpus : d.total_gpus();
      j["memory_gb_per_gpu"] = p.metrics.memory.total().value() / 1e9;
      j["usd_per_mtok"] = p.usd_per_mtok > 0 ? json(p.usd_per_mtok) : json(nullptr);
      if (const std::string n = price_note(h, p); !n.empty()) j["price_note"] = n;
      j["fewest"] = p.fewest;
      if (p.serving) {
        const SweepServing& v = *p.serving;
        json s{{"disaggregated", v.disaggregated},
               {"deployment", deployment(p)},
               {"requests_per_s", v.rate},
               {"requests_per_s_per_gpu", v.per_gpu()},
               {"ttft_ms", v.ttft_ms},
               {"ttft_stat", slo_stat_name(v.ttft_pct)},
               {"tpot_ms", v.tpot_ms},
               {"tpot_stat", slo_stat_name(v.tpot_pct)},
               {"output_tok_s_per_gpu", v.output_tok_s_per_gpu},
               {"usd_per_kreq", v.usd_per_kreq > 0 ? json(v.usd_per_kreq) : json(nullptr)}};
        if (v.disaggregated) {
          const Degrees& q = v.prefill.deg;
          s["prefill"] = {{"degrees", {{"tp", q.tp}, {"pp", q.pp}, {"ep", q.ep}, {"attn_dp", q.attn_dp}}}, {"instances", q.replicas},
                          {"two_batch_overlap", v.prefill.two_batch_overlap}};
          s["decode_instances"] = d.replicas;
        }
        j["serving"] = s;
      } else {
        j["tok_s_per_gpu"] = p.metrics.objective;
        j["total_tok_s"] = p.metrics.objective * static_cast<double>(d.total_gpus());
        j["tpot_ms"] = p.metrics.tpot_s * 1e3;
        j["ttft_ms"] = p.metrics.ttft_s * 1e3;
      }
    } else {
      j["reason"] = p.reason;
    }
    arr.push_back(j);
  }
  json out{{"model", h.model}, {"workload", h.workload}, {"mode", to_string(h.w.mode)}, {"points", arr}};
  if (h.w.mode == Mode::kServe) {
    out["slo"] = slo_label(h.w);
    out["target_rate"] = h.target_rate > 0 ? json(h.target_rate) : json(nullptr);
  }
  return out.dump(2);
}

}  // namespace shardwise
