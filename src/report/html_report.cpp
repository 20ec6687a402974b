#include "report/html_report.hpp"

#include "report/launch.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "report/describe.hpp"
#include "report/format.hpp"
#include "report/simulate.hpp"
#include "report/svg.hpp"

namespace shardwise {
namespace {
using svg::escape;

constexpr const char* kCompute = "#4e79a7";
constexpr const char* kComm = "#f28e2b";
constexpr const char* kOverhead = "#bab0ac";
constexpr const char* kSlo = "#e15759";

constexpr const char* kStyle = R"(
:root { --ink: #1f2328; --muted: #59636e; --rule: #d0d7de; --bg: #ffffff; --band: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 980px; padding: 24px 28px 60px; color: var(--ink); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", "Liberation Sans", sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 34px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--rule); }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.sub, figcaption, .note { color: var(--muted); }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { flex: 1 1 150px; border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px; background: var(--band); }
.card .v { font-size: 22px; font-weight: 600; }
.card .k { color: var(--muted); font-size: 12px; }
.card.win .v { color: #1a7f37; }
.card.lose .v { color: #cf222e; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--rule); vertical-align: top; }
th { background: var(--band); font-weight: 600; }
td.n, th.n { text-align: right; }
tr.coll td { color: #8a4b00; background: #fff8f0; font-size: 13px; }
tr.coll td:first-child { padding-left: 22px; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12.5px; }
pre { background: var(--band); padding: 10px; overflow-x: auto; border-radius: 6px; }
figure { margin: 14px 0 22px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { fill: var(--ink); font-family: inherit; }
svg.chart .grid line { stroke: #eaeef2; }
svg.chart .axis line { stroke: #57606a; }
svg.chart .axislabel { font-weight: 600; }
svg.chart .empty { fill: var(--muted); font-style: italic; }
.infeasible { color: #cf222e; font-weight: 600; }
)";

svg::XySeries series(std::string name, std::string color, svg::XySeries::Kind kind) {
  svg::XySeries s;
  s.name = std::move(name);
  s.color = std::move(color);
  s.kind = kind;
  return s;
}

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }
std::string gbs(Bytes b) { return si_bytes(b); }

std::string degrees_html(const SimContext& ctx, const Plan& p) {
  const Degrees& d = p.deg;
  std::string s = fmt::format("tp {} &times; attn_dp {} &times; pp {}", d.tp, d.attn_dp, d.pp);
  if (ctx.model.is_moe()) s += fmt::format(", ep {} (expert tp {})", d.ep, d.expert_tp());
  if (p.two_batch_overlap) s += ", two-batch overlap";
  s += fmt::format("; {} replica{} = {} of {} GPUs", d.replicas, d.replicas == 1 ? "" : "s", d.total_gpus(), ctx.cluster.num_gpus);
  return s;
}

std::string point_tip(const EvalPoint& p, bool prefill) {
  return fmt::format("tp {} x attn_dp {} x pp {}, ep {}, batch {}, {} sharding: {} {:.2f} ms, {:.1f} tok/s/GPU{}", p.deg.tp, p.deg.attn_dp,
                     p.deg.pp, p.deg.ep, p.batch, p.megatron_sharding ? "Megatron" : "searched", prefill ? "TTFT" : "TPOT", p.latency_s * 1e3,
                     p.throughput, p.meets_slo ? "" : " (over an SLO)");
}

// --- sections ---------------------------------------------------------------

std::string summary(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o) {
  const bool prefill = ctx.workload.mode == Mode::kPrefill;
  const char* unit = prefill ? "input tokens/s per GPU" : "output tokens/s per GPU";
  std::string s = "<section id=\"summary\"><h2>Summary</h2>";
  const Metrics* m = o.metrics ? &*o.metrics : nullptr;
  const Metrics* b = o.baseline_metrics ? &*o.baseline_metrics : nullptr;
  s += "<div class=\"cards\">";
  auto card = [&](const std::string& v, const std::string& k, const char* cls = "") {
    s += fmt::format(R"~(<div class="card {}"><div class="v">{}</div><div class="k">{}</div></div>)~", cls, v, k);
  };
  card(m ? fmt::format("{:.1f}", m->objective) : "none", fmt::format("chosen plan, {}", unit));
  card(b ? fmt::format("{:.1f}", b->objective) : "none", fmt::format("Megatron baseline, {}", unit));
  if (m && b && b->objective > 0) {
    const double r = m->objective / b->objective;
    card(fmt::format("{:.3f}&times;", r), "chosen / Megatron", r >= 1.0 ? "win" : "lose");
  }
  if (m) {
    card(ms(prefill ? m->ttft_s : m->tpot_s), prefill ? "TTFT of the chosen plan" : "TPOT of the chosen plan");
    card(fmt::format("{} / {}", gbs(m->memory.total()), gbs(m->memory.capacity)), "memory per GPU / capacity");
  }
  s += "</div>";
  if (!o.search.found) s += "<p class=\"infeasible\">The search found no feasible plan.</p>";

  // chosen vs Megatron, row by row
  s += "<table><tr><th></th><th>chosen plan</th><th>Megatron baseline</th></tr>";
  auto row = [&](const std::string& k, const std::string& a, const std::string& c) {
    s += fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td></tr>", k, a, c);
  };
  const Plan* cp = o.search.found ? &o.search.best : nullptr;
  const Plan* bp = o.baseline.found ? &o.baseline.best : nullptr;
  auto both = [&](const std::string& k, auto f) { row(k, cp && m ? f(*cp, *m) : "&ndash;", bp && b ? f(*bp, *b) : "&ndash;"); };
  both("parallelism", [&](const Plan& p, const Metrics&) { return degrees_html(ctx, p); });
  both("per-op sharding", [&](const Plan& p, const Metrics&) { return "<code>" + escape(sharding_to_string(p.sharding)) + "</code>"; });
  both("batch per instance", [&](const Plan&, const Metrics& x) { return fmt::format("{} sequences, {} micro-batches", x.batch, x.micro_batches); });
  if (ctx.workload.mode != Mode::kPrefill) {
    both("output tokens/s per GPU", [&](const Plan&, const Metrics& x) { return fmt::format("{:.1f}", x.output_tok_s_per_gpu); });
    both("TPOT", [&](const Plan&, const Metrics& x) { return ms(x.tpot_s); });
  }
  if (ctx.workload.mode != Mode::kDecode) {
    both("input tokens/s per GPU", [&](const Plan&, const Metrics& x) { return fmt::format("{:.1f}", x.input_tok_s_per_gpu); });
    both("TTFT", [&](const Plan&, const Metrics& x) { return ms(x.ttft_s); });
  }
  both("step (slowest stage)", [&](const Plan&, const Metrics& x) { return ms(x.step_s); });
  both("memory per GPU", [&](const Plan&, const Metrics& x) {
    return fmt::format("{} of {}: weights {}, KV {}, activations {}, reserve {}", gbs(x.memory.total()), gbs(x.memory.capacity),
                       gbs(x.memory.weights), gbs(x.memory.kv_cache), gbs(x.memory.activations), gbs(x.memory.reserve));
  });
  s += "</table>";

  const Workload& w = ctx.workload;
  std::string slo;
  if (w.tpot_ms) slo += fmt::format("TPOT &le; {} ms", *w.tpot_ms);
  if (w.ttft_ms) slo += fmt::format("{}TTFT &le; {} ms", slo.empty() ? "" : ", ", *w.ttft_ms);
  s += fmt::format("<p>Model <b>{}</b> ({}), cluster <b>{}</b> ({} &times; {}), workload <b>{}</b> ({}; weights {}, KV cache {}; SLO: {}).</p>",
                   escape(ctx.model.name), escape(ctx.model.architecture), escape(file.cluster.empty() ? ctx.cluster.name : file.cluster),
                   ctx.cluster.num_gpus, escape(ctx.cluster.gpu.name), escape(w.name), escape(to_string(w.mode)),
                   formats_label(ctx.formats, ctx.model.is_moe()), to_string(ctx.formats.kv), slo.empty() ? "none" : slo);
  const SearchResult& r = o.search;
  s += r.engine == "exact"
           ? fmt::format("<p>Search: the <b>exact</b> optimiser proved this plan optimal under the simulator over {:.3g} joint configurations "
                         "({} grouped evaluations, {:.2f} s){}.</p>",
                         o.space_size, r.calls, r.wall_s, r.stopped_by_time ? ", stopped by the time limit: not proven optimal" : "")
           : fmt::format("<p>Search: <b>{}</b> over {:.3g} joint configurations, {} simulator calls ({} infeasible) in {:.2f} s; the best was "
                         "first reached at call {}.</p>",
                         escape(r.engine), o.space_size, r.calls, r.invalid_calls, r.wall_s, r.best_call);
  if (!ctx.params.calibrated) {
    s += fmt::format("<p class=\"note\">No calibration for {}: the simulator uses the {} fit.</p>", escape(ctx.cluster.gpu.name),
                     escape(ctx.params.gpu));
  }
  return s + "</section>";
}

std::string op_table(const SimContext& ctx, const PlanOutcome& o) {
  std::string s = "<section id=\"ops\"><h2>Per-op sharding and the collectives inserted</h2>";
  s += "<p class=\"sub\">One row per fused op of each layer class, per layer and micro-batch step on the slowest pipeline stage. "
       "An indented row is the collective the simulator inserts before the op to bring its input into the layout the op's sharding needs.</p>";
  if (!o.metrics) return s + "<p>No plan.</p></section>";
  s += "<table><tr><th>op (layer class)</th><th>sharded on</th><th class=\"n\">layers</th><th class=\"n\">compute ms</th>"
       "<th class=\"n\">comm ms</th><th>group</th><th class=\"n\">bytes per GPU</th></tr>";
  for (const OpCost& op : o.breakdown.ops) {
    if (op.collective != CollKind::kNone) {
      s += fmt::format(R"~(<tr class="coll"><td>&#8627; {}</td><td></td><td class="n">{}</td><td class="n"></td><td class="n">{:.4f}</td><td>{}</td><td class="n">{}</td></tr>)~",
                       to_string(op.collective), op.layers, op.comm_s * 1e3, escape(op.comm_group), si_bytes(Bytes(op.comm_bytes)));
    }
    s += fmt::format(R"~(<tr><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{:.4f}</td><td class="n"></td><td></td><td class="n"></td></tr>)~",
                     escape(op_label(ctx, op)), escape(op.choice), op.layers, op.compute_s * 1e3);
  }
  return s + "</table></section>";
}

// `prefill_ms`: in the offline and serve streams, the prompts' prefill interleaved with the
// decode, per decode step (what TPOT holds beyond the decode step); 0 elsewhere.
svg::BarChart time_chart(const SimContext& ctx, const Breakdown& bd, const std::string& id, const std::string& title, double prefill_ms = 0) {
  svg::BarChart c;
  c.id = id;
  c.title = title;
  c.x_label = "time per micro-batch step on the slowest stage (ms) = time per layer x layers";
  c.series = {{"compute", kCompute}, {"communication", kComm}, {"engine overhead per iteration", kOverhead}};
  if (prefill_ms > 0) c.series.push_back({"prefill interleaved, per decode step", kSlo});
  const std::size_t n = c.series.size();
  const auto row = [&](double a, double b, double o, double p) {
    std::vector<double> v{a, b, o};
    if (n == 4) v.push_back(p);
    return v;
  };
  for (const OpCost& op : bd.ops) {
    const double comp = op.compute_s * static_cast<double>(op.layers) * 1e3, comm = op.comm_s * static_cast<double>(op.layers) * 1e3;
    if (comp <= 0 && comm <= 0) continue;
    c.rows.push_back(op_label(ctx, op) + (op.choice.empty() || op.choice == "-" ? "" : " [" + op.choice + "]"));
    c.values.push_back(row(comp, comm, 0, 0));
  }
  c.rows.emplace_back("engine overhead");
  c.values.push_back(row(0, 0, ctx.params.step_overhead_us * 1e-3, 0));
  if (prefill_ms > 0) {
    c.rows.emplace_back("prompts' prefill (interleaved)");
    c.values.push_back(row(0, 0, 0, prefill_ms));
  }
  return c;
}

// What TPOT holds beyond the decode step in the offline and serve streams, per step (ms).
double interleaved_prefill_ms(const SimContext& ctx, const Plan& plan, const Metrics& m) {
  if (!is_stream(ctx.workload.mode) || m.tpot_s <= 0) return 0.0;
  const double steps = static_cast<double>(std::max<std::int64_t>(m.micro_batches, plan.deg.pp));
  return std::max(0.0, (m.tpot_s * tokens_per_step(ctx.workload) / steps - m.step_s) * 1e3);
}

std::string charts_time(const SimContext& ctx, const PlanOutcome& o) {
  std::string s = "<section id=\"time\"><h2>Time per op: compute against communication</h2>";
  if (!o.metrics) return s + "<p>No plan.</p></section>";
  const double pre_a = interleaved_prefill_ms(ctx, o.search.best, *o.metrics);
  svg::BarChart a = time_chart(ctx, o.breakdown, "time-chosen", "Time per op, chosen plan", pre_a);
  svg::BarChart b;
  const bool base = o.baseline_metrics.has_value();
  const double pre_b = base ? interleaved_prefill_ms(ctx, o.baseline.best, *o.baseline_metrics) : 0.0;
  if (base) b = time_chart(ctx, o.baseline_breakdown, "time-megatron", "Time per op, Megatron baseline", pre_b);
  double xmax = 0;
  for (const auto* c : {&a, &b}) {
    for (const auto& row : c->values) {
      double sum = 0;
      for (double v : row) sum += v;
      xmax = std::max(xmax, sum);
    }
  }
  a.x_max = b.x_max = xmax;  // one scale for both
  const double overhead = ctx.params.step_overhead_us * 1e-6;
  s += fmt::format("<figure><figcaption>Chosen plan, {} phase: the bars add up to the step of the slowest stage, {} (ops {} + engine overhead "
                   "{}){}.</figcaption>{}</figure>",
                   to_string(o.breakdown.phase), ms(o.breakdown.stage_s + overhead), ms(o.breakdown.stage_s), ms(overhead),
                   pre_a > 0 ? fmt::format(", and the prompts' prefill interleaved with it, {} per decode step: together TPOT's {}", ms(pre_a * 1e-3),
                                           ms(o.metrics->tpot_s))
                             : "",
                   svg::bar_chart(a));
  if (base) {
    s += fmt::format("<figure><figcaption>Megatron baseline, same scale: step {}.</figcaption>{}</figure>",
                     ms(o.baseline_breakdown.stage_s + overhead), svg::bar_chart(b));
  }
  return s + "</section>";
}

std::string chart_memory(const PlanOutcome& o) {
  std::string s = "<section id=\"memory\"><h2>Memory per GPU</h2>";
  svg::BarChart c;
  c.id = "memory";
  c.title = "Memory per GPU against capacity";
  c.x_label = "memory per GPU on the fullest pipeline stage (GB)";
  c.series = {{"weights", "#4e79a7"}, {"KV cache", "#59a14f"}, {"activations", "#edc948"}, {"reserve", kOverhead}};
  auto add = [&](const std::string& name, const Metrics& m) {
    c.rows.push_back(name);
    c.values.push_back({m.memory.weights.value() / 1e9, m.memory.kv_cache.value() / 1e9, m.memory.activations.value() / 1e9,
                        m.memory.reserve.value() / 1e9});
    c.marker = m.memory.capacity.value() / 1e9;
  };
  if (o.metrics) add("chosen plan", *o.metrics);
  if (o.baseline_metrics) add("Megatron baseline", *o.baseline_metrics);
  if (c.rows.empty()) return s + "<p>No plan.</p></section>";
  c.marker_label = fmt::format("HBM capacity {:.1f} GB", c.marker);
  return s + "<figure><figcaption>Reserve: 4% of HBM plus 1 GiB for the runtime (docs/cost-model.md).</figcaption>" + svg::bar_chart(c) +
         "</figure></section>";
}

std::string compared_table(const PlanOutcome& o) {
  if (o.compared.empty()) return "";
  std::string s = "<table><tr><th>engine</th><th class=\"n\">best objective</th><th class=\"n\">of the chosen plan</th>"
                  "<th class=\"n\">calls</th><th class=\"n\">infeasible calls</th><th class=\"n\">best first at call</th><th class=\"n\">wall s</th></tr>";
  // the searches as they searched (SearchResult::searched_value), as the text table compares them
  const double chosen = o.search.searched_value();
  std::vector<const SearchResult*> runs{&o.search};
  for (const auto& r : o.compared) runs.push_back(&r);
  for (const SearchResult* r : runs) {
    const double v = r == &o.search ? chosen : r->best_value;
    const double rel = chosen > 0 ? v / chosen : 0;
    s += fmt::format(R"~(<tr><td>{}{}</td><td class="n">{:.1f}</td><td class="n">{:.1f}%</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{:.2f}</td></tr>)~",
                     escape(r->engine), r == &o.search ? " (chosen)" : "", v, rel * 100, r->calls, r->invalid_calls, r->best_call, r->wall_s);
  }
  s += "</table>";
  if (chosen != o.search.best_value) {
    s += fmt::format("<p>The searches' own results: the chosen plan then gained the two-batch overlap, {:.1f} tokens/s per GPU, which none of the rows "
                     "includes.</p>",
                     o.search.best_value);
  }
  return s;
}

// best-so-far as a step line: the calls where the best improved, and the last call
svg::XySeries convergence(const SearchResult& r, const std::string& name, const char* color) {
  svg::XySeries se;
  se.name = name;
  se.color = color;
  se.kind = svg::XySeries::kStepLine;
  double best = -1;
  for (const auto& h : r.history) {
    if (h.best > best) {
      se.x.push_back(static_cast<double>(h.call));
      se.y.push_back(h.best);
      best = h.best;
    }
  }
  if (!r.history.empty() && !se.x.empty() && se.x.back() != static_cast<double>(r.history.back().call)) {
    se.x.push_back(static_cast<double>(r.history.back().call));
    se.y.push_back(best);
  }
  return se;
}

std::string chart_convergence(const SimContext& ctx, const PlanOutcome& o) {
  static const char* const colors[] = {"#4e79a7", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"};
  svg::XyChart c;
  c.id = "convergence";
  c.title = "Search convergence";
  c.log_x = true;
  c.x_label = "simulator calls (log scale)";
  c.y_label = ctx.workload.mode == Mode::kPrefill ? "best input tokens/s per GPU" : "best output tokens/s per GPU";
  c.empty_note = "no engine recorded a feasible plan";
  std::vector<const SearchResult*> runs{&o.search};
  for (const auto& r : o.compared) runs.push_back(&r);
  std::string notes;
  std::size_t k = 0;
  for (const SearchResult* r : runs) {
    if (r->engine == "exact") {
      if (r->found) c.refs.push_back({false, r->searched_value(), fmt::format("exact optimum {:.1f}", r->searched_value()), "#222222"});
      notes += fmt::format("exact: {} grouped evaluations in {:.2f} s, drawn as its optimum. ", r->calls, r->wall_s);
      continue;
    }
    c.series.push_back(convergence(*r, r->engine, colors[k++ % 7]));
    notes += fmt::format("{}: {} calls, best first reached at call {}, {:.2f} s. ", r->engine, r->calls, r->best_call, r->wall_s);
  }
  if (o.baseline.found && o.search.engine != "megatron") {
    c.series.push_back(convergence(o.baseline, "megatron (exhaustive degrees)", "#f28e2b"));
    notes += fmt::format("megatron: {} calls over every degree and batch with Megatron's sharding.", o.baseline.calls);
  }
  return "<section id=\"convergence\"><h2>Search convergence</h2><figure><figcaption>Best feasible objective so far against simulator calls. " +
         escape(notes) + "</figcaption>" + svg::xy_chart(c) + "</figure>" + compared_table(o) + "</section>";
}

std::string chart_frontier(const SimContext& ctx, const PlanOutcome& o) {
  const bool prefill = ctx.workload.mode == Mode::kPrefill;
  const char* lat = prefill ? "TTFT" : "TPOT";
  std::vector<EvalPoint> all;
  auto take = [&](const std::vector<EvalPoint>& v) { all.insert(all.end(), v.begin(), v.end()); };
  take(o.search.points);
  if (o.search.engine != "megatron") take(o.baseline.points);  // with --search megatron they are one run
  for (const auto& r : o.compared) take(r.points);
  take(o.sweep);
  const auto front = pareto_frontier(all);

  // thin the cloud to one dot per (log-latency, throughput) cell and kind
  double ymax = 0;
  for (const auto& p : all) ymax = std::max(ymax, p.throughput);
  std::set<std::tuple<long, long, bool>> seen;
  svg::XySeries ok = series("plans meeting the SLO", "#4e79a7", svg::XySeries::kDots);
  svg::XySeries over = series("plans over an SLO", "#a0a7b0", svg::XySeries::kDots);
  for (const auto& p : all) {
    if (!(p.latency_s > 0)) continue;
    const auto key = std::make_tuple(std::lround(std::log10(p.latency_s) * 400), std::lround(ymax > 0 ? p.throughput / ymax * 300 : 0), p.meets_slo);
    if (!seen.insert(key).second) continue;
    svg::XySeries& se = p.meets_slo ? ok : over;
    se.x.push_back(p.latency_s * 1e3);
    se.y.push_back(p.throughput);
  }
  svg::XySeries fr = series("frontier (no plan is both faster and higher)", "#222222", svg::XySeries::kLine);
  for (const auto& p : front) {
    fr.x.push_back(p.latency_s * 1e3);
    fr.y.push_back(p.throughput);
    fr.tips.push_back(point_tip(p, prefill));
  }
  svg::XyChart c;
  c.id = "frontier";
  c.title = fmt::format("Throughput against {}", lat);
  c.log_x = true;
  c.x_label = fmt::format("{} (ms, log scale)", lat);
  c.y_label = prefill ? "input tokens/s per GPU" : "output tokens/s per GPU";
  c.empty_note = "no evaluated plan fits memory";
  c.series = {over, ok, fr};
  auto marker = [&](const std::optional<Metrics>& m, const Plan& p, const char* name, const char* color) {
    if (!m) return;
    svg::XySeries se = series(name, color, svg::XySeries::kMarker);
    se.radius = 7;
    if (auto pt = eval_point(ctx, p, *m)) {
      se.x.push_back(pt->latency_s * 1e3);
      se.y.push_back(pt->throughput);
      se.tips.push_back(point_tip(*pt, prefill));
    }
    c.series.push_back(se);
  };
  marker(o.metrics, o.search.best, "chosen plan", "#59a14f");
  marker(o.baseline_metrics, o.baseline.best, "Megatron baseline", "#f28e2b");
  const std::optional<double> slo = prefill ? ctx.workload.ttft_ms : ctx.workload.tpot_ms;
  if (slo) c.refs.push_back({true, *slo, fmt::format("{} SLO {} ms", lat, *slo), kSlo});
  std::string cap = fmt::format("{} evaluated plans that fit memory ({} drawn after thinning), from every engine that ran (engines that record "
                                "single plans; the exact optimiser evaluates groups) and the chosen plan at every batch of the ladder. "
                                "{}",
                                all.size(), ok.x.size() + over.x.size(),
                                slo ? fmt::format("Plans right of the dashed line miss the {} SLO.", lat) : fmt::format("The workload sets no {} SLO.", lat));
  if (!prefill && ctx.workload.ttft_ms) cap += fmt::format(" The TTFT SLO ({} ms) is not on this axis: grey dots left of the line miss it.", *ctx.workload.ttft_ms);
  return "<section id=\"frontier\"><h2>Throughput against latency</h2><figure><figcaption>" + escape(cap) + " Hover a frontier point for its plan.</figcaption>" +
         svg::xy_chart(c) + "</figure></section>";
}

std::string inputs(const SimContext& ctx) {
  DescribeOptions d;
  d.weights_dtype = ctx.model.is_moe() ? ctx.formats.experts : ctx.formats.dense;
  d.kv_dtype = ctx.formats.kv;
  if (ctx.workload.mode == Mode::kDecode) d.contexts = {ctx.workload.context};
  return "<section id=\"inputs\"><h2>Inputs</h2><details open><summary>model, cluster and workload as shardwise read them</summary><pre>" +
         escape(describe_model_text(ctx.model, d)) + "\n" + escape(describe_cluster_text(ctx.cluster)) + "\n" +
         escape(describe_workload_text(ctx.workload)) + "</pre></details></section>";
}

}  // namespace

std::vector<EvalPoint> pareto_frontier(std::vector<EvalPoint> pts) {
  std::sort(pts.begin(), pts.end(), [](const EvalPoint& a, const EvalPoint& b) {
    return a.latency_s != b.latency_s ? a.latency_s < b.latency_s : a.throughput > b.throughput;
  });
  std::vector<EvalPoint> out;
  double best = -1;
  for (const auto& p : pts) {
    if (p.throughput > best) {
      out.push_back(p);
      best = p.throughput;
    }
  }
  return out;
}

// Which engines run the chosen plan as planned, the nearest plan of the others, and each
// engine's launch commands (report/launch.hpp).
std::string engines_section(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o) {
  if (!o.search.found) return "";
  const SearchSpace space = make_space(ctx.model, ctx.cluster, ctx.workload, file.plan.redundant_experts);
  std::string s = "<section id=\"engines\"><h2>Serving engines</h2><table><tr><th>engine</th><th>runs the plan</th><th>otherwise</th></tr>";
  std::string cmds;
  for (ServeEngine e : {ServeEngine::kVllm, ServeEngine::kSglang, ServeEngine::kTrtllm}) {
    const EngineFit fit = fit_engine(e, ctx, space, file.plan);
    std::string other;
    if (!fit.exact) {
      for (const auto& why : fit.differences) other += escape(why) + "<br>";
      if (fit.runnable_found && fit.plan_metrics.objective > 0) {
        other += fmt::format("nearest plan it runs: {:.3f}x the plan", fit.runnable_metrics.objective / fit.plan_metrics.objective);
      }
    }
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", engine_version(e), fit.exact ? "as planned" : "no", other);
    LaunchOptions lo;
    lo.engine = e;
    cmds += fmt::format("<details><summary>{} launch commands</summary><pre>{}</pre></details>", engine_version(e),
                        escape(launch_text(ctx, file, fit, lo)));
  }
  return s + "</table>" + cmds + "</section>";
}

const char* report_style() { return kStyle; }

std::string plan_html(const SimContext& ctx, const PlanFile& file, const PlanOutcome& o) {
  std::string title = fmt::format("shardwise plan: {} on {}, {}", ctx.model.name, file.cluster.empty() ? ctx.cluster.name : file.cluster,
                                  ctx.workload.name);
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
  s += "<title>" + escape(title) + "</title><style>" + kStyle + "</style></head><body>";
  s += "<header><h1>" + escape(title) + "</h1><p class=\"sub\">Generated by shardwise 0.1.0. Every number is the simulator's prediction "
       "(docs/cost-model.md), not a measurement.</p></header>";
  s += summary(ctx, file, o);
  s += engines_section(ctx, file, o);
  s += op_table(ctx, o);
  s += charts_time(ctx, o);
  s += chart_memory(o);
  s += chart_convergence(ctx, o);
  s += chart_frontier(ctx, o);
  s += inputs(ctx);
  s += "</body></html>\n";
  return s;
}

}  // namespace shardwise
