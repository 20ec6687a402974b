#include "search/sweep.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"
#include "cost/engine.hpp"
#include "cost/engine_limits.hpp"
#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "plan/space.hpp"
#include "search/serve_plan.hpp"

namespace shardwise {

Expected<PriceTable> load_prices(const std::string& path) {
  std::string text, file;
  if (path.empty()) {
    const auto files = embedded_prices();
    if (files.empty()) return Error{"data/prices", "", "the shipped price table", "none"};
    text = files.front().text;
    file = files.front().path;
  } else {
    auto t = read_text_file(path);
    if (!t) return t.error();
    text = *t;
    file = path;
  }
  auto doc = parse_yaml_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"usd_per_gpu_hour"});
  PriceTable out;
  if (auto p = r.object("usd_per_gpu_hour", true)) {
    for (const auto& [k, v] : (*doc)["usd_per_gpu_hour"].items()) {
      if (!find_gpu(k)) {
        p->fail(k, "a GPU of the catalog (" + gpu_names() + ")", "'" + k + "'");
        break;
      }
      // a price of 0 would read as "unpriced" in every table: a GPU without a price is left out of the file
      const nlohmann::json* price = p->get(k);
      if (price && price->is_number() && price->get<double>() == 0.0) {
        p->fail(k, "a price above 0 USD per GPU-hour (leave a GPU out of the table to leave it unpriced)", "0");
        break;
      }
      out[k] = p->number(k, 0.0, 1e4);
    }
  }
  if (sink.failed()) return *sink.first;
  return out;
}

namespace {

// A serving point: plan --mode serve on the point's GPUs (or the fewest for the target rate).
void serve_point(const SimContext& ctx, const SearchSpace& space, const SearchResult& closed, const std::optional<ServeEngine>& engine,
                 const SweepOptions& opt, const PriceTable& prices, SweepPoint& p) {
  // as plan --mode serve: the layouts an engine runs as planned
  ServePlanOptions so = serve_plan_options(opt.serve_requests, opt.serve_top_k, opt.target_rate, engine, true, opt.disaggregated);
  so.watch = opt.search_options.watch;
  const ServePlanResult r = plan_serving(ctx, space, closed.found ? std::optional<Plan>(closed.best) : std::nullopt, so);
  if (!r.stopped.empty()) {
    p.reason = "not planned: the sweep was stopped by " + r.stopped + " during this point's serving simulations";
    return;
  }
  if (!r.found()) {
    p.reason = !r.reason.empty() ? r.reason : r.disagg_reason;
    if (p.reason.empty()) p.reason = "no deployment meets the SLOs";
    return;
  }
  SweepServing sv;
  const ServeResult* res = nullptr;
  if (r.disagg_chosen) {
    const DisaggCandidate& c = r.disagg[static_cast<std::size_t>(r.disagg_best)];
    sv.disaggregated = true;
    sv.prefill = c.plan.prefill;
    p.plan = c.plan.decode;
    sv.gpus = c.plan.gpus();
    sv.rate = c.max_rate;
    res = &c.at_max.total;
  } else {
    p.plan = r.deployment;
    sv.gpus = r.deployment.deg.total_gpus();
    sv.rate = r.deployment_rate;
    res = &r.deployment_result;
  }
  const Workload& w = ctx.workload;
  sv.ttft_pct = reported_slo_pct(w.ttft_ms, w.ttft_pct);
  sv.tpot_pct = reported_slo_pct(w.tpot_ms, w.tpot_pct);
  sv.ttft_ms = res->ttft_ms.stat(sv.ttft_pct);
  sv.tpot_ms = res->tpot_ms.stat(sv.tpot_pct);
  sv.output_tok_s_per_gpu = res->output_tok_s_per_gpu;
  p.found = true;
  p.metrics = evaluate(ctx, p.plan);  // the closed form of the (decode pool's) plan: its memory
  const auto price = prices.find(p.gpu);
  if (price != prices.end()) {
    // $/h for the GPUs used over the output tokens (requests) of an hour
    if (sv.output_tok_s_per_gpu > 0) p.usd_per_mtok = price->second / (sv.output_tok_s_per_gpu * 3600.0) * 1e6;
    if (sv.rate > 0) sv.usd_per_kreq = price->second * static_cast<double>(sv.gpus) / (sv.rate * 3600.0) * 1e3;
  }
  p.serving = sv;
}

}  // namespace

