#include "report/launch.hpp"

#include "core/names.hpp"
#include "cost/engine.hpp"
#include "model/loader.hpp"

#include "report/format.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shardwise {
namespace {



// Metrics equal up to rounding: the same objective, latency and memory.
bool same_cost(const Metrics& a, const Metrics& b) {
  auto eq = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::max({1.0, std::fabs(x), std::fabs(y)}); };
  return a.infeasible == b.infeasible && eq(a.objective, b.objective) && eq(a.tpot_s, b.tpot_s) && eq(a.ttft_s, b.ttft_s) &&
         eq(a.memory.total().value(), b.memory.total().value());
}

// A serve plan (its engine settings recorded) runs what its running-sequence cap admits, not
// the closed form's batch: the cap is shown instead, per scheduling lane of the engine launched.
std::string degrees_line(const SimContext& ctx, const EngineTraits& engine, const Plan& p, const Metrics& m,
                         std::optional<std::int64_t> seqs_cap = std::nullopt) {
  std::string s = fmt::format("tp {} x attn_dp {} x pp {}", p.deg.tp, p.deg.attn_dp, p.deg.pp);
  if (ctx.model.is_moe()) s += fmt::format(", ep {}", p.deg.ep);
  s += seqs_cap ? fmt::format(", at most {} running sequences {}, sharding {}", *seqs_cap, running_cap_unit(engine, p.deg),
                              sharding_to_string(p.sharding))
                : fmt::format(", batch {} per instance, sharding {}", m.batch, sharding_to_string(p.sharding));
  if (p.two_batch_overlap) s += ", two-batch overlap";
  return s;
}

std::string objective_line(const SimContext& ctx, const Metrics& m) {
  if (!m.feasible()) return fmt::format("infeasible ({}: {})", to_string(m.infeasible), m.reason);
  const bool prefill = ctx.workload.mode == Mode::kPrefill;
  return prefill ? fmt::format("{:.1f} input tokens/s per GPU, TTFT {:.2f} ms", m.objective, m.ttft_s * 1e3)
                 : fmt::format("{:.1f} output tokens/s per GPU, TPOT {:.2f} ms", m.objective, m.tpot_s * 1e3);
}

// The plan evaluated at its batch, or at the best batch of the ladder when that does not fit.
Metrics best_batch(const SimContext& ctx, const SearchSpace& space, Plan& p) {
  Metrics m = evaluate(ctx, p);
  if (m.feasible()) return m;
  Plan best = p;
  Metrics best_m = m;
  for (const std::int64_t per_group : space.batch) {
    Plan q = p;
    q.batch = per_group * q.deg.attn_dp;
    const Metrics mq = evaluate(ctx, q);
    if (mq.feasible() && mq.objective > best_m.objective) {
      best = q;
      best_m = mq;
    }
  }
  p = best;
  return best_m;
}

std::int64_t max_sequence(const Workload& w) {
  // a request needs room for at least one output token beside its prompt or cached context
  const std::int64_t out = std::max<std::int64_t>(w.osl, 1);
  return std::max(w.isl + out, w.context + out);
}

// Whether `dir` holds a checkpoint's weights (safetensors or PyTorch shards, or their index).
bool holds_weights(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".safetensors") || n.ends_with(".bin") || n.ends_with(".safetensors.index.json") || n.ends_with(".gguf")) return true;
  }
  return false;
}

// The checkpoint the commands serve, one convention (docs/launch.md, "Checkpoints and
// memory"): --model-path as given; a preset (any letter case) or a Hugging Face id of one:
// its repository; a checkpoint folder (a folder holding config.json and weights, or a
// config.json beside weights): that folder; anything else (a config file among other files,
// a folder without weights, a synthetic model): the placeholder <path-to-checkpoint>, with
// a note saying why and what to pass.
std::string model_path(const PlanFile& file, const LaunchOptions& o, std::vector<std::string>* notes) {
  if (!o.model_path.empty()) return o.model_path;
  const std::string key = preset_key(file.model);
  if (!key.empty()) return file.model.find('/') != std::string::npos ? file.model : hf_repo_for(key);
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path given(file.model);
  fs::path dir;
  if (fs::is_directory(given, ec)) {
    dir = given;
  } else if (given.filename() == "config.json") {
    dir = given.has_parent_path() ? given.parent_path() : fs::path(".");
  }
  if (!dir.empty() && holds_weights(dir)) return dir.string();
  if (!dir.empty() || (file.model.size() > 5 && file.model.ends_with(".json"))) {
    notes->push_back(fmt::format("'{}' is a model description, not a checkpoint folder (no weight files beside its config): replace "
                                 "<path-to-checkpoint> with the checkpoint's folder or Hugging Face id (or pass --model-path)",
                                 file.model));
  } else {
    notes->push_back(fmt::format("'{}' has no public checkpoint: replace <path-to-checkpoint> (or pass --model-path)", file.model));
  }
  return "<path-to-checkpoint>";
}

std::string command(const std::vector<std::string>& parts) { return shell_command(parts); }

// Disaggregated deployments' side ports: vLLM's NIXL side channel and SGLang's bootstrap
// server, their engines' defaults, offset per instance.
constexpr std::int64_t kNixlSidePort = 5600;
constexpr std::int64_t kBootstrapPort = 8998;

// The command's words after its environment assignments, when there are any ("VAR=value").
std::vector<std::string> with_env(const std::string& env, std::initializer_list<std::string> words, const std::string& env2 = "") {
  std::vector<std::string> c;
  if (!env.empty()) c.push_back(env);
  if (!env2.empty()) c.push_back(env2);
  c.insert(c.end(), words.begin(), words.end());
  return c;
}

