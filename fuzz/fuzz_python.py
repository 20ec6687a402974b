"""Random keyword arguments through the Python module's argument layer (fuzz/run.sh
fuzz_python): every call either returns a dict (or text) or raises shardwise.Error (bad
input) or TypeError (pybind11's own refusal of a positional argument of the wrong type).
Anything else (another exception, a crash of the interpreter) is a finding.
usage: PYTHONPATH=build/python python3 fuzz/fuzz_python.py SECONDS"""
import random
import sys
import time

import shardwise as sw

VALUES = [None, True, False, 0, 1, -1, 2, 3, 8, 64, 2**31, 2**62, 2**63, 2**64, -2**63, 1.5, 0.0, -0.0, 1e-300, 1e300,
          float("inf"), float("nan"), "", "1", "inf", "nan", "max", "serve", "decode", "offline", "prefill", "vllm", "sglang",
          "trtllm", "0.11", "999", "1e9", "fp8", "bf16", "auto", "x" * 300, "\x1b[31m", "a\nb", [], [1], {}, {"a": 1}, b"1", object()]
KEYS = {
    "describe": ["model", "cluster", "workload", "mode", "isl", "osl", "context", "batch", "rate", "seed", "bogus"],
    "simulate": ["workload", "tp", "pp", "ep", "attn_dp", "replicas", "micro_batches", "redundant_experts", "sharding", "engine",
                 "engine_version", "max_num_tokens", "max_num_seqs", "prefill_instances", "prefill_tp", "two_batch_overlap",
                 "time_limit", "mode", "isl", "osl", "context", "batch", "ttft_ms", "tpot_ms", "weights_dtype", "kv_dtype",
                 "expert_dtype", "spec_tokens", "spec_acceptance", "rate", "concurrency", "requests", "seed", "bogus"],
    "plan": ["workload", "search", "budget", "seed", "threads", "redundant_experts", "engine", "engine_version", "max_num_tokens",
             "max_num_seqs", "target_rate", "top_k", "mode", "isl", "osl", "batch", "rate", "requests", "bogus"],
}


def call(name, rng):
    kw = {k: rng.choice(VALUES) for k in rng.sample(KEYS[name], rng.randint(0, 4))}
    if name == "describe":
        return sw.describe(**kw)
    kw["time_limit"] = 2  # each call bounded: a long run is not a finding
    if name == "simulate":
        if kw.get("mode") != "serve":
            kw.pop("time_limit")
        return sw.simulate("llama-3.1-8b", "h100x8", **kw)
    kw["budget"] = kw["budget"] if isinstance(kw.get("budget"), int) and not isinstance(kw.get("budget"), bool) and 0 < kw["budget"] < 200 else 50
    return sw.plan("llama-3.1-8b", "h100x8", **kw)


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 60
    rng = random.Random(1)
    t0, calls, errors = time.monotonic(), 0, 0
    while time.monotonic() - t0 < secs:
        name = rng.choice(list(KEYS))
        try:
            call(name, rng)
        except (sw.Error, TypeError):
            errors += 1
        except Exception as e:  # a finding
            print(f"FINDING: {name}: {type(e).__name__}: {e}")
            raise
        calls += 1
    print(f"fuzz_python: {calls} executions in {secs:g}s, {errors} refused, 0 findings")


if __name__ == "__main__":
    main()
