#include "check/calibrate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"

namespace shardwise {
namespace {

// The penalty on each scale's log, against the mean squared log error of the metrics: a
// scale of 1.2 costs what a 2.6% RMS error does, so a scale moves only for what the
// results show.
constexpr double kScalePenalty = 0.02;
constexpr double kFailed = 1e3;  // the objective of a point whose simulation served nothing

struct ScaleTerm {
  const char* name;
  double TimeScales::*member;
};
constexpr std::array<ScaleTerm, 4> kScales{{{"gemm", &TimeScales::gemm},
                                            {"experts", &TimeScales::experts},
                                            {"attention", &TimeScales::attention},
                                            {"comm", &TimeScales::comm}}};

double log_error(const CheckRow& r) { return std::log(std::max(r.predicted, 1e-12) / r.measured); }

struct Fitter {
  const SimContext& base;
  const Deployment& d;
  const std::vector<MeasuredRun>& runs;
  Watch* watch = nullptr;
  std::vector<std::size_t> free;  // indices into kScales
  int evaluations = 0;
  bool stopped = false;

  // x[0]: step overhead in ms; x[1 + i]: ln of the i-th free scale (x holds one entry per free scale)
  [[nodiscard]] CostParams params_at(const std::vector<double>& x) const {
    SW_CHECK(x.size() == 1 + free.size(), "calibrate: a point of the fit needs one entry per free term");
    CostParams p = base.params;
    p.step_overhead_us = std::max(0.0, x[0]) * 1e3;
    for (std::size_t i = 0; i < free.size(); ++i) p.scales.*kScales[free[i]].member = std::exp(x[1 + i]);
    return p;
  }
  std::vector<CheckResult> results(const CostParams& p) {
    SimContext c = base;
    c.params = p;
    std::vector<CheckResult> out;
    for (const auto& run : runs) {
      auto r = check_run(c, d, run, watch);
      if (should_stop(watch)) stopped = true;
      out.push_back(r ? std::move(r).value() : CheckResult{});
    }
    return out;
  }
  static double mean_sq(const std::vector<CheckResult>& rs) {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& r : rs) {
      if (!r.simulated) return kFailed;
      for (const auto& row : r.rows) {
        if (!is_fitted_metric(row.metric)) continue;
        sum += log_error(row) * log_error(row);
        ++n;
      }
    }
    return n ? sum / static_cast<double>(n) : 0.0;
  }
  double objective(const std::vector<double>& x) {
    ++evaluations;
    if (watch) watch->progress([&] { return fmt::format("calibrate: evaluation {}", evaluations); });
    double f = mean_sq(results(params_at(x)));
    for (std::size_t i = 1; i < x.size(); ++i) f += kScalePenalty * x[i] * x[i];
    if (x[0] < 0) f += 10.0 * x[0] * x[0];  // the step overhead stays at or above 0
    return f;
  }
};

// Nelder-Mead over `x` (standard coefficients); stops after `max_evals`, when the simplex's
// values agree within 1e-7 or the watch says so.
std::vector<double> nelder_mead(Fitter& f, std::vector<double> x0, const std::vector<double>& step, int max_evals) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> pts(n + 1, x0);
  for (std::size_t i = 0; i < n; ++i) pts[i + 1][i] += step[i];
  std::vector<double> val(n + 1);
  for (std::size_t i = 0; i <= n; ++i) val[i] = f.objective(pts[i]);
  std::vector<std::size_t> order(n + 1);
  while (f.evaluations < max_evals && !f.stopped) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return val[a] < val[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (val[worst] - val[best] < 1e-7) break;
    std::vector<double> centroid(n, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      for (std::size_t i = 0; i < n; ++i) centroid[i] += pts[order[k]][i] / static_cast<double>(n);
    }
    const auto along = [&](double t) {
      std::vector<double> p(n);
      for (std::size_t i = 0; i < n; ++i) p[i] = centroid[i] + t * (pts[worst][i] - centroid[i]);
      return p;
    };
    const std::vector<double> refl = along(-1.0);
    const double fr = f.objective(refl);
    if (fr < val[best]) {
      const std::vector<double> exp = along(-2.0);
      const double fe = f.objective(exp);
      if (fe < fr) {
        pts[worst] = exp;
        val[worst] = fe;
      } else {
        pts[worst] = refl;
        val[worst] = fr;
      }
    } else if (fr < val[second]) {
      pts[worst] = refl;
      val[worst] = fr;
    } else {
      const std::vector<double> con = fr < val[worst] ? along(-0.5) : along(0.5);
      const double fc = f.objective(con);
      if (fc < std::min(fr, val[worst])) {
        pts[worst] = con;
        val[worst] = fc;
      } else {  // shrink towards the best
        for (std::size_t k = 0; k <= n; ++k) {
          if (k == best) continue;
          for (std::size_t i = 0; i < n; ++i) pts[k][i] = pts[best][i] + 0.5 * (pts[k][i] - pts[best][i]);
          val[k] = f.objective(pts[k]);
        }
      }
    }
  }
  const auto it = std::min_element(val.begin(), val.end());
  return pts[static_cast<std::size_t>(it - val.begin())];
}

