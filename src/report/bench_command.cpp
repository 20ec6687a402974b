#include "report/bench_command.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "report/format.hpp"

namespace shardwise {
namespace {

// A length distribution as the tools take it: a centre and a spread (the tool's own
// convention below), and a sentence when the tool cannot draw it.
struct Lengths {
  double mean = 0;         // the distribution's mean
  std::int64_t lo = 0, hi = 0;  // a uniform range ([mean, mean] when fixed)
  double sd = 0;           // the standard deviation (aiperf draws a normal)
  bool uniform_or_fixed = true;
  std::string what;        // "fixed", "uniform in [a, b]", "lognormal ..."
};

Lengths lengths_of(const std::optional<LengthDist>& d, std::int64_t fallback) {
  Lengths l;
  if (!d || d->kind == LengthDist::Kind::kFixed) {
    l.mean = d ? d->mean : static_cast<double>(fallback);
    l.lo = l.hi = std::llround(l.mean);
    l.what = fmt::format("{}", l.lo);
    return l;
  }
  l.mean = mean_of(*d);
  switch (d->kind) {
    case LengthDist::Kind::kUniform:
      l.lo = d->min;
      l.hi = d->max;
      l.sd = static_cast<double>(d->max - d->min) / std::sqrt(12.0);
      l.what = fmt::format("uniform in [{}, {}]", d->min, d->max);
      return l;
    case LengthDist::Kind::kLognormal:
      l.sd = l.mean * std::sqrt(std::exp(d->sigma * d->sigma) - 1.0);
      l.what = fmt::format("lognormal, mean {:.0f}", l.mean);
      break;
    default: {
      double var = 0, w = 0;
      for (const auto& [v, p] : d->bins) {
        var += p * (static_cast<double>(v) - l.mean) * (static_cast<double>(v) - l.mean);
        w += p;
      }
      l.sd = w > 0 ? std::sqrt(var / w) : 0.0;
      l.what = fmt::format("a histogram, mean {:.0f}", l.mean);
    }
  }
  l.uniform_or_fixed = false;
  l.lo = l.hi = std::llround(l.mean);
  return l;
}

std::string number(double v) { return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:.6g}", v); }

}  // namespace

std::int64_t bench_requests(const Workload& w, std::int64_t instances, std::int64_t batch) {
  if (w.serve.requests > 0) return w.serve.requests;
  std::int64_t n = kDefaultRequests;
  if (w.mode == Mode::kServe) {
    const Arrivals& a = w.serve.arrivals;
    if (a.kind == Arrivals::Kind::kPoisson) n = std::max<std::int64_t>(n, std::llround(std::ceil(a.rate * 180.0)));
    if (a.kind == Arrivals::Kind::kClosed) n = std::max<std::int64_t>(n, 10 * a.concurrency);
    if (a.kind == Arrivals::Kind::kTrace) n = static_cast<std::int64_t>(w.serve.trace.size());
  } else {
    n = std::max<std::int64_t>(n, 10 * std::max<std::int64_t>(1, batch) * instances);
  }
  return std::min<std::int64_t>(n, 1'000'000);
}

std::string bench_result_file(ServeEngine e) {
  switch (e) {
    case ServeEngine::kVllm: return "shardwise-bench.json";
    case ServeEngine::kSglang: return "shardwise-bench.jsonl";
    case ServeEngine::kTrtllm: return "shardwise-aiperf/profile_export_aiperf.json";
  }
  return "";
}

std::string bench_text(const SimContext& ctx, ServeEngine e, const BenchTarget& t) {
  const Workload& w = ctx.workload;
  std::vector<std::string> notes;
  const bool serve = w.mode == Mode::kServe;
  // the traffic: a serve workload's own; a closed-form plan's concurrency as closed-loop users
  Arrivals a = serve ? w.serve.arrivals : Arrivals{Arrivals::Kind::kClosed, 0, std::max<std::int64_t>(1, t.batch) * t.instances};
  Lengths in = lengths_of(serve ? w.serve.input : std::nullopt, w.mode == Mode::kDecode ? w.context : w.isl);
  Lengths out = lengths_of(serve ? w.serve.output : std::nullopt, w.mode == Mode::kDecode || w.mode == Mode::kPrefill ? 256 : w.osl);
  if (!serve) {
    notes.push_back(fmt::format("the {} workload has no request traffic: the benchmark runs the plan's concurrency ({} requests in flight) as "
                                "closed-loop users{}",
                                to_string(w.mode), a.concurrency,
                                w.mode == Mode::kOffline ? "" : fmt::format(", {} input and {} output tokens each", in.lo, out.lo)));
  }
  if (a.kind == Arrivals::Kind::kTrace) {
    const double span = w.serve.trace.size() > 1 ? w.serve.trace.back().arrival_s - w.serve.trace.front().arrival_s : 0.0;
    const double rate = span > 0 ? static_cast<double>(w.serve.trace.size() - 1) / span : 0.0;
    notes.push_back(fmt::format("the tools replay no arrival trace: Poisson at the trace's mean rate ({:.3g} req/s) instead", rate));
    a = rate > 0 ? Arrivals{Arrivals::Kind::kPoisson, rate, 0} : Arrivals{Arrivals::Kind::kBurst, 0, 0};
  }
  if ((!in.uniform_or_fixed || !out.uniform_or_fixed) && e != ServeEngine::kTrtllm) {
    notes.push_back(fmt::format("the tool draws uniform lengths: the plan's input ({}) and output ({}) are sent at their means", in.what, out.what));
  }
  const std::int64_t n = bench_requests(w, t.instances, t.batch);
  const std::string url = fmt::format("http://{}:{}", t.host, t.port);
  const std::string result = bench_result_file(e);
  std::vector<std::string> c;
  switch (e) {
    case ServeEngine::kVllm: {
      // vllm/benchmarks/datasets.py RandomDataset: lengths uniform in [L (1 - r), L (1 + r)], r in [0, 1),
      // one r for input and output
      const auto centre = [](const Lengths& l) { return std::llround((static_cast<double>(l.lo) + static_cast<double>(l.hi)) / 2.0); };
      const auto ratio = [](const Lengths& l) { return l.hi > l.lo ? static_cast<double>(l.hi - l.lo) / static_cast<double>(l.hi + l.lo) : 0.0; };
      const double r = std::max(ratio(in), ratio(out));
      if (std::abs(ratio(in) - ratio(out)) > 1e-9) {
        notes.push_back(fmt::format("vLLM draws input and output lengths with one --random-range-ratio: {:.4g} for both (the plan's input "
                                    "is {}, output {})", r, in.what, out.what));
      }
      c = {"vllm", "bench", "serve", "--backend", "vllm", "--base-url", url, "--model", t.model, "--dataset-name", "random",
           "--random-input-len", std::to_string(centre(in)), "--random-output-len", std::to_string(centre(out)),
           "--random-range-ratio", number(std::min(r, 0.999)), "--num-prompts", std::to_string(n)};
      if (a.kind == Arrivals::Kind::kPoisson) c.insert(c.end(), {"--request-rate", number(a.rate), "--burstiness", "1.0"});
      else c.insert(c.end(), {"--request-rate", "inf"});
      if (a.kind == Arrivals::Kind::kClosed) c.insert(c.end(), {"--max-concurrency", std::to_string(a.concurrency)});
      c.insert(c.end(), {"--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,95,99", "--seed",
                         std::to_string(w.serve.seed), "--save-result", "--save-detailed", "--result-filename", result});
      break;
    }
    case ServeEngine::kSglang: {
      // python/sglang/benchmark/datasets/common.py compute_random_lens: uniform in [max(L r, 1), L];
      // random-ids: random token ids (no ShareGPT download); ignore_eos is on by default
      const auto ratio = [](const Lengths& l) { return l.hi > 0 ? static_cast<double>(l.lo) / static_cast<double>(l.hi) : 1.0; };
      const double r = std::min(ratio(in), ratio(out));
      if (std::abs(ratio(in) - ratio(out)) > 1e-9) {
        notes.push_back(fmt::format("SGLang draws input and output lengths with one --random-range-ratio: {:.4g} for both (the plan's "
                                    "input is {}, output {})", r, in.what, out.what));
      }
      c = {"python3", "-m", "sglang.bench_serving", "--backend", "sglang", "--base-url", url, "--model", t.model, "--dataset-name",
           "random-ids", "--random-input-len", std::to_string(in.hi), "--random-output-len", std::to_string(out.hi),
           "--random-range-ratio", number(r), "--num-prompts", std::to_string(n), "--request-rate",
           a.kind == Arrivals::Kind::kPoisson ? number(a.rate) : "inf"};
      if (a.kind == Arrivals::Kind::kClosed) c.insert(c.end(), {"--max-concurrency", std::to_string(a.concurrency)});
      c.insert(c.end(), {"--seed", std::to_string(w.serve.seed), "--output-details", "--output-file", result});
      break;
    }
    case ServeEngine::kTrtllm: {
      // aiperf: lengths normal with a mean and a standard deviation; ignore_eos passed through
      // to the request body; Poisson arrivals by default
      if (!in.uniform_or_fixed || !out.uniform_or_fixed || in.hi > in.lo || out.hi > out.lo) {
        notes.push_back("aiperf draws lengths from a normal distribution: the plan's mean and standard deviation");
      }
      c = {"aiperf", "profile", "--model", t.model, "--url", url, "--endpoint-type", "completions", "--streaming",
           "--isl", std::to_string(std::llround(in.mean)), "--isl-stddev", number(std::round(in.sd * 10) / 10), "--osl",
           std::to_string(std::llround(out.mean)), "--osl-stddev", number(std::round(out.sd * 10) / 10), "--extra-inputs", "ignore_eos:true",
           "--request-count", std::to_string(n)};
      if (a.kind == Arrivals::Kind::kPoisson) c.insert(c.end(), {"--request-rate", number(a.rate), "--request-rate-mode", "poisson"});
      else c.insert(c.end(), {"--concurrency", std::to_string(a.kind == Arrivals::Kind::kClosed ? a.concurrency : n)});
      c.insert(c.end(), {"--random-seed", std::to_string(w.serve.seed), "--artifact-dir", "shardwise-aiperf"});
      break;
    }
  }
  const char* traffic = a.kind == Arrivals::Kind::kPoisson ? "Poisson" : a.kind == Arrivals::Kind::kClosed ? "closed loop" : "all at once";
  std::string s = fmt::format("\n### the benchmark: the planned workload against the server, then shardwise check (docs/check.md)\n"
                              "# {} requests, {}{}; input {}, output {} tokens{}\n",
                              n, traffic,
                              a.kind == Arrivals::Kind::kPoisson ? fmt::format(" at {} req/s", number(a.rate))
                              : a.kind == Arrivals::Kind::kClosed ? fmt::format(" of {} users", a.concurrency)
                                                                  : "",
                              in.what, out.what, " (end-of-sequence ignored: every output as long as planned)");
  s += shell_command(c);
  s += shell_command({"shardwise", "check", "--plan", t.plan_file.empty() ? "<plan.json>" : t.plan_file, "--measured", result});
  for (const auto& note : notes) s += "# note: " + note + "\n";
  return s;
}

}  // namespace shardwise
