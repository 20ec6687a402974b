// Fits the efficiency parameters of each GPU silicon on the public measurements and prints
// them as data/calibration/<gpu>.yaml (--write writes them): one set for Hopper (h100, h200:
// the same chip), one for Blackwell (b200, gb200); never per row or model. A100 has one row:
// it keeps the Hopper fit.
// Objective: max(median / 10%, p90 / 30%) + 0.01 x mean, by coordinate descent from the
// defaults, multiplicative steps shrinking until none helps.
//   --loo  also reports leave-one-out error (each row predicted by a fit without it)
//   --lfo  also reports leave-family-out error (fit without the MoE rows, predict them)
//   --lgo  also reports leave-generation-out error (Hopper's fit, carried by the measured
//          share ratios, predicts every Blackwell row: a silicon it never saw)
//   --joint  fits Hopper's every parameter on all its rows at once (for comparison; not written)
//   --with-serve  also fits on the closed-loop rows' output tok/s and mean TPOT (their mean
//            TTFT carries a tail no steady-state model reproduces: docs/serving.md) and prints
//            what that fit does to every figure (for comparison; not written)
//   --kernel-tables  fits with the measured kernel tables on (docs/silicon.md): the GEMMs,
//            the engines' MoE kernel and all-reduce, the elementwise ops and MLA decode
//            attention from their rows, the knobs left for what no table measures (for
//            comparison with the fitted default; never written)
//   --refit-moe  keeps each shipped fit's general parameters and refits only its MoE traits
//            (expert_skew, expert_mem_efficiency) on its silicon's MoE rows: after a change to
//            how MoE layers are priced (--write writes the result)
//   --refit-comm  keeps each shipped fit and refits only its two collective knobs
//            (comm_efficiency, comm_overhead_us) on its silicon's rows, on a silicon where the
//            engines' measured custom all-reduce prices the small all-reduces (--write writes it)
//   --refit-general  the same for every general knob (all but expert_skew and
//            expert_mem_efficiency), from the shipped fit
//   usage: calibrate [--write] [--loo] [--lfo] [--lgo] [--joint] [--with-serve] [--kernel-tables] [--refit-moe]
//          [--refit-comm] [--refit-general] [CSV]
#include <algorithm>
#include <utility>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "cost/allreduce_table.hpp"
#include "cost/silicon.hpp"
#include "hardware/gpu.hpp"
#include "public_rows.hpp"