double rms_of(const std::vector<CheckResult>& rs) {
  const double m = Fitter::mean_sq(rs);
  return m >= kFailed ? NAN : std::sqrt(m);
}

}  // namespace

bool is_fitted_metric(const std::string& m) {
  return m == "ttft_mean_ms" || m == "ttft_p50_ms" || m == "tpot_mean_ms" || m == "tpot_p50_ms" || m == "e2e_mean_ms" ||
         m == "output_throughput";
}

Expected<CalibrateResult> calibrate(const SimContext& ctx, const Deployment& d, const std::vector<MeasuredRun>& runs,
                                    const CalibrateOptions& opt) {
  if (runs.empty()) return Error{"--measured", "", "at least one benchmark result", "none"};
  Fitter f{ctx, d, runs, opt.watch, {}};
  CalibrateResult out;
  // the starting point: every result simulated and compared
  const std::vector<double> x_base(1, ctx.params.step_overhead_us * 1e-3);
  out.before = f.results(f.params_at(x_base));
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!out.before[i].simulated) {
      // bad input (its traffic cannot be read), or a run the deployment cannot serve as planned
      auto r = check_run(ctx, d, runs[i], opt.watch);
      if (!r) return r.error();
      return Error{runs[i].file, "", "a benchmark of traffic the planned deployment serves", r->reason};
    }
    if (std::none_of(out.before[i].rows.begin(), out.before[i].rows.end(), [](const CheckRow& r) { return is_fitted_metric(r.metric); })) {
      return Error{runs[i].file, "", "at least one of TTFT or TPOT (mean or median), E2E mean or output throughput", "none of them"};
    }
  }
  out.rms_before = rms_of(out.before);
  // which scales the results can move: 1.3x changes a fitted metric by 0.5% or more (each probed
  // from the starting point alone: the scales found free so far are not part of x_base)
  const CostParams start = f.params_at(x_base);
  for (std::size_t k = 0; k < kScales.size(); ++k) {
    TermChange t{kScales[k].name, ctx.params.scales.*kScales[k].member, ctx.params.scales.*kScales[k].member, false, ""};
    if (kScales[k].member == &TimeScales::experts && !ctx.model.is_moe()) {
      t.why = "a dense model has no expert GEMMs";
    } else {
      CostParams p = start;
      p.scales.*kScales[k].member *= 1.3;
      const auto moved = f.results(p);
      double most = 0;
      for (std::size_t i = 0; i < moved.size(); ++i) {
        for (std::size_t j = 0; j < moved[i].rows.size() && j < out.before[i].rows.size(); ++j) {
          if (!is_fitted_metric(moved[i].rows[j].metric) || out.before[i].rows[j].predicted <= 0) continue;
          most = std::max(most, std::abs(std::log(std::max(moved[i].rows[j].predicted, 1e-12) / out.before[i].rows[j].predicted)));
        }
      }
      if (most >= 0.005) {
        f.free.push_back(k);
      } else {
        t.why = "the results do not move with it (a 1.3x scale changes no fitted metric by 0.5%)";
      }
    }
    out.terms.push_back(t);
  }
  std::vector<double> x0 = x_base, step{std::max(0.5, 0.5 * x_base[0])};
  for (const std::size_t k : f.free) {
    x0.push_back(std::log(ctx.params.scales.*kScales[k].member));
    step.push_back(0.3);
  }
  // Nelder-Mead restarted from its best point with a fresh simplex (a collapsed simplex
  // stalls on the valley the step overhead and the GEMM scale share) until a restart gains nothing
  std::vector<double> x = nelder_mead(f, x0, step, opt.max_evaluations);
  for (int restart = 0; restart < 4 && f.evaluations < opt.max_evaluations && !f.stopped; ++restart) {
    const double before = f.objective(x);
    for (std::size_t i = 0; i < step.size(); ++i) step[i] = i == 0 ? std::max(0.05, 0.1 * std::abs(x[0])) : 0.05;
    std::vector<double> y = nelder_mead(f, x, step, opt.max_evaluations);
    const double after = f.objective(y);
    if (after < before) x = std::move(y);
    if (before - after < 1e-9) break;
  }
  const CostParams fitted = f.params_at(x);
  out.evaluations = f.evaluations;
  out.stopped = f.stopped;
  out.after = f.results(fitted);
  out.rms_after = rms_of(out.after);
  for (auto& t : out.terms) {
    for (std::size_t i = 0; i < f.free.size(); ++i) {
      if (t.term == kScales[f.free[i]].name) {
        t.fitted = true;
        t.after = fitted.scales.*kScales[f.free[i]].member;
      }
    }
  }
  out.terms.insert(out.terms.begin(), TermChange{"step_overhead_us", ctx.params.step_overhead_us, fitted.step_overhead_us, true, ""});
  CalibrationProfile& pr = out.profile;
  pr.gpu = ctx.cluster.gpu.name;
  pr.engine = ctx.engine.name == "generic" ? "" : ctx.engine.name;
  pr.engine_version = ctx.engine.version;
  pr.model = ctx.model.name;
  pr.tp = d.plan.deg.tp;
  pr.pp = d.plan.deg.pp;
  pr.ep = d.plan.deg.ep;
  pr.attn_dp = d.plan.deg.attn_dp;
  pr.step_overhead_us = fitted.step_overhead_us;
  pr.scales = fitted.scales;
  pr.base_step_overhead_us = ctx.params.step_overhead_us;
  pr.rms_log_error_before = out.rms_before;
  pr.rms_log_error_after = out.rms_after;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Workload& w = out.before[i].workload;
    CalibrationPoint pt;
    pt.file = runs[i].file;
    pt.rate = w.serve.arrivals.kind == Arrivals::Kind::kPoisson ? w.serve.arrivals.rate : 0.0;
    pt.users = w.serve.arrivals.kind == Arrivals::Kind::kClosed ? w.serve.arrivals.concurrency : 0;
    pt.requests = w.serve.requests;
    pt.mean_input = mean_of(*w.serve.input);
    pt.mean_output = mean_of(*w.serve.output);
    pr.points.push_back(pt);
  }
  return out;
}

