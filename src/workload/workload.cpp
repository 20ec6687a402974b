#include "workload/workload.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded_data.hpp"
#include "core/fields.hpp"
#include "workload/serving_parse.hpp"

namespace shardwise {
namespace {
std::optional<Mode> parse_mode(const std::string& s) {
  if (s == "decode") return Mode::kDecode;
  if (s == "prefill") return Mode::kPrefill;
  if (s == "offline") return Mode::kOffline;
  if (s == "serve") return Mode::kServe;
  return std::nullopt;
}
constexpr const char* kModes = "one of decode, prefill, offline, serve";
constexpr const char* kBatchWant = "a positive number of concurrent sequences or 'max'";
constexpr double kMaxSloMs = 3.6e6;  // one hour

std::optional<std::int64_t> parse_batch(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 1 || v > kMaxBatch) return std::nullopt;
  return v;
}
// A serving workload's isl / osl are the means of its lengths (a trace's, or a
// distribution's) when not given; a distribution without a mean takes isl / osl.
void fill_mean_lengths(Workload& w) {
  ServeSpec& s = w.serve;
  if (!s.trace.empty()) {
    double si = 0, so = 0;
    for (const auto& t : s.trace) {
      si += static_cast<double>(t.input);
      so += static_cast<double>(t.output);
    }
    const double n = static_cast<double>(s.trace.size());
    if (w.isl == 0) w.isl = std::max<std::int64_t>(1, std::llround(si / n));
    if (w.osl == 0) w.osl = std::max<std::int64_t>(1, std::llround(so / n));
  }
  const auto fill = [](std::optional<LengthDist>& d, std::int64_t& mean) {
    if (!d) return;
    if ((d->kind == LengthDist::Kind::kFixed || d->kind == LengthDist::Kind::kLognormal) && d->mean <= 0) d->mean = static_cast<double>(mean);
    if (mean == 0) mean = std::max<std::int64_t>(1, std::llround(mean_of(*d)));
  };
  fill(s.input, w.isl);
  fill(s.output, w.osl);
}
}  // namespace

bool has_arrivals(const Workload& w) {
  return w.serve.arrivals.kind != Arrivals::Kind::kClosed || w.serve.arrivals.concurrency > 0;
}

const char* to_string(Mode m) {
  switch (m) {
    case Mode::kDecode: return "decode";
    case Mode::kPrefill: return "prefill";
    case Mode::kOffline: return "offline";
    case Mode::kServe: return "serve";
  }
  return "?";
}