std::optional<Error> sweep_input_error(const Workload& w, const WorkloadOverrides& o, const std::string& workload, double target_rate,
                                       int top_k) {
  if (!(target_rate >= 0) || !std::isfinite(target_rate) || target_rate > 1e7) {
    return Error{"--target-rate", "", "a positive number of requests/s up to 1e7", fmt::format("{}", target_rate)};
  }
  if (top_k < 0 || top_k > 1000) return Error{"--top-k", "", "a number of candidates from 1 to 1000 (0: every screened one)", std::to_string(top_k)};
  // a serving workload plans serve mode at each point: the rate is searched (or is the target)
  if (w.mode == Mode::kServe) return serve_plan_workload_error(w, o, workload, false, "a serving sweep");
  if (target_rate > 0) return Error{"--target-rate", "", "--mode serve (or a serve workload) beside it", fmt::format("mode {}", to_string(w.mode))};
  if (o.rate || o.concurrency || o.requests) {
    return Error{o.rate ? "--rate" : o.concurrency ? "--concurrency" : "--requests", "",
                 "--mode serve beside it (outside serve each point is priced by the closed form, which simulates no requests)",
                 o.rate ? "'" + *o.rate + "'" : std::to_string(o.concurrency ? *o.concurrency : *o.requests)};
  }
  return std::nullopt;
}