// Records a process in the launch spec (when one is asked for): its environment words
// ("NAME=value") apart from the command.
void record(const LaunchOptions& o, LaunchProc::Kind kind, std::int64_t node, std::int64_t inst, const std::vector<std::string>& c) {
  if (!o.spec) return;
  LaunchProc p;
  p.kind = kind;
  p.node = node;
  p.instance = inst;
  std::size_t i = 0;
  for (; i < c.size() && c[i].find('=') != std::string::npos && c[i].front() != '-'; ++i) p.env.push_back(c[i]);
  p.argv.assign(c.begin() + static_cast<std::ptrdiff_t>(i), c.end());
  o.spec->procs.push_back(std::move(p));
}

// SGLang's --mem-fraction-static covers the weights and the KV pool only: the activations of
// the largest step and the CUDA graphs (2 GiB) must fit in the rest, beside the reserve.
std::string static_memory_fraction(const Metrics& m) {
  const double cap = m.memory.capacity.value();
  const double rest = m.memory.reserve.value() + m.memory.activations.value() + 2.0 * 1024 * 1024 * 1024;
  const double f = cap > 0 ? std::floor(100.0 * (cap - rest) / cap) / 100.0 : 0.85;
  return fmt::format("{:.2f}", std::clamp(f, 0.5, 0.95));
}

// The checkpoints published in a format, for the presets: used instead of quantising a bf16
// repository at load time (the makers' own where they publish one, else NVIDIA's ModelOpt).
std::string published_checkpoint(const std::string& preset, DType dt) {
  static const struct {
    const char* preset;
    DType dt;
    const char* repo;
  } known[] = {
      {"llama-3.1-405b", DType::kFp8, "meta-llama/Llama-3.1-405B-Instruct-FP8"},
      {"llama-3.1-70b", DType::kFp8, "nvidia/Llama-3.1-70B-Instruct-FP8"},
      {"llama-3.1-8b", DType::kFp8, "nvidia/Llama-3.1-8B-Instruct-FP8"},
      {"qwen3-235b-a22b", DType::kFp8, "Qwen/Qwen3-235B-A22B-FP8"},
      {"qwen3-30b-a3b", DType::kFp8, "Qwen/Qwen3-30B-A3B-FP8"},
      {"qwen3-32b", DType::kFp8, "Qwen/Qwen3-32B-FP8"},
      {"qwen3-8b", DType::kFp8, "Qwen/Qwen3-8B-FP8"},
      {"deepseek-v3", DType::kFp4, "nvidia/DeepSeek-V3-0324-FP4"},
  };
  for (const auto& k : known) {
    if (preset == k.preset && dt == k.dt) return k.repo;
  }
  return "";
}

std::string memory_fraction(const Metrics& m) {
  // the simulator budgets all of HBM but its reserve (4% + 1 GiB)
  const double cap = m.memory.capacity.value();
  const double f = cap > 0 ? std::floor(100.0 * (cap - m.memory.reserve.value()) / cap) / 100.0 : 0.9;
  return fmt::format("{:.2f}", f);
}

struct Layout {
  std::int64_t instance_gpus = 1, gpus_per_node = 8, nodes = 1, per_node = 1;  // nodes per instance, or instances per node
};
Layout layout(const SimContext& ctx, const Plan& p) {
  Layout l;
  l.instance_gpus = p.deg.instance_gpus();
  l.gpus_per_node = ctx.cluster.gpus_per_node;
  const std::int64_t node = std::min<std::int64_t>(l.gpus_per_node, ctx.cluster.num_gpus);  // a cluster smaller than a node
  if (l.instance_gpus > node) {
    l.nodes = (l.instance_gpus + l.gpus_per_node - 1) / l.gpus_per_node;
  } else {
    l.per_node = std::clamp<std::int64_t>(node / l.instance_gpus, 1, p.deg.replicas);
  }
  return l;
}

// sequences per scheduling lane (attention-DP rank; TensorRT-LLM: and pipeline micro-batch),
// rounded up as the simulator does
std::int64_t ceil_per_rank(std::int64_t batch, std::int64_t ranks) { return (batch + ranks - 1) / ranks; }

std::string visible_devices(std::int64_t first, std::int64_t count) {
  std::string s;
  for (std::int64_t i = 0; i < count; ++i) s += (i ? "," : "") + std::to_string(first + i);
  return s;
}

}  // namespace

const char* engine_version(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "vLLM 0.11";
    case ServeEngine::kSglang: return "SGLang 0.5";
    case ServeEngine::kTrtllm: return "TensorRT-LLM 1.1 (PyTorch backend)";
  }
  return "?";
}

namespace {
// The format a preset's public checkpoint ships in, where it is not bf16.
std::optional<DType> checkpoint_dtype(const std::string& preset) {
  if (preset == "deepseek-v3") return DType::kFp8;
  if (preset == "gpt-oss-120b") return DType::kFp4;  // MXFP4 experts
  return std::nullopt;
}
}  // namespace

std::string hf_repo_for(const std::string& preset) { return preset_hf_repo(preset); }

std::string preset_key(const std::string& model) {
  for (const auto& p : model_preset_names()) {
    if (lower_ascii(model) == lower_ascii(p)) return p;
  }
  return model.find('/') != std::string::npos ? preset_of_hf_id(model).value_or("") : "";
}

std::string served_model(const SimContext& ctx, const PlanFile& file, const LaunchOptions& o, std::vector<std::string>* notes) {
  std::vector<std::string> ignored;
  if (notes == nullptr) notes = &ignored;
  const std::string path = model_path(file, o, notes);
  const DType weights = ctx.model.is_moe() ? ctx.formats.experts : ctx.formats.dense;
  const std::string published = o.model_path.empty() ? published_checkpoint(preset_key(file.model), weights) : "";
  if (published.empty()) return path;
  notes->push_back(fmt::format("the plan's {} weights: the published checkpoint {} (instead of quantising {} at load time)", to_string(weights),
                               published, path));
  return published;
}