std::optional<Error> validate_workload(const Workload& w, const std::string& file) {
  // Token counts are either absent (0) or positive: the loader rejects 0 and negatives.
  const auto tokens = [](std::int64_t v) { return v == 0 ? std::string("nothing (the field is missing)") : std::to_string(v); };
  if (w.mode == Mode::kDecode && w.context < 1) {
    return Error{file, "context", "a positive context length (tokens in the KV cache) for decode", tokens(w.context)};
  }
  const bool stream = w.mode == Mode::kOffline || w.mode == Mode::kServe;
  if ((w.mode == Mode::kPrefill || stream) && w.isl < 1) {
    return Error{file, "isl", fmt::format("a positive input length for {}", to_string(w.mode)), tokens(w.isl)};
  }
  if (stream && w.osl < 1) {
    return Error{file, "osl", fmt::format("a positive output length for {}", to_string(w.mode)), tokens(w.osl)};
  }
  // a length the mode does not use would be ignored silently: refuse it
  if (w.mode == Mode::kDecode && (w.isl > 0 || w.osl > 0)) {
    return Error{file, w.isl > 0 ? "isl" : "osl", "no input or output length for decode (it uses context: tokens already cached)",
                 std::to_string(w.isl > 0 ? w.isl : w.osl)};
  }
  if (w.mode == Mode::kPrefill && (w.osl > 0 || w.context > 0)) {
    return Error{file, w.osl > 0 ? "osl" : "context", "no output length or context for prefill (it uses isl)",
                 std::to_string(w.osl > 0 ? w.osl : w.context)};
  }
  if (stream && w.context > 0) {
    return Error{file, "context", fmt::format("no context for {} (it uses isl and osl)", to_string(w.mode)), std::to_string(w.context)};
  }
  if (w.mode == Mode::kPrefill && !w.tpot_pct.empty()) {
    return Error{file, "slo.tpot_ms", "no per-token SLO for prefill (it produces one token)", slo_stat_name(w.tpot_pct.front().pct)};
  }
  if (w.mode == Mode::kDecode && !w.ttft_pct.empty()) {
    return Error{file, "slo.ttft_ms", "no first-token SLO for decode (the prompt is already cached)", slo_stat_name(w.ttft_pct.front().pct)};
  }
  if (w.mode == Mode::kServe) {
    // arrivals may be left out (plan --mode serve searches the rate); simulate asks for them
    const Arrivals& a = w.serve.arrivals;
    if (a.kind == Arrivals::Kind::kTrace && w.serve.trace.empty()) {
      return Error{file, "arrivals.file", "a trace with at least one request", "none"};
    }
  } else if (w.serve != ServeSpec{}) {
    return Error{file, "arrivals", "arrivals, requests, seed and lengths only for mode serve", to_string(w.mode)};
  }
  if (w.mode == Mode::kPrefill && w.tpot_ms) {
    return Error{file, "slo.tpot_ms", "no per-token SLO for prefill (it produces one token)", fmt::format("{}", *w.tpot_ms)};
  }
  if (w.mode == Mode::kDecode && w.ttft_ms) {
    return Error{file, "slo.ttft_ms", "no first-token SLO for decode (the prompt is already cached)", fmt::format("{}", *w.ttft_ms)};
  }
  if (w.mode == Mode::kPrefill && w.spec_tokens > 0) {
    return Error{file, "speculative.tokens", "no speculative decoding for prefill (it produces one token)", std::to_string(w.spec_tokens)};
  }
  return std::nullopt;
}

Formats resolve_formats(const ModelSpec& m, const Workload& w) {
  Formats f;
  if (!w.weights_dtype) {
    f.attention = m.quant.attention.value_or(DType::kBf16);
    f.dense = m.quant.dense.value_or(DType::kBf16);
    f.experts = m.quant.experts.value_or(DType::kBf16);
  } else {
    // a format given for the weights applies to every weight, the embedding and head too
    f.attention = f.dense = f.experts = f.other = *w.weights_dtype;
  }
  if (w.expert_dtype) f.experts = *w.expert_dtype;
  f.kv = w.kv_dtype ? *w.kv_dtype : m.quant.kv.value_or(DType::kBf16);
  // the checkpoint's scale scheme where its formats are kept, the one typed where given
  f.mxfp4 = w.weights_dtype ? w.weights_mxfp4 : (m.quant.method == "mxfp4" || m.quant.method == "modelopt:MXFP4");
  f.fp8_blocks = !w.weights_dtype && m.quant.method == "fp8";
  return f;
}

double weight_bytes(DType d, const Formats& f) {
  switch (d) {
    case DType::kFp4: return f.mxfp4 ? 0.5 + 1.0 / 32.0 : 0.5 + 1.0 / 16.0;  // 4 bits + 8-bit scale per 32 | per 16
    case DType::kInt4: return 0.5 + (2.0 + 0.5) / 128.0;                   // 4 bits + fp16 scale and 4-bit zero per 128
    case DType::kFp8: return f.fp8_blocks ? 1.0 + 4.0 / (128.0 * 128.0) : 1.0;
    default: return bytes_per_element(d);
  }
}

std::string formats_label(const Formats& f, bool moe) {
  const bool same = f.attention == f.dense && (!moe || f.experts == f.dense);
  if (same) return to_string(f.attention);
  std::string s = fmt::format("attention {}, dense {}", to_string(f.attention), to_string(f.dense));
  if (moe) s += fmt::format(", experts {}", to_string(f.experts));
  return s;
}