namespace {
using namespace shardwise;
using namespace shardwise::bench;

struct Silicon {
  const char* name;  // the calibration file's gpu
  const char* label;
  std::vector<std::string> gpus;
  bool dense_first;  // general parameters on its dense rows, then the MoE traits on its MoE rows
};
// Hopper has 19 dense rows and 10 MoE rows: its kernel efficiencies come from the dense rows
// (a joint fit, --joint, lets the MoE rows the model explains worst pull them off: docs/
// cost-model.md), its MoE traits (routing skew, grouped-GEMM bandwidth) from the MoE rows.
// Blackwell has MoE rows only: every parameter on them.
const Silicon kSilicon[] = {{"h100", "Hopper (H100, H200)", {"h100", "h200"}, true},
                            {"b200", "Blackwell (B200, GB200)", {"b200", "gb200"}, false}};

// The MLPerf Inference v5.1 rows (300-323, kFirstHeldOutRow on) came after the fits as their
// out-of-sample check: never fitted (validate_public predicts them; --lgo reads them as
// Blackwell rows)

bool of(const Silicon& s, const PublicRow& r) { return std::find(s.gpus.begin(), s.gpus.end(), r.gpu) != s.gpus.end(); }

struct Score {
  double objective = 0, median = 0, p90 = 0;
};
// kRobust: max(median / 10%, p75 / 20%) + 0.01 x mean, for rows some of which the model does
// not explain (the MoE rows: the p75, not the p90, so that those few cannot pull every
// parameter off). kStrict: max(median / 12%, max / 30%) + 0.01 x mean, for rows the model
// explains one and all (the dense rows: the fit of issue 18).
enum class Objective { kRobust, kStrict };

Score score(const std::vector<const PublicRow*>& rows, const CostParams& p, Objective obj = Objective::kRobust) {
  std::vector<double> e;
  double sum = 0;
  ServeMemo memo;  // --with-serve: a serving row's metric rows share one simulated run
  for (const PublicRow* r : rows) {
    e.push_back(abs_pct_error(predict(*r, p, &memo), r->measured));
    sum += e.back();
  }
  if (e.empty()) return {};
  Score s;
  s.median = quantile(e, 0.5);
  s.p90 = quantile(e, 0.9);
  const double spread = obj == Objective::kStrict ? *std::max_element(e.begin(), e.end()) / 30.0 : quantile(e, 0.75) / 20.0;
  s.objective = std::max(s.median / (obj == Objective::kStrict ? 12.0 : 10.0), spread) + 0.01 * sum / static_cast<double>(e.size());
  return s;
}

struct Knob {
  const char* name;
  double CostParams::*field;
  double lo, hi;
  bool moe = false;  // a mixture-of-experts kernel trait: fitted on MoE rows only
};
// Bounds keep every parameter physical (what the kernels and NCCL are known to reach).
const Knob kKnobs[] = {{"gemm_efficiency", &CostParams::gemm_efficiency, 0.4, 0.8},
                       {"gemm_half_rows", &CostParams::gemm_half_rows, 1.0, 512.0},
                       {"mem_efficiency", &CostParams::mem_efficiency, 0.6, 0.92},
                       {"attn_efficiency", &CostParams::attn_efficiency, 0.2, 0.75},
                       {"kernel_overhead_us", &CostParams::kernel_overhead_us, 1.0, 8.0},
                       {"comm_efficiency", &CostParams::comm_efficiency, 0.4, 0.95},
                       {"comm_overhead_us", &CostParams::comm_overhead_us, 1.0, 50.0},
                       {"attn_mem_efficiency", &CostParams::attn_mem_efficiency, 0.3, 0.92},
                       {"step_overhead_us", &CostParams::step_overhead_us, 0.0, 20000.0},
                       {"expert_skew", &CostParams::expert_skew, 0.1, 1.0, true},
                       {"expert_mem_efficiency", &CostParams::expert_mem_efficiency, 0.3, 0.92, true}};

// kCarried: every knob but gemm_efficiency, which is carried (a silicon fitted from another's fit);
// kComm: the collectives' two knobs alone (--refit-comm)
enum class Knobs { kAll, kGeneral, kMoe, kCarried, kComm };
bool comm_knob(const Knob& k) { return k.field == &CostParams::comm_efficiency || k.field == &CostParams::comm_overhead_us; }

// Coordinate descent from `p` over the knobs of `which`.
CostParams descend(const std::vector<const PublicRow*>& rows, CostParams p, Knobs which, bool verbose,
                   Objective obj = Objective::kRobust) {
  Score best = score(rows, p, obj);
  if (verbose) fmt::print("  start: median {:.1f}% p90 {:.1f}% objective {:.3f}\n", best.median, best.p90, best.objective);
  for (double step : {2.0, 1.4, 1.15, 1.05}) {
    bool improved = true;
    int rounds = 0;
    while (improved && rounds++ < 12) {
      improved = false;
      for (const Knob& k : kKnobs) {
        if ((which == Knobs::kGeneral && k.moe) || (which == Knobs::kMoe && !k.moe)) continue;
        if (which == Knobs::kCarried && k.field == &CostParams::gemm_efficiency) continue;
        if (which == Knobs::kComm && !comm_knob(k)) continue;
        for (double f : {step, 1.0 / step}) {
          CostParams q = p;
          q.*k.field = std::clamp(p.*k.field * f, k.lo, k.hi);
          if (q == p) continue;
          const Score s = score(rows, q, obj);
          if (s.objective < best.objective - 1e-9) {
            best = s;
            p = q;
            improved = true;
          }
        }
      }
    }
    if (verbose) fmt::print("  step {:.2f}: median {:.1f}% p90 {:.1f}% objective {:.3f}\n", step, best.median, best.p90, best.objective);
  }
  return p;
}

CostParams start_params(const std::string& gpu, bool tables) {
  CostParams p;  // the defaults of cost/params.hpp as the starting point
  p.gpu = gpu;
  p.kernel_tables = tables;
  p.calibrated = true;
  p.step_overhead_us = 1000;  // a start inside the range (multiplicative steps cannot leave 0)
  return p;
}

// A silicon's fit. Dense-first (Hopper): the general parameters on the dense rows, then the
// MoE kernel traits on the MoE rows with those held; otherwise every knob on every row.
// `from`: where a single-stage fit starts (Blackwell starts at Hopper's fit: a physical point
// that never saw Blackwell's rows; the defaults otherwise).
// The rows split by family: {dense, MoE}.
std::pair<std::vector<const PublicRow*>, std::vector<const PublicRow*>> by_family(const std::vector<const PublicRow*>& rows) {
  std::pair<std::vector<const PublicRow*>, std::vector<const PublicRow*>> out;
  for (const PublicRow* r : rows) (r->family == "moe" ? out.second : out.first).push_back(r);
  return out;
}

CostParams fit(const std::vector<const PublicRow*>& rows, const std::string& gpu, bool dense_first, bool verbose, bool tables,
               const CostParams* from = nullptr) {
  if (!dense_first) {
    CostParams p = from ? *from : start_params(gpu, tables);
    const bool carried = from && from->gpu != gpu;
    if (carried) {
      // Hopper's GEMM efficiency carried to this silicon as the fitted model carries it to any
      // GPU (its measured share of spec over the fit silicon's, at the engines' shapes where
      // both are measured there), and held: measured, not fitted. No Blackwell row the fit
      // reads is a dense model; its MoE rows would push it to the knob's bound, against the
      // dense GEMMs measured on the B200 (docs/silicon.md, "Carrying GEMM efficiency")
      p.gemm_efficiency *= gemm_profile_for(gpu).fp8.ceiling_ratio / gemm_profile_for(from->gpu).fp8.ceiling_ratio;
    }
    p.gpu = gpu;
    return descend(rows, p, carried ? Knobs::kCarried : Knobs::kAll, verbose);
  }
  const auto [dense, moe] = by_family(rows);
  if (verbose) fmt::print("  general parameters on the {} dense rows:\n", dense.size());
  CostParams p = descend(dense, start_params(gpu, tables), Knobs::kGeneral, verbose, Objective::kStrict);
  p.expert_mem_efficiency = p.mem_efficiency;  // the start of the MoE traits: what dense kernels reach
  if (moe.empty()) return p;
  if (verbose) fmt::print("  MoE kernel traits on the {} MoE rows:\n", moe.size());
  return descend(moe, p, Knobs::kMoe, verbose);
}

std::string yaml_of(const CostParams& p, const Silicon& s, const Score& sc, std::size_t n) {
  return fmt::format(
      "# Efficiency parameters for {}, fitted by bench/calibrate on\n"
      "# ../shared/calibration/public-measurements.csv (see docs/cost-model.md).\n"
      "# Fit: median abs error {:.1f}%, p90 {:.1f}% over the {} rows it was fitted on.\n"
      "gpu: {}\ngemm_efficiency: {:.4f}\ngemm_half_rows: {:.2f}\nmem_efficiency: {:.4f}\nattn_efficiency: {:.4f}\n"
      "kernel_overhead_us: {:.3f}\ncomm_efficiency: {:.4f}\ncomm_overhead_us: {:.2f}\nattn_mem_efficiency: {:.4f}\n"
      "step_overhead_us: {:.1f}\nexpert_skew: {:.4f}\nexpert_mem_efficiency: {:.4f}\n",
      s.label, sc.median, sc.p90, n, s.name, p.gemm_efficiency, p.gemm_half_rows, p.mem_efficiency, p.attn_efficiency,
      p.kernel_overhead_us, p.comm_efficiency, p.comm_overhead_us, p.attn_mem_efficiency, p.step_overhead_us, p.expert_skew,
      p.expert_mem_efficiency);
}

void print_errors(const char* what, const std::vector<std::pair<const PublicRow*, double>>& errs) {
  std::vector<double> all, moe, dense;
  for (const auto& [r, e] : errs) {
    all.push_back(e);
    (r->family == "moe" ? moe : dense).push_back(e);
  }
  fmt::print("{}: all {} rows median {:.1f}% p90 {:.1f}% | dense {} median {:.1f}% | MoE {} median {:.1f}% p90 {:.1f}%\n", what,
             all.size(), quantile(all, 0.5), quantile(all, 0.9), dense.size(), quantile(dense, 0.5), moe.size(), quantile(moe, 0.5),
             quantile(moe, 0.9));
}
}  // namespace

