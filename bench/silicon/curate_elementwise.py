#!/usr/bin/env python3
"""Curates data/silicon/elementwise.csv from ../shared/silicon/op_profiles.csv (vidur's H100 per-operator
profiles, fp16): the two memory-bound kernels between the GEMMs that the cost model had no op for, with
the bytes each moves computed from the model's shape (docs/silicon.md, "Elementwise kernels").

  mlp_act    vLLM's silu_and_mul (sarathi's SiluAndMul): reads gate and up (2 f), writes f  -> 3 f x 2 B per token
  attn_rope  vLLM's rotary_embedding (sarathi's get_rope): q and k in place               -> 2 (n_q + n_kv) d x 2 B per token

f = intermediate / tp, n_q and n_kv the heads on one rank. microsoft/phi-2 is left out (a GELU MLP
without gate, and rotary over 32 of its 80 head dimensions). The time is the profile's median.
usage: curate_elementwise.py [SHARED_DIR] > data/silicon/elementwise.csv
"""
import csv
import sys

# shapes from the models' Hugging Face config.json: heads, kv heads, head dim, intermediate size
SHAPES = {
    "meta-llama/Llama-2-7b-hf": (32, 32, 128, 11008),
    "meta-llama/Llama-2-70b-hf": (64, 8, 128, 28672),
    "codellama/CodeLlama-34b-Instruct-hf": (64, 8, 128, 22016),
    "internlm/internlm-20b": (40, 40, 128, 13824),
    "Qwen/Qwen-72B": (64, 64, 128, 24576),
}


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["silicon", "op", "model", "tokens", "tp", "bytes", "value", "unit", "source_locator"])
    with open(f"{shared}/silicon/op_profiles.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            if r["gpu"] != "H100" or r["model"] not in SHAPES or r["op"] not in ("mlp_act", "attn_rope"):
                continue
            if r["unit"] != "ms" or r["dtype"] != "FP16":
                sys.exit(f"curate_elementwise.py: {r['source_locator']}: expected unit ms and dtype FP16, found {r['unit']} {r['dtype']}")
            nq, nkv, d, inter = SHAPES[r["model"]]
            tokens, tp = int(r["num_tokens"]), int(r["tp"])
            if r["op"] == "mlp_act":
                b = tokens * 3 * (inter // tp) * 2
            else:
                b = tokens * 2 * ((nq + nkv) // tp) * d * 2
            us = float(r["value"]) * 1e3
            out.writerow(["h100", r["op"], r["model"], tokens, tp, b, f"{us:.3f}", "us", r["source_locator"]])


if __name__ == "__main__":
    main()
