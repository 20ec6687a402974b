// plan --phases output (docs/phases.md): the best phase plan term by term, beside the best
// static plan and the best disaggregated split of the same GPUs.
#pragma once
#include <string>

#include "search/phases_search.hpp"

namespace shardwise {

// One phase plan's round term by term (simulate --plan on a phase plan).
std::string phase_cost_text(const PhasePlan& p, const PhaseCost& c, double host_bytes_per_gpu);
std::string phases_text(const PhaseSearchResult& r, double host_bytes_per_gpu);
std::string phases_json(const PhaseSearchResult& r, double host_bytes_per_gpu);
// A serve result's JSON (serve_json) with the phase plan it ran: "phases": {prefill, decode,
// buffer_seqs}.
std::string phases_serve_json(const PhasePlan& p, const std::string& serve_json);
// {"found": false, "why_none": ...}
std::string phases_none_json(const std::string& why);
// Why launch cannot start a phase plan, and the nearest runnable plan (one line each).
std::string phases_launch_note();

}  // namespace shardwise