Expected<std::vector<SweepPoint>> run_sweep(const ModelSpec& model, const Workload& workload, const SweepOptions& opt,
                                            const PriceTable& prices) {
  if (opt.gpus.empty()) return Error{"--gpus", "", "one or more GPU types (" + gpu_names() + ")", "none"};
  if (opt.counts.empty()) return Error{"--counts", "", "one or more GPU counts", "none"};
  const Engine search = find_engine(opt.search);
  if (!search) return Error{"--search", "", std::string("one of ") + engine_names(), "'" + opt.search + "'"};
  for (const auto& g : opt.gpus) {
    if (!find_gpu(g)) return Error{"--gpus", "", "GPU types from " + gpu_names(), "'" + g + "'"};
  }
  for (const auto c : opt.counts) {
    if (c < 1 || c > kMaxPresetGpus) return Error{"--counts", "", fmt::format("GPU counts from 1 to {}", kMaxPresetGpus), std::to_string(c)};
  }
  // a value twice would plan the same point twice: refused, naming it
  const auto first_repeat = [](const auto& values) -> std::optional<std::string> {
    for (std::size_t i = 0; i < values.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (values[i] == values[j]) return fmt::format("{}", values[i]);
      }
    }
    return std::nullopt;
  };
  for (const auto& [flag, repeat] : {std::pair{"--gpus", first_repeat(opt.gpus)}, {"--counts", first_repeat(opt.counts)},
                                     {"--dtypes", first_repeat(opt.dtypes)}, {"--engines", first_repeat(opt.engines)}}) {
    if (repeat) return Error{flag, "", "each value once", "'" + *repeat + "' twice"};
  }
  const std::size_t points = opt.gpus.size() * opt.counts.size() * std::max<std::size_t>(1, opt.dtypes.size()) *
                             std::max<std::size_t>(1, opt.engines.size());
  if (points > kMaxSweepPoints) {
    return Error{"--gpus/--counts/--dtypes/--engines", "", fmt::format("at most {} points (each a whole search)", kMaxSweepPoints),
                 fmt::format("{} x {} x {} x {} = {}", opt.gpus.size(), opt.counts.size(), opt.dtypes.size(), opt.engines.size(), points)};
  }
  // each (format, engine) resolved once, with its errors
  struct Variant {
    std::string dtype, engine;
    Workload w;
    EngineTraits traits;
    std::optional<ServeEngine> kind;
  };
  std::vector<Variant> variants;
  for (const auto& dt : opt.dtypes) {
    WorkloadOverrides o;
    if (!dt.empty()) o.weights_dtype = dt;
    auto w = apply_overrides(workload, o, "");
    if (!w) {
      Error e = w.error();
      return Error{"--dtypes", "", e.expected, e.found};
    }
    for (const auto& en : opt.engines) {
      Variant v{dt, en, *w, EngineTraits{}, std::nullopt};
      if (!en.empty()) {
        auto t = load_engine_profile(en);
        if (!t) return Error{"--engines", "", "one of " + engine_profile_names(), "'" + en + "'"};
        v.traits = *t;
        v.kind = parse_serve_engine(en);
      }
      variants.push_back(std::move(v));
    }
  }
  std::vector<SweepPoint> out;
  const std::size_t total = opt.gpus.size() * opt.counts.size() * variants.size();
  std::size_t index = 0;
  for (const auto& g : opt.gpus) {
    for (const Variant& v : variants) {
      for (const auto c : opt.counts) {
        SweepPoint p;
        p.gpu = g;
        p.count = c;
        p.dtype = v.dtype;
        p.engine = v.engine;
        if (static_cast<int>(index++ % static_cast<std::size_t>(std::max(1, opt.ranks))) != opt.rank) {  // another process's
          out.push_back(std::move(p));
          continue;
        }
        Watch* watch = opt.search_options.watch;
        if (should_stop(watch)) {  // every point left: said so, never priced from a partial search
          p.reason = "not planned: the sweep was stopped by " + watch->stop_text();
          out.push_back(std::move(p));
          continue;
        }
        if (watch) {
          watch->set_context("");
          watch->progress([&] { return fmt::format("sweep: point {} of {} ({} x {}), {:.0f} s", index, total, c, g, watch->elapsed_s()); });
          watch->set_context(fmt::format("sweep: point {} of {} ({} x {})", index, total, c, g));  // said before the point's own progress
        }
        auto cl = cluster_from_preset(fmt::format("{}x{}", g, c));
        if (!cl) return Error{"--counts", "", cl.error().expected, cl.error().found};
        if (auto why = engine_gpu_mismatch(v.traits, cl->gpu); !why.empty()) {  // a pair that cannot exist: skipped, said why
          p.skipped = p.reason = why;
          out.push_back(std::move(p));
          if (opt.progress) opt.progress(out.size(), total);
          continue;
        }
        CostParams params = cost_params_for(cl->gpu.name);
        params.kernel_tables = opt.kernel_tables;
        params.silicon = opt.silicon;
        if (opt.calibration && opt.calibration->gpu == cl->gpu.name) {
          params.step_overhead_us = opt.calibration->step_overhead_us;
          params.scales = opt.calibration->scales;
        }
        const SimContext ctx = make_context(model, *cl, v.w, params, v.traits);
        const SearchSpace space = make_space(model, *cl, v.w);
        SearchResult r = v.kind ? search_for_engine(ctx, space, opt.search_options, *v.kind) : search(ctx, space, opt.search_options);
        refine_batch(ctx, r);
        refine_two_batch_overlap(ctx, space, opt.search_options, r, v.kind);
        if (should_stop(watch)) {
          p.reason = "not planned: the sweep was stopped by " + watch->stop_text() + " during this point's search";
        } else if (v.w.mode == Mode::kServe) {
          serve_point(ctx, space, r, v.kind, opt, prices, p);
        } else if (r.found) {
          p.found = true;
          p.plan = r.best;
          p.metrics = evaluate(ctx, r.best);
          const auto price = prices.find(g);
          if (price != prices.end() && p.metrics.output_tok_s_per_gpu > 0) {  // output tokens priced (none in prefill mode)
            // $/h for the GPUs used over the output tokens of an hour, per million
            p.usd_per_mtok = price->second / (p.metrics.output_tok_s_per_gpu * 3600.0) * 1e6;
          }
        } else {
          p.reason = r.closest ? evaluate(ctx, *r.closest).reason : (r.invalid_example.empty() ? "no plan fits" : r.invalid_example);
        }
        out.push_back(std::move(p));
        if (opt.progress) opt.progress(out.size(), total);
      }
    }
  }
  if (opt.search_options.watch) opt.search_options.watch->set_context("");
  if (opt.ranks <= 1) mark_fewest(out);
  return out;
}

void mark_fewest(std::vector<SweepPoint>& out) {
  // the fewest GPUs per type, format and engine with a plan within the SLOs
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!out[i].found) continue;
    // a serving point: the GPUs its deployment uses (a target rate's fewest), then the cluster's count
    const auto key = [](const SweepPoint& x) { return std::pair{x.serving ? x.serving->gpus : x.count, x.count}; };
    bool smaller = false;
    for (std::size_t j = 0; j < out.size(); ++j) {
      smaller = smaller || (j != i && out[j].found && out[j].gpu == out[i].gpu && out[j].dtype == out[i].dtype &&
                            out[j].engine == out[i].engine && key(out[j]) < key(out[i]));
    }
    out[i].fewest = !smaller;
  }
}

