#!/usr/bin/env python3
"""Curates data/silicon/layer_kernels.csv from the project's measured decode layers
(bench/silicon/results/<folder>/layer*_ops.csv, written by measure_layer.py): the small kernels
a decode layer launches besides the GEMMs, the attention and the kernels the cost model prices
by their own curves (rotary, activation, the routed experts), one row per measured instance at
one token per step (the floor: docs/silicon.md, "A measured decode layer"), and the one-element
kernel a CUDA graph replays (overheads.csv: the floor the transfer to another GPU keeps).

  fused_add_rmsnorm  input_norm, post_norm      residual add + RMSNorm, one kernel
  rmsnorm            q_a_norm, kv_a_norm        MLA's latent norms
  quant_fp8          quant_*                    per-token-group fp8 activation quantisation
  kv_store           kv_store (GQA: k and v)    the step's K and V rows into the cache
  kv_store_latent    kv_store (MLA)             the step's rotated k into the latent cache row
  router_topk        router_topk                the router's top-k after its GEMM
  moe_align          moe_align                  moe_align_block_size
  moe_sum            moe_sum                    the routed outputs' weighted sum
  residual_add       shared_add                 the shared expert's output added

usage: curate_layer_kernels.py RESULTS_DIR [OVERHEADS_CSV] > data/silicon/layer_kernels.csv
"""
import csv
import glob
import os
import sys

CLASS = {"input_norm": "fused_add_rmsnorm", "post_norm": "fused_add_rmsnorm", "q_a_norm": "rmsnorm", "kv_a_norm": "rmsnorm",
         "router_topk": "router_topk", "moe_align": "moe_align", "moe_sum": "moe_sum", "shared_add": "residual_add"}


def kernel_class(op, model):
    if op.startswith("quant_"):
        return "quant_fp8"
    if op == "kv_store":
        return "kv_store_latent" if model.startswith("deepseek") else "kv_store"
    return CLASS.get(op)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    results = sys.argv[1].rstrip("/")
    rows = [["silicon", "kernel", "model", "tokens", "value", "unit", "source_locator"]]
    rel = os.path.relpath(results, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files = sorted(glob.glob(f"{results}/layer*_ops.csv"))
    if not files:
        sys.exit(f"curate_layer_kernels.py: {results}: expected measure_layer.py's layer*_ops.csv files, found none")
    for path in files:
        with open(path, newline="") as fh:
            for n, r in enumerate(csv.DictReader(fh), start=2):
                k = kernel_class(r["op"], r["model"])
                if k is None or r["tokens"] != "1":
                    continue
                if r["unit"] != "us":
                    sys.exit(f"curate_layer_kernels.py: {path} row {n}: expected unit us, found {r['unit']}")
                loc = f"{r['source_locator']}; {rel}/{os.path.basename(path)} row {n} ({r['op']})"
                rows.append([r["silicon"], k, r["model"], 1, r["value"], "us", loc])
    if len(rows) == 1:
        sys.exit(f"curate_layer_kernels.py: {results}: no small kernel measured at one token per step")
    if len(sys.argv) > 2:
        graph = 0
        with open(sys.argv[2], newline="") as fh:
            for n, r in enumerate(csv.DictReader(fh), start=2):
                if r["metric"] == "graph_kernel":
                    loc = f"{r['source_locator']}; {os.path.relpath(sys.argv[2], os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))} row {n}"
                    rows.append([r["silicon"], "graph_kernel", "one-element add", 1, r["value"], "us", loc])
                    graph += 1
        if graph == 0:
            sys.exit(f"curate_layer_kernels.py: {sys.argv[2]}: expected a graph_kernel row (measure.py --only overheads), found none")
    # written only once every row is read: a failure above leaves stdout empty
    csv.writer(sys.stdout, lineterminator="\n").writerows(rows)


if __name__ == "__main__":
    main()
