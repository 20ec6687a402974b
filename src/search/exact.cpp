// The exact optimum of the search space under the simulator.
//
// For fixed degrees, batch and the two norm slots (the hubs), a stage's time,
// weights and KV are sums of independent contributions of six slot groups
// (attention: qkv/attention/o_proj; mlp: ffn1/ffn2; router; experts; embedding;
// lm_head), and activations the maximum over them (cost/simulator.hpp). So 27
// grouped evaluations give every group's table, and all 31,104 shardings are
// scored by additions; the best is re-evaluated by the plain simulator. Batches
// are tried in increasing order and abandoned once no sharding fits memory or
// meets the SLO (both only get worse with more sequences). Then the sharding that won
// at each ladder batch is evaluated at its own largest feasible batch (between ladder
// values), so that no plan's best batch is missed for the ladder's coarseness.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/search.hpp"

namespace shardwise {
namespace {

struct GroupDef {
  int n;                   // options
  std::array<int, 3> slots;
  int nslots;
};
// Groups 1..6 of SlotGroup; option digits are the slots' choices, first slot most significant.
constexpr GroupDef kGroups[kNumSlotGroups] = {
    {1, {0, 0, 0}, 0},
    {27, {static_cast<int>(Slot::kQkv), static_cast<int>(Slot::kAttention), static_cast<int>(Slot::kOProj)}, 3},
    {9, {static_cast<int>(Slot::kFfn1), static_cast<int>(Slot::kFfn2), 0}, 2},
    {2, {static_cast<int>(Slot::kRouter), 0, 0}, 1},
    {4, {static_cast<int>(Slot::kExpertFfn1), static_cast<int>(Slot::kExpertFfn2), 0}, 2},
    {2, {static_cast<int>(Slot::kEmbedding), 0, 0}, 1},
    {2, {static_cast<int>(Slot::kLmHead), 0, 0}, 1},
};

void apply_option(Sharding& s, int g, int o) {
  const GroupDef& d = kGroups[g];
  for (int k = d.nslots - 1; k >= 0; --k) {
    const int slot = d.slots[static_cast<std::size_t>(k)];
    const int n = slot_info(slot).num_choices;
    s[static_cast<std::size_t>(slot)] = static_cast<std::uint8_t>(o % n);
    o /= n;
  }
}

// Every group on a choice that no divisibility rule concerns.
Sharding neutral_sharding() {
  Sharding s{};
  for (int slot = 0; slot < kNumSlots; ++slot) {
    const int none = find_choice(slot, "none");
    s[static_cast<std::size_t>(slot)] = static_cast<std::uint8_t>(none >= 0 ? none : 0);
  }
  s[static_cast<std::size_t>(Slot::kExpertFfn1)] = 1;  // tokens
  s[static_cast<std::size_t>(Slot::kExpertFfn2)] = 1;
  return s;
}

struct Phases {
  bool decode = false, prefill = false;
  bool arrivals = false;  // offline: the TTFT's prefill of the arrivals differs from the chunk
  OfflinePrefill op;      // offline: the chunk and the arrivals (cost/simulator.hpp)
};

struct Tables {
  GroupTables dec[27], pre[27], arr[27];  // evaluation i holds option i % n of every group
};

struct Best {
  double value = 0;
  Plan plan;
  bool found = false;
  std::int64_t evaluations = 0;
  std::vector<Sharding> winners;        // the best sharding at each ladder batch (distinct), refined afterwards
  std::vector<std::int64_t> winner_batch;  // the largest ladder batch at which each won (feasible)
};

// Scores every sharding for one (degrees, batch, hubs); returns the best feasible.
// `any_mem` / `any_slo`: whether some sharding fits memory / meets the SLOs.
// `floor`: the best value already found for these degrees (options that cannot beat it are skipped).
void score(const SimContext& ctx, const Plan& base, const Tables& t, const Phases& ph, const bool valid[kNumSlotGroups][27],
           Best& best, bool& any_mem, bool& any_slo, double floor) {
  const Workload& w = ctx.workload;
  const auto tpot_slo = tightest_slo(w.tpot_ms, w.tpot_pct), ttft_slo = tightest_slo(w.ttft_ms, w.ttft_pct);
  const double tps = tokens_per_step(w);  // output tokens per sequence per decode step (speculative decoding)
  const GroupTables& d0 = t.dec[0];
  const GroupTables& p0 = t.pre[0];
  const GroupTables& ref = ph.decode ? d0 : p0;  // memory and micro-batches come from the main phase
  const int types = ref.stage_types;
  const double gpus = static_cast<double>(base.deg.instance_gpus());
  const double cap = ctx.cluster.gpu.hbm_capacity.value();
  const double tied_extra = tied_lm_head_extra_bytes(ctx, base);
  const double bg = static_cast<double>(ref.seqs_per_group);
  const double b = static_cast<double>(base.batch);
  int o[kNumSlotGroups] = {0};
  const int n1 = kGroups[1].n, n2 = kGroups[2].n, n3 = kGroups[3].n, n4 = kGroups[4].n, n5 = kGroups[5].n, n6 = kGroups[6].n;
  // attention's 27 options, packed: the innermost loop reads these (a few KB) instead of
  // striding through 27 whole tables per phase
  constexpr int ga = kGroupAttention;
  struct AttnOpt {
    double act = 0;
    double td[kMaxStageTypes] = {}, w[kMaxStageTypes] = {}, kv[kMaxStageTypes] = {}, pf[kMaxStageTypes] = {}, ar[kMaxStageTypes] = {};
  };
  AttnOpt att[27];
  for (int a = 0; a < n1; ++a) {
    AttnOpt& x = att[a];
    x.act = std::max(ph.decode ? t.dec[a].act[ga] : 0.0, ph.prefill ? t.pre[a].act[ga] : 0.0);
    for (int st = 0; st < types; ++st) {
      x.td[st] = ph.decode ? t.dec[a].time[st][ga] : 0.0;
      x.w[st] = ph.decode ? t.dec[a].weights[st][ga] : t.pre[a].weights[st][ga];
      x.kv[st] = ph.decode ? t.dec[a].kv_per_seq[st][ga] : t.pre[a].kv_per_seq[st][ga];
    }
    for (int st = 0; ph.prefill && st < p0.stage_types; ++st) x.pf[st] = t.pre[a].time[st][ga];
    for (int st = 0; ph.arrivals && st < t.arr[0].stage_types; ++st) x.ar[st] = t.arr[a].time[st][ga];
  }
  // the smallest of each over the valid options, for the bounds below
  AttnOpt lo;
  bool any_valid = false;
  for (int a = 0; a < n1; ++a) {
    if (!valid[1][a]) continue;
    const AttnOpt& x = att[a];
    for (int st = 0; st < kMaxStageTypes; ++st) {
      lo.td[st] = any_valid ? std::min(lo.td[st], x.td[st]) : x.td[st];
      lo.w[st] = any_valid ? std::min(lo.w[st], x.w[st] + x.kv[st] * bg) : x.w[st] + x.kv[st] * bg;  // weights + KV
      lo.pf[st] = any_valid ? std::min(lo.pf[st], x.pf[st]) : x.pf[st];
    }
    lo.act = any_valid ? std::min(lo.act, x.act) : x.act;
    any_valid = true;
  }
  if (!any_valid) return;
  const double pp = static_cast<double>(base.deg.pp);
  for (o[6] = 0; o[6] < n6; ++o[6]) {
    if (!valid[6][o[6]]) continue;
    for (o[5] = 0; o[5] < n5; ++o[5]) {
      if (!valid[5][o[5]]) continue;
      for (o[4] = 0; o[4] < n4; ++o[4]) {
        if (!valid[4][o[4]]) continue;
        for (o[3] = 0; o[3] < n3; ++o[3]) {
          if (!valid[3][o[3]]) continue;
          for (o[2] = 0; o[2] < n2; ++o[2]) {
            if (!valid[2][o[2]]) continue;
            // every group but attention is fixed here: their sums once, attention's added in the loop
            double base_act = 0;
            double b_td[kMaxStageTypes] = {}, b_w[kMaxStageTypes] = {}, b_kv[kMaxStageTypes] = {};
            double b_pf[kMaxStageTypes] = {}, b_ar[kMaxStageTypes] = {};
            for (int g = 0; g < kNumSlotGroups; ++g) {
              if (g == kGroupAttention) continue;
              base_act = std::max(base_act, std::max(ph.decode ? t.dec[o[g]].act[g] : 0.0, ph.prefill ? t.pre[o[g]].act[g] : 0.0));
              for (int st = 0; st < types; ++st) {
                if (ph.decode) b_td[st] += t.dec[o[g]].time[st][g];
                b_w[st] += ph.decode ? t.dec[o[g]].weights[st][g] : t.pre[o[g]].weights[st][g];
                b_kv[st] += ph.decode ? t.dec[o[g]].kv_per_seq[st][g] : t.pre[o[g]].kv_per_seq[st][g];
              }
              for (int st = 0; ph.prefill && st < p0.stage_types; ++st) b_pf[st] += t.pre[o[g]].time[st][g];
              for (int st = 0; ph.arrivals && st < t.arr[0].stage_types; ++st) b_ar[st] += t.arr[o[g]].time[st][g];
            }
            // embedding=vocab (option 0), lm_head=none (option 1) of a tied head on one stage: the one
            // weight term that couples two groups, so never in the tables (0 when untied or pp > 1)
            if (o[5] == 0 && o[6] == 1) {
              for (int st = 0; st < types; ++st) b_w[st] += tied_extra;
            }
            // bounds over every attention option: no option fits memory, or none can beat the
            // best so far (times only add, the objective falls as they grow): skip them all.
            // Pruned options are counted as fitting and meeting the SLOs, so that the batch
            // loop never stops early on their account.
            {
              double lb_mem = 0, lb_dec = 0, lb_pre = 0;
              for (int st = 0; st < types; ++st) {
                lb_mem = std::max(lb_mem, b_w[st] + b_kv[st] * bg + lo.w[st]);
                if (ph.decode) lb_dec = std::max(lb_dec, b_td[st] + lo.td[st]);
              }
              for (int st = 0; ph.prefill && st < p0.stage_types; ++st) lb_pre = std::max(lb_pre, b_pf[st] + lo.pf[st]);
              lb_mem += 2.0 * std::max(base_act, lo.act) + ref.reserve;
              if (lb_mem > cap) continue;
              double ub = 0;
              if (w.mode == Mode::kDecode) {
                ub = b * tps / (std::max(static_cast<double>(d0.micro_batches), pp) * (lb_dec + d0.overhead_s)) / gpus;
              } else if (w.mode == Mode::kPrefill) {
                ub = b * static_cast<double>(w.isl) / ((static_cast<double>(p0.micro_batches) + pp - 1.0) * (lb_pre + p0.overhead_s)) / gpus;
              } else {
                const double tpot_dec = std::max(static_cast<double>(d0.micro_batches), pp) * (lb_dec + d0.overhead_s) / tps;
                const double round = static_cast<double>(w.osl) * tpot_dec + b * (lb_pre + p0.overhead_s) / static_cast<double>(ph.op.chunk);
                ub = b * static_cast<double>(w.osl) / round / gpus;
              }
              if (ub <= std::max(floor, best.found ? best.value : 0.0) && (best.found || floor > 0)) {
                any_mem = any_slo = true;
                continue;
              }
            }
            for (o[1] = 0; o[1] < n1; ++o[1]) {
              if (!valid[1][o[1]]) continue;
              // stage times and memory: the other groups' sums plus attention's option o[1]
              // (table i holds option i of every group)
              const AttnOpt& x = att[o[1]];
              double dec_stage = 0, pre_stage = 0, mem = 0;
              const double act = std::max(base_act, x.act);
              for (int st = 0; st < types; ++st) {
                dec_stage = std::max(dec_stage, ph.decode ? b_td[st] + x.td[st] : 0.0);
                mem = std::max(mem, b_w[st] + x.w[st] + (b_kv[st] + x.kv[st]) * bg);
              }
              mem += 2.0 * act + ref.reserve;
              if (mem > cap) continue;
              double arr_stage = 0;
              if (ph.prefill) {
                for (int st = 0; st < p0.stage_types; ++st) pre_stage = std::max(pre_stage, b_pf[st] + x.pf[st]);
                for (int st = 0; ph.arrivals && st < t.arr[0].stage_types; ++st) arr_stage = std::max(arr_stage, b_ar[st] + x.ar[st]);
              }
              any_mem = true;
              double value = 0, tpot = 0, ttft = 0;
              if (w.mode == Mode::kDecode) {
                tpot = std::max(static_cast<double>(d0.micro_batches), pp) * (dec_stage + d0.overhead_s) / tps;
                value = b / tpot / gpus;
              } else if (w.mode == Mode::kPrefill) {
                ttft = (static_cast<double>(p0.micro_batches) + pp - 1.0) * (pre_stage + p0.overhead_s);
                value = b * static_cast<double>(w.isl) / ttft / gpus;
              } else {
                const double tpot_dec = std::max(static_cast<double>(d0.micro_batches), pp) * (dec_stage + d0.overhead_s) / tps;
                const double pre_s = pre_stage + p0.overhead_s;
                const double arr_s = ph.arrivals ? arr_stage + t.arr[0].overhead_s : pre_s;
                const OfflineTimes ot = offline_times(w, base.batch, base.deg.pp, ph.op, tpot_dec, pre_s, arr_s, ctx.engine.max_num_tokens);
                tpot = ot.tpot;
                ttft = ot.ttft;
                value = b * static_cast<double>(w.osl) / ot.round / gpus;
              }
              if (tpot_slo && tpot * 1e3 > tpot_slo->ms) continue;
              if (ttft_slo && ttft * 1e3 > ttft_slo->ms) continue;
              any_slo = true;
              if (value > best.value) {
                best.value = value;
                best.found = true;
                best.plan = base;
                for (int g = 1; g < kNumSlotGroups; ++g) apply_option(best.plan.sharding, g, o[g]);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

SearchResult search_exact(const SimContext& ctx, const SearchSpace& space, SearchOptions opt) {
  const double start = now_seconds();
  const Workload& w = ctx.workload;
  const auto ttft_slo = tightest_slo(w.ttft_ms, w.ttft_pct);
  const ModelSpec& m = ctx.model;
  Phases phases;
  phases.decode = w.mode != Mode::kPrefill;
  phases.prefill = w.mode != Mode::kDecode;
  // degree combinations, in a fixed order
  std::vector<Degrees> combos;
  for (auto tp : space.tp)
    for (auto pp : space.pp)
      for (auto ep : space.ep)
        for (auto a : space.attn_dp) {
          Degrees d{tp, pp, ep, a, 1};
          if (d.instance_gpus() > space.cluster_gpus) continue;
          d.replicas = static_cast<std::int32_t>(std::max<std::int64_t>(1, space.cluster_gpus / d.instance_gpus()));
          combos.push_back(d);
        }
  std::vector<Best> results(combos.size());
  ThreadPool pool(std::max(1, opt.threads));
  const bool moe = m.is_moe();
  const bool has_mlp = m.num_dense_layers() > 0 || m.moe.num_shared > 0;
  pool.parallel_for(combos.size(), [&](std::size_t ci) {
    Phases ph = phases;  // per task: the offline prefill below depends on the batch (shared, it was a data race)
    Best& best = results[ci];
    // offline: the prefill chunk stops changing once every group has its budget's worth of
    // sequences, and with it the prefill tables (per hub pair): kept from the last batch
    std::vector<GroupTables> pre_cache(is_stream(w.mode) ? 4 * 27 : 0);
    std::int64_t cached_chunk = -1, next_chunk = -1;
    bool valid[kNumSlotGroups][27] = {};
    bool valid_known = false;
    for (std::size_t bi = 0; bi < space.batch.size(); ++bi) {
      if ((opt.time_limit_s > 0 && now_seconds() - start > opt.time_limit_s) || should_stop(opt.watch)) return;
      Plan base;
      base.deg = combos[ci];
      base.redundant_experts = base.deg.ep > 1 ? space.redundant_experts : 0;
      base.batch = space.batch.size() == 1 ? space.batch[0] : space.batch[bi] * base.deg.attn_dp;
      base.sharding = neutral_sharding();
      if (validate_plan(base, m, ctx.cluster)) break;  // a degree or batch rule: larger batches fail the same way
      // which options of each group break a divisibility rule: the rules of a sharding depend
      // on the degrees, not the batch (whose own rules the base plan just passed): once per combo
      if (bi == 0 || !valid_known) {
        for (int g = 1; g < kNumSlotGroups; ++g) {
          for (int o = 0; o < kGroups[g].n; ++o) {
            Plan p = base;
            apply_option(p.sharding, g, o);
            valid[g][o] = !validate_plan(p, m, ctx.cluster).has_value();
            // slots that do not exist in this model: keep only their first option
            if ((g == kGroupRouter || g == kGroupExperts) && !moe && o > 0) valid[g][o] = false;
            if (g == kGroupMlp && !has_mlp && o > 0) valid[g][o] = false;
          }
        }
        valid_known = true;
      }
      bool any_mem = false, any_slo = false;
      Tables t;
      for (int h1 = 0; h1 < 2; ++h1) {
        for (int h2 = 0; h2 < 2; ++h2) {
          const std::size_t hub = static_cast<std::size_t>(h1 * 2 + h2);
          for (int i = 0; i < 27; ++i) {
            Plan p = base;
            p.sharding[static_cast<std::size_t>(Slot::kAttnNorm)] = static_cast<std::uint8_t>(h1);
            p.sharding[static_cast<std::size_t>(Slot::kFfnNorm)] = static_cast<std::uint8_t>(h2);
            for (int g = 1; g < kNumSlotGroups; ++g) apply_option(p.sharding, g, i % kGroups[g].n);
            if (ph.decode) {
              const std::int64_t seq = w.mode == Mode::kDecode ? w.context : w.isl + w.osl / 2;
              const std::int64_t kv = w.mode == Mode::kDecode ? w.context + 1 : w.isl + w.osl;
              // decode mode's step runs padded to the engine's CUDA-graph sizes, as the simulator prices it
              const DecodeShape sh = w.mode == Mode::kDecode ? graph_decode_shape(ctx.engine, p.deg.attn_dp, p.batch, seq, kv)
                                                            : DecodeShape{p.batch, seq, kv};
              evaluate_grouped(ctx, p, Phase::kDecode, sh.batch, sh.seq, sh.kv_ctx, &t.dec[i]);
              ++best.evaluations;
            }
            if (ph.prefill) {
              Plan pre = p;
              std::int64_t pb = p.batch;
              ph.arrivals = false;
              if (is_stream(w.mode)) {  // as the simulator chunks prefill
                pre.micro_batches = 1;
                ph.op = offline_prefill(w, p.batch, p.deg.attn_dp, ctx.engine.max_num_tokens);
                pb = ph.op.chunk;
                // the arrivals' prefill gives only the TTFT: without a TTFT SLO it decides nothing
                ph.arrivals = ph.op.arrivals != ph.op.chunk && ttft_slo.has_value();
                if (ph.arrivals) {
                  evaluate_grouped(ctx, pre, Phase::kPrefill, ph.op.arrivals, w.isl, w.isl, &t.arr[i]);
                  ++best.evaluations;
                }
              }
              if (is_stream(w.mode) && pb == cached_chunk) {
                t.pre[i] = pre_cache[hub * 27 + static_cast<std::size_t>(i)];
              } else {
                evaluate_grouped(ctx, pre, Phase::kPrefill, pb, w.isl, w.isl, &t.pre[i]);
                ++best.evaluations;
                if (is_stream(w.mode)) pre_cache[hub * 27 + static_cast<std::size_t>(i)] = t.pre[i];
              }
              next_chunk = pb;
            }
          }
          // more kinds of stage than the table holds: score every sharding with the plain simulator
          if ((ph.decode && t.dec[0].stage_types < 1) || (ph.prefill && t.pre[0].stage_types < 1) ||
              (ph.arrivals && t.arr[0].stage_types < 1)) {
            for (std::int64_t code = 0; code < 7776; ++code) {
              Plan q = base;
              q.sharding[static_cast<std::size_t>(Slot::kAttnNorm)] = static_cast<std::uint8_t>(h1);
              q.sharding[static_cast<std::size_t>(Slot::kFfnNorm)] = static_cast<std::uint8_t>(h2);
              std::int64_t rest = code;
              bool ok = true;
              for (int g = 1; g < kNumSlotGroups; ++g) {
                const int o = static_cast<int>(rest % kGroups[g].n);
                rest /= kGroups[g].n;
                ok = ok && valid[g][o];
                apply_option(q.sharding, g, o);
              }
              if (!ok) continue;
              const Metrics mm = evaluate(ctx, q, nullptr, false);
              ++best.evaluations;
              any_mem = any_mem || mm.infeasible != Infeasible::kMemory;
              any_slo = any_slo || mm.feasible();
              if (mm.feasible() && mm.objective > best.value) {
                best.value = mm.objective;
                best.plan = q;
                best.found = true;
              }
            }
            continue;
          }
          Best local;
          score(ctx, [&] {
            Plan q = base;
            q.sharding[static_cast<std::size_t>(Slot::kAttnNorm)] = static_cast<std::uint8_t>(h1);
            q.sharding[static_cast<std::size_t>(Slot::kFfnNorm)] = static_cast<std::uint8_t>(h2);
            return q;
          }(), t, ph, valid, local, any_mem, any_slo, best.found ? best.value : 0.0);
          if (local.found) {
            const auto it = std::find(best.winners.begin(), best.winners.end(), local.plan.sharding);
            if (it == best.winners.end()) {
              best.winners.push_back(local.plan.sharding);
              best.winner_batch.push_back(local.plan.batch);
            } else {
              auto& wb = best.winner_batch[static_cast<std::size_t>(it - best.winners.begin())];
              wb = std::max(wb, local.plan.batch);
            }
          }
          if (local.found && local.value > best.value) {
            best.value = local.value;
            best.plan = local.plan;
            best.found = true;
          }
        }
      }
      cached_chunk = next_chunk;  // every hub pair's prefill tables of this chunk are in the cache now
      if (!any_mem || !any_slo) break;  // more sequences only need more memory and time
    }
  });
  // The ladder is coarse (x1.5 steps): a plan's best batch usually lies between two of its
  // values. The objective grows with the batch up to the limit of memory or an SLO, so each
  // combo's winners are evaluated at their own largest feasible batch (the simulator's
  // "max": doubling, then bisection over multiples of attn_dp), and kept when better.
  if (!w.batch && opt.refine_batch) {
    pool.parallel_for(combos.size(), [&](std::size_t ci) {
      Best& best = results[ci];
      for (std::size_t k = 0; k < best.winners.size(); ++k) {
        if ((opt.time_limit_s > 0 && now_seconds() - start > opt.time_limit_s) || should_stop(opt.watch)) return;
        Plan p;
        p.deg = combos[ci];
        p.redundant_experts = p.deg.ep > 1 ? space.redundant_experts : 0;
        p.batch = 0;
        p.sharding = best.winners[k];
        const Metrics mm = evaluate_max_from(ctx, p, best.winner_batch[k]);
        best.evaluations += 1 + 2 * static_cast<std::int64_t>(std::log2(static_cast<double>(std::max<std::int64_t>(2, mm.batch))));
        if (mm.feasible() && mm.objective > best.value) {
          best.value = mm.objective;
          best.plan = p;
          best.plan.batch = mm.batch;
          best.found = true;
        }
      }
    });
  }
  SearchResult r;
  r.engine = "exact";
  for (std::size_t i = 0; i < results.size(); ++i) {
    r.calls += results[i].evaluations;
    if (results[i].found && results[i].value > r.best_value) {
      r.best_value = results[i].value;
      r.best = results[i].plan;
      r.found = true;
    }
  }
  r.best_call = r.calls;
  if (r.found) {
    // the plain simulator must agree with the decomposition
    const Metrics check = evaluate(ctx, r.best);
    ++r.calls;
    SW_CHECK(check.feasible() && std::fabs(check.objective - r.best_value) <= 1e-9 * r.best_value,
             "exact: the decomposed objective must equal the simulator's");
  }
  if (opt.objective) {
    // another objective (the serving simulation): the decomposition covers the closed form
    // only, so the closed-form optimum is scored as any other plan, and not certified
    r.not_certified =
        "the objective is not the closed-form simulator (it is not a sum over the fused ops' choices that the exact "
        "decomposition can split): this is the closed-form optimum, scored by that objective, not proven optimal for it";
    if (r.found) {
      const Metrics o = opt.objective(r.best);
      ++r.calls;
      r.found = o.feasible();
      r.best_value = o.feasible() ? o.objective : 0.0;
    }
  }
  r.history.push_back({r.calls, r.best_value, r.best_value});
  r.wall_s = now_seconds() - start;
  r.stopped_by_time = (opt.time_limit_s > 0 && r.wall_s > opt.time_limit_s) || (opt.watch && opt.watch->stopped() != StopReason::kNone);
  if (opt.progress) opt.progress(r.calls, r.best_value, r.wall_s);
  return r;
}

}  // namespace shardwise