std::string sweep_point_to_json(const SweepPoint& p) {
  const Degrees& d = p.plan.deg;
  const Metrics& m = p.metrics;
  nlohmann::json j{{"gpu", p.gpu}, {"count", p.count}, {"dtype", p.dtype}, {"engine", p.engine}, {"found", p.found}, {"reason", p.reason},
                         {"usd", p.usd_per_mtok}, {"deg", {d.tp, d.pp, d.ep, d.attn_dp, d.replicas}}, {"batch", m.batch},
                         {"objective", m.objective}, {"out", m.output_tok_s_per_gpu}, {"tpot", m.tpot_s}, {"ttft", m.ttft_s},
                         {"mem", m.memory.total().value()}, {"tbo", p.plan.two_batch_overlap}, {"skipped", p.skipped}};
  if (p.serving) {
    const SweepServing& v = *p.serving;
    const Degrees& q = v.prefill.deg;
    j["serving"] = {{"disagg", v.disaggregated}, {"pre", {q.tp, q.pp, q.ep, q.attn_dp, q.replicas}}, {"pre_tbo", v.prefill.two_batch_overlap},
                    {"gpus", v.gpus}, {"rate", v.rate}, {"ttft_pct", v.ttft_pct}, {"tpot_pct", v.tpot_pct}, {"ttft", v.ttft_ms},
                    {"tpot", v.tpot_ms}, {"out", v.output_tok_s_per_gpu}, {"usd_kreq", v.usd_per_kreq}};
  }
  return j.dump();
}

SweepPoint sweep_point_from_json(const std::string& line) {
  const auto j = nlohmann::json::parse(line);
  // a non-finite figure travels as null (and prints as such nowhere: it is 0 here)
  const auto num = [&](const char* k) { return j.at(k).is_number() ? j.at(k).get<double>() : 0.0; };
  SweepPoint p;
  p.gpu = j.at("gpu").get<std::string>();
  p.count = j.at("count").get<std::int64_t>();
  p.dtype = j.at("dtype").get<std::string>();
  p.engine = j.at("engine").get<std::string>();
  p.found = j.at("found").get<bool>();
  p.reason = j.at("reason").get<std::string>();
  p.usd_per_mtok = num("usd");
  const auto& d = j.at("deg");
  p.plan.deg = Degrees{d[0].get<std::int32_t>(), d[1].get<std::int32_t>(), d[2].get<std::int32_t>(), d[3].get<std::int32_t>(),
                       d[4].get<std::int32_t>()};
  p.metrics.batch = j.at("batch").get<std::int64_t>();
  p.metrics.objective = num("objective");
  p.metrics.output_tok_s_per_gpu = num("out");
  p.metrics.tpot_s = num("tpot");
  p.metrics.ttft_s = num("ttft");
  p.metrics.memory.weights = Bytes(num("mem"));
  p.plan.two_batch_overlap = j.at("tbo").get<bool>();
  p.skipped = j.at("skipped").get<std::string>();
  if (j.contains("serving")) {
    const auto& v = j.at("serving");
    const auto vn = [&](const char* k) { return v.at(k).is_number() ? v.at(k).get<double>() : 0.0; };
    SweepServing sv;
    sv.disaggregated = v.at("disagg").get<bool>();
    const auto& q = v.at("pre");
    sv.prefill.deg = Degrees{q[0].get<std::int32_t>(), q[1].get<std::int32_t>(), q[2].get<std::int32_t>(), q[3].get<std::int32_t>(),
                             q[4].get<std::int32_t>()};
    sv.prefill.two_batch_overlap = v.at("pre_tbo").get<bool>();
    sv.gpus = v.at("gpus").get<std::int64_t>();
    sv.rate = vn("rate");
    sv.ttft_pct = vn("ttft_pct");
    sv.tpot_pct = vn("tpot_pct");
    sv.ttft_ms = vn("ttft");
    sv.tpot_ms = vn("tpot");
    sv.output_tok_s_per_gpu = vn("out");
    sv.usd_per_kreq = vn("usd_kreq");
    p.serving = sv;
  }
  return p;
}

}  // namespace shardwise
