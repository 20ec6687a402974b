// The Python module `shardwise` (pybind11): a thin room over the library (ARCHITECTURE.md).
// Inputs by name or path as on the command line, results as plain dicts (the same JSON the
// CLI's --json prints), plans as plan.json dicts, and every bad input raised as
// shardwise.Error with the file (or argument), field, expected and found of the CLI's
// message. docs/python.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "check/calibrate.hpp"
#include "check/check.hpp"
#include "cost/calibration.hpp"
#include "cost/bench_settings.hpp"
#include "cost/engine.hpp"
#include "cost/params.hpp"
#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "plan/plan_json.hpp"
#include "plan/space.hpp"
#include "report/describe.hpp"
#include "report/launch.hpp"
#include "report/launch_plan.hpp"
#include "report/phases_report.hpp"
#include "report/plan_report.hpp"
#include "report/serve_report.hpp"
#include "report/simulate.hpp"
#include "report/sweep_report.hpp"
#include "search/phases_search.hpp"
#include "search/search.hpp"
#include "search/serve_plan.hpp"
#include "search/sweep.hpp"
#include "core/control.hpp"
#include "core/files.hpp"
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

// A keyword's value, typed as the CLI types a flag: an integer is a Python int (True,
// False and 1.5 are refused, as the CLI refuses "true" and "1.5"), a number an int or a
// float, a text a str. None is "not given" where the keyword allows it.
std::string value_text(const py::handle& v) { return py::repr(v).cast<std::string>(); }
bool is_bool(const py::handle& v) { return py::isinstance<py::bool_>(v); }
std::int64_t as_int(const std::string& name, const py::handle& v) {
  if (is_bool(v) || !py::isinstance<py::int_>(v)) raise(Error{name, "", "an integer (an int, not a bool or a float)", value_text(v)});
  try {
    return v.cast<std::int64_t>();
  } catch (const py::cast_error&) {
    raise(Error{name, "", "an integer that fits 64 bits", value_text(v)});
  }
}
std::optional<std::int64_t> as_opt_int(const std::string& name, const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  return as_int(name, v);
}
double as_num(const std::string& name, const py::handle& v) {
  if (is_bool(v) || !(py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v))) raise(Error{name, "", "a number (an int or a float, not a bool)", value_text(v)});
  return v.cast<double>();
}
std::string as_str(const std::string& name, const py::handle& v) {
  if (!py::isinstance<py::str>(v)) raise(Error{name, "", "a string", value_text(v)});
  return v.cast<std::string>();
}
std::optional<std::string> as_opt_str(const std::string& name, const py::handle& v) {
  if (v.is_none()) return std::nullopt;
  return as_str(name, v);
}
bool as_bool(const std::string& name, const py::handle& v) {
  if (!is_bool(v)) raise(Error{name, "", "True or False", value_text(v)});
  return v.cast<bool>();
}

// The cost parameters of a GPU with kernel_tables= and silicon= (the CLI's --kernel-tables and
// --silicon DIR; docs/silicon.md): a folder that does not read raises, naming `silicon`.
// calibration= (the CLI's --calibration FILE; docs/calibration.md) applies a profile.
shardwise::CostParams cost_params_py(const std::string& gpu, const py::handle& kernel_tables, const py::handle& silicon,
                                     const py::handle& calibration) {
  shardwise::CostParams p = shardwise::cost_params_for(gpu);
  if (!calibration.is_none()) {
    const std::string path = as_str("calibration", calibration);
    p = get(shardwise::apply_calibration(p, get(shardwise::load_calibration_profile(path)), gpu, path));
  }
  p.kernel_tables = as_bool("kernel_tables", kernel_tables);
  if (!silicon.is_none()) {
    auto t = shardwise::load_silicon_dir(as_str("silicon", silicon), "silicon");
    if (!t) raise(t.error());
    p.silicon = std::make_shared<const shardwise::SiliconTables>(std::move(t).value());
    p.kernel_tables = true;
  }
  return p;
}

// The workload overrides of the command line, from keyword arguments of the same names.
shardwise::WorkloadOverrides overrides_of(const py::kwargs& kw) {
  shardwise::WorkloadOverrides o;
  for (const auto& [k, v] : kw) {
    const std::string key = py::str(k);
    if (key == "mode") o.mode = as_str(key, v);
    else if (key == "isl") o.isl = as_int(key, v);
    else if (key == "osl") o.osl = as_int(key, v);
    else if (key == "context") o.context = as_int(key, v);
    else if (key == "batch") o.batch = py::isinstance<py::str>(v) ? as_str(key, v) : std::to_string(as_int(key, v));
    else if (key == "ttft_ms") o.ttft_ms = as_num(key, v);
    else if (key == "tpot_ms") o.tpot_ms = as_num(key, v);
    else if (key == "slo") o.slo = as_str(key, v);
    else if (key == "weights_dtype") o.weights_dtype = as_str(key, v);
    else if (key == "kv_dtype") o.kv_dtype = as_str(key, v);
    else if (key == "expert_dtype") o.expert_dtype = as_str(key, v);
    else if (key == "spec_tokens") o.spec_tokens = as_int(key, v);
    else if (key == "spec_acceptance") o.spec_acceptance = as_num(key, v);
    else if (key == "rate") o.rate = py::isinstance<py::str>(v) ? as_str(key, v) : fmt_rate(as_num(key, v));
    else if (key == "concurrency") o.concurrency = as_int(key, v);
    else if (key == "requests") o.requests = as_int(key, v);
    else if (key == "seed") o.seed = as_int(key, v);
    else {
      raise(Error{key, "", "a keyword of the function (see help()) or a workload override: mode, isl, osl, context, batch, ttft_ms, "
                           "tpot_ms, slo, weights_dtype, kv_dtype, expert_dtype, spec_tokens, spec_acceptance, rate, concurrency, requests, seed",
                  "'" + key + "'"});
    }
  }
  return o;
}

