// The single-rank reference: the scaled model's forward pass in double precision,
// one sequence at a time, with a KV cache (prefill of the prompt, then the decode
// steps). What every plan's SPMD execution must reproduce.
#pragma once
#include "exec/tiny.hpp"

namespace shardwise::exec {

Logits reference_run(const Case& c, const Weights& w, const Inputs& in);

// max |x - y| / max |y| over all logits of all steps; +inf when a key is missing
// or a value is not finite.
double max_relative_error(const Logits& got, const Logits& want);

}  // namespace shardwise::exec