EngineFit fit_engine(ServeEngine e, const SimContext& ctx_in, const SearchSpace& space, const Plan& plan) {
  // the plan runs with the engine's cap raised to its batch where it is over it, as launched
  SimContext ctx = ctx_in;
  ctx.engine.max_num_seqs = plan_running_cap(ctx.engine, plan, ctx.workload.mode);
  EngineFit f;
  f.plan = plan;
  f.plan_metrics = evaluate(ctx, plan);
  std::vector<std::string> why = engine_limits(e, ctx, plan);
  if (why.empty()) {
    // same degrees: each slot the engine shards otherwise must change no cost (under the
    // engine's sharding closest to the plan's)
    std::vector<std::string> best;
    bool first = true;
    for (const Sharding& es : engine_shardings(e, ctx, plan.deg)) {
      std::vector<std::string> diff;
      for (int s = 0; s < kNumSlots; ++s) {
        const auto k = static_cast<std::size_t>(s);
        if (plan.sharding[k] == es[k]) continue;
        Plan q = plan;
        q.sharding[k] = es[k];
        if (same_cost(evaluate(ctx, q), f.plan_metrics)) continue;  // e.g. a split over a group of one
        const SlotInfo& si = slot_info(s);
        diff.push_back(fmt::format("{} sharded on '{}': {} shards it on '{}'", si.name, si.choices[plan.sharding[k]], to_string(e),
                                   si.choices[es[k]]));
      }
      if (first || diff.size() < best.size()) best = diff;
      first = false;
    }
    why = best;
  }
  if (!f.plan_metrics.feasible()) {
    why.insert(why.begin(), fmt::format("the plan itself does not run here: {} ({})", to_string(f.plan_metrics.infeasible),
                                        f.plan_metrics.reason));
  }
  f.differences = why;
  if (why.empty()) {
    f.exact = true;
    f.runnable = plan;
    f.runnable_metrics = f.plan_metrics;
    f.runnable_found = true;
    return f;
  }
  // the engine's layouts nearest to the plan: the same stage width W and pipeline depth
  const Degrees& d = plan.deg;
  const std::int32_t w = static_cast<std::int32_t>(d.stage_width());
  std::vector<Degrees> cands;
  auto add = [&](std::int32_t tp, std::int32_t dp, std::int32_t ep) {
    Degrees c = d;
    c.tp = tp;
    c.attn_dp = dp;
    c.ep = ctx.model.is_moe() ? ep : 1;
    c.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(1, ctx.cluster.num_gpus / c.instance_gpus()));
    if (std::find(cands.begin(), cands.end(), c) == cands.end()) cands.push_back(c);
  };
  switch (e) {
    case ServeEngine::kVllm:
      for (const std::int32_t ep : {w, 1}) {
        if (ctx.model.is_moe()) add(1, w, ep);
        add(w, 1, ep);
      }
      break;
    case ServeEngine::kSglang:
      add(d.tp, d.attn_dp, d.ep);
      add(1, w, d.ep);
      add(w, 1, d.ep);
      break;
    case ServeEngine::kTrtllm:
      add(1, w, d.ep);
      add(w, 1, d.ep);
      break;
  }
  // and the attention groups as separate replicas of tp GPUs; and the plan's own degrees
  for (const std::int32_t ep : {d.tp, 1}) add(d.tp, 1, ep);
  add(d.tp, d.attn_dp, d.ep);
  // the plan's two-batch overlap where the engine and the layout allow it, and without it
  std::vector<bool> overlaps{plan.two_batch_overlap};
  if (plan.two_batch_overlap) overlaps.push_back(false);
  for (const Degrees& c : cands) {
    for (const Sharding& sh : engine_shardings(e, ctx, c)) {
      for (const bool tbo : overlaps) {
        Plan q = plan;
        q.deg = c;
        q.sharding = sh;
        q.two_batch_overlap = tbo;
        if (tbo && validate_plan(q, ctx.model, ctx.cluster)) continue;
        // the same concurrency per GPU as the plan
        q.batch = std::max<std::int64_t>(c.attn_dp, plan.batch * c.instance_gpus() / std::max<std::int64_t>(1, d.instance_gpus()));
        q.batch = (q.batch + c.attn_dp - 1) / c.attn_dp * c.attn_dp;
        if (!engine_limits(e, ctx, q).empty()) continue;
        const Metrics m = best_batch(ctx, space, q);
        if (m.feasible() && (!f.runnable_found || m.objective > f.runnable_metrics.objective)) {
          f.runnable = q;
          f.runnable_metrics = m;
          f.runnable_found = true;
        }
      }
    }
  }
  return f;
}