// A long run under Python: Ctrl-C (checked on the calling thread every 0.1 s while the GIL
// is released) and time_limit stop it; progress lines go to sys.stderr for runs over two
// seconds. After the run, `finish` raises KeyboardInterrupt when it was interrupted.
shardwise::RunControl python_control(const py::handle& time_limit) {
  const double limit = time_limit.is_none() ? 0.0 : as_num("time_limit", time_limit);
  if (auto e = shardwise::check_time_limit(limit)) raise(*e);
  shardwise::RunControl c;
  c.time_limit_s = limit;
  c.cancelled = [] {
    py::gil_scoped_acquire gil;
    return PyErr_CheckSignals() != 0;
  };
  c.emit = [](const std::string& line) {
    py::gil_scoped_acquire gil;
    py::print("shardwise: " + line, py::arg("file") = py::module_::import("sys").attr("stderr"));
  };
  return c;
}
void finish(const shardwise::Watch& w) {
  if (w.stopped() == shardwise::StopReason::kCancelled) {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
}

struct Inputs {
  shardwise::ModelSpec model;
  shardwise::ClusterSpec cluster;
  shardwise::Workload workload;
};

// load_model, with a UserWarning when a local folder is read instead of the preset of its name
shardwise::Expected<shardwise::ModelSpec> load_model_warned(const std::string& name_or_path) {
  if (auto n = shardwise::model_shadow_note(name_or_path)) {
    if (PyErr_WarnEx(PyExc_UserWarning, n->c_str(), 1) < 0) throw py::error_already_set();  // warnings as errors
  }
  return shardwise::load_model(name_or_path);
}

Inputs inputs(const std::string& model, const std::string& cluster, const std::string& workload, const py::kwargs& kw) {
  Inputs in{get(load_model_warned(model)), get(shardwise::load_cluster(cluster)), get(shardwise::load_workload(workload))};
  in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, overrides_of(kw)))));
  return in;
}

// decode_steps=: SGLang's --num-continuous-decode-steps, as the CLI's --decode-steps; adp_balance='W,T':
// TensorRT-LLM's attention-DP balancing, as --adp-balance (errors name the keyword)
shardwise::EngineTraits engine_of(const py::handle& name, const py::handle& version, const py::handle& max_num_tokens,
                                  const py::handle& max_num_seqs, const py::handle& decode_steps = py::none(),
                                  const py::handle& adp_balance = py::none(), const py::handle& cuda_graph_batch_sizes = py::none()) {
  std::string why;
  auto e = get(shardwise::engine_traits_of(as_opt_str("engine", name), as_opt_str("engine_version", version),
                                           as_opt_int("max_num_tokens", max_num_tokens), as_opt_int("max_num_seqs", max_num_seqs), &why));
  if (!why.empty() && PyErr_WarnEx(PyExc_UserWarning, why.c_str(), 1) < 0) throw py::error_already_set();  // warnings as errors
  if (const auto k = as_opt_int("decode_steps", decode_steps)) {
    auto stepped = shardwise::with_decode_steps(e, *k);
    if (!stepped) {
      Error err = stepped.error();
      if (err.file == "--decode-steps") err.file = "decode_steps";
      raise(err);
    }
    e = *stepped;
  }
  if (const auto text = as_opt_str("adp_balance", adp_balance)) {
    const auto named = [](Error err) {  // the keywords' names, not the flags'
      if (err.file == "--adp-balance") err.file = "adp_balance";
      for (std::string* t : {&err.expected, &err.found}) {
        if (const auto at = t->find("no --engine"); at != std::string::npos) t->replace(at, 11, "no engine");
        // "--engine NAME" -> "engine='NAME'"
        if (const auto at = t->find("--engine "); at != std::string::npos) {
          const auto name_at = at + 9;
          const auto end = std::min(t->find_first_of(" ,()", name_at), t->size());
          t->replace(at, end - at, "engine='" + t->substr(name_at, end - name_at) + "'");
        }
      }
      return err;
    };
    auto wt = shardwise::parse_adp_balance(*text);
    if (!wt) raise(named(wt.error()));
    auto balanced = shardwise::with_adp_balance(e, wt->first, wt->second);
    if (!balanced) raise(named(balanced.error()));
    e = *balanced;
  }
  // cuda_graph_batch_sizes=: a list of batch sizes or '128,256' (as --cuda-graph-batch-sizes);
  // errors name the keyword, and a string's value as typed
  if (!cuda_graph_batch_sizes.is_none()) {
    std::vector<std::int64_t> sizes;
    const bool text = py::isinstance<py::str>(cuda_graph_batch_sizes);
    const auto named = [&](Error err) {
      err.file = "cuda_graph_batch_sizes";
      if (text) err.found = "'" + cuda_graph_batch_sizes.cast<std::string>() + "'";
      return err;
    };
    if (text) {
      auto parsed = shardwise::parse_cuda_graph_batch_sizes(cuda_graph_batch_sizes.cast<std::string>());
      if (!parsed) raise(named(parsed.error()));
      sizes = *parsed;
    } else if (py::isinstance<py::list>(cuda_graph_batch_sizes) || py::isinstance<py::tuple>(cuda_graph_batch_sizes)) {
      for (const auto& x : cuda_graph_batch_sizes) {
        if (is_bool(x) || !py::isinstance<py::int_>(x)) {
          raise(Error{"cuda_graph_batch_sizes", "", "whole batch sizes (a list of int, or '128,256')", value_text(x)});
        }
        sizes.push_back(as_int("cuda_graph_batch_sizes", x));
      }
    } else {
      raise(Error{"cuda_graph_batch_sizes", "", "a list of batch sizes or a comma-separated string such as '128,256'",
                  value_text(cuda_graph_batch_sizes)});
    }
    auto padded = shardwise::with_cuda_graph_batch_sizes(e, std::move(sizes));
    if (!padded) raise(named(padded.error()));
    e = *padded;
  }
  return e;
}

