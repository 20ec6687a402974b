// shardwise-exec: the MPI worker `shardwise verify` starts with mpirun (docs/exec.md).
//   one case:       shardwise-exec --model M --tp 2 --pp 1 --ep 1 --attn-dp 1 --choices 000000000000 [--micro-batches 0]
//                                  [--seed 1] [--decode-steps 2] [--drop OP:LAYER[:INDEX[:PHASE]]] [--json FILE] [--quiet]
//   property test:  shardwise-exec --property PLANS [--seed S]: PLANS random plans of the search space on this
//                   many ranks over dense GQA, MoE, MLA and sliding-window models, plus the Megatron and the
//                   paper's all-gather plan of each; exit 0 when all pass.
// Rank 0 runs the single-rank reference and compares the logits (max |x - y| / max |y| <= 1e-9) and the
// bytes of every collective with the simulator's breakdown (exact).
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "exec/executor.hpp"
#include "exec/reference.hpp"
#include "model/loader.hpp"
#include "cost/params.hpp"
#include "cost/simulator.hpp"
#include "plan/space.hpp"

namespace sw = shardwise;
namespace ex = shardwise::exec;

namespace {

constexpr double kTolerance = 1e-9;

struct Args {
  std::string model;
  sw::Plan plan;
  std::uint64_t seed = 1;
  std::int32_t decode_steps = 2;
  ex::Fault fault;
  std::string json;
  int property = 0;
  bool quiet = false;
};

[[noreturn]] void usage(const std::string& why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::fprintf(stderr, "shardwise-exec: %s\n", why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

std::int64_t int_arg(const char* flag, const char* v) {
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0') usage(fmt::format("{}: expected an integer, found '{}'", flag, v));
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--quiet") {
      a.quiet = true;
      continue;
    }
    if (i + 1 >= argc) usage(f + " needs a value");
    const char* v = argv[++i];
    if (f == "--model") a.model = v;
    else if (f == "--tp") a.plan.deg.tp = static_cast<std::int32_t>(int_arg("--tp", v));
    else if (f == "--pp") a.plan.deg.pp = static_cast<std::int32_t>(int_arg("--pp", v));
    else if (f == "--ep") a.plan.deg.ep = static_cast<std::int32_t>(int_arg("--ep", v));
    else if (f == "--attn-dp") a.plan.deg.attn_dp = static_cast<std::int32_t>(int_arg("--attn-dp", v));
    else if (f == "--micro-batches") a.plan.micro_batches = static_cast<std::int32_t>(int_arg("--micro-batches", v));
    else if (f == "--seed") a.seed = static_cast<std::uint64_t>(int_arg("--seed", v));
    else if (f == "--decode-steps") a.decode_steps = static_cast<std::int32_t>(int_arg("--decode-steps", v));
    else if (f == "--json") a.json = v;
    else if (f == "--property") a.property = static_cast<int>(int_arg("--property", v));
    else if (f == "--choices") {
      const std::string s = v;
      if (s.size() != sw::kNumSlots) usage(fmt::format("--choices: expected {} digits, one per slot", sw::kNumSlots));
      for (int k = 0; k < sw::kNumSlots; ++k) {
        const int c = s[static_cast<std::size_t>(k)] - '0';
        if (c < 0 || c >= sw::slot_info(k).num_choices) usage(fmt::format("--choices: slot {} has no choice {}", sw::slot_info(k).name, c));
        a.plan.sharding[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(c);
      }
    } else if (f == "--drop") {
      std::string why;
      a.fault = ex::parse_fault(v, &why);
      if (!a.fault.active()) usage("--drop: expected " + why);
    } else {
      usage("unknown flag " + f);
    }
  }
  return a;
}

// Everything rank 0 needs from the others: logits and ledgers.
struct Outcome {
  double max_error = 0;
  std::vector<ex::LedgerRow> rows;
  std::int64_t dropped = 0;  // collectives skipped by the fault, all ranks
  bool bytes_ok = true;
  std::vector<double> weights, weights_expected;  // per rank: bytes of weights held, and the simulator's for its stage
  bool weights_ok = true;
  [[nodiscard]] bool weight_match(std::size_t r) const { return std::abs(weights[r] - weights_expected[r]) <= 1e-9 * weights_expected[r]; }
  [[nodiscard]] bool pass() const { return max_error <= kTolerance && bytes_ok && weights_ok; }
};

std::vector<char> gather_text(const std::string& mine, MPI_Comm comm, int rank, int size) {
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), disp(static_cast<std::size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < size && rank == 0; ++r) {
    disp[static_cast<std::size_t>(r)] = total;
    total += lens[static_cast<std::size_t>(r)];
  }
  std::vector<char> all(static_cast<std::size_t>(std::max(total, 1)));
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), disp.data(), MPI_CHAR, 0, comm);
  all.resize(static_cast<std::size_t>(total));
  return all;
}

