// The Python module `shardwise` (pybind11): a thin room over the library (ARCHITECTURE.md).
// Inputs by name or path as on the command line, results as plain dicts (the same JSON the
// CLI's --json prints), plans as plan.json dicts, and every bad input raised as
// shardwise.Error with the file (or argument), field, expected and found of the CLI's
// message. docs/python.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cost/engine.hpp"
#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"
#include "report/describe.hpp"
#include "report/launch.hpp"
#include "report/plan_report.hpp"
#include "report/serve_report.hpp"
#include "report/simulate.hpp"
#include "search/search.hpp"
#include "search/serve_plan.hpp"
#include "serve/disagg.hpp"
#include "serve/serving.hpp"
#include "workload/workload.hpp"

namespace py = pybind11;
using shardwise::Error;

namespace {

// The module's exception class: created once at import and kept for the life of the
// process (a handle, never released: the interpreter may be gone when statics die).
py::handle error_type() {
  static py::handle type = PyErr_NewExceptionWithDoc("shardwise.Error",
                                                     "Bad input: .file (or the argument), .field, .expected and .found say what and where.",
                                                     PyExc_ValueError, nullptr);
  return type;
}

std::string fmt_rate(double r) {
  if (std::isinf(r)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", r);
  return buf;
}

[[noreturn]] void raise(Error e) {
  // a command-line flag ("--isl") is this module's keyword ("isl")
  if (e.file.rfind("--", 0) == 0) {
    e.file = e.file.substr(2);
    for (char& c : e.file) c = c == '-' ? '_' : c;
  }
  py::object inst = error_type()(e.message());
  inst.attr("file") = e.file;
  inst.attr("field") = e.field;
  inst.attr("expected") = e.expected;
  inst.attr("found") = e.found;
  PyErr_SetObject(error_type().ptr(), inst.ptr());
  throw py::error_already_set();
}

template <class T>
T get(shardwise::Expected<T> x) {
  if (!x) raise(x.error());
  return std::move(x).value();
}

py::object to_py(const std::string& json_text) { return py::module_::import("json").attr("loads")(json_text); }

// The workload overrides of the command line, from keyword arguments of the same names.
shardwise::WorkloadOverrides overrides_of(const py::kwargs& kw) {
  shardwise::WorkloadOverrides o;
  for (const auto& [k, v] : kw) {
    const std::string key = py::str(k);
    const auto num = [&]() { return v.cast<double>(); };
    const auto integer = [&]() { return v.cast<std::int64_t>(); };
    const auto text = [&]() { return py::str(v).cast<std::string>(); };
    try {
      if (key == "mode") o.mode = text();
      else if (key == "isl") o.isl = integer();
      else if (key == "osl") o.osl = integer();
      else if (key == "context") o.context = integer();
      else if (key == "batch") o.batch = py::isinstance<py::str>(v) ? text() : std::to_string(integer());
      else if (key == "ttft_ms") o.ttft_ms = num();
      else if (key == "tpot_ms") o.tpot_ms = num();
      else if (key == "weights_dtype") o.weights_dtype = text();
      else if (key == "kv_dtype") o.kv_dtype = text();
      else if (key == "expert_dtype") o.expert_dtype = text();
      else if (key == "spec_tokens") o.spec_tokens = integer();
      else if (key == "spec_acceptance") o.spec_acceptance = num();
      else if (key == "rate") o.rate = py::isinstance<py::str>(v) ? text() : fmt_rate(num());
      else if (key == "concurrency") o.concurrency = integer();
      else if (key == "requests") o.requests = integer();
      else if (key == "seed") o.seed = integer();
      else {
        raise(Error{key, "", "a keyword of the function (see help()) or a workload override: mode, isl, osl, context, batch, ttft_ms, "
                             "tpot_ms, weights_dtype, kv_dtype, expert_dtype, spec_tokens, spec_acceptance, rate, concurrency, requests, seed",
                    "'" + key + "'"});
      }
    } catch (const py::cast_error&) {
      raise(Error{key, "", "a value of the right type (a number, or a string for mode and the dtypes)", py::repr(v).cast<std::string>()});
    }
  }
  return o;
}

struct Inputs {
  shardwise::ModelSpec model;
  shardwise::ClusterSpec cluster;
  shardwise::Workload workload;
};

Inputs inputs(const std::string& model, const std::string& cluster, const std::string& workload, const py::kwargs& kw) {
  Inputs in{get(shardwise::load_model(model)), get(shardwise::load_cluster(cluster)), get(shardwise::load_workload(workload))};
  in.workload = get(shardwise::apply_overrides(in.workload, overrides_of(kw)));
  return in;
}

shardwise::EngineTraits engine_of(const std::optional<std::string>& name, const std::optional<std::string>& version,
                                  std::optional<std::int64_t> max_num_tokens, std::optional<std::int64_t> max_num_seqs) {
  shardwise::EngineTraits e;
  if (name) {
    e = get(shardwise::load_engine_profile(*name, version.value_or(""), max_num_tokens));
  } else if (version) {
    raise(Error{"engine_version", "", "engine= beside it (trtllm, vllm or sglang)", "no engine"});
  } else if (max_num_tokens) {
    if (*max_num_tokens < 1 || *max_num_tokens > shardwise::kMaxTokens) raise(Error{"max_num_tokens", "", "a positive token budget", std::to_string(*max_num_tokens)});
    e.max_num_tokens = *max_num_tokens;
  }
  if (max_num_seqs) {
    if (*max_num_seqs < 1 || *max_num_seqs > shardwise::kMaxBatch) raise(Error{"max_num_seqs", "", "a positive number of running sequences", std::to_string(*max_num_seqs)});
    e.max_num_seqs = *max_num_seqs;
  }
  return e;
}

std::int32_t degree(const char* name, std::int64_t v, std::int64_t lo) {
  if (v < lo || v > (1 << 20)) raise(Error{name, "", "an integer from " + std::to_string(lo) + " to 1048576", std::to_string(v)});
  return static_cast<std::int32_t>(v);
}

}  // namespace

PYBIND11_MODULE(shardwise, m) {
  m.doc() = "shardwise: plan how to spread a large language model over a GPU cluster for inference (docs/python.md)";
  m.attr("Error") = error_type();
  m.attr("__version__") = "0.1.0";

  m.def("models", []() { return shardwise::model_preset_names(); }, "The model presets.");
  m.def("workloads", []() { return shardwise::workload_preset_names(); }, "The workload presets.");

  m.def(
      "describe",
      [](const std::optional<std::string>& model, const std::optional<std::string>& cluster, const std::optional<std::string>& workload,
         const py::kwargs& kw) {
        std::optional<shardwise::ModelSpec> mm;
        std::optional<shardwise::ClusterSpec> cc;
        std::optional<shardwise::Workload> ww;
        if (model) mm = get(shardwise::load_model(*model));
        if (cluster) cc = get(shardwise::load_cluster(*cluster));
        if (workload) ww = get(shardwise::apply_overrides(get(shardwise::load_workload(*workload)), overrides_of(kw)));
        return to_py(shardwise::describe_json(mm ? &*mm : nullptr, cc ? &*cc : nullptr, ww ? &*ww : nullptr, shardwise::DescribeOptions{}));
      },
      py::arg("model") = py::none(), py::arg("cluster") = py::none(), py::arg("workload") = py::none(),
      "Parameters, KV bytes per token, weights (model); levels (cluster); the workload: the dict of `shardwise describe --json`.");

  m.def(
      "simulate",
      [](const std::string& model, const std::string& cluster, const std::string& workload, std::int64_t tp, std::int64_t pp, std::int64_t ep,
         std::int64_t attn_dp, std::int64_t replicas, std::int64_t micro_batches, std::int64_t redundant_experts, const std::string& sharding,
         const std::optional<std::string>& engine, const std::optional<std::string>& engine_version, std::optional<std::int64_t> max_num_tokens,
         std::optional<std::int64_t> max_num_seqs, std::optional<std::int64_t> prefill_instances, std::optional<std::int64_t> prefill_tp,
         bool two_batch_overlap, const py::kwargs& kw) {
        const Inputs in = inputs(model, cluster, workload, kw);
        shardwise::Plan p;
        p.deg = shardwise::Degrees{degree("tp", tp, 1), degree("pp", pp, 1), degree("ep", ep, 1), degree("attn_dp", attn_dp, 1),
                                   degree("replicas", replicas, 1)};
        p.micro_batches = degree("micro_batches", micro_batches, 0);
        p.redundant_experts = degree("redundant_experts", redundant_experts, 0);
        p.two_batch_overlap = two_batch_overlap;
        p.sharding = get(shardwise::load_sharding(sharding));
        p.batch = in.workload.batch.value_or(0);
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload, shardwise::cost_params_for(in.cluster.gpu.name),
                                                                  engine_of(engine, engine_version, max_num_tokens, max_num_seqs));
        shardwise::Breakdown bd;
        const shardwise::Metrics mt = shardwise::evaluate(ctx, p, &bd);
        if (mt.infeasible == shardwise::Infeasible::kInvalidPlan) {
          raise(Error{"simulate", "plan", "a plan valid on " + in.model.name + " and " + in.cluster.name, mt.reason});
        }
        if (in.workload.mode != shardwise::Mode::kServe) return to_py(shardwise::simulate_json(ctx, p, mt, bd));
        if (!shardwise::has_arrivals(in.workload)) {
          raise(Error{"simulate", "", "how requests arrive for mode serve: rate= (Poisson; 'inf': all at once) or concurrency=", "neither"});
        }
        if (prefill_instances || prefill_tp) {
          shardwise::DisaggPlan d{p, p};
          d.prefill.two_batch_overlap = false;  // the decode pool's own
          d.prefill.deg.replicas = degree("prefill_instances", prefill_instances.value_or(1), 1);
          if (prefill_tp) d.prefill.deg.tp = degree("prefill_tp", *prefill_tp, 1);
          shardwise::Plan probe = d.prefill;
          probe.batch = probe.deg.attn_dp;
          if (auto why = shardwise::validate_plan(probe, in.model, in.cluster)) raise(Error{"prefill_instances", "", "a valid prefill pool", *why});
          if (d.gpus() > in.cluster.num_gpus) raise(Error{"prefill_instances", "", "pools that fit the cluster", std::to_string(d.gpus()) + " GPUs"});
          return to_py(shardwise::serve_disagg_json(ctx, d, shardwise::simulate_disaggregated(ctx, d), 0.0));
        }
        return to_py(shardwise::serve_json(ctx, p, shardwise::simulate_serving(ctx, p), 0.0));
      },
      py::arg("model"), py::arg("cluster"), py::arg("workload") = "decode-16k", py::arg("tp") = 1, py::arg("pp") = 1, py::arg("ep") = 1,
      py::arg("attn_dp") = 1, py::arg("replicas") = 1, py::arg("micro_batches") = 0, py::arg("redundant_experts") = 0,
      py::arg("sharding") = "megatron", py::arg("engine") = py::none(), py::arg("engine_version") = py::none(),
      py::arg("max_num_tokens") = py::none(), py::arg("max_num_seqs") = py::none(), py::arg("prefill_instances") = py::none(),
      py::arg("prefill_tp") = py::none(), py::arg("two_batch_overlap") = false,
      "One plan's metrics: the dict of `shardwise simulate --json` (with mode='serve': the serving simulation's, keys ttft_ms_p99 "
      "and kin). Workload overrides as keywords: isl=, osl=, batch=, mode=, rate=, concurrency=, requests=, seed=, ttft_ms=, ...");

