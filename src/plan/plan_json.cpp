#include "plan/plan_json.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fields.hpp"

namespace shardwise {
using nlohmann::json;

namespace {
json sharding_json(const Sharding& s) {
  json sh = json::object();
  for (int i = 0; i < kNumSlots; ++i) sh[slot_info(i).name] = slot_info(i).choices[s[static_cast<std::size_t>(i)]];
  return sh;
}
json degrees_json(const Degrees& d) {
  return {{"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}, {"attn_dp", d.attn_dp}, {"replicas", d.replicas}};
}
void read_degrees(const FieldReader& d, Degrees& out) {
  d.reject_unknown({"tp", "pp", "ep", "attn_dp", "replicas"});
  constexpr std::int64_t kMax = 1 << 20;
  out.tp = static_cast<std::int32_t>(d.integer_or("tp", 1, 1, kMax));
  out.pp = static_cast<std::int32_t>(d.integer_or("pp", 1, 1, kMax));
  out.ep = static_cast<std::int32_t>(d.integer_or("ep", 1, 1, kMax));
  out.attn_dp = static_cast<std::int32_t>(d.integer_or("attn_dp", 1, 1, kMax));
  out.replicas = static_cast<std::int32_t>(d.integer_or("replicas", 1, 1, kMax));
}
std::optional<Error> read_sharding(const json* s, const std::string& file, const std::string& prefix, Sharding& out) {
  if (!s) return std::nullopt;
  auto sh = parse_sharding(s->dump(), file + " (sharding)");
  if (!sh) {
    Error e = sh.error();
    e.file = file;
    e.field = prefix + "sharding." + e.field;
    return e;
  }
  out = *sh;
  return std::nullopt;
}
json layout_json(const Plan& p) {
  json j{{"degrees", degrees_json(p.deg)}, {"sharding", sharding_json(p.sharding)}, {"micro_batches", p.micro_batches},
         {"redundant_experts", p.redundant_experts}, {"batch", p.batch == 0 ? json("max") : json(p.batch)}};
  if (p.two_batch_overlap) j["two_batch_overlap"] = true;
  return j;
}
// One layout of "phases" (its sharding is read later, with the file's other shardings).
Plan read_layout(const FieldReader& l) {
  l.reject_unknown({"degrees", "sharding", "micro_batches", "redundant_experts", "two_batch_overlap", "batch"});
  Plan p;
  p.batch = 0;
  if (const json* b = l.get("batch"); b && !(b->is_string() && b->get<std::string>() == "max")) p.batch = l.integer("batch", 1, kMaxBatch);
  if (auto d = l.object("degrees", true)) read_degrees(*d, p.deg);
  p.micro_batches = static_cast<std::int32_t>(l.integer_or("micro_batches", 0, 0, 1 << 20));
  p.redundant_experts = static_cast<std::int32_t>(l.integer_or("redundant_experts", 0, 0, 1 << 20));
  p.two_batch_overlap = l.boolean_or("two_batch_overlap", false);
  return p;
}
}  // namespace

std::string plan_to_json(const PlanFile& f) {
  const json sh = sharding_json(f.plan.sharding);
  const Degrees& d = f.plan.deg;
  json j{{"schema", kPlanSchema},
         {"degrees", {{"tp", d.tp}, {"pp", d.pp}, {"ep", d.ep}, {"attn_dp", d.attn_dp}, {"replicas", d.replicas}}},
         {"batch", f.plan.batch == 0 ? json("max") : json(f.plan.batch)},
         {"micro_batches", f.plan.micro_batches},
         {"redundant_experts", f.plan.redundant_experts},
         {"sharding", sh}};
  if (f.plan.two_batch_overlap) j["two_batch_overlap"] = true;
  // the names only when known: the reader refuses an empty one (an absent name is allowed)
  if (!f.model.empty()) j["model"] = f.model;
  if (!f.cluster.empty()) j["cluster"] = f.cluster;
  if (!f.workload.empty()) j["workload"] = f.workload;
  const WorkloadOverrides& o = f.overrides;
  json ov = json::object();
  if (o.mode) ov["mode"] = *o.mode;
  if (o.isl) ov["isl"] = *o.isl;
  if (o.osl) ov["osl"] = *o.osl;
  if (o.context) ov["context"] = *o.context;
  if (o.batch) ov["batch"] = *o.batch;
  if (o.ttft_ms) ov["ttft_ms"] = *o.ttft_ms;
  if (o.tpot_ms) ov["tpot_ms"] = *o.tpot_ms;
  if (o.slo) ov["slo"] = *o.slo;
  if (o.weights_dtype) ov["weights_dtype"] = *o.weights_dtype;
  if (o.kv_dtype) ov["kv_dtype"] = *o.kv_dtype;
  if (o.expert_dtype) ov["expert_dtype"] = *o.expert_dtype;
  if (o.spec_tokens) ov["spec_tokens"] = *o.spec_tokens;
  if (o.spec_acceptance) ov["spec_acceptance"] = *o.spec_acceptance;
  if (o.rate) ov["rate"] = *o.rate;
  if (o.concurrency) ov["concurrency"] = *o.concurrency;
  if (o.requests) ov["requests"] = *o.requests;
  if (o.seed) ov["seed"] = *o.seed;
  if (!ov.empty()) j["workload_overrides"] = ov;
  if (f.max_num_seqs || f.max_num_tokens || f.decode_steps || f.adp_balance || f.cuda_graph_batch_sizes) {
    json es = json::object();
    if (f.adp_balance) es["adp_balance"] = json{{"batching_wait_iters", f.adp_balance->first}, {"timeout_iters", f.adp_balance->second}};
    if (f.cuda_graph_batch_sizes) es["cuda_graph_batch_sizes"] = *f.cuda_graph_batch_sizes;
    if (f.max_num_seqs) es["max_num_seqs"] = *f.max_num_seqs;
    if (f.max_num_tokens) es["max_num_tokens"] = *f.max_num_tokens;
    if (f.decode_steps) es["decode_steps"] = *f.decode_steps;
    j["engine_settings"] = es;
  }
  if (f.cost) {
    j["cost"] = {{"kernel_tables", f.cost->kernel_tables}};
    if (!f.cost->silicon.empty()) j["cost"]["silicon"] = f.cost->silicon;
    if (!f.cost->calibration.empty()) j["cost"]["calibration"] = f.cost->calibration;
  }
  if (f.engine) {
    j["engine"] = {{"name", *f.engine}};
    if (f.engine_version) j["engine"]["version"] = *f.engine_version;
  }
  if (f.prefill_pool) {
    const Plan& p = *f.prefill_pool;
    j["disaggregated"] = {{"prefill",
                           {{"degrees", degrees_json(p.deg)},
                            {"sharding", sharding_json(p.sharding)},
                            {"micro_batches", p.micro_batches},
                            {"redundant_experts", p.redundant_experts}}}};
    if (p.two_batch_overlap) j["disaggregated"]["prefill"]["two_batch_overlap"] = true;
    if (f.prefill_max_num_seqs || f.prefill_max_num_tokens) {
      json es = json::object();
      if (f.prefill_max_num_seqs) es["max_num_seqs"] = *f.prefill_max_num_seqs;
      if (f.prefill_max_num_tokens) es["max_num_tokens"] = *f.prefill_max_num_tokens;
      j["disaggregated"]["prefill"]["engine_settings"] = es;
    }
  }
  if (f.phases) {
    j["phases"] = {{"prefill", layout_json(f.phases->prefill)}, {"decode", layout_json(f.phases->decode)}, {"buffer_seqs", f.phases->buffer_seqs}};
    if (f.phases->host_bytes_per_gpu > 0) j["phases"]["host_bytes_per_gpu"] = f.phases->host_bytes_per_gpu;
  }
  return j.dump(2);
}

Expected<PlanFile> parse_plan_json(std::string_view text, const std::string& file) {
  auto doc = parse_json_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"schema", "model", "cluster", "workload", "degrees", "batch", "micro_batches", "redundant_experts", "two_batch_overlap",
                    "sharding", "workload_overrides", "metrics", "notes", "disaggregated", "engine_settings", "engine", "cost", "phases"});
  PlanFile f;
  const std::string schema = r.string("schema");
  if (!sink.failed() && schema != kPlanSchema) r.fail("schema", std::string("'") + kPlanSchema + "'", "'" + schema + "'");
  f.model = r.string_or("model", "");
  f.cluster = r.string_or("cluster", "");
  f.workload = r.string_or("workload", "");
  if (auto d = r.object("degrees", true)) read_degrees(*d, f.plan.deg);
  if (auto es = r.object("engine_settings", false)) {
    es->reject_unknown({"max_num_seqs", "max_num_tokens", "decode_steps", "adp_balance", "cuda_graph_batch_sizes"});
    if (es->has("cuda_graph_batch_sizes")) {
      auto sizes = es->integer_list_or("cuda_graph_batch_sizes", 1, kMaxCudaGraphBatch);
      if ((sizes.empty() || sizes.size() > kMaxCudaGraphSizes) && !sink.failed()) {
        es->fail_value("cuda_graph_batch_sizes", fmt::format("a list of 1 to {} batch sizes from 1 to {}", kMaxCudaGraphSizes, kMaxCudaGraphBatch));
      }
      f.cuda_graph_batch_sizes = normalized_graph_sizes(std::move(sizes));  // as the flag's
    }
    if (auto ab = es->object("adp_balance", false)) {
      ab->reject_unknown({"batching_wait_iters", "timeout_iters"});
      f.adp_balance = std::pair{ab->integer("batching_wait_iters", 0, 1000), ab->integer("timeout_iters", 1, 10000)};
    }
    if (es->has("max_num_seqs")) f.max_num_seqs = es->integer("max_num_seqs", 1, kMaxBatch);
    if (es->has("max_num_tokens")) f.max_num_tokens = es->integer("max_num_tokens", 1, kMaxTokens);
    if (es->has("decode_steps")) f.decode_steps = es->integer("decode_steps", 1, 1024);
  }
  if (auto co = r.object("cost", false)) {
    co->reject_unknown({"kernel_tables", "silicon", "calibration"});
    PlanFile::Cost c;
    c.kernel_tables = co->boolean_or("kernel_tables", false);
    if (co->has("silicon")) c.silicon = co->string("silicon");
    if (co->has("calibration")) c.calibration = co->string("calibration");
    f.cost = c;
  }
  if (auto en = r.object("engine", false)) {
    en->reject_unknown({"name", "version"});
    f.engine = en->string("name");
    if (en->has("version")) f.engine_version = en->string("version");
  }
  std::optional<FieldReader> pre;
  if (auto dis = r.object("disaggregated", false)) {
    dis->reject_unknown({"prefill"});
    pre = dis->object("prefill", true);
    if (pre) {
      pre->reject_unknown({"degrees", "sharding", "micro_batches", "redundant_experts", "two_batch_overlap", "engine_settings"});
      if (auto es = pre->object("engine_settings", false)) {  // the prefill pool's own (the top level's: the decode pool's)
        es->reject_unknown({"max_num_seqs", "max_num_tokens"});
        if (es->has("max_num_seqs")) f.prefill_max_num_seqs = es->integer("max_num_seqs", 1, kMaxBatch);
        if (es->has("max_num_tokens")) f.prefill_max_num_tokens = es->integer("max_num_tokens", 1, kMaxTokens);
      }
      Plan p;
      p.batch = 0;
      if (auto d = pre->object("degrees", true)) read_degrees(*d, p.deg);
      p.micro_batches = static_cast<std::int32_t>(pre->integer_or("micro_batches", 0, 0, 1 << 20));
      p.redundant_experts = static_cast<std::int32_t>(pre->integer_or("redundant_experts", 0, 0, 1 << 20));
      p.two_batch_overlap = pre->boolean_or("two_batch_overlap", false);
      f.prefill_pool = p;
    }
  }
  std::optional<FieldReader> ph_pre, ph_dec;
  if (auto ph = r.object("phases", false)) {
    ph->reject_unknown({"prefill", "decode", "buffer_seqs", "host_bytes_per_gpu"});
    ph_pre = ph->object("prefill", true);
    ph_dec = ph->object("decode", true);
    PhasePlan pp;
    if (ph_pre) pp.prefill = read_layout(*ph_pre);
    if (ph_dec) pp.decode = read_layout(*ph_dec);
    pp.buffer_seqs = ph->integer_or("buffer_seqs", 0, 0, std::int64_t{1} << 40);
    if (ph->has("host_bytes_per_gpu")) pp.host_bytes_per_gpu = ph->number("host_bytes_per_gpu", 0.0, 1e15);
    if (f.prefill_pool) ph->fail("prefill", "a plan that is either disaggregated or phased", "both 'disaggregated' and 'phases'");
    f.phases = pp;
  }
  if (!sink.failed()) {
    const json* b = r.get("batch");
    if (b && b->is_string() && b->get<std::string>() == "max") {
      f.plan.batch = 0;
    } else {
      f.plan.batch = r.integer("batch", 1, std::int64_t{1} << 24);
    }
  }
  f.plan.micro_batches = static_cast<std::int32_t>(r.integer_or("micro_batches", 0, 0, 1 << 20));
  f.plan.redundant_experts = static_cast<std::int32_t>(r.integer_or("redundant_experts", 0, 0, 1 << 20));
  f.plan.two_batch_overlap = r.boolean_or("two_batch_overlap", false);
  if (auto ov = r.object("workload_overrides", false)) {
    ov->reject_unknown({"mode", "isl", "osl", "context", "batch", "ttft_ms", "tpot_ms", "slo", "weights_dtype", "kv_dtype", "expert_dtype",
                        "spec_tokens", "spec_acceptance", "rate", "concurrency", "requests", "seed"});
    WorkloadOverrides& o = f.overrides;
    if (ov->has("mode")) o.mode = ov->string("mode");
    if (ov->has("isl")) o.isl = ov->integer("isl", 1, kMaxTokens);
    if (ov->has("osl")) o.osl = ov->integer("osl", 1, kMaxTokens);
    if (ov->has("context")) o.context = ov->integer("context", 1, kMaxTokens);
    if (ov->has("batch")) {  // a number or "max", as --batch takes it
      const json* b = ov->get("batch");
      if (b->is_string() && b->get<std::string>() == "max") {
        o.batch = "max";
      } else if (b->is_number_integer() && b->get<std::int64_t>() >= 1 && b->get<std::int64_t>() <= kMaxBatch) {
        o.batch = std::to_string(b->get<std::int64_t>());
      } else {
        ov->fail_value("batch", fmt::format("a number of concurrent sequences from 1 to {} or 'max'", kMaxBatch));
      }
    }
    if (ov->has("ttft_ms")) o.ttft_ms = ov->number("ttft_ms", 1e-3, 3.6e6);
    if (ov->has("tpot_ms")) o.tpot_ms = ov->number("tpot_ms", 1e-3, 3.6e6);
    if (ov->has("slo")) o.slo = ov->string("slo");
    if (ov->has("weights_dtype")) o.weights_dtype = ov->string("weights_dtype");
    if (ov->has("kv_dtype")) o.kv_dtype = ov->string("kv_dtype");
    if (ov->has("expert_dtype")) o.expert_dtype = ov->string("expert_dtype");
    if (ov->has("spec_tokens")) o.spec_tokens = ov->integer("spec_tokens", 0, kMaxSpecTokens);
    if (ov->has("spec_acceptance")) o.spec_acceptance = ov->number("spec_acceptance", 0.0, 1.0);
    if (ov->has("rate")) o.rate = ov->string("rate");
    if (ov->has("concurrency")) o.concurrency = ov->integer("concurrency", 1, kMaxBatch);
    if (ov->has("requests")) o.requests = ov->integer("requests", 1, kMaxRequests);
    if (ov->has("seed")) o.seed = ov->integer("seed", 0, std::int64_t{1} << 62);
  }
  if (sink.failed()) return *sink.first;
  if (auto e = read_sharding(r.get("sharding"), file, "", f.plan.sharding)) return *e;
  if (pre && f.prefill_pool) {
    if (auto e = read_sharding(pre->get("sharding"), file, "disaggregated.prefill.", f.prefill_pool->sharding)) return *e;
  }
  if (f.phases) {
    if (auto e = read_sharding(ph_pre->get("sharding"), file, "phases.prefill.", f.phases->prefill.sharding)) return *e;
    if (auto e = read_sharding(ph_dec->get("sharding"), file, "phases.decode.", f.phases->decode.sharding)) return *e;
  }
  return f;
}

Expected<PlanFile> load_plan_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_plan_json(*text, path);
}

}  // namespace shardwise