std::optional<SloBound> tightest_slo(const std::optional<double>& mean, const std::vector<SloBound>& pcts) {
  std::optional<SloBound> out;
  if (mean) out = SloBound{0.0, *mean};
  for (const SloBound& b : pcts) {
    if (!out || b.ms < out->ms) out = b;
  }
  return out;
}

double tokens_per_step(const Workload& w) {
  double t = 1.0, pk = 1.0;
  for (std::int32_t i = 0; i < w.spec_tokens; ++i) {
    pk *= w.spec_acceptance;
    t += pk;
  }
  return t;
}

Expected<Workload> parse_workload_yaml(std::string_view text, const std::string& file, const std::string& name) {
  auto doc = parse_yaml_text(text, file);
  if (!doc) return doc.error();
  ErrorSink sink;
  const FieldReader r = root_reader(*doc, file, sink);
  r.reject_unknown({"name", "description", "mode", "isl", "osl", "context", "batch", "slo", "dtypes", "speculative", "arrivals", "requests",
                    "seed", "lengths"});
  Workload w;
  w.name = r.string_or("name", name);
  if (!r.has("mode")) r.fail_value("mode", kModes);
  const std::string mode = r.string("mode");
  if (!sink.failed()) {
    auto m = parse_mode(mode);
    if (!m) {
      r.fail_value("mode", kModes);
    } else {
      w.mode = *m;
    }
  }
  w.isl = r.integer_or("isl", 0, 1, kMaxTokens);
  w.osl = r.integer_or("osl", 0, 1, kMaxTokens);
  w.context = r.integer_or("context", 0, 1, kMaxTokens);
  if (!sink.failed() && r.has("batch")) {
    const nlohmann::json* b = r.get("batch");
    if (b->is_string() && b->get<std::string>() == "max") {
      w.batch.reset();
    } else {
      w.batch = r.integer("batch", 1, kMaxBatch);
      if (sink.failed()) {
        sink.first.reset();
        r.fail_value("batch", kBatchWant);
      }
    }
  }
  if (auto slo = r.object("slo", false)) {
    slo->reject_unknown({"ttft_ms", "tpot_ms"});
    detail::read_slo(*slo, "ttft_ms", kMaxSloMs, w.ttft_ms, w.ttft_pct);
    detail::read_slo(*slo, "tpot_ms", kMaxSloMs, w.tpot_ms, w.tpot_pct);
  }
  detail::read_serve_spec(r, w.serve, kMaxTokens);
  if (!sink.failed()) {
    // one source for each length: a trace's own, or a distribution, or isl / osl (a
    // distribution's mean may repeat isl, not contradict it)
    const ServeSpec& s = w.serve;
    if (s.arrivals.kind == Arrivals::Kind::kTrace) {
      for (const char* key : {"isl", "osl", "lengths"}) {
        if (r.has(key)) {
          r.fail(key, "no lengths beside a trace (its requests carry their own input and output lengths)",
                 std::string(key) + ": " + describe_value(*r.get(key)));
        }
      }
      if (!sink.failed() && s.requests > static_cast<std::int64_t>(s.trace.size())) {
        r.fail("requests", fmt::format("at most the trace's {} requests (a trace is replayed once, never extended)", s.trace.size()),
               std::to_string(s.requests));
      }
    }
    const auto agree = [&](const std::optional<LengthDist>& d, const char* key, std::int64_t given, const char* field) {
      if (!d || given == 0 || sink.failed()) return;
      const bool explicit_mean = d->kind == LengthDist::Kind::kUniform || d->kind == LengthDist::Kind::kHistogram || d->mean > 0;
      if (explicit_mean && std::llround(mean_of(*d)) != given) {
        r.fail(key, fmt::format("the mean of {} ({:.0f}) or no {} (a distribution's mean is the workload's {})", field, mean_of(*d), key, key),
               std::to_string(given));
      }
    };
    agree(s.input, "isl", w.isl, "lengths.input");
    agree(s.output, "osl", w.osl, "lengths.output");
  }
  if (!sink.failed()) fill_mean_lengths(w);
  if (auto dt = r.object("dtypes", false)) {
    dt->reject_unknown({"weights", "kv_cache", "experts"});
    for (const char* key : {"weights", "kv_cache", "experts"}) {
      if (!dt->has(key) || sink.failed()) continue;
      const std::string v = dt->string(key);
      const std::string_view k(key);
      if (v == "auto" && k != "experts") continue;  // the checkpoint's own (the default)
      auto d = parse_dtype(v);
      if (!d) {
        dt->fail_value(key, std::string(dtype_choices()) + (k == "experts" ? "" : ", or auto (the checkpoint's own)"));
      } else if (k == "weights") {
        w.weights_dtype = *d;
        w.weights_mxfp4 = v == "mxfp4";
      } else if (k == "kv_cache") {
        w.kv_dtype = *d;
      } else {
        w.expert_dtype = *d;
      }
    }
  }
  if (auto sp = r.object("speculative", false)) {
    sp->reject_unknown({"tokens", "acceptance"});
    w.spec_tokens = static_cast<std::int32_t>(sp->integer("tokens", 0, kMaxSpecTokens));
    w.spec_acceptance = sp->number("acceptance", 0.0, 1.0);
  }
  if (sink.failed()) return *sink.first;
  if (auto e = validate_workload(w, file)) return *e;
  return w;
}