std::string calibrate_text(const CalibrateResult& r) {
  std::string s = fmt::format("calibrate    {} result{} on {} ({}), {} evaluations{}\n", r.before.size(), r.before.size() == 1 ? "" : "s",
                              r.profile.gpu, r.profile.engine.empty() ? "generic engine" : r.profile.engine, r.evaluations,
                              r.stopped ? " (stopped: the best point so far)" : "");
  s += fmt::format("\n{:<20}{:>12}{:>12}{:>10}\n", "term", "before", "after", "moved");
  for (const auto& t : r.terms) {
    const bool step = t.term == "step_overhead_us";
    const std::string before = step ? fmt::format("{:.1f}", t.before) : fmt::format("{:.3f}", t.before);
    const std::string after = step ? fmt::format("{:.1f}", t.after) : fmt::format("{:.3f}", t.after);
    const std::string label = step ? "step overhead (us)" : fmt::format("{} scale", t.term);
    if (!t.fitted) {
      s += fmt::format("{:<20}{:>12}{:>12}  left: {}\n", label, before, "-", t.why);
      continue;
    }
    const std::string moved = t.before > 0 ? fmt::format("{:+.1f}%", (t.after / t.before - 1.0) * 100.0) : fmt::format("{:+.1f}", t.after - t.before);
    s += fmt::format("{:<20}{:>12}{:>12}{:>10}\n", label, before, after, moved);
  }
  s += fmt::format("\nRMS log error of the fitted metrics (TTFT, TPOT mean and median, E2E mean, output tok/s): {:.3f} -> {:.3f}\n",
                   r.rms_before, r.rms_after);
  for (std::size_t i = 0; i < r.before.size(); ++i) {
    s += fmt::format("{}:", r.before[i].file);
    for (std::size_t j = 0; j < r.before[i].rows.size(); ++j) {
      const CheckRow& b = r.before[i].rows[j];
      if (!is_fitted_metric(b.metric) || j >= r.after[i].rows.size()) continue;
      s += fmt::format(" {} {:+.1f}% -> {:+.1f}%;", b.metric, b.error() * 100.0, r.after[i].rows[j].error() * 100.0);
    }
    s.back() = '\n';
  }
  return s;
}

}  // namespace shardwise