std::string launch_text(const SimContext& ctx, const PlanFile& file, const EngineFit& fit, const LaunchOptions& o) {
  const ServeEngine e = o.engine;
  std::vector<std::string> notes;
  // the engine's own traits: the context's where they are that engine's (a --max-num-seqs
  // given), else its profile's (the HTML report passes the plan's generic context)
  const EngineTraits own = [&] {
    if (ctx.engine.name == to_string(e)) return ctx.engine;
    const auto prof = load_engine_profile(to_string(e));
    return prof ? *prof : ctx.engine;
  }();
  std::string s = fmt::format("# shardwise launch: {} on {} ({}), workload {}, for {}\n", ctx.model.name, file.cluster, ctx.cluster.gpu.name,
                              ctx.workload.name, engine_version(e));
  s += fmt::format("# plan       {}\n", degrees_line(ctx, own, fit.plan, fit.plan_metrics, file.max_num_seqs));
  s += fmt::format("#            predicted {}{}\n", objective_line(ctx, fit.plan_metrics), file.max_num_seqs ? " (the closed form)" : "");
  if (!o.serving.empty() && o.role.empty()) s += fmt::format("# serving    {}\n", o.serving);
  if (fit.exact) {
    s += fmt::format("# {} runs this plan as it is.\n", to_string(e));
  } else {
    s += fmt::format("# {} cannot run this plan as it is:\n", to_string(e));
    for (const auto& why : fit.differences) s += "#   - " + why + "\n";
    if (!fit.runnable_found) {
      s += fmt::format("# and none of its layouts near this plan fits memory and the SLOs: no command to print.\n");
      if (o.spec) o.spec->runnable = false;
      return s;
    }
    s += fmt::format("# nearest plan {} runs: {}\n", to_string(e), degrees_line(ctx, own, fit.runnable, fit.runnable_metrics, file.max_num_seqs));
    s += fmt::format("#            predicted {}", objective_line(ctx, fit.runnable_metrics));
    if (fit.plan_metrics.objective > 0) s += fmt::format(" ({:.3f}x the plan)", fit.runnable_metrics.objective / fit.plan_metrics.objective);
    s += "\n# the commands below start the nearest plan.\n";
  }
  const Plan& p = fit.runnable;
  const Metrics& m = fit.runnable_metrics;
  const Degrees& d = p.deg;
  const Workload& w = ctx.workload;
  const std::string head = o.head_address;
  // its scheduling lanes: attention-DP ranks, and TensorRT-LLM's pipeline micro-batches, each
  // under the cap the flags set (scheduler_lanes)
  const std::int64_t lanes = scheduler_lanes(own, d);
  // the concurrency the engine may run: a serve plan's running-sequence cap per lane as
  // simulated (its KV cache, not the closed form's batch, bounds what runs); else the
  // plan's batch as simulated, above the engine's default cap where the plan (made without
  // that engine) went past it: the launch starts what was simulated
  const std::int64_t batch = file.max_num_seqs ? *file.max_num_seqs * lanes : m.batch;
  if (!file.max_num_seqs && ceil_per_rank(m.batch, lanes) > own.max_num_seqs) {
    notes.push_back(fmt::format("the plan runs {} sequences {}, over {}'s default of {}: the commands raise the cap to it, as simulated "
                                "(plan --engine {} keeps to the default)",
                                ceil_per_rank(m.batch, lanes), running_cap_unit(own, d), to_string(o.engine), own.max_num_seqs,
                                to_string(o.engine)));
  }
  const std::int64_t len = max_sequence(w);
  const std::int64_t width = d.stage_width();
  const bool moe = ctx.model.is_moe();
  const DType kv_dtype = ctx.formats.kv;
  const DType weights_dtype = moe ? ctx.formats.experts : ctx.formats.dense;  // the plan's (resolved) weight format
  const bool fp8_kv = kv_dtype == DType::kFp8;
  const auto native = o.model_path.empty() ? checkpoint_dtype(preset_key(file.model)) : std::nullopt;
  // a checkpoint published in the plan's format rather than quantising at load time
  const std::string published = o.model_path.empty() ? published_checkpoint(preset_key(file.model), weights_dtype) : "";
  const std::string model = served_model(ctx, file, o, &notes);
  // on-the-fly fp8 only where the checkpoint is not already quantised
  // (a checkpoint whose config carries its quantisation, the plan's or the --model-path
  // folder's, is read as it is: vLLM refuses --quantization fp8 beside a ModelOpt checkpoint)
  const bool prequantised = !ctx.model.quant.method.empty() || !o.checkpoint_quant.empty();
  const bool fp8_w = weights_dtype == DType::kFp8 && !native && published.empty() && !prequantised;
  if (weights_dtype == DType::kFp8 && prequantised && !native && published.empty()) {
    notes.push_back(fmt::format("the checkpoint is already quantised ({}): no --quantization flag, the engine reads it from the checkpoint",
                                o.checkpoint_quant.empty() ? ctx.model.quant.method : o.checkpoint_quant));
  }
  const DType shipped = native.value_or(weights_dtype);
  if (shipped != weights_dtype && published.empty()) {
    notes.push_back(fmt::format("{} ships in {} but the plan assumes {} weights: use a {} checkpoint (--model-path) or plan with "
                                "--weights-dtype {}",
                                model, to_string(shipped), to_string(weights_dtype), to_string(weights_dtype), to_string(shipped)));
  }
  if (p.redundant_experts > 0) {
    notes.push_back(fmt::format("{} redundant expert slots (EPLB): vLLM --enable-eplb with {} redundant experts, SGLang --enable-eplb "
                                "--ep-num-redundant-experts {}, TensorRT-LLM's MoE load balancer with {} slots; the commands "
                                "below leave them to you",
                                p.redundant_experts, p.redundant_experts, p.redundant_experts,
                                ctx.model.moe.num_experts + p.redundant_experts));
  }
  if (file.adp_balance && o.engine != ServeEngine::kTrtllm) {
    notes.push_back(fmt::format("the plan was made with TensorRT-LLM's attention-DP balancing ({} batching and {} timeout iterations); {} "
                                "holds no prompts back: its serving prediction here runs without it",
                                file.adp_balance->first, file.adp_balance->second, to_string(o.engine)));
  }
  if (file.decode_steps && *file.decode_steps > 1 && o.engine != ServeEngine::kSglang) {
    notes.push_back(fmt::format("the plan was made with {} decode iterations per scheduling decision; {} schedules every iteration (SGLang "
                                "has --num-continuous-decode-steps): its serving prediction here runs 1",
                                *file.decode_steps, to_string(o.engine)));
  }
  if (kv_dtype != DType::kBf16 && kv_dtype != DType::kFp16 && !fp8_kv) {
    notes.push_back(fmt::format("KV cache in {}: not offered by the engine's flags here; the commands keep the checkpoint's KV format",
                                to_string(kv_dtype)));
  }
  if (weights_dtype != DType::kBf16 && weights_dtype != DType::kFp16 && weights_dtype != DType::kFp8 && !native) {
    notes.push_back(fmt::format("weights in {}: point the model path at a checkpoint quantised to {}", to_string(weights_dtype),
                                to_string(weights_dtype)));
  }
  const Layout l = layout(ctx, p);
  if (l.nodes > 1 && l.instance_gpus % l.gpus_per_node != 0) {
    notes.push_back(fmt::format("an instance of {} GPUs does not fill whole nodes of {}: its last node has {} of them, and the next "
                                "replica starts on the GPUs left there",
                                l.instance_gpus, l.gpus_per_node, l.instance_gpus - (l.nodes - 1) * l.gpus_per_node));
  }
  if (l.nodes == 1 && d.replicas > l.per_node && l.gpus_per_node % l.instance_gpus != 0) {
    notes.push_back(fmt::format("{} GPUs per instance do not divide a node of {}: instances straddle nodes", l.instance_gpus, l.gpus_per_node));
  }
  s += fmt::format("# layout     {} GPU{} per instance ({}), {} replica{} = {} of {} GPUs\n", l.instance_gpus, l.instance_gpus == 1 ? "" : "s",
                   l.nodes > 1 ? fmt::format("{} nodes of {}", l.nodes, l.gpus_per_node)
                               : fmt::format("{} instance{} per node of {}", l.per_node, l.per_node > 1 ? "s" : "", l.gpus_per_node),
                   d.replicas, d.replicas > 1 ? "s" : "", d.total_gpus(), ctx.cluster.num_gpus);
  if (d.replicas > 1) {
    s += l.nodes > 1 ? fmt::format("# replicas   below: replica 0 on nodes 0..{}; start every replica the same way on its own nodes, with "
                                   "its own head address, behind one load balancer\n",
                                   l.nodes - 1)
                     : "# replicas   below: the instances of one node; every node runs the same, behind one load balancer\n";
  }
  // where each replica runs: GPU ranges from GPU 0 in order, as the simulator places them;
  // a replica across an NVLink domain boundary is costed on the network there
  {
    const std::int64_t inst = d.instance_gpus(), gpn = ctx.cluster.gpus_per_node;
    const std::int64_t domain = ctx.cluster.levels.size() > 1 ? ctx.cluster.levels.front().size : ctx.cluster.num_gpus;
    const std::int64_t shown = std::min<std::int64_t>(d.replicas, 16);
    for (std::int64_t r = 0; r < shown; ++r) {
      const std::int64_t lo = o.first_gpu + r * inst, hi = lo + inst - 1;
      const bool straddles = lo / domain != hi / domain && inst <= domain;
      s += fmt::format("# replica {:<3} GPUs {}..{} on node{} {}{}{}\n", r, lo, hi, lo / gpn == hi / gpn ? "" : "s", lo / gpn,
                       lo / gpn == hi / gpn ? "" : fmt::format("..{}", hi / gpn),
                       straddles ? fmt::format(" (straddles NVLink domains {} and {}: its collectives are costed over the network)",
                                               lo / domain, hi / domain)
                                 : "");
    }
    if (shown < d.replicas) s += fmt::format("# ... and {} more replicas in the same pattern\n", d.replicas - shown);
  }
  s += "\n";
  const std::string mem = memory_fraction(m);
  if (o.spec) {
    o.spec->runnable = true;
    o.spec->nodes = l.nodes;
    o.spec->instance_gpus = l.instance_gpus;
    o.spec->gpus_per_node = l.gpus_per_node;
    o.spec->replicas = d.replicas;
    o.spec->port = o.port > 0 ? o.port : e == ServeEngine::kSglang ? 30000 : 8000;
  }

  // per node (multi-node instance) or per instance on one node
  auto each = [&](auto&& body) {
    if (l.nodes > 1) {
      for (std::int64_t k = 0; k < l.nodes; ++k) body(k, std::string(), std::int64_t{0});
    } else {
      for (std::int64_t i = 0; i < l.per_node; ++i) {
        const std::int64_t dev0 = (o.first_gpu + i * l.instance_gpus) % l.gpus_per_node;
        const bool pinned = l.per_node > 1 || o.first_gpu % l.gpus_per_node != 0;
        const std::string env = pinned ? "CUDA_VISIBLE_DEVICES=" + visible_devices(dev0, l.instance_gpus) : "";
        body(std::int64_t{0}, env, i);
      }
    }
  };
  auto node_header = [&](std::int64_t k, std::int64_t inst) {
    if (l.nodes > 1) return fmt::format("## node {} (node rank {}{})\n", k, k, k == 0 ? ", head: " + head : "");
    return l.per_node > 1 || o.first_gpu % l.gpus_per_node != 0
               ? fmt::format("## instance {} on GPUs {}\n", inst, visible_devices((o.first_gpu + inst * l.instance_gpus) % l.gpus_per_node, l.instance_gpus))
                          : std::string("## node 0\n");
  };

  switch (e) {
    case ServeEngine::kVllm: {
      const int port = o.port > 0 ? o.port : 8000;
      const bool dp = attention_dp(d);
      std::vector<std::string> common{"--tensor-parallel-size", std::to_string(d.tp)};
      if (d.pp > 1) common.insert(common.end(), {"--pipeline-parallel-size", std::to_string(d.pp)});
      if (dp) common.insert(common.end(), {"--data-parallel-size", std::to_string(d.attn_dp)});
      if (moe && d.ep == width && width > 1) common.emplace_back("--enable-expert-parallel");
      common.insert(common.end(), {"--max-num-seqs", std::to_string(ceil_per_rank(batch, lanes)), "--max-model-len", std::to_string(len),
                                   "--max-num-batched-tokens", std::to_string(ctx.engine.max_num_tokens), "--gpu-memory-utilization", mem});
      if (fp8_kv) common.insert(common.end(), {"--kv-cache-dtype", "fp8"});
      if (fp8_w) common.insert(common.end(), {"--quantization", "fp8"});
      if (p.two_batch_overlap) {
        // DBO runs only with DeepEP's all-to-all (vLLM docs/design/dbo.md)
        common.emplace_back("--enable-dbo");
        notes.push_back(fmt::format("two-batch overlap: --enable-dbo needs DeepEP: export VLLM_ALL2ALL_BACKEND={} before vllm serve",
                                    w.mode == Mode::kPrefill ? "deepep_high_throughput" : "deepep_low_latency"));
      }
      if (!o.role.empty()) common.insert(common.end(), {"--kv-transfer-config", R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})"});
      // the CUDA-graph batch sizes, as simulated (CompilationConfig.cudagraph_capture_sizes: decode batches padded up to them)
      if (!ctx.engine.cuda_graph_batch_sizes.empty()) {
        common.insert(common.end(), {"--compilation-config", fmt::format(R"({{"cudagraph_capture_sizes":[{}]}})", cuda_graph_batch_sizes_text(ctx.engine.cuda_graph_batch_sizes))});
      }
      const std::int64_t rank_gpus = std::int64_t{d.tp} * d.pp;  // GPUs of one DP rank
      each([&](std::int64_t k, const std::string& env, std::int64_t inst) {
        s += node_header(k, inst);
        // disaggregated: each instance its own NIXL side channel (default 5600; vLLM adds the DP
        // rank), numbered by the instance's first GPU so that pools sharing a node never collide
        std::string nixl;
        if (!o.role.empty()) nixl = fmt::format("VLLM_NIXL_SIDE_CHANNEL_PORT={}", kNixlSidePort + o.first_gpu + inst * l.instance_gpus);
        std::vector<std::string> c = with_env(env, {"vllm", "serve", model}, nixl);
        c.insert(c.end(), common.begin(), common.end());
        c.insert(c.end(), {"--port", std::to_string(port + inst)});
        // one vllm serve per node when whole DP ranks fill whole nodes; else one Ray cluster
        const bool per_node_dp = dp && l.gpus_per_node % rank_gpus == 0 && l.instance_gpus % l.gpus_per_node == 0;
        if (l.nodes > 1 && per_node_dp) {
          const std::int64_t local = l.gpus_per_node / rank_gpus;
          c.insert(c.end(), {"--data-parallel-size-local", std::to_string(std::min<std::int64_t>(local, d.attn_dp - k * local)),
                             "--data-parallel-address", head, "--data-parallel-rpc-port", "13345"});
          if (k > 0) c.insert(c.end(), {"--data-parallel-start-rank", std::to_string(k * local), "--headless"});
          record(o, LaunchProc::Kind::kServe, k, inst, c);
          s += command(c);
        } else if (l.nodes > 1) {
          // TP/PP (or DP ranks wider than a node) across nodes: one Ray cluster, vllm serve on the head only
          if (k == 0) {
            s += "ray start --head --port=6379\n";
            if (dp) c.insert(c.end(), {"--data-parallel-backend", "ray"});
            c.insert(c.end(), {"--distributed-executor-backend", "ray"});
            record(o, LaunchProc::Kind::kRayHead, k, inst, c);
            s += "# once every node has joined the Ray cluster:\n" + command(c);
          } else {
            record(o, LaunchProc::Kind::kRayWorker, k, inst, {});
            s += fmt::format("ray start --address={} --block\n", shell_quote(head + ":6379"));
          }
        } else {
          record(o, LaunchProc::Kind::kServe, k, inst, c);
          s += command(c);
        }
        s += "\n";
      });
      break;
    }
    case ServeEngine::kSglang: {
      const int port = o.port > 0 ? o.port : 30000;
      std::vector<std::string> common{"--tp-size", std::to_string(width)};
      if (attention_dp(d)) {
        // the LM head split inside each attention group, as the simulator models it
        common.insert(common.end(), {"--dp-size", std::to_string(d.attn_dp), "--enable-dp-attention", "--enable-dp-lm-head"});
        if (dense_mlp_data_parallel(p)) common.insert(common.end(), {"--moe-dense-tp-size", "1"});
      }
      if (moe && d.ep > 1) common.insert(common.end(), {"--ep-size", std::to_string(d.ep)});
      if (d.pp > 1) common.insert(common.end(), {"--pp-size", std::to_string(d.pp)});
      // SGLang divides --chunked-prefill-size by the DP size under DP attention (server_args.py,
      // _handle_data_parallelism): the simulated budget per attention group times the groups
      const std::int64_t chunk = ctx.engine.max_num_tokens * (attention_dp(d) ? std::int64_t{d.attn_dp} : 1);
      common.insert(common.end(), {"--max-running-requests", std::to_string(batch), "--context-length", std::to_string(len),
                                   "--chunked-prefill-size", std::to_string(chunk), "--mem-fraction-static", static_memory_fraction(m)});
      if (fp8_kv) common.insert(common.end(), {"--kv-cache-dtype", "fp8_e4m3"});
      if (fp8_w) common.insert(common.end(), {"--quantization", "fp8"});
      // two-batch overlap runs over the DeepEP all-to-all
      if (p.two_batch_overlap) common.insert(common.end(), {"--moe-a2a-backend", "deepep", "--enable-two-batch-overlap"});
      // decode iterations per scheduling decision, as simulated (server_args.py: num_continuous_decode_steps, default 1)
      if (ctx.engine.decode_steps > 1) common.insert(common.end(), {"--num-continuous-decode-steps", std::to_string(ctx.engine.decode_steps)});
      // the CUDA-graph batch sizes, as simulated (server_args.py: cuda_graph_bs; decode batches padded up to them)
      if (!ctx.engine.cuda_graph_batch_sizes.empty()) {
        common.emplace_back("--cuda-graph-bs");
        for (const std::int64_t b : ctx.engine.cuda_graph_batch_sizes) common.push_back(std::to_string(b));
      }
      if (!o.role.empty()) common.insert(common.end(), {"--disaggregation-mode", o.role, "--disaggregation-transfer-backend", "mooncake"});
      each([&](std::int64_t k, const std::string& env, std::int64_t inst) {
        s += node_header(k, inst);
        std::vector<std::string> c = with_env(env, {"python3", "-m", "sglang.launch_server", "--model-path", model});
        c.insert(c.end(), common.begin(), common.end());
        if (l.nodes > 1) {
          c.insert(c.end(), {"--nnodes", std::to_string(l.nodes), "--node-rank", std::to_string(k), "--dist-init-addr", head + ":50000"});
        }
        // each prefill server its own bootstrap port (default 8998), numbered by its first GPU
        if (o.role == "prefill") {
          c.insert(c.end(), {"--disaggregation-bootstrap-port", std::to_string(kBootstrapPort + o.first_gpu + inst * l.instance_gpus)});
        }
        c.insert(c.end(), {"--host", "0.0.0.0", "--port", std::to_string(port + inst)});
        record(o, LaunchProc::Kind::kServe, k, inst, c);
        s += command(c) + "\n";
      });
      break;
    }
    case ServeEngine::kTrtllm: {
      const int port = o.port > 0 ? o.port : 8000;
      const bool dp = attention_dp(d);
      s += "## config.yml (beside the command, on every node)\n";
      // chunked prefill on, as simulated (llmapi/llm_args.py: enable_chunked_prefill, default False)
      std::string config = fmt::format("enable_attention_dp: {}\nenable_chunked_prefill: true\nkv_cache_config:\n  dtype: {}\n",
                                       dp ? "true" : "false", fp8_kv ? "fp8" : "auto");
      // attention-DP balancing, as simulated (llmapi/llm_args.py AttentionDpConfig; off by default)
      if (dp && ctx.engine.adp_timeout_iters > 0) {
        config += fmt::format("attention_dp_config:\n  enable_balance: true\n  batching_wait_iters: {}\n  timeout_iters: {}\n", ctx.engine.adp_wait_iters,
                              ctx.engine.adp_timeout_iters);
      }
      // the CUDA-graph batch sizes, as simulated (llmapi/llm_args.py CudaGraphConfig: batch_sizes, enable_padding)
      if (!ctx.engine.cuda_graph_batch_sizes.empty()) {
        config += fmt::format("cuda_graph_config:\n  enable_padding: true\n  batch_sizes: [{}]\n",
                              fmt::join(ctx.engine.cuda_graph_batch_sizes, ", "));
      }
      if (!o.role.empty()) {  // the KV cache leaves the context servers through the cache transceiver
        config += "cache_transceiver_config:\n  backend: UCX\n";
        if (o.role == "prefill") config += "disable_overlap_scheduler: true\n";
      }
      if (o.spec) o.spec->config_file = config;
      s += config + "\n";
      if (fp8_w) notes.push_back("TensorRT-LLM quantises no weights at load time: point the model path at an FP8 checkpoint (ModelOpt)");
      std::vector<std::string> common{"--backend", "pytorch", "--tp_size", std::to_string(width)};
      if (d.pp > 1) common.insert(common.end(), {"--pp_size", std::to_string(d.pp)});
      if (moe && d.ep > 1) common.insert(common.end(), {"--ep_size", std::to_string(d.ep)});
      // per attention-DP rank and pipeline micro-batch (TensorRT-LLM runs max_batch_size x pp)
      common.insert(common.end(), {"--max_batch_size", std::to_string(ceil_per_rank(batch, lanes)), "--max_seq_len", std::to_string(len),
                                   "--max_num_tokens", std::to_string(ctx.engine.max_num_tokens), "--kv_cache_free_gpu_memory_fraction", "0.90",
                                   "--extra_llm_api_options", "config.yml"});
      each([&](std::int64_t k, const std::string& env, std::int64_t inst) {
        s += node_header(k, inst);
        std::vector<std::string> c = with_env(env, {"trtllm-serve", model});
        c.insert(c.end(), common.begin(), common.end());
        c.insert(c.end(), {"--host", "0.0.0.0", "--port", std::to_string(port + inst)});
        if (l.nodes > 1) {
          if (k == 0) {
            // slots per host add up to -np
            auto slots = [&](std::int64_t n) { return std::min(l.gpus_per_node, l.instance_gpus - n * l.gpus_per_node); };
            std::string hosts = head + ":" + std::to_string(slots(0));
            for (std::int64_t n = 1; n < l.nodes; ++n) hosts += fmt::format(",<NODE{}_IP>:{}", n, slots(n));
            std::vector<std::string> mpi{"mpirun", "--allow-run-as-root", "-np", std::to_string(l.instance_gpus), "-H", hosts,
                                         "trtllm-llmapi-launch"};
            mpi.insert(mpi.end(), c.begin(), c.end());
            record(o, LaunchProc::Kind::kMpiHead, k, inst, c);
            s += "# one MPI rank per GPU, started from the head over ssh:\n" + command(mpi);
          } else {
            record(o, LaunchProc::Kind::kMpiWorker, k, inst, {});
            s += fmt::format("# nothing to start: mpirun on node 0 runs ranks {}..{} here (ssh access, same paths, config.yml present)\n",
                             k * l.gpus_per_node, std::min((k + 1) * l.gpus_per_node, l.instance_gpus) - 1);
          }
        } else {
          record(o, LaunchProc::Kind::kServe, k, inst, c);
          s += command(c);
        }
        s += "\n";
      });
      break;
    }
  }
  for (const auto& n : notes) s += "# note: " + n + "\n";
  if (o.spec) o.spec->notes = notes;
  return s;
}