  m.def(
      "plan",
      [](const std::string& model, const std::string& cluster, const std::string& workload, const std::string& search, std::int64_t budget,
         std::uint64_t seed, int threads, std::int64_t redundant_experts, const std::optional<std::string>& engine,
         const std::optional<std::string>& engine_version, std::optional<std::int64_t> max_num_tokens, double target_rate, int top_k,
         const py::kwargs& kw) {
        const Inputs in = inputs(model, cluster, workload, kw);
        const shardwise::Engine eng = shardwise::find_engine(search);
        if (!eng) raise(Error{"search", "", std::string("one of ") + shardwise::engine_names(), "'" + search + "'"});
        if (budget < 1) raise(Error{"budget", "", "a positive number of evaluations", std::to_string(budget)});
        if (threads < 1 || threads > 256) raise(Error{"threads", "", "a thread count from 1 to 256", std::to_string(threads)});
        if (!(target_rate >= 0) || !std::isfinite(target_rate)) raise(Error{"target_rate", "", "requests/s >= 0", std::to_string(target_rate)});
        if (top_k < 0 || top_k > 1000) raise(Error{"top_k", "", "a number of candidates from 1 to 1000 (0: every screened one)", std::to_string(top_k)});
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload, shardwise::cost_params_for(in.cluster.gpu.name),
                                                                  engine_of(engine, engine_version, max_num_tokens, std::nullopt));
        const shardwise::SearchSpace space =
            shardwise::make_space(in.model, in.cluster, in.workload, degree("redundant_experts", redundant_experts, 0));
        shardwise::SearchOptions opt;
        opt.budget = budget;
        opt.seed = seed;
        opt.threads = threads;
        shardwise::PlanOutcome o;
        o.space_size = space.size();
        const std::optional<shardwise::ServeEngine> kind = engine ? shardwise::parse_serve_engine(*engine) : std::nullopt;
        {
          py::gil_scoped_release release;
          // engine=: only the plans that engine runs as planned, all of them (as plan --engine)
          o.search = kind ? shardwise::search_for_engine(ctx, space, opt, *kind) : eng(ctx, space, opt);
          shardwise::refine_two_batch_overlap(ctx, space, opt, o.search, kind);
        }
        shardwise::PlanFile file{o.search.best, model, cluster, workload, overrides_of(kw), std::nullopt};
        file.overrides.batch.reset();
        if (in.workload.mode == shardwise::Mode::kServe) {
          shardwise::ServePlanOptions so;
          so.top_k = top_k;
          so.target_rate = target_rate;
          so.requests = in.workload.serve.requests > 0 ? in.workload.serve.requests : 1000;
          so.engine = kind;
          shardwise::ServePlanResult r;
          {
            py::gil_scoped_release release;
            r = shardwise::plan_serving(ctx, space, o.search.found ? std::optional<shardwise::Plan>(o.search.best) : std::nullopt, so);
          }
          return to_py(shardwise::serve_plan_json(ctx, shardwise::serve_plan_file(file, r, so.requests), r, target_rate, so.requests));
        }
        if (target_rate > 0) raise(Error{"target_rate", "", "mode='serve' beside it", shardwise::to_string(in.workload.mode)});
        opt.time_limit_s = 0;
        o.baseline = search == "megatron" ? o.search : shardwise::search_megatron(ctx, space, opt);
        if (o.search.found) o.metrics = shardwise::evaluate(ctx, o.search.best, &o.breakdown);
        if (o.baseline.found) o.baseline_metrics = shardwise::evaluate(ctx, o.baseline.best, &o.baseline_breakdown);
        if (!o.search.found && o.search.closest) {
          o.closest = *o.search.closest;
          o.closest_metrics = shardwise::evaluate(ctx, *o.search.closest);
        }
        return to_py(shardwise::plan_json(ctx, file, o));
      },
      py::arg("model"), py::arg("cluster"), py::arg("workload") = "decode-16k", py::arg("search") = "exact", py::arg("budget") = 4000,
      py::arg("seed") = 1, py::arg("threads") = 1, py::arg("redundant_experts") = 0, py::arg("engine") = py::none(),
      py::arg("engine_version") = py::none(), py::arg("max_num_tokens") = py::none(), py::arg("target_rate") = 0.0, py::arg("top_k") = 24,
      "Searches the plan: the dict of `shardwise plan --json` (its 'plan' is a plan.json dict). With mode='serve': the most "
      "requests/s per GPU within the SLOs, or the fewest GPUs for target_rate= (the dict of `plan --mode serve --json`).");

  m.def(
      "launch",
      [](const py::object& plan, const std::string& engine, const std::optional<std::string>& model_path) {
        const std::string text = py::isinstance<py::str>(plan) ? "" : py::module_::import("json").attr("dumps")(plan).cast<std::string>();
        shardwise::PlanFile f = text.empty() ? get(shardwise::load_plan_file(plan.cast<std::string>()))
                                             : get(shardwise::parse_plan_json(text, "plan"));
        const auto e = shardwise::parse_serve_engine(engine);
        if (!e) raise(Error{"engine", "", "one of vllm, sglang, trtllm", "'" + engine + "'"});
        if (f.model.empty() || f.cluster.empty() || f.workload.empty()) {
          raise(Error{"plan", "model/cluster/workload", "the names the plan was made for", "none"});
        }
        Inputs in{get(shardwise::load_model(f.model)), get(shardwise::load_cluster(f.cluster)), get(shardwise::load_workload(f.workload))};
        in.workload = get(shardwise::apply_overrides(in.workload, f.overrides, "plan"));
        shardwise::EngineTraits settings;
        if (f.max_num_seqs) settings.max_num_seqs = *f.max_num_seqs;
        if (f.max_num_tokens) settings.max_num_tokens = *f.max_num_tokens;
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload, shardwise::cost_params_for(in.cluster.gpu.name), settings);
        shardwise::Plan probe = f.plan;
        if (probe.batch == 0) probe.batch = probe.deg.attn_dp;
        if (auto why = shardwise::validate_plan(probe, in.model, in.cluster)) raise(Error{"plan", "plan", "a plan valid on " + in.model.name, *why});
        const shardwise::SearchSpace space = shardwise::make_space(in.model, in.cluster, in.workload, f.plan.redundant_experts);
        shardwise::LaunchOptions o;
        o.engine = *e;
        o.model_path = model_path.value_or("");
        const shardwise::EngineFit fit = shardwise::fit_engine(*e, ctx, space, f.plan);
        if (f.prefill_pool) {
          const shardwise::SearchSpace ps = shardwise::make_space(in.model, in.cluster, in.workload, f.prefill_pool->redundant_experts);
          return shardwise::launch_disagg_text(ctx, f, shardwise::fit_engine(*e, ctx, ps, *f.prefill_pool), fit, o);
        }
        return shardwise::launch_text(ctx, f, fit, o);
      },
      py::arg("plan"), py::arg("engine"), py::arg("model_path") = py::none(),
      "The launch commands of a plan (a plan.json dict such as plan(...)['plan'], or a path) for vllm, sglang or trtllm.");
}