int main(int argc, char** argv) {
  bool write = false, loo = false, lfo = false, lgo = false, joint = false, with_serve = false, tables = false, refit_moe = false,
       refit_comm = false, refit_general = false;
  std::string path = default_csv_path();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--write") == 0) {
      write = true;
    } else if (std::strcmp(argv[i], "--loo") == 0) {
      loo = true;
    } else if (std::strcmp(argv[i], "--lfo") == 0) {
      lfo = true;
    } else if (std::strcmp(argv[i], "--lgo") == 0) {
      lgo = true;
    } else if (std::strcmp(argv[i], "--joint") == 0) {
      joint = true;
    } else if (std::strcmp(argv[i], "--with-serve") == 0) {
      with_serve = true;
    } else if (std::strcmp(argv[i], "--kernel-tables") == 0) {
      tables = true;
    } else if (std::strcmp(argv[i], "--refit-moe") == 0) {
      refit_moe = true;
    } else if (std::strcmp(argv[i], "--refit-comm") == 0) {
      refit_comm = true;
    } else if (std::strcmp(argv[i], "--refit-general") == 0) {
      refit_general = true;
    } else {
      path = argv[i];
    }
  }
  if (write && tables) {
    std::fprintf(stderr, "calibrate: --write with --kernel-tables: the shipped fits are the default model's (fit with the tables for comparison only)\n");
    return 2;
  }
  auto rows = load_public_rows(path);
  if (!rows) {
    std::fprintf(stderr, "calibrate: %s\n", rows.error().message().c_str());
    return 2;
  }
  // the serving rows check the serving simulation; they are never fitted (--with-serve: their
  // output tok/s and TPOT are, for comparison, and every serving row is kept aside to score)
  std::vector<PublicRow> serving;
  for (const auto& r : *rows) {
    if (r.scenario == "serve") serving.push_back(r);
  }
  // --with-serve adds the closed-loop rows' output tok/s and mean TPOT (never a TTFT, nor
  // MLPerf's Poisson rows, whose latencies ride on the capacity)
  std::erase_if(*rows, [&](const PublicRow& r) {
    if (r.scenario != "serve") return false;
    const bool closed = r.workload.serve.arrivals.kind == Arrivals::Kind::kClosed;
    return !(with_serve && closed && (r.metric == RowMetric::kServeOutput || r.metric == RowMetric::kServeTpot));
  });
  const auto rows_of = [&](const Silicon& s) {
    std::vector<const PublicRow*> mine;
    for (const auto& r : *rows) {
      if (of(s, r) && r.id < kFirstHeldOutRow) mine.push_back(&r);
    }
    return mine;
  };
  // --refit-comm / --refit-general: the shipped fit with only those knobs descended on `mine`;
  // refitted only where the engines' measured custom all-reduce entered the step
  const bool refit = refit_comm || refit_general;
  const auto refitted = [&](const std::vector<const PublicRow*>& mine, const Silicon& s, bool verbose) {
    CostParams p = cost_params_for(s.name);
    p.kernel_tables = tables;
    return descend(mine, p, refit_general ? Knobs::kGeneral : Knobs::kComm, verbose);
  };
  const auto refits = [](const Silicon& s) { return custom_allreduce_profile_for(*find_gpu(s.name)).present; };
  CostParams first_fit = start_params("h100", tables);  // Hopper's fit, the start of Blackwell's
  std::vector<std::pair<const Silicon*, CostParams>> fits;
  for (const Silicon& s : kSilicon) {
    const auto mine = rows_of(s);
    fmt::print("{}: {} rows\n", s.label, mine.size());
    // --refit-moe: the shipped fit with only its MoE traits refitted on the silicon's MoE rows
    // (after a change to how MoE layers are priced, the general parameters kept as shipped)
    CostParams p;
    if (refit) {
      // --refit-comm: the shipped fit with only its two collective knobs refitted on the
      // silicon's rows, where the engines' measured custom all-reduce now prices the small
      // all-reduces those knobs had priced with every other collective (a silicon without
      // that table keeps its fit: nothing it prices changed); --refit-general: every general
      // knob (not the MoE traits) so, from the shipped fit
      if (refits(s)) {
        fmt::print("  the {} knobs on the {} rows, from the shipped fit:\n", refit_general ? "general" : "collective", mine.size());
        p = refitted(mine, s, true);
      } else {
        fmt::print("  no custom all-reduce table for {}: the shipped fit\n", s.name);
        p = cost_params_for(s.name);
        p.kernel_tables = tables;
      }
    } else if (refit_moe) {
      const std::vector<const PublicRow*> moe = by_family(mine).second;
      p = cost_params_for(s.name);
      p.kernel_tables = tables;
      fmt::print("  MoE kernel traits on the {} MoE rows, from the shipped fit:\n", moe.size());
      p = descend(moe, p, Knobs::kMoe, true);
    } else {
      p = fit(mine, s.name, s.dense_first && !joint, true, tables, s.dense_first ? nullptr : &first_fit);
    }
    if (s.dense_first) first_fit = p;
    const Score sc = score(mine, p);
    const std::string yaml = yaml_of(p, s, sc, mine.size());
    fmt::print("\n{}\n", yaml);
    if (with_serve) fits.emplace_back(&s, p);
    if (write && !joint && !with_serve) {
      // written whole or not at all: a temporary beside it, renamed over it
      const std::string out = std::string(SHARDWISE_REPO_DIR) + "/data/calibration/" + s.name + ".yaml";
      const std::string tmp = out + ".tmp";
      {
        std::ofstream f(tmp);
        f << yaml;
        f.close();
        if (!f) {
          std::fprintf(stderr, "calibrate: cannot write %s\n", tmp.c_str());
          return 1;
        }
      }
      if (std::rename(tmp.c_str(), out.c_str()) != 0) {
        std::fprintf(stderr, "calibrate: cannot replace %s\n", out.c_str());
        return 1;
      }
      fmt::print("wrote {} (rebuild to embed it)\n\n", out);
    }
  }
  if (with_serve) {
    // every figure of bench/validate_public under this fit
    const auto params_of = [&](const PublicRow& r) {
      for (const auto& [s, p] : fits) {
        if (of(*s, r)) return p;
      }
      return fits.front().second;  // a100: Hopper's, as cost_params_for gives it
    };
    std::vector<std::pair<const PublicRow*, double>> errs;
    std::map<std::string, std::vector<double>> by_metric;
    for (const auto& r : *rows) {
      if (r.scenario != "serve") errs.emplace_back(&r, abs_pct_error(predict(r, params_of(r)), r.measured));
    }
    ServeMemo memo;  // a serving row's metric rows share one simulated run
    for (const auto& r : serving) {
      by_metric[r.label.substr(r.label.rfind(' ') + 1)].push_back(abs_pct_error(predict(r, params_of(r), &memo), r.measured));
    }
    print_errors("\nwith the serving rows fitted, the rows that are not serving", errs);
    for (const auto& [m, e] : by_metric) fmt::print("  serve {:<5} rows {:>3}  median {:.1f}%\n", m, e.size(), quantile(e, 0.5));
  }
  if (loo) {
    // each row predicted by its silicon's fit on the other rows
    std::vector<std::pair<const PublicRow*, double>> errs;
    // with --refit-comm / --refit-general: the refit step alone left out and redone per row,
    // from the shipped fit (whose other knobs saw every row: not an out-of-sample figure for
    // the fit, only for that step), on the silicons it refits
    for (const Silicon& s : kSilicon) {
      if (refit && !refits(s)) {
        fmt::print("  loo: {} keeps its shipped fit (not refitted): no leave-one-out figure\n", s.name);
        continue;
      }
      const auto mine = rows_of(s);
      for (std::size_t i = 0; i < mine.size(); ++i) {
        std::vector<const PublicRow*> others = mine;
        others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
        const CostParams p = refit ? refitted(others, s, false)
                                   : fit(others, s.name, s.dense_first && !joint, false, tables, s.dense_first ? nullptr : &first_fit);
        const double pred = predict(*mine[i], p);
        const double e = abs_pct_error(pred, mine[i]->measured);
        fmt::print("  loo row {:>4} {:<56} {:6.1f}%  ({:+.1f}%)\n", mine[i]->id, mine[i]->label, e,
                   (pred / mine[i]->measured - 1.0) * 100.0);
        std::fflush(stdout);
        errs.emplace_back(mine[i], e);
      }
    }
    print_errors("leave-one-out", errs);
  }
  if (lgo) {
    // Hopper's fit (as written above) on every Blackwell row: the GEMM efficiency carried by
    // the measured share ratios (the B200's shares at the engines' shapes; fp4 GEMMs by its fp4
    // ceiling over its fp8 one times fp8's share), every other term as fitted on Hopper
    std::vector<std::pair<const PublicRow*, double>> errs;
    for (const PublicRow& row : *rows) {
      if (!of(kSilicon[1], row)) continue;  // every Blackwell row, the held-out MLPerf rows too
      const PublicRow* r = &row;
      const double pred = predict(*r, first_fit);
      const double e = abs_pct_error(pred, r->measured);
      fmt::print("  lgo row {:>4} {:<56} {:6.1f}%  ({:+.1f}%)\n", r->id, r->label, e, (pred / r->measured - 1.0) * 100.0);
      errs.emplace_back(r, e);
    }
    print_errors("leave-generation-out (Hopper's fit predicts every Blackwell row)", errs);
  }
  if (lfo) {
    // the general parameters fitted on the dense Hopper rows alone, the MoE traits at their
    // defaults (the grouped GEMMs at the dense kernels' bandwidth): every MoE row predicted
    // by it, Blackwell's too (an unseen silicon and family at once)
    std::vector<const PublicRow*> dense;
    for (const auto& r : *rows) {
      if (r.family == "dense" && of(kSilicon[0], r)) dense.push_back(&r);
    }
    const CostParams p = fit(dense, "h100", true, false, tables);
    std::vector<std::pair<const PublicRow*, double>> errs;
    for (const auto& r : *rows) {
      if (r.family != "moe") continue;
      const double pred = predict(r, p);
      const double e = abs_pct_error(pred, r.measured);
      fmt::print("  lfo row {:>4} {:<56} {:6.1f}%  ({:+.1f}%)\n", r.id, r.label, e, (pred / r.measured - 1.0) * 100.0);
      errs.emplace_back(&r, e);
    }
    print_errors("leave-family-out (fit on the dense Hopper rows, predict every MoE row)", errs);
  }
  return 0;
}