std::string launch_disagg_text(const SimContext& prefill_ctx, const SimContext& ctx, const PlanFile& file, const EngineFit& prefill,
                               const EngineFit& decode, const LaunchOptions& o) {
  const ServeEngine e = o.engine;
  const std::int32_t x = prefill.runnable.deg.replicas, y = decode.runnable.deg.replicas;
  std::string s = fmt::format("# shardwise launch: disaggregated {} on {} for {}: {} prefill instance{} beside {} decode instance{}\n",
                              ctx.model.name, file.cluster, engine_version(e), x, x > 1 ? "s" : "", y, y > 1 ? "s" : "");
  s += "# (docs/serving.md: the prompt's KV cache travels from a prefill instance to a decode instance; docs/launch.md)\n";
  if (!o.serving.empty()) s += fmt::format("# serving    {}\n", o.serving);
  s += "\n";
  const int base = o.port > 0 ? o.port : (e == ServeEngine::kSglang ? 30000 : 8000);
  LaunchOptions po = o, dopt = o;
  po.spec = o.prefill_spec;
  po.role = "prefill";
  po.port = base + 1;
  dopt.role = "decode";
  dopt.port = base + 101;
  dopt.first_gpu = prefill.runnable.deg.total_gpus();  // the decode pool on the GPUs after the prefill pool's
  PlanFile pf = file, df = file;
  pf.plan = prefill.plan;
  pf.prefill_pool.reset();
  df.prefill_pool.reset();
  // each pool its own settings: the prefill pool's running-sequence cap where the plan gives one
  if (file.prefill_max_num_seqs) pf.max_num_seqs = file.prefill_max_num_seqs;
  s += "### the prefill pool (each instance on its own GPUs; start every instance the same way)\n";
  s += launch_text(prefill_ctx, pf, prefill, po);
  s += "\n### the decode pool\n";
  s += launch_text(ctx, df, decode, dopt);
  // instances sharing a node listen on consecutive ports (launch_text's layout)
  const auto port_of = [&](const Plan& p, int port, std::int32_t i) {
    const std::int64_t g = p.deg.instance_gpus(), gpn = ctx.cluster.gpus_per_node;
    const std::int64_t per_node = g <= gpn ? std::max<std::int64_t>(1, gpn / g) : 1;
    return port + static_cast<int>(i % per_node);
  };
  const Plan& pp = prefill.runnable;
  const Plan& dp = decode.runnable;
  const auto urls = [&](const char* who, const Plan& p, std::int32_t n, int port, const char* sep, bool scheme) {
    std::string u;
    for (std::int32_t i = 0; i < n; ++i) u += fmt::format("{}{}<{}_{}_HOST>:{}", i ? sep : "", scheme ? "http://" : "", who, i, port_of(p, port, i));
    return u;
  };
  s += "\n### the router: a request goes to a prefill instance, then to a decode instance\n";
  switch (e) {
    case ServeEngine::kSglang: {
      std::vector<std::string> c{"python3", "-m", "sglang_router.launch_router", "--pd-disaggregation"};
      // each prefill URL with its server's bootstrap port (launch_text numbers them by first GPU)
      const auto bootstrap_of = [&](std::int32_t i) {
        const std::int64_t g = pp.deg.instance_gpus(), gpn = ctx.cluster.gpus_per_node;
        const std::int64_t per_node = g <= gpn ? std::max<std::int64_t>(1, gpn / g) : 1;
        return kBootstrapPort + po.first_gpu + (i % per_node) * g;
      };
      for (std::int32_t i = 0; i < x; ++i) {
        c.insert(c.end(), {"--prefill", fmt::format("http://<PREFILL_{}_HOST>:{}", i, port_of(pp, po.port, i)), std::to_string(bootstrap_of(i))});
      }
      for (std::int32_t i = 0; i < y; ++i) c.insert(c.end(), {"--decode", fmt::format("http://<DECODE_{}_HOST>:{}", i, port_of(dp, dopt.port, i))});
      c.insert(c.end(), {"--host", "0.0.0.0", "--port", std::to_string(base)});
      s += command(c);
      s += "# note: Mooncake moves the KV cache over RDMA; name the NICs with --disaggregation-ib-device on both pools\n";
      break;
    }
    case ServeEngine::kVllm: {
      s += "# vLLM has no built-in P/D router: its example proxy (examples/online_serving/disaggregated_serving, or\n"
           "# tests/v1/kv_connector/nixl_integration/toy_proxy_server.py) or llm-d sends each request to a prefill\n"
           "# instance with max_tokens 1, then to a decode instance with the KV transfer parameters it returned:\n";
      std::vector<std::string> c{"python3", "toy_proxy_server.py", "--host", "0.0.0.0", "--port", std::to_string(base), "--prefiller-hosts"};
      for (std::int32_t i = 0; i < x; ++i) c.push_back(fmt::format("<PREFILL_{}_HOST>", i));
      c.emplace_back("--prefiller-ports");
      for (std::int32_t i = 0; i < x; ++i) c.push_back(std::to_string(port_of(pp, po.port, i)));
      c.emplace_back("--decoder-hosts");
      for (std::int32_t i = 0; i < y; ++i) c.push_back(fmt::format("<DECODE_{}_HOST>", i));
      c.emplace_back("--decoder-ports");
      for (std::int32_t i = 0; i < y; ++i) c.push_back(std::to_string(port_of(dp, dopt.port, i)));
      s += command(c);
      break;
    }
    case ServeEngine::kTrtllm: {
      s += "## disagg_config.yaml\n";
      s += fmt::format("hostname: 0.0.0.0\nport: {}\nbackend: pytorch\ncontext_servers:\n  num_instances: {}\n  urls: [{}]\n"
                       "generation_servers:\n  num_instances: {}\n  urls: [{}]\n\n",
                       base, x, urls("PREFILL", pp, x, po.port, ", ", false), y, urls("DECODE", dp, y, dopt.port, ", ", false));
      s += command({"trtllm-serve", "disaggregated", "-c", "disagg_config.yaml"});
      break;
    }
  }
  return s;
}

}  // namespace shardwise