std::int32_t degree(const char* name, const py::handle& h, std::int64_t lo) {
  const std::int64_t v = as_int(name, h);
  if (v < lo || v > (1 << 20)) raise(Error{name, "", "an integer from " + std::to_string(lo) + " to 1048576", std::to_string(v)});
  return static_cast<std::int32_t>(v);
}

// budget=, seed=, threads= and top_k= of plan() and sweep(), checked as the command line checks them.
struct SearchArgs {
  std::int64_t budget, seed, threads, top_k;
};
SearchArgs search_args(const py::handle& budget_o, const py::handle& seed_o, const py::handle& threads_o, const py::handle& top_k_o) {
  const SearchArgs a{as_int("budget", budget_o), as_int("seed", seed_o), as_int("threads", threads_o), as_int("top_k", top_k_o)};
  if (a.budget < 1) raise(Error{"budget", "", "a positive number of evaluations", std::to_string(a.budget)});
  if (a.seed < 0) raise(Error{"seed", "", "an integer from 0 to 2^63-1", std::to_string(a.seed)});
  if (a.threads < 1 || a.threads > 256) raise(Error{"threads", "", "a thread count from 1 to 256", std::to_string(a.threads)});
  if (a.top_k < 0 || a.top_k > 1000) raise(Error{"top_k", "", "a number of candidates from 1 to 1000 (0: every screened one)", std::to_string(a.top_k)});
  return a;
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
      [](const py::object& model, const py::object& cluster, const py::object& workload, const py::kwargs& kw) {
        const auto mn = as_opt_str("model", model), cn = as_opt_str("cluster", cluster), wn = as_opt_str("workload", workload);
        const shardwise::WorkloadOverrides o = overrides_of(kw);  // every keyword checked, whatever is described
        if (!mn && !cn && !wn) raise(Error{"describe", "", "at least one of model=, cluster=, workload=", "none"});
        if (!wn && (o.mode || o.isl || o.osl || o.batch || o.ttft_ms || o.tpot_ms || o.slo || o.rate || o.concurrency || o.requests || o.seed)) {
          raise(Error{"describe", "", "workload= beside the workload overrides", "no workload"});
        }
        std::optional<shardwise::ModelSpec> mm;
        std::optional<shardwise::ClusterSpec> cc;
        std::optional<shardwise::Workload> ww;
        if (mn) mm = get(load_model_warned(*mn));
        if (cn) cc = get(shardwise::load_cluster(*cn));
        if (wn) ww = get(shardwise::apply_overrides(get(shardwise::load_workload(*wn)), o));
        return to_py(shardwise::describe_json(mm ? &*mm : nullptr, cc ? &*cc : nullptr, ww ? &*ww : nullptr, shardwise::DescribeOptions{}));
      },
      py::arg("model") = py::none(), py::arg("cluster") = py::none(), py::arg("workload") = py::none(),
      "Parameters, KV bytes per token, weights (model); levels (cluster); the workload: the dict of `shardwise describe --json`.");

  m.def(
      "simulate",
      [](const std::string& model, const std::string& cluster, const std::string& workload, const py::object& tp, const py::object& pp,
         const py::object& ep, const py::object& attn_dp, const py::object& replicas, const py::object& micro_batches,
         const py::object& redundant_experts, const py::object& sharding, const py::object& engine, const py::object& engine_version,
         const py::object& max_num_tokens, const py::object& max_num_seqs, const py::object& prefill_instances, const py::object& prefill_tp,
         const py::object& two_batch_overlap, const py::object& time_limit, const py::object& explain, const py::object& kernel_tables,
         const py::object& silicon, const py::object& calibration, const py::object& decode_steps, const py::object& adp_balance,
         const py::object& cuda_graph_batch_sizes, const py::kwargs& kw) {
        const shardwise::WorkloadOverrides ov = overrides_of(kw);
        const bool want_explain = as_bool("explain", explain);
        Inputs in{get(load_model_warned(model)), get(shardwise::load_cluster(cluster)), get(shardwise::load_workload(workload))};
        in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, ov))));
        shardwise::Plan p;
        p.deg = shardwise::Degrees{degree("tp", tp, 1), degree("pp", pp, 1), degree("ep", ep, 1), degree("attn_dp", attn_dp, 1),
                                   degree("replicas", replicas, 1)};
        p.micro_batches = degree("micro_batches", micro_batches, 0);
        p.redundant_experts = degree("redundant_experts", redundant_experts, 0);
        p.two_batch_overlap = as_bool("two_batch_overlap", two_batch_overlap);
        p.sharding = get(shardwise::load_sharding(as_str("sharding", sharding)));
        p.batch = in.workload.batch.value_or(0);
        const bool serve = in.workload.mode == shardwise::Mode::kServe;
        // outside serve the cap bounds batch max of a named engine, as the CLI's --max-num-seqs
        const bool named = !engine.is_none();
        if (!max_num_seqs.is_none() && !serve && (!named || in.workload.mode == shardwise::Mode::kPrefill)) {
          raise(Error{"max_num_seqs", "",
                      "mode='serve', or engine='trtllm', 'vllm' or 'sglang' in decode or offline mode (where it caps batch max), beside it",
                      value_text(max_num_seqs) + " with mode " + shardwise::to_string(in.workload.mode) + (named ? "" : " and no engine")});
        }
        if (!time_limit.is_none() && !serve) raise(Error{"time_limit", "", "mode='serve' beside it", value_text(time_limit)});
        if (want_explain && serve) raise(Error{"explain", "", "a closed-form mode (decode, prefill, offline, ...) beside it; not mode='serve'", "mode='serve'"});
        const shardwise::CostParams params = cost_params_py(in.cluster.gpu.name, kernel_tables, silicon, calibration);
        // offline on TensorRT-LLM without caps: trtllm-bench's, as the CLI's simulate
        std::string caps_note;
        const shardwise::EngineTraits eng =
            shardwise::with_trtllm_bench_caps(engine_of(engine, engine_version, max_num_tokens, max_num_seqs, decode_steps, adp_balance, cuda_graph_batch_sizes), in.model,
                                              in.cluster.gpu, in.workload, p.deg, !max_num_seqs.is_none(), !max_num_tokens.is_none(), &caps_note);
        // the CLI's note, as a warning
        if (!caps_note.empty() && PyErr_WarnEx(PyExc_UserWarning, caps_note.c_str(), 1) < 0) throw py::error_already_set();
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload, params, eng);
        if (auto e = shardwise::engine_gpu_error(ctx.engine, in.cluster.gpu, "engine")) raise(*e);
        // where attention-DP balancing can hold nothing, a warning as the CLI's note (the prefill
        // pool's ranks decide in a disaggregated deployment, whose prefill_tp keeps attn_dp)
        if (ctx.engine.adp_timeout_iters > 0 && (!serve || p.deg.attn_dp <= 1)) {
          const std::string why = !serve ? std::string("adp_balance has no effect in mode ") + shardwise::to_string(in.workload.mode) +
                                               ": TensorRT-LLM's attention-DP balancing holds prompts in the serving scheduler (mode='serve')"
                                         : "adp_balance has no effect: each instance has one attention-DP rank, so no prompt waits for another rank's";
          if (PyErr_WarnEx(PyExc_UserWarning, why.c_str(), 1) < 0) throw py::error_already_set();
        }
        shardwise::Breakdown bd;
        const shardwise::Metrics mt = shardwise::evaluate(ctx, p, &bd);
        if (mt.infeasible == shardwise::Infeasible::kInvalidPlan) {
          raise(Error{"simulate", "plan", "a plan valid on " + in.model.name + " and " + in.cluster.name, mt.reason});
        }
        if (!serve) {
          if (!prefill_instances.is_none() || !prefill_tp.is_none()) raise(Error{"prefill_instances", "", "mode='serve' beside it", shardwise::to_string(in.workload.mode)});
          return to_py(shardwise::simulate_json(ctx, p, mt, bd, want_explain));
        }
        if (!shardwise::has_arrivals(in.workload)) {
          raise(Error{"simulate", "", "how requests arrive for mode serve: rate= (Poisson; 'inf': all at once) or concurrency=", "neither"});
        }
        const bool disagg = !prefill_instances.is_none() || !prefill_tp.is_none();
        const std::string origin = ov.concurrency ? "--concurrency" : workload;
        if (auto e = shardwise::arrivals_error(in.workload, p.deg.replicas, disagg, origin, ov.concurrency ? "" : "arrivals.concurrency")) raise(*e);
        shardwise::Watch watch(python_control(time_limit));
        shardwise::ServeOptions so;
        so.watch = &watch;
        if (disagg) {
          shardwise::DisaggPlan d{p, p};
          d.prefill.two_batch_overlap = false;  // the decode pool's own
          d.prefill.deg.replicas = prefill_instances.is_none() ? 1 : degree("prefill_instances", prefill_instances, 1);
          if (!prefill_tp.is_none()) d.prefill.deg.tp = degree("prefill_tp", prefill_tp, 1);
          shardwise::Plan probe = d.prefill;
          probe.batch = probe.deg.attn_dp;
          if (auto why = shardwise::validate_plan(probe, in.model, in.cluster)) raise(Error{"prefill_instances", "", "a valid prefill pool", *why});
          if (d.gpus() > in.cluster.num_gpus) raise(Error{"prefill_instances", "", "pools that fit the cluster", std::to_string(d.gpus()) + " GPUs"});
          shardwise::DisaggResult r;
          {
            py::gil_scoped_release release;
            r = shardwise::simulate_disaggregated(ctx, d, so);
          }
          finish(watch);
          return to_py(shardwise::serve_disagg_json(ctx, d, r, 0.0));
        }
        shardwise::ServeResult r;
        {
          py::gil_scoped_release release;
          shardwise::ServeOptions knee = so;
          knee.knee_check = true;  // the dict's "knee", as simulate --json's
          r = shardwise::simulate_serving(ctx, p, knee);
        }
        finish(watch);
        return to_py(shardwise::serve_json(ctx, p, r, 0.0));
      },
      py::arg("model"), py::arg("cluster"), py::arg("workload") = "decode-16k", py::arg("tp") = 1, py::arg("pp") = 1, py::arg("ep") = 1,
      py::arg("attn_dp") = 1, py::arg("replicas") = 1, py::arg("micro_batches") = 0, py::arg("redundant_experts") = 0,
      py::arg("sharding") = "megatron", py::arg("engine") = py::none(), py::arg("engine_version") = py::none(),
      py::arg("max_num_tokens") = py::none(), py::arg("max_num_seqs") = py::none(), py::arg("prefill_instances") = py::none(),
      py::arg("prefill_tp") = py::none(), py::arg("two_batch_overlap") = false, py::arg("time_limit") = py::none(),
      py::arg("explain") = false, py::arg("kernel_tables") = false, py::arg("silicon") = py::none(), py::arg("calibration") = py::none(),
      py::arg("decode_steps") = py::none(), py::arg("adp_balance") = py::none(), py::arg("cuda_graph_batch_sizes") = py::none(),
      "One plan's metrics: the dict of `shardwise simulate --json` (with mode='serve': the serving simulation's, keys ttft_ms_p99 "
      "and kin; time_limit= seconds stops it, Ctrl-C interrupts it; explain=True adds each op's bound and basis and the "
      "'explain' shares, kernel_tables=True costs GEMMs from the measured tables, silicon='DIR' reads one's own beside them: docs/silicon.md; "
      "calibration='profile.yaml' applies a calibrate profile: docs/calibration.md). Workload overrides as keywords: isl=, osl=, batch=, mode=, rate=, "
      "concurrency=, requests=, seed=, ttft_ms=, ...");

  m.def(
      "plan",
      [](const std::string& model, const std::string& cluster, const std::string& workload, const std::string& search, const py::object& budget_o,
         const py::object& seed_o, const py::object& threads_o, const py::object& redundant_experts, const py::object& engine,
         const py::object& engine_version, const py::object& max_num_tokens, const py::object& max_num_seqs, const py::object& target_rate_o,
         const py::object& top_k_o, const py::object& time_limit, const py::object& kernel_tables, const py::object& silicon,
         const py::object& calibration, const py::object& decode_steps, const py::object& adp_balance, const py::object& cuda_graph_batch_sizes,
         const py::kwargs& kw) {
        const shardwise::WorkloadOverrides ov = overrides_of(kw);
        Inputs in{get(load_model_warned(model)), get(shardwise::load_cluster(cluster)), get(shardwise::load_workload(workload))};
        in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, ov))));
        const shardwise::Engine eng = shardwise::find_engine(search);
        if (!eng) raise(Error{"search", "", std::string("one of ") + shardwise::engine_names(), "'" + search + "'"});
        const auto [budget, seed, threads, top_k] = search_args(budget_o, seed_o, threads_o, top_k_o);
        const double target_rate = as_num("target_rate", target_rate_o);
        if (!(target_rate >= 0) || !std::isfinite(target_rate) || target_rate > 1e7) raise(Error{"target_rate", "", "requests/s from 0 to 1e7", value_text(target_rate_o)});
        const bool serve = in.workload.mode == shardwise::Mode::kServe;
        if (target_rate > 0 && !serve) raise(Error{"target_rate", "", "mode='serve' beside it", shardwise::to_string(in.workload.mode)});
        if (!max_num_seqs.is_none() && !serve) raise(Error{"max_num_seqs", "", "mode='serve' beside it (outside serve the batch is searched)", value_text(max_num_seqs)});
        if (auto e = shardwise::serve_plan_workload_error(in.workload, ov, workload, false)) raise(*e);
        // engine="any": every layout (as --engine any), not only those an engine runs
        const bool any_layout = py::isinstance<py::str>(engine) && engine.cast<std::string>() == "any";
        if (any_layout && !engine_version.is_none()) raise(Error{"engine_version", "", "a named engine beside it (not engine='any')", value_text(engine_version)});
        const py::object engine_named = any_layout ? py::object(py::none()) : engine;
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload,
                                                                  cost_params_py(in.cluster.gpu.name, kernel_tables, silicon, calibration),
                                                                  engine_of(engine_named, engine_version, max_num_tokens, max_num_seqs, decode_steps, adp_balance,
                                                                            cuda_graph_batch_sizes));
        if (auto e = shardwise::engine_gpu_error(ctx.engine, in.cluster.gpu, "engine")) raise(*e);
        const shardwise::SearchSpace space =
            shardwise::make_space(in.model, in.cluster, in.workload, degree("redundant_experts", redundant_experts, 0));
        shardwise::Watch watch(python_control(time_limit));
        shardwise::SearchOptions opt;
        opt.budget = budget;
        opt.seed = static_cast<std::uint64_t>(seed);
        opt.threads = static_cast<int>(threads);
        opt.watch = &watch;
        shardwise::PlanOutcome o;
        o.space_size = space.size();
        const std::optional<shardwise::ServeEngine> kind = engine_named.is_none() ? std::nullopt : shardwise::parse_serve_engine(as_str("engine", engine_named));
        {
          py::gil_scoped_release release;
          // engine=: only the plans that engine runs as planned, all of them (as plan --engine)
          o.search = kind ? shardwise::search_for_engine(ctx, space, opt, *kind) : eng(ctx, space, opt);
          shardwise::refine_batch(ctx, o.search);
          shardwise::refine_two_batch_overlap(ctx, space, opt, o.search, kind);
        }
        finish(watch);
        shardwise::PlanFile file{o.search.best, model, cluster, workload, ov, std::nullopt};
        file.overrides.batch.reset();
        if (kind) {  // the engine it was made for, at the profile's version (as plan --engine)
          file.engine = ctx.engine.name;
          file.engine_version = ctx.engine.version;
        }
        if (ctx.engine.decode_steps > 1) file.decode_steps = ctx.engine.decode_steps;  // replayed by simulate --plan and launch
        if (ctx.engine.adp_timeout_iters > 0) file.adp_balance = std::pair{ctx.engine.adp_wait_iters, ctx.engine.adp_timeout_iters};
        if (!ctx.engine.cuda_graph_batch_sizes.empty()) file.cuda_graph_batch_sizes = ctx.engine.cuda_graph_batch_sizes;
        if (as_bool("kernel_tables", kernel_tables) || !silicon.is_none() || !calibration.is_none()) {  // replayed by check and launch
          file.cost = shardwise::PlanFile::Cost{as_bool("kernel_tables", kernel_tables) || !silicon.is_none(),
                                                silicon.is_none() ? "" : as_str("silicon", silicon),
                                                calibration.is_none() ? "" : as_str("calibration", calibration)};
        }
        if (serve) {
          shardwise::ServePlanOptions so = shardwise::serve_plan_options(in.workload.serve.requests, static_cast<int>(top_k), target_rate, kind,
                                                                         !any_layout, true);  // as plan --mode serve
          so.watch = &watch;
          shardwise::ServePlanResult r;
          {
            py::gil_scoped_release release;
            r = shardwise::plan_serving(ctx, space, o.search.found ? std::optional<shardwise::Plan>(o.search.best) : std::nullopt, so);
          }
          finish(watch);
          return to_py(shardwise::serve_plan_json(ctx, shardwise::serve_plan_file(file, r, shardwise::recorded_requests(so)), r, target_rate,
                                                  so.requests));
        }
        // the Megatron baseline is not held to the time limit (as on the command line); Ctrl-C stops it
        shardwise::Watch interrupt_only(python_control(py::none()));
        opt.watch = &interrupt_only;
        {
          py::gil_scoped_release release;
          o.baseline = search == "megatron" ? o.search : shardwise::search_megatron(ctx, space, opt);
        }
        finish(interrupt_only);
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
      py::arg("engine_version") = py::none(), py::arg("max_num_tokens") = py::none(), py::arg("max_num_seqs") = py::none(),
      py::arg("target_rate") = 0.0, py::arg("top_k") = 24, py::arg("time_limit") = py::none(), py::arg("kernel_tables") = false,
      py::arg("silicon") = py::none(), py::arg("calibration") = py::none(), py::arg("decode_steps") = py::none(),
      py::arg("adp_balance") = py::none(), py::arg("cuda_graph_batch_sizes") = py::none(),
      "Searches the plan: the dict of `shardwise plan --json` (its 'plan' is a plan.json dict). With mode='serve': the most "
      "requests/s per GPU within the SLOs, or the fewest GPUs for target_rate= (the dict of `plan --mode serve --json`). "
      "time_limit= seconds stops the search (its best so far, stopped_by_time_limit true); Ctrl-C interrupts it. "
      "kernel_tables=, silicon= and calibration= as simulate's.");

  m.def(
      "phases",
      [](const std::string& model, const std::string& cluster, const std::string& workload, const py::object& host_buffer_gib,
         const std::string& search, const py::object& budget_o, const py::object& seed_o, const py::kwargs& kw) {
        const shardwise::WorkloadOverrides ov = overrides_of(kw);
        Inputs in{get(load_model_warned(model)), get(shardwise::load_cluster(cluster)), get(shardwise::load_workload(workload))};
        in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, ov))));
        const double gib = as_num("host_buffer_gib", host_buffer_gib);
        if (!(gib >= 0 && gib <= 1e6)) raise(Error{"host_buffer_gib", "", "GiB of host memory per GPU from 0 to 1e6", value_text(host_buffer_gib)});
        const auto mode = in.workload.mode;
        if (mode != shardwise::Mode::kOffline && mode != shardwise::Mode::kServe) {
          raise(Error{"mode", "", "offline or serve (prompts and outputs to prefill and decode)", shardwise::to_string(mode)});
        }
        if (search != "rl" && search != "sa" && search != "ga") raise(Error{"search", "", "rl, sa or ga (the phase space's engines, under serve)", "'" + search + "'"});
        const auto [budget, seed, threads, top_k] = search_args(budget_o, seed_o, py::int_(1), py::int_(16));
        (void)threads;
        (void)top_k;
        const shardwise::SimContext ctx = shardwise::make_context(in.model, in.cluster, in.workload, shardwise::cost_params_for(in.cluster.gpu.name));
        const shardwise::SearchSpace space = shardwise::make_space(in.model, in.cluster, in.workload);
        shardwise::PhaseSearchOptions po;
        po.cost.host_bytes_per_gpu = gib * 1024.0 * 1024.0 * 1024.0;
        std::string out;
        {
          py::gil_scoped_release release;
          if (mode == shardwise::Mode::kServe) {
            const shardwise::PhaseServeResult r = shardwise::search_phases_serving(ctx, space, po, search, budget, static_cast<std::uint64_t>(seed));
            out = r.found ? shardwise::phases_serve_json(r.best, shardwise::serve_json(ctx, r.best.decode, r.serve, 0.0)) : shardwise::phases_none_json(r.why_none);
          } else {
            out = shardwise::phases_json(shardwise::search_phases(ctx, space, po), po.cost.host_bytes_per_gpu);
          }
        }
        return to_py(out);
      },
      py::arg("model"), py::arg("cluster"), py::arg("workload") = "chat-1k-1k", py::arg("host_buffer_gib") = 80.0, py::arg("search") = "rl",
      py::arg("budget") = 4000, py::arg("seed") = 1,
      "Phase plans (Seesaw; docs/phases.md): with mode='offline' the dict of `plan --phases --json` (the best phase plan term by "
      "term, the best static plan of the same layouts, the best disaggregated split); with mode='serve' the phase space searched by "
      "search= (rl, sa, ga) under the serving objective, the best's serving statistics with a 'phases' key. Workload overrides as "
      "keywords (isl=, osl=, mode=, requests=, ...).");

  m.def(
      "sweep",
      [](const std::string& model, const std::vector<std::string>& gpus, const std::vector<std::int64_t>& counts, const std::string& workload,
         const py::object& dtypes, const py::object& engines, const std::string& search, const py::object& budget_o, const py::object& seed_o,
         const py::object& threads_o, const py::object& prices, const py::object& target_rate_o, const py::object& top_k_o,
         const py::object& disaggregated, const py::object& time_limit, const py::kwargs& kw) {
        const shardwise::WorkloadOverrides ov = overrides_of(kw);
        const shardwise::ModelSpec m = get(load_model_warned(model));
        const shardwise::Workload w =
            get(shardwise::resolve_speculation(m, get(shardwise::apply_overrides(get(shardwise::load_workload(workload)), ov))));
        const auto [budget, seed, threads, top_k] = search_args(budget_o, seed_o, threads_o, top_k_o);
        const double target_rate = as_num("target_rate", target_rate_o);
        // the command's checks, their flags named as this function's keywords
        const auto keyword = [](Error e) {
          if (e.file.rfind("--", 0) == 0) {
            e.file = e.file.substr(2);
            std::replace(e.file.begin(), e.file.end(), '-', '_');
          }
          return e;
        };
        if (auto e = shardwise::sweep_input_error(w, ov, workload, target_rate, static_cast<int>(top_k))) raise(keyword(*e));
        shardwise::SweepOptions o;
        o.gpus = gpus;
        o.counts = counts;
        const auto list = [&](const char* name, const py::object& v, const char* any) {
          std::vector<std::string> out;
          if (v.is_none()) return std::vector<std::string>{""};
          if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) raise(Error{name, "", "a list of strings", value_text(v)});
          for (const auto& x : v) {
            const std::string t = as_str(name, x);
            out.push_back(t == any ? "" : t);
          }
          return out;
        };
        o.dtypes = list("dtypes", dtypes, "auto");
        o.engines = list("engines", engines, "generic");
        o.search = search;
        o.search_options.budget = budget;
        o.search_options.seed = static_cast<std::uint64_t>(seed);
        o.search_options.threads = static_cast<int>(threads);
        o.target_rate = target_rate;
        o.serve_top_k = static_cast<int>(top_k);
        o.disaggregated = as_bool("disaggregated", disaggregated);
        o.serve_requests = w.mode == shardwise::Mode::kServe && ov.requests ? *ov.requests : 0;
        const shardwise::PriceTable table = get(shardwise::load_prices(prices.is_none() ? "" : as_str("prices", prices)));
        shardwise::Watch watch(python_control(time_limit));
        o.search_options.watch = &watch;
        shardwise::Expected<std::vector<shardwise::SweepPoint>> pts = shardwise::Error{};
        {
          py::gil_scoped_release release;
          pts = shardwise::run_sweep(m, w, o, table);
        }
        finish(watch);
        if (!pts) raise(keyword(pts.error()));
        return to_py(shardwise::sweep_json(shardwise::SweepHeader{m.name, w.name, w, target_rate, table}, *pts));
      },
      py::arg("model"), py::arg("gpus"), py::arg("counts"), py::arg("workload") = "chat-1k-1k", py::arg("dtypes") = py::none(),
      py::arg("engines") = py::none(), py::arg("search") = "exact", py::arg("budget") = 4000, py::arg("seed") = 1, py::arg("threads") = 1,
      py::arg("prices") = py::none(), py::arg("target_rate") = 0.0, py::arg("top_k") = 24, py::arg("disaggregated") = true,
      py::arg("time_limit") = py::none(),
      "Plans every point of gpus x counts (x dtypes x engines) and prices it: the dict of `shardwise sweep --json`. With a serving "
      "workload (mode='serve' and SLOs) each point is planned as plan(mode='serve') plans it (aggregated or disaggregated; the "
      "fewest of its GPUs for target_rate=); engine/GPU pairs that cannot exist are skipped with the reason.");

  // check(): a plan's prediction beside a benchmark result; calibrate(): the terms fitted on results
  const auto deployment_py = [](const py::object& plan, const py::object& engine, const py::object& engine_version,
                                const py::object& calibration, bool replay_cost) {
    const std::string text = py::isinstance<py::str>(plan) ? "" : py::module_::import("json").attr("dumps")(plan).cast<std::string>();
    const std::string label = text.empty() ? plan.cast<std::string>() : std::string("plan");
    shardwise::PlanFile f = text.empty() ? get(shardwise::load_plan_file(label)) : get(shardwise::parse_plan_json(text, label));
    if (f.model.empty() || f.cluster.empty() || f.workload.empty()) raise(Error{label, "model/cluster/workload", "the names the plan was made for", "none"});
    Inputs in{get(load_model_warned(f.model)), get(shardwise::load_cluster(f.cluster)), get(shardwise::load_workload(f.workload))};
    in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, f.overrides, label))));
    // engine=, else the engine the plan records (its version too)
    const bool from_plan = engine.is_none() && f.engine;
    const py::object name = from_plan ? py::object(py::str(*f.engine)) : engine;
    const py::object version = from_plan && engine_version.is_none() && f.engine_version ? py::object(py::str(*f.engine_version)) : engine_version;
    const shardwise::EngineTraits traits = engine_of(name, version, py::none(), py::none());
    // calibration=, else the cost model the plan was made with (its "cost")
    const bool recorded = replay_cost && calibration.is_none() && f.cost;
    const py::object kt = py::bool_(recorded && f.cost->kernel_tables);
    const py::object sil = recorded && !f.cost->silicon.empty() ? py::object(py::str(f.cost->silicon)) : py::object(py::none());
    const py::object cal = recorded ? (f.cost->calibration.empty() ? py::object(py::none()) : py::object(py::str(f.cost->calibration))) : calibration;
    const shardwise::CostParams params = cost_params_py(in.cluster.gpu.name, kt, sil, cal);
    return get(shardwise::plan_deployment(f, label, in.model, in.cluster, in.workload, traits, params));
  };
  m.def(
      "check",
      [deployment_py](const py::object& plan, const std::string& measured, const py::object& engine, const py::object& engine_version,
                      const py::object& calibration, const py::object& time_limit) {
        const shardwise::PlanDeployment pd = deployment_py(plan, engine, engine_version, calibration, true);
        const shardwise::MeasuredRun run = get(shardwise::load_measured_run(measured));
        shardwise::Watch watch(python_control(time_limit));
        shardwise::Expected<shardwise::CheckResult> r = shardwise::Error{};
        {
          py::gil_scoped_release release;
          r = shardwise::check_run(pd.ctx, pd.d, run, &watch);
        }
        finish(watch);
        std::vector<std::string> warnings;
        if (!calibration.is_none()) {
          warnings = shardwise::calibration_warnings(get(shardwise::load_calibration_profile(as_str("calibration", calibration))), pd.ctx, pd.d.plan);
        }
        return to_py(shardwise::check_json(pd.ctx, pd.d, get(std::move(r)), warnings));
      },
      py::arg("plan"), py::arg("measured"), py::arg("engine") = py::none(), py::arg("engine_version") = py::none(),
      py::arg("calibration") = py::none(), py::arg("time_limit") = py::none(),
      "A plan (a plan.json dict or path) predicted under the traffic of a benchmark result (vLLM --save-result JSON, SGLang "
      "--output-file JSONL, aiperf's profile_export_aiperf.json) beside what it measured: the dict of `shardwise check --json`.");
  m.def(
      "calibrate",
      [deployment_py](const py::object& plan, const std::vector<std::string>& measured, const std::string& out, const py::object& engine,
                      const py::object& engine_version, const py::object& time_limit) {
        const shardwise::PlanDeployment pd = deployment_py(plan, engine, engine_version, py::none(), false);  // the fit starts from the fitted model
        std::vector<shardwise::MeasuredRun> runs;
        for (const auto& m : measured) runs.push_back(get(shardwise::load_measured_run(m)));
        shardwise::Watch watch(python_control(time_limit));
        shardwise::CalibrateOptions opt;
        opt.watch = &watch;
        shardwise::Expected<shardwise::CalibrateResult> r = shardwise::Error{};
        {
          py::gil_scoped_release release;
          r = shardwise::calibrate(pd.ctx, pd.d, runs, opt);
        }
        finish(watch);
        const shardwise::CalibrateResult res = get(std::move(r));
        if (auto e = shardwise::write_file_whole(out, shardwise::calibration_profile_yaml(res.profile), "out")) raise(*e);
        py::dict d;
        d["profile"] = out;
        d["rms_log_error_before"] = res.rms_before;
        d["rms_log_error_after"] = res.rms_after;
        d["evaluations"] = res.evaluations;
        py::list terms;
        for (const auto& t : res.terms) {
          py::dict td;
          td["term"] = t.term;
          td["before"] = t.before;
          td["after"] = t.fitted ? py::object(py::float_(t.after)) : py::object(py::none());
          td["fitted"] = t.fitted;
          td["why"] = t.why;
          terms.append(td);
        }
        d["terms"] = terms;
        return d;
      },
      py::arg("plan"), py::arg("measured"), py::arg("out"), py::arg("engine") = py::none(), py::arg("engine_version") = py::none(),
      py::arg("time_limit") = py::none(),
      "Fits the step overhead and the op-kind scales on benchmark results of a plan's deployment, writes the profile to out= "
      "(use it with calibration=) and returns the terms before and after.");

  m.def(
      "launch",
      [](const py::object& plan, const std::optional<std::string>& engine_arg, const std::optional<std::string>& model_path,
         const std::string& format, const std::optional<std::string>& image) {
        const std::string text = py::isinstance<py::str>(plan) ? "" : py::module_::import("json").attr("dumps")(plan).cast<std::string>();
        const std::string label = text.empty() ? plan.cast<std::string>() : std::string("plan");
        shardwise::PlanFile f = text.empty() ? get(shardwise::load_plan_file(label)) : get(shardwise::parse_plan_json(text, label));
        // engine=, else the engine the plan was made for (plan(..., engine=...) records it)
        if (!engine_arg && !f.engine) raise(Error{"engine", "", "vllm, sglang or trtllm (the plan records no engine)", "none"});
        const std::string engine = engine_arg ? *engine_arg : *f.engine;
        const auto e = shardwise::parse_serve_engine(engine);
        if (!e) raise(engine_arg ? Error{"engine", "", "one of vllm, sglang, trtllm", "'" + engine + "'"}
                                 : Error{label, "engine.name", "one of vllm, sglang, trtllm", "'" + engine + "'"});
        if (f.model.empty() || f.cluster.empty() || f.workload.empty()) {
          raise(Error{label, "model/cluster/workload", "the names the plan was made for", "none"});
        }
        Inputs in{get(load_model_warned(f.model)), get(shardwise::load_cluster(f.cluster)), get(shardwise::load_workload(f.workload))};
        in.workload = get(shardwise::resolve_speculation(in.model, get(shardwise::apply_overrides(in.workload, f.overrides, label))));
        shardwise::LaunchOptions o;
        o.engine = *e;
        o.model_path = model_path.value_or("");
        o.format = format;
        o.image = image.value_or("");
        auto out = shardwise::launch_plan(f, label, in.model, in.cluster, in.workload, o);
        if (!out) {  // the messages name the CLI's flags; here the keywords
          Error err = out.error();
          if (err.file == "--model-path") err.file = "model_path";
          if (err.file == "--format") err.file = "format";
          if (err.file == "--image") err.file = "image";
          raise(err);
        }
        return *out;
      },
      py::arg("plan"), py::arg("engine") = py::none(), py::arg("model_path") = py::none(), py::arg("format") = "text",
      py::arg("image") = py::none(),
      "The launch commands of a plan (a plan.json dict such as plan(...)['plan'], or a path) for vllm, sglang or trtllm "
      "(default: the engine the plan was made for); format='k8s' gives Kubernetes manifests (image= their container image).");
}