// Runs one case on all ranks; rank 0 gets the outcome.
Outcome run_case(const ex::Case& c, const ex::Fault& fault, MPI_Comm verify, int rank, int size) {
  const ex::Weights w = ex::make_weights(c);
  const ex::Inputs in = ex::make_inputs(c);
  MPI_Comm exec_comm = MPI_COMM_NULL;
  MPI_Comm_dup(verify, &exec_comm);
  // each rank computes from the weights the plan gives it (NaN elsewhere)
  double held_bytes = 0;
  const ex::Weights held = ex::held_weights(c, w, rank, &held_bytes);
  ex::RankResult res;
  try {
    res = ex::execute(c, held, in, fault, &exec_comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise-exec: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Comm_free(&exec_comm);
  long long dropped = 0, mine = res.dropped;
  MPI_Reduce(&mine, &dropped, 1, MPI_LONG_LONG, MPI_SUM, 0, verify);
  // logits as text lines "seq step v0 v1 ..." (exact: %.17g), ledgers as their serialisation
  std::string lg;
  for (const auto& [key, v] : res.logits) {
    lg += fmt::format("{} {}", key.first, key.second);
    for (double x : v) lg += fmt::format(" {:.17g}", x);
    lg += '\n';
  }
  const auto all_logits = gather_text(lg, verify, rank, size);
  const auto all_ledgers = gather_text(ex::serialize(res.ledger), verify, rank, size);
  std::vector<double> weights(static_cast<std::size_t>(size));
  MPI_Gather(&held_bytes, 1, MPI_DOUBLE, weights.data(), 1, MPI_DOUBLE, 0, verify);
  Outcome out;
  if (rank != 0) return out;
  out.dropped = dropped;
  {
    const auto stages = sw::stage_weight_bytes(
        sw::make_context(c.model, ex::exec_cluster(size), ex::exec_workload(c, sw::Mode::kDecode), sw::cost_params_for("gb200")), c.plan);
    out.weights = weights;
    for (int r = 0; r < size; ++r) {
      const double want = stages[static_cast<std::size_t>(r / c.plan.deg.stage_width())];
      out.weights_expected.push_back(want);
      out.weights_ok = out.weights_ok && out.weight_match(static_cast<std::size_t>(r));
    }
  }
  ex::Logits got;
  {
    std::string text(all_logits.begin(), all_logits.end());
    std::size_t p = 0;
    while (p < text.size()) {
      const std::size_t e = text.find('\n', p);
      const std::string line = text.substr(p, e - p);
      p = e + 1;
      char* cur = const_cast<char*>(line.c_str());
      const long long seq = std::strtoll(cur, &cur, 10);
      const long step = std::strtol(cur, &cur, 10);
      std::vector<double> v;
      while (*cur != '\0') {
        char* next = nullptr;
        const double x = std::strtod(cur, &next);
        if (next == cur) break;
        v.push_back(x);
        cur = next;
      }
      got[{seq, static_cast<std::int32_t>(step)}] = std::move(v);
    }
  }
  const ex::Logits want = ex::reference_run(c, w, in);
  out.max_error = ex::max_relative_error(got, want);
  const ex::Ledger measured = ex::deserialize_ledger(std::string(all_ledgers.begin(), all_ledgers.end()));
  auto expected = ex::expected_ledger(c);
  if (!expected.ok()) {
    std::fprintf(stderr, "shardwise-exec: %s\n", expected.error().message().c_str());
    out.bytes_ok = false;
    return out;
  }
  out.rows = ex::compare_ledgers(measured, expected.value());
  for (const auto& r : out.rows) out.bytes_ok = out.bytes_ok && r.match();
  return out;
}

std::string plan_label(const sw::Plan& p) {
  return fmt::format("tp {} attn_dp {} pp {} ep {} mb {} [{}]", p.deg.tp, p.deg.attn_dp, p.deg.pp, p.deg.ep, p.micro_batches,
                     sw::sharding_to_string(p.sharding));
}

void print_outcome(const Outcome& o, bool verbose) {
  std::printf("%s: max relative logit error %.3g (limit %.0e), bytes %s, weights held %s\n", o.pass() ? "PASS" : "FAIL", o.max_error,
              kTolerance, o.bytes_ok ? "match the simulator exactly" : "DIFFER from the simulator",
              o.weights_ok ? "match the simulator" : "DIFFER from the simulator");
  for (std::size_t r = 0; r < o.weights.size(); ++r) {
    if (!o.weight_match(r)) {
      std::printf("  rank %zu holds %.0f bytes of weights, the simulator counts %.0f   <-- differs\n", r, o.weights[r], o.weights_expected[r]);
    }
  }
  double total = 0;
  for (const auto& r : o.rows) total += r.expected;
  std::printf("  %zu collectives (phase, layer, op, kind, group), %.0f bytes in all\n", o.rows.size(), total);
  for (const auto& r : o.rows) {
    if (verbose || !r.match()) {
      std::printf("  %-60s measured %12.1f  simulator %12.1f%s\n", ex::to_string(r.key).c_str(), r.measured, r.expected,
                  r.match() ? "" : "   <-- differs");
    }
  }
  if (o.dropped > 0) std::printf("  (the fault skipped %lld collective calls over all ranks)\n", static_cast<long long>(o.dropped));
}

void write_json(const std::string& path, const ex::Case& c, const Outcome& o) {
  nlohmann::json j;
  j["pass"] = o.pass();
  j["max_relative_error"] = std::isfinite(o.max_error) ? nlohmann::json(o.max_error) : nlohmann::json(nullptr);
  j["tolerance"] = kTolerance;
  j["bytes_match"] = o.bytes_ok;
  j["dropped_calls"] = o.dropped;
  j["weights_match"] = o.weights_ok;
  j["weight_bytes_per_rank"] = o.weights;
  j["simulator_weight_bytes_per_rank"] = o.weights_expected;
  j["ranks"] = c.ranks();
  j["scaled"] = ex::describe_case(c);
  auto& rows = j["collectives"] = nlohmann::json::array();
  for (const auto& r : o.rows) {
    rows.push_back({{"phase", sw::to_string(r.key.phase)}, {"layer", r.key.layer}, {"op", r.key.op}, {"kind", sw::to_string(r.key.kind)},
                    {"group", r.key.group}, {"measured_bytes", r.measured}, {"simulator_bytes", r.expected}, {"match", r.match()}});
  }
  std::ofstream f(path);
  f << j.dump(1) << "\n";
}

// The property test: random plans of the search space with this many ranks.
int property(const Args& a, MPI_Comm verify, int rank, int size) {
  const std::vector<std::string> models{"llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b", "mixtral-8x7b", "gpt-moe-1.2t"};
  std::vector<sw::ModelSpec> specs;
  for (const auto& name : models) {
    auto m = sw::load_model(name);
    if (!m.ok()) usage(m.error().message());
    specs.push_back(m.value());
  }
  struct Item {
    std::size_t model;
    sw::Plan plan;
    const char* kind;
  };
  std::vector<Item> items;
  sw::Rng rng(a.seed);
  const sw::ClusterSpec cl = ex::exec_cluster(size);
  // the Megatron and the paper's all-gather plan on each model at tp = size
  for (std::size_t i = 0; i < specs.size(); ++i) {
    for (int k = 0; k < 2; ++k) {
      sw::Plan p;
      p.deg.tp = size;
      p.sharding = k == 0 ? sw::megatron_sharding() : sw::paper_allgather_sharding();
      items.push_back({i, p, k == 0 ? "megatron" : "allgather"});
    }
  }
  int attempts = 0;
  int random = 0;
  while (random < a.property && attempts < 200 * a.property) {
    ++attempts;
    const std::size_t mi = static_cast<std::size_t>(rng.below(specs.size()));
    sw::Workload wl;
    wl.mode = sw::Mode::kDecode;
    wl.context = 8;
    wl.batch = 1;
    const sw::SearchSpace sp = sw::make_space(specs[mi], cl, wl);
    const sw::Action act = sw::random_action(sp.sizes(), rng);
    sw::Plan p = sp.decode(act);
    p.deg.replicas = 1;
    if (p.deg.instance_gpus() != size) continue;
    p.micro_batches = rng.below(3) == 0 ? static_cast<std::int32_t>(1 + rng.below(2)) : 0;
    if (!ex::scale_case(specs[mi], p, a.seed, a.decode_steps).ok()) continue;
    items.push_back({mi, p, "random"});
    ++random;
  }
  int failures = 0, n = 0;
  for (const Item& it : items) {
    auto c = ex::scale_case(specs[it.model], it.plan, a.seed + static_cast<std::uint64_t>(n), a.decode_steps);
    if (!c.ok()) {  // random plans were drawn among scalable ones: only Megatron's and all-gather's can land here
      if (rank == 0) {
        std::printf("FAIL %-14s %-9s %s: cannot be run: %s\n", models[it.model].c_str(), it.kind, plan_label(it.plan).c_str(),
                    c.error().message().c_str());
        ++failures;
      }
      continue;
    }
    const Outcome o = run_case(c.value(), a.fault, verify, rank, size);
    ++n;
    if (rank == 0) {
      if (!o.pass()) ++failures;
      if (!o.pass() || !a.quiet) {
        std::printf("%s %-14s %-9s %s: error %.2g%s%s\n", o.pass() ? "PASS" : "FAIL", models[it.model].c_str(), it.kind,
                    plan_label(c.value().plan).c_str(), o.max_error, o.bytes_ok ? "" : ", bytes differ", o.weights_ok ? "" : ", weights differ");
        if (!o.pass()) print_outcome(o, false);
      }
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("%d ranks: %d plans (%d random of %d drawn, the rest Megatron and all-gather), %d failed\n", size, n, random, attempts, failures);
  }
  int f = failures;
  MPI_Bcast(&f, 1, MPI_INT, 0, verify);
  return f == 0 && random == a.property ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm verify = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &verify);
  const Args a = parse(argc, argv);
  int code = 0;
  if (a.property > 0) {
    code = property(a, verify, rank, size);
  } else {
    if (a.model.empty()) usage("--model is required (or --property N)");
    auto m = sw::load_model(a.model);
    if (!m.ok()) usage(m.error().message());
    if (a.plan.deg.instance_gpus() != size) {
      usage(fmt::format("the plan needs {} ranks (tp x attn_dp x pp) but mpirun started {}", a.plan.deg.instance_gpus(), size));
    }
    auto c = ex::scale_case(m.value(), a.plan, a.seed, a.decode_steps);
    if (!c.ok()) usage(c.error().message());
    const Outcome o = run_case(c.value(), a.fault, verify, rank, size);
    if (rank == 0) {
      if (a.fault.active() && o.dropped == 0) {
        std::printf("--drop %s:%lld (index %d, %s) matched no collective of this plan: nothing was skipped\n", a.fault.op.c_str(),
                    static_cast<long long>(a.fault.layer), a.fault.index,
                    a.fault.phase < 0 ? "both phases" : sw::to_string(static_cast<sw::Phase>(a.fault.phase)));
      }
      if (!a.quiet) std::printf("scaled: %s\n", ex::describe_case(c.value()).c_str());
      print_outcome(o, !a.quiet);
      if (!a.json.empty()) write_json(a.json, c.value(), o);
    }
    // 0 PASS, 1 FAIL, 2 a fault that matched nothing (bad input: it tested nothing)
    code = rank == 0 ? (a.fault.active() && o.dropped == 0 ? 2 : o.pass() ? 0 : 1) : 0;
    MPI_Bcast(&code, 1, MPI_INT, 0, verify);
  }
  MPI_Comm_free(&verify);
  MPI_Finalize();
  return code;
}
