// The load of the expert groups of an MoE layer (docs/cost-model.md, "Expert load"): pure
// functions of the routing statistics, shared by the step cost (moe.cpp) and its tests.
#pragma once

namespace shardwise {

// sqrt(2 ln n): the expected maximum of n standard normals, in standard deviations (0 for n <= 1).
double extreme_z(double n);

// ln(1 - k / experts): the log-probability that one token's top-k misses a given expert
// (clamped short of ln 0 when k = experts).
double log_untouched(double k, double experts);

// The terms of the load that do not depend on the tokens, computed once per evaluation.
struct MoeTerms {
  double slots = 1;          // expert slots per EP group: (experts + redundant) / ep
  double excess = 0;         // the busiest group's share over the mean from routing skew (after EPLB)
  double z_ep = 0;           // extreme_z(ep)
  double log_untouched = 0;  // ln(1 - k / experts): an expert missed by one token
  double dedup = 1;          // network share of the all-to-all after per-domain dedup (1: none)
};
// z_experts = extreme_z(experts), log_untouched = ln(1 - k / experts) (model-only: SimContext has them).
MoeTerms moe_terms(double z_experts, double log_untouched, double experts, double redundant, double ep, double skew);
MoeTerms moe_terms(double k, double experts, double redundant, double ep, double skew);

struct ExpertLoad {
  double mean = 0;     // routed token copies per EP group
  double busiest = 0;  // on the busiest group
  double excess = 0;   // MoeTerms::excess
  double touched = 0;  // experts of a group that at least one token picks
};
ExpertLoad expert_load(const MoeTerms& m, double tokens, double k, double ep);
ExpertLoad expert_load(double tokens, double k, double experts, double redundant, double ep, double skew);

// DeepEP's high-throughput kernels send a token once to each remote NVLink domain and fan it
// out there: the copies crossing the network per token fall from k (n - 1) / n to
// (n - 1)(1 - (1 - 1/n)^k) over n domains. Returns that ratio (1 for n <= 1).
double dedup_share(double domains, double k);

}  // namespace shardwise
