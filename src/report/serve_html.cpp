#include "report/serve_html.hpp"

#include <fmt/format.h>

#include "cost/engine.hpp"
#include "cost/engine_limits.hpp"
#include "report/describe.hpp"
#include "report/format.hpp"
#include "report/html_report.hpp"
#include "report/launch.hpp"
#include "report/launch_plan.hpp"
#include "report/serve_report.hpp"
#include "report/svg.hpp"

namespace shardwise {
namespace {
using svg::escape;

std::string shape_html(const Plan& p, bool moe) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp {}", d.tp);
  if (d.attn_dp > 1) s += fmt::format(" &times; attn_dp {}", d.attn_dp);
  if (d.pp > 1) s += fmt::format(" &times; pp {}", d.pp);
  if (moe) s += fmt::format(", ep {}", d.ep);
  const std::string sh = sharding_to_string(p.sharding);
  if (sh != "megatron") s += " <code>" + escape(sh) + "</code>";
  if (p.two_batch_overlap) s += ", two-batch overlap";
  return s;
}

std::string card(const std::string& k, const std::string& v) {
  return fmt::format("<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>", v, escape(k));
}

// The statistics of one latency the report shows: each SLO bound's (the mean, percentiles), p99 without one.
std::vector<double> shown_stats(const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
  std::vector<double> out;
  if (mean) out.push_back(0);
  for (const SloBound& b : pcts) out.push_back(b.pct);
  if (out.empty()) out.push_back(99);
  return out;
}

// One latency (TTFT or TPOT) against the rate, on its own axis: a line with a point per
// simulated rate for each statistic an SLO bounds, the SLO drawn across.
std::string latency_chart(const ServePlanResult& r, bool ttft, const Workload& w) {
  static const char* colors[] = {"#e15759", "#4e79a7", "#59a14f", "#b07aa1"};
  const char* what = ttft ? "TTFT" : "TPOT";
  const auto& mean = ttft ? w.ttft_ms : w.tpot_ms;
  const auto& pcts = ttft ? w.ttft_pct : w.tpot_pct;
  svg::XyChart c;
  c.id = ttft ? "serve-ttft" : "serve-tpot";
  c.title = fmt::format("{} against the request rate", what);
  c.x_label = "requests/s (per instance when aggregated, the deployment when disaggregated)";
  c.y_label = fmt::format("{}, milliseconds", what);
  std::size_t k = 0;
  for (const double pct : shown_stats(mean, pcts)) {
    svg::XySeries line;
    line.name = fmt::format("{} {}", what, slo_stat_name(pct));
    line.color = colors[k++ % 4];
    line.kind = svg::XySeries::kLine;
    for (const FrontierPoint& p : r.frontier) {
      const LatencyStats& st = ttft ? p.ttft_ms : p.tpot_ms;
      line.x.push_back(p.rate);
      line.y.push_back(st.stat(pct));
      line.tips.push_back(fmt::format("{:.3f} requests/s: {} {} {}", p.rate, what, slo_stat_name(pct), ms_text(st.stat(pct))));
    }
    c.series.push_back(std::move(line));
  }
  if (mean) c.refs.push_back(svg::RefLine{false, *mean, fmt::format("{} mean SLO", what), "#333"});
  for (const SloBound& b : pcts) c.refs.push_back(svg::RefLine{false, b.ms, fmt::format("{} {} SLO", what, slo_stat_name(b.pct)), "#333"});
  return svg::xy_chart(c);
}

// Which engines run the chosen deployment as planned (each pool's layout), why the others do
// not, and each engine's launch commands for it (launch_plan: what `shardwise launch` prints).
std::string engines_section(const SimContext& ctx, const PlanFile& file, const ServePlanResult& r) {
  if (!r.found()) return "";
  std::vector<std::pair<std::string, Plan>> pools;
  if (file.prefill_pool) {
    pools.emplace_back("prefill pool", *file.prefill_pool);
    pools.emplace_back("decode pool", file.plan);
  } else {
    pools.emplace_back("the plan", file.plan);
  }
  std::string rows, cmds;
  int running = 0;
  Workload w = ctx.workload;  // with the plan file's traffic (the benchmark command replays it)
  if (auto x = apply_overrides(ctx.workload, file.overrides, "plan")) w = *x;
  for (const ServeEngine e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
    std::string why;
    auto profile = load_engine_profile(to_string(e));
    if (profile) why = engine_gpu_mismatch(*profile, ctx.cluster.gpu);
    if (why.empty()) {
      for (const auto& [name, p] : pools) {
        const auto on = engines_running(ctx, p);
        if (std::find(on.begin(), on.end(), e) != on.end()) continue;
        std::string reasons;
        for (const std::string& x : engine_limits(e, ctx, p)) reasons += (reasons.empty() ? "" : "; ") + x;
        why += (why.empty() ? "" : "<br>") + escape(name) + ": " +
               (reasons.empty() ? std::string("its per-operator sharding is not one the engine runs") : escape(reasons));
      }
    } else {
      why = escape(why);
    }
    const bool runs = why.empty();
    running += runs ? 1 : 0;
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", engine_version(e), runs ? "as planned" : "no", why);
    LaunchOptions lo;
    lo.engine = e;
    auto text = launch_plan(file, "plan.json", ctx.model, ctx.cluster, w, lo);
    cmds += fmt::format("<details{}><summary>{} launch commands{}</summary><pre>{}</pre></details>", runs && running == 1 ? " open" : "",
                        engine_version(e), runs ? "" : " (the nearest layout it runs, or why none)",
                        escape(text ? *text : text.error().message()));
  }
  std::string s = "<section id=\"engines\"><h2>Serving engines</h2>";
  if (running == 0) {
    s += "<p class=\"infeasible\">Warning: no engine (vLLM, SGLang, TensorRT-LLM) runs this deployment as planned. The commands below "
         "start the nearest layout each engine runs, whose figures differ from the plan's (<code>plan --mode serve</code> without "
         "<code>--engine any</code> keeps to layouts an engine runs).</p>";
  }
  s += "<div class=\"wide\"><table><tr><th>engine</th><th>runs it</th><th>otherwise</th></tr>" + rows + "</table></div>" + cmds;
  return s + "</section>";
}
}  // namespace