std::vector<std::string> workload_preset_names() {
  std::vector<std::string> out;
  for (const auto& e : embedded_workloads()) out.emplace_back(e.name);
  return out;
}

Expected<Workload> load_workload(const std::string& name_or_path) {
  auto in = preset_or_file(embedded_workloads(), name_or_path, "--workload", "a workload YAML file");
  if (!in) return in.error();
  return parse_workload_yaml(in->text, in->path, in->name);
}

Expected<Workload> apply_overrides(Workload w, const WorkloadOverrides& o, const std::string& origin) {
  // an error names the flag (--isl), or the origin file and its field (workload_overrides.isl)
  const auto err = [&](const char* name, std::string expected, std::string found) {
    if (origin.empty()) return Error{std::string("--") + name, "", std::move(expected), std::move(found)};
    std::string field = std::string("workload_overrides.") + name;
    for (char& ch : field) ch = ch == '-' ? '_' : ch;
    return Error{origin, field, std::move(expected), std::move(found)};
  };
  if (o.mode) {
    auto m = parse_mode(*o.mode);
    if (!m) return err("mode", kModes, "'" + *o.mode + "'");
    // a mode switch drops the lengths the new mode does not use, unless they are given beside it
    if (*m != w.mode) {
      if (*m == Mode::kDecode && !o.isl) w.isl = 0;
      if (*m == Mode::kDecode && !o.osl) w.osl = 0;
      if (*m == Mode::kPrefill && !o.osl) w.osl = 0;
      if (*m != Mode::kDecode && !o.context) w.context = 0;
    }
    w.mode = *m;
  }
  const auto tokens = [&](const char* flag, std::int64_t v) -> std::optional<Error> {
    if (v < 1 || v > kMaxTokens) return err(flag, fmt::format("a token count from 1 to {}", kMaxTokens), std::to_string(v));
    return std::nullopt;
  };
  if (o.isl) {
    if (auto e = tokens("isl", *o.isl)) return *e;
    w.isl = *o.isl;
  }
  if (o.osl) {
    if (auto e = tokens("osl", *o.osl)) return *e;
    w.osl = *o.osl;
  }
  if (o.context) {
    if (auto e = tokens("context", *o.context)) return *e;
    w.context = *o.context;
  }
  if (o.batch) {
    if (*o.batch == "max") {
      w.batch.reset();
    } else if (auto b = parse_batch(*o.batch)) {
      w.batch = *b;
    } else {
      return err("batch", kBatchWant, "'" + *o.batch + "'");
    }
  }
  const auto slo = [&](const char* flag, double v) -> std::optional<Error> {
    if (!(v > 0.0) || v > kMaxSloMs) return err(flag, fmt::format("a positive number of milliseconds up to {}", kMaxSloMs), fmt::format("{}", v));
    return std::nullopt;
  };
  if (o.slo) {
    // "ttft:p99<=2000,tpot:p90<=50": every bound of the workload replaced
    const std::string want = "comma-separated bounds METRIC[:STAT]<=MS, e.g. ttft:p99<=2000,tpot:p90<=50 (METRIC ttft or tpot; STAT "
                             "mean, p50, p90, p95, p99 or p99.9, the mean when left out; MS up to " + fmt::format("{}", kMaxSloMs) + ")";
    w.ttft_ms.reset();
    w.tpot_ms.reset();
    w.ttft_pct.clear();
    w.tpot_pct.clear();
    std::string_view rest = *o.slo;
    if (rest.empty()) return err("slo", want, "'' (nothing)");
    while (true) {
      const auto comma = rest.find(',');
      const std::string_view item = rest.substr(0, comma);
      const auto le = item.find("<=");
      if (le == std::string_view::npos) return err("slo", want, fmt::format("'{}' in '{}'", item, *o.slo));
      const std::string_view lhs = item.substr(0, le);
      const std::string value(item.substr(le + 2));
      const auto colon = lhs.find(':');
      const std::string metric(lhs.substr(0, colon));
      const std::string stat = colon == std::string_view::npos ? "mean" : std::string(lhs.substr(colon + 1));
      const auto pct = detail::parse_slo_stat(stat);
      double ms = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if ((metric != "ttft" && metric != "tpot") || !pct || ec != std::errc() || end != value.data() + value.size() || !(ms > 0.0) ||
          ms > kMaxSloMs) {
        return err("slo", want, fmt::format("'{}' in '{}'", item, *o.slo));
      }
      std::optional<double>& mean = metric == "ttft" ? w.ttft_ms : w.tpot_ms;
      std::vector<SloBound>& pcts = metric == "ttft" ? w.ttft_pct : w.tpot_pct;
      const bool twice = *pct == 0.0 ? mean.has_value()
                                     : std::any_of(pcts.begin(), pcts.end(), [&](const SloBound& b) { return b.pct == *pct; });
      if (twice) return err("slo", "each statistic of a metric bounded once", fmt::format("{} twice in '{}'", lhs, *o.slo));
      if (*pct == 0.0) mean = ms;
      else pcts.push_back(SloBound{*pct, ms});
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    for (auto* v : {&w.ttft_pct, &w.tpot_pct}) {
      std::sort(v->begin(), v->end(), [](const SloBound& a, const SloBound& b) { return a.pct < b.pct; });
    }
  }
  if (o.ttft_ms) {
    if (auto e = slo("ttft-ms", *o.ttft_ms)) return *e;
    w.ttft_ms = *o.ttft_ms;
  }
  if (o.tpot_ms) {
    if (auto e = slo("tpot-ms", *o.tpot_ms)) return *e;
    w.tpot_ms = *o.tpot_ms;
  }
  const std::string auto_choice = std::string(dtype_choices()) + ", or auto (the checkpoint's own)";
  if (o.weights_dtype) {
    auto d = parse_dtype(*o.weights_dtype);
    if (!d && *o.weights_dtype != "auto") return err("weights-dtype", auto_choice, "'" + *o.weights_dtype + "'");
    w.weights_dtype = d;
    w.weights_mxfp4 = *o.weights_dtype == "mxfp4";
  }
  if (o.kv_dtype) {
    auto d = parse_dtype(*o.kv_dtype);
    if (!d && *o.kv_dtype != "auto") return err("kv-dtype", auto_choice, "'" + *o.kv_dtype + "'");
    w.kv_dtype = d;
  }
  if (o.expert_dtype) {
    auto d = parse_dtype(*o.expert_dtype);
    if (!d) return err("expert-dtype", dtype_choices(), "'" + *o.expert_dtype + "'");
    w.expert_dtype = *d;
  }
  if (o.spec_tokens) {
    if (*o.spec_tokens < 0 || *o.spec_tokens > kMaxSpecTokens) {
      return err("spec-tokens", fmt::format("a number of draft tokens from 0 to {}", kMaxSpecTokens), std::to_string(*o.spec_tokens));
    }
    w.spec_tokens = static_cast<std::int32_t>(*o.spec_tokens);
  }
  if (o.spec_tokens && *o.spec_tokens > 0 && !o.spec_acceptance && w.spec_acceptance <= 0.0) {
    w.spec_acceptance = kModelsAcceptance;  // the model's published acceptance, or refused (resolve_speculation)
  }
  if (o.spec_acceptance && w.spec_tokens == 0) {  // it would be ignored: refused rather than silently dropped
    return err("spec-acceptance", "--spec-tokens (the draft tokens per step) beside it", fmt::format("{} with no draft tokens", *o.spec_acceptance));
  }
  if (o.spec_acceptance) {
    if (!(*o.spec_acceptance >= 0.0 && *o.spec_acceptance <= 1.0)) {
      return err("spec-acceptance", "a probability from 0 to 1", fmt::format("{}", *o.spec_acceptance));
    }
    w.spec_acceptance = *o.spec_acceptance;
  }
  // a trace carries its own arrivals and lengths; a distribution its own lengths: a flag
  // that would replace them (silently dropping the trace's) is refused
  if (w.mode == Mode::kServe && w.serve.arrivals.kind == Arrivals::Kind::kTrace) {
    const char* flag = o.isl ? "isl" : o.osl ? "osl" : o.rate ? "rate" : o.concurrency ? "concurrency" : nullptr;
    if (flag) {
      return err(flag, fmt::format("no --{} with a trace workload (the trace {} sets every request's arrival and lengths)", flag, w.serve.trace_file),
                 flag == std::string("rate") ? "'" + *o.rate + "'" : std::to_string(o.isl ? *o.isl : o.osl ? *o.osl : *o.concurrency));
    }
    if (o.requests && *o.requests > static_cast<std::int64_t>(w.serve.trace.size())) {
      return err("requests", fmt::format("at most the trace's {} requests (a trace is replayed once, never extended)", w.serve.trace.size()),
                 std::to_string(*o.requests));
    }
  }
  if (w.mode == Mode::kServe && ((o.isl && w.serve.input) || (o.osl && w.serve.output))) {
    const bool in = o.isl && w.serve.input;
    return err(in ? "isl" : "osl", fmt::format("no --{} beside the workload's lengths.{} (a {} distribution sets the lengths; edit it in the file)",
                                               in ? "isl" : "osl", in ? "input" : "output", to_string((in ? w.serve.input : w.serve.output)->kind)),
               std::to_string(in ? *o.isl : *o.osl));
  }
  if (o.rate || o.concurrency || o.requests || o.seed) {
    if (w.mode != Mode::kServe) {
      const char* flag = o.rate ? "rate" : o.concurrency ? "concurrency" : o.requests ? "requests" : "seed";
      return err(flag, "--mode serve (or a serve workload) beside it", fmt::format("mode {}", to_string(w.mode)));
    }
    if (o.rate && o.concurrency) return err("concurrency", "either --rate or --concurrency, not both", "both");
  }
  if (o.rate) {
    if (*o.rate == "inf") {
      w.serve.arrivals = Arrivals{Arrivals::Kind::kBurst, 0.0, 0};
    } else {
      double r = 0;
      auto [p, ec] = std::from_chars(o.rate->data(), o.rate->data() + o.rate->size(), r);
      // the range the workload file's arrivals.rate takes: below one request in about 12 days
      // the simulated window holds no load worth reporting (and 1e-300 was answered "feasible")
      if (ec != std::errc() || p != o.rate->data() + o.rate->size() || !(r >= 1e-6) || r > 1e7) {
        return err("rate", "a number of requests/s from 1e-6 to 1e7, or inf (all at once)", "'" + *o.rate + "'");
      }
      w.serve.arrivals = Arrivals{Arrivals::Kind::kPoisson, r, 0};
    }
  }
  if (o.concurrency) {
    if (*o.concurrency < 1 || *o.concurrency > kMaxBatch) {
      return err("concurrency", fmt::format("a number of closed-loop users from 1 to {}", kMaxBatch), std::to_string(*o.concurrency));
    }
    w.serve.arrivals = Arrivals{Arrivals::Kind::kClosed, 0.0, *o.concurrency};
  }
  if (o.requests) {
    if (*o.requests < 1 || *o.requests > kMaxRequests) {
      return err("requests", fmt::format("a number of requests from 1 to {}", kMaxRequests), std::to_string(*o.requests));
    }
    w.serve.requests = *o.requests;
  }
  if (o.seed) {
    if (*o.seed < 0 || *o.seed > (std::int64_t{1} << 62)) return err("seed", "a seed from 0 to 4611686018427387904 (2^62)", std::to_string(*o.seed));
    w.serve.seed = static_cast<std::uint64_t>(*o.seed);
  }
  // A mode switch by flag drops the SLO that no longer applies rather than failing.
  if (o.mode && w.mode == Mode::kDecode && !o.ttft_ms) w.ttft_ms.reset(), w.ttft_pct.clear();
  if (o.mode && w.mode == Mode::kPrefill && !o.tpot_ms) w.tpot_ms.reset(), w.tpot_pct.clear();
  if (o.mode && w.mode != Mode::kServe) w.serve = ServeSpec{};
  // a length given for a mode that does not use it is an error of that flag (or field)
  const char* unused = nullptr;
  std::int64_t unused_v = 0;
  if (w.mode == Mode::kDecode && o.isl) unused = "isl", unused_v = *o.isl;
  else if (w.mode == Mode::kDecode && o.osl) unused = "osl", unused_v = *o.osl;
  else if (w.mode == Mode::kPrefill && o.osl) unused = "osl", unused_v = *o.osl;
  else if (w.mode != Mode::kDecode && o.context) unused = "context", unused_v = *o.context;
  if (unused) {
    return err(unused, fmt::format("no {} for a {} workload (decode uses context; prefill isl; offline and serve isl and osl)", unused, to_string(w.mode)),
               std::to_string(unused_v));
  }
  const std::string label = origin.empty() ? "workload '" + w.name + "' after the command-line flags"
                                           : "workload '" + w.name + "' after the workload_overrides of " + origin;
  if (auto e = validate_workload(w, label)) return *e;
  return w;
}

Expected<Workload> resolve_speculation(const ModelSpec& m, Workload w, std::string* note) {
  if (w.spec_tokens <= 0 || w.spec_acceptance != kModelsAcceptance) return w;
  if (m.num_mtp_layers <= 0) {
    return Error{"--spec-acceptance", "",
                 fmt::format("a probability from 0 to 1 beside --spec-tokens (how often a draft is accepted; {} has no MTP modules, "
                             "num_nextn_predict_layers, whose acceptance is published)",
                             m.name),
                 "none"};
  }
  w.spec_acceptance = kMtpAcceptance;
  if (note) {
    *note = fmt::format("--spec-acceptance {:.2f}: {}'s MTP module, as DeepSeek-V3's report measures it (85-90% of second tokens "
                        "accepted; the lower end); give --spec-acceptance to change it",
                        kMtpAcceptance, m.name);
  }
  return w;
}

}  // namespace shardwise