std::string serve_plan_html(const SimContext& ctx, const PlanFile& file, const ServePlanResult& r, double target_rate) {
  const bool moe = ctx.model.is_moe();
  const std::string title = fmt::format("shardwise serve plan: {} on {}, {}", ctx.model.name, file.cluster.empty() ? ctx.cluster.name : file.cluster,
                                        ctx.workload.name);
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
  // table cells keep their figures on one line ("348 ms"); a wide table scrolls instead
  s += "<title>" + escape(title) + "</title><style>" + report_style() +
       " div.wide { overflow-x: auto; } div.wide td, div.wide th { white-space: nowrap; }</style></head><body>";
  s += "<header><h1>" + escape(title) + "</h1><p class=\"sub\">Generated by shardwise 0.1.0. Every number is a prediction of the serving "
       "simulation over the step cost model (docs/serving.md), not a measurement.</p></header>";
  s += "<section id=\"summary\"><h2>The deployment</h2>";
  s += fmt::format("<p>Workload: input {} and output {} tokens (means), SLOs {}. {} instance shapes screened by the closed form, {} fit; "
                   "{} simulated, {} simulations in {:.2f} s. Not certified: the best of the simulated shapes, not a proven "
                   "optimum (the exact optimiser certifies the closed form only).</p>",
                   ctx.workload.isl, ctx.workload.osl, slo_label(ctx.workload, "&le;"), r.screened, r.screen_feasible, r.candidates.size(), r.simulations,
                   r.wall_s);
  if (!r.found()) {
    s += "<p class=\"infeasible\">No deployment: " + escape(r.reason) + (r.disagg_reason.empty() ? "" : "; " + escape(r.disagg_reason)) + "</p>";
  } else {
    double rate = r.deployment_rate, gpus = static_cast<double>(r.deployment.deg.total_gpus());
    std::string what;
    const ServeResult* at = &r.deployment_result;
    if (!r.disagg_chosen) {
      const ServeCandidate& b = r.candidates[static_cast<std::size_t>(r.best)];
      what = fmt::format("aggregated: {} &times; {} replicas", shape_html(b.plan, moe), r.deployment.deg.replicas);
    } else {
      const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
      rate = c.max_rate;
      gpus = static_cast<double>(c.plan.gpus());
      what = fmt::format("disaggregated: {} prefill &times; {} beside {} decode &times; {}", c.plan.prefill.deg.replicas,
                         shape_html(c.plan.prefill, moe), c.plan.decode.deg.replicas, shape_html(c.plan.decode, moe));
      at = &c.at_max.total;
    }
    s += "<p><b>Chosen</b>, " + what + (target_rate > 0 ? fmt::format(" (the fewest GPUs for {} requests/s)", target_rate) : "") + ".</p>";
    s += "<div class=\"cards\">";
    s += card("GPUs", fmt::format("{:.0f}", gpus));
    s += card(target_rate > 0 ? "requests/s (the target)" : "requests/s within the SLOs", fmt::format("{:.2f}", rate));
    s += card("requests/s per GPU", fmt::format("{:.3f}", rate / gpus));
    const double tp = reported_slo_pct(ctx.workload.ttft_ms, ctx.workload.ttft_pct), op = reported_slo_pct(ctx.workload.tpot_ms, ctx.workload.tpot_pct);
    s += card("TTFT " + slo_stat_name(tp), ms_text(at->ttft_ms.stat(tp)));
    s += card("TPOT " + slo_stat_name(op), ms_text(at->tpot_ms.stat(op)));
    s += "</div>";
  }
  s += "</section>";
  // candidates
  const double tpct = reported_slo_pct(ctx.workload.ttft_ms, ctx.workload.ttft_pct), opct = reported_slo_pct(ctx.workload.tpot_ms, ctx.workload.tpot_pct);
  s += fmt::format("<section id=\"candidates\"><h2>Simulated candidates</h2><div class=\"wide\"><table><tr><th>#</th><th>instance</th><th class=\"n\">GPUs</th>"
                   "<th class=\"n\">screen tok/s/GPU</th><th class=\"n\">capacity req/s</th><th class=\"n\">max req/s in SLO</th><th class=\"n\">req/s per GPU</th>"
                   "<th class=\"n\">TTFT {}</th><th class=\"n\">TPOT {}</th></tr>", slo_stat_name(tpct), slo_stat_name(opct));
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const ServeCandidate& c = r.candidates[i];
    s += fmt::format("<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.3f}</td><td class=\"n\">{:.3f}</td>"
                     "<td class=\"n\">{:.4f}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                     i + 1, static_cast<int>(i) == r.best ? " &#9733;" : "", shape_html(c.plan, moe), c.plan.deg.instance_gpus(), c.screen.objective,
                     c.capacity, c.max_rate, c.per_gpu(), ms_text(c.at_max.ttft_ms.stat(tpct)), ms_text(c.at_max.tpot_ms.stat(opct)));
  }
  s += "</table></div>";
  if (!r.disagg.empty()) {
    s += fmt::format("<h3>Disaggregated on the same GPUs</h3><div class=\"wide\"><table><tr><th>#</th><th>prefill pool</th><th>decode pool</th><th class=\"n\">GPUs</th>"
                     "<th class=\"n\">max req/s in SLO</th><th class=\"n\">req/s per GPU</th><th class=\"n\">KV transfer</th><th class=\"n\">TTFT {}</th>"
                     "<th class=\"n\">TPOT {}</th></tr>", slo_stat_name(tpct), slo_stat_name(opct));
    for (std::size_t i = 0; i < r.disagg.size(); ++i) {
      const DisaggCandidate& c = r.disagg[i];
      s += fmt::format("<tr><td>{}{}</td><td>{} &times; {}</td><td>{} &times; {}</td><td class=\"n\">{}</td><td class=\"n\">{:.3f}</td>"
                       "<td class=\"n\">{:.4f}</td><td class=\"n\">{:.2f} ms</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                       i + 1, static_cast<int>(i) == r.disagg_best ? " &#9733;" : "", c.plan.prefill.deg.replicas, shape_html(c.plan.prefill, moe),
                       c.plan.decode.deg.replicas, shape_html(c.plan.decode, moe), c.plan.gpus(), c.max_rate, c.per_gpu(), c.at_max.transfer_ms,
                       ms_text(c.at_max.total.ttft_ms.stat(tpct)), ms_text(c.at_max.total.tpot_ms.stat(opct)));
    }
    s += "</table></div>";
  }
  s += "</section>";
  // frontier and percentiles
  if (!r.frontier.empty()) {
    svg::XyChart f;
    f.id = "serve-frontier";
    f.title = "Throughput per GPU against tokens/s per user";
    f.x_label = "tokens/s per user (1000 / mean TPOT)";
    f.y_label = "output tokens/s per GPU";
    svg::XySeries line;
    line.name = "the chosen deployment at 10% to 100% of its max rate";
    line.color = "#4e79a7";
    line.kind = svg::XySeries::kLine;
    for (const FrontierPoint& p : r.frontier) {
      line.x.push_back(p.tok_s_per_user);
      line.y.push_back(p.output_tok_s_per_gpu);
      line.tips.push_back(fmt::format("{:.3f} requests/s: {:.1f} output tokens/s per GPU, {:.1f} tokens/s per user, SLOs {}", p.rate,
                                      p.output_tok_s_per_gpu, p.tok_s_per_user, p.feasible ? "met" : "missed"));
    }
    f.series = {line};
    s += "<section id=\"frontier\"><h2>Frontier and latencies</h2><figure><figcaption>Poisson arrivals at shares of the chosen "
         "deployment's highest rate within the SLOs, one point per simulated rate. Hover a point for its figures.</figcaption>" +
         svg::xy_chart(f) + "</figure><figure><figcaption>TTFT at the same rates, at the statistics its SLOs bound (p99 without one); "
         "the dashed line is the SLO.</figcaption>" + latency_chart(r, true, ctx.workload) +
         "</figure><figure><figcaption>TPOT at the same rates, on its own axis.</figcaption>" + latency_chart(r, false, ctx.workload) +
         "</figure></section>";
  }
  s += engines_section(ctx, file, r);
  DescribeOptions d;
  s += "<section id=\"inputs\"><h2>Inputs</h2><details><summary>model, cluster, workload</summary><pre>" +
       escape(describe_model_text(ctx.model, d)) + "\n" + escape(describe_cluster_text(ctx.cluster)) + "\n" +
       escape(describe_workload_text(ctx.workload)) + "</pre></details></section>";
  s += "</body></html>\n";
  return s;
}

}  // namespace shardwise
