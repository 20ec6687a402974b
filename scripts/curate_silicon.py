#!/usr/bin/env python3
"""Curates the kernel tables the cost model reads (data/silicon/) from the published
measurements in ../shared/silicon/ (see its README for every source and column). Rows are
copied, never edited: each keeps its source locator. Re-run after the shared files change:
    python3 scripts/curate_silicon.py [SHARED_SILICON_DIR]
Also reads the project's own measurements, bench/silicon/results/*/ (written by
bench/silicon/measure.py on a lent GPU, each folder with its meta.json and log).
Also reads data/silicon/published/*.csv: published rows the shared folder lacks (B200 fp4
GEMMs; B200 bf16/fp8 GEMMs at Llama-3.1-8B's shapes; AITER's fused MoE on the MI300X and
MI325X), transcribed in the shared files' columns with their source and locator.
Writes data/silicon/gemm.csv, gemm_carry.csv, gemm_ceiling.csv and grouped_gemm.csv
(docs/silicon.md)."""
import csv
import glob
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "shared", "silicon")
out = os.path.join(here, "..", "data", "silicon")

# the catalog's GPU names for the sources' labels (an H800 is an H100 die at the same
# clocks and HBM, with export-reduced NVLink: its GEMMs carry over, its NVLink does not)
GPU = {"H100": "h100", "H800 SXM5": "h800", "NVIDIA H100 SXM": "h100", "NVIDIA H200 SXM": "h200", "NVIDIA GH200 SXM": "gh200",
       "NVIDIA B200 SXM": "b200", "NVIDIA B300 SXM": "b300", "NVIDIA GB200 SXM": "gb200", "NVIDIA A100 SXM": "a100",
       "AMD MI300X": "mi300x", "AMD MI325X": "mi325x", "AMD MI355X": "mi355x"}
GEMM_OPS = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"}
DEEPGEMM_V3 = "deepseek-ai/DeepGEMM@a9967bc2"  # the last README table (2025-04-09)


def write(name, header, rows):
    tmp = os.path.join(out, name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, os.path.join(out, name))
    print(f"{name}: {len(rows)} rows")


gemm = []
# vidur's H100 per-operator profiles: the four GEMMs of six models at TP 1-8, 1-4096 tokens,
# fp16 (the kernel's min over its profiling steps: the least-disturbed launch)
with open(os.path.join(src, "op_profiles.csv")) as f:
    for r in csv.DictReader(f):
        if r["op"] in GEMM_OPS:
            gemm.append(["h100", "bf16", "cuBLAS (vidur " + r["op"] + ")", r["M"], r["N"], r["K"], r["min_ms"], "ms", r["source_locator"]])
# DeepGEMM's fp8 block-scaled dense GEMMs on H800 (README v3 table): throughput at an exact shape
with open(os.path.join(src, "gemm.csv")) as f:
    rows = list(csv.DictReader(f))
for r in rows:
    if r["source_locator"].startswith(DEEPGEMM_V3) and r["metric"] == "throughput":
        gemm.append(["h800", "fp8", "DeepGEMM fp8 block-scaled", r["M"], r["N"], r["K"], r["value"], "TFLOPS", r["source_locator"]])
# the project's own measurements (bench/silicon/measure.py): every row, pointing at the raw
# file that holds the device, driver, clocks and library versions
measured = sorted(glob.glob(os.path.join(here, "..", "bench", "silicon", "results", "*", "")))


def own_rows(name):
    for d in measured:
        path = os.path.join(d, name)
        if not os.path.exists(path):
            continue
        rel = os.path.relpath(path, os.path.join(here, ".."))
        with open(path) as f:
            for i, r in enumerate(csv.DictReader(f), start=1):
                yield r, f"shardwise {rel} (CSV data row {i})"


for r, loc in own_rows("gemm.csv"):
    gemm.append([r["silicon"], r["dtype"], r["kernel"], r["M"], r["N"], r["K"], r["value"], r["unit"], loc])
# published fp4 GEMMs (MXFP4 and NVFP4 are one tensor-core format here: 4-bit elements, a
# block scale): B200 rows from DeepGEMM's and FlashInfer's pull requests
published = []
for path in sorted(glob.glob(os.path.join(out, "published", "*.csv"))):
    with open(path) as f:
        published += list(csv.DictReader(f))
FP4 = ("MXFP4 x MXFP4", "NVFP4 x NVFP4")
for r in published:
    if r["dtype"] in FP4 and r["gpu"] in GPU and r["metric"] in ("throughput", "time"):
        gemm.append([GPU[r["gpu"]], "fp4", r["library"], r["M"], r["N"], r["K"], r["value"], r["unit"], r["source_locator"]])
write("gemm.csv", ["silicon", "dtype", "kernel", "M", "N", "K", "value", "unit", "source_locator"], gemm)
# published bf16/fp8 GEMMs of a GPU without a table of its own (B200 rows from vLLM's SM100
# pull requests), at shapes the H100's rows hold: they carry the fitted GEMM efficiency and
# the H100's curves to that GPU (the share it reaches there over the H100's) and build no
# curve. Never the H100's: its rows in gemm.csv are the reference every ratio is taken against
carry = []
for r in published:
    dtype = "bf16" if r["dtype"] == "BF16" else "fp8" if r["dtype"].startswith("FP8 e4m3") else None
    if dtype and r["gpu"] in GPU and GPU[r["gpu"]] not in ("h100", "h800") and r["metric"] == "throughput":
        carry.append([GPU[r["gpu"]], dtype, r["library"], r["M"], r["N"], r["K"], r["value"], r["unit"], r["source_locator"]])
write("gemm_carry.csv", ["silicon", "dtype", "kernel", "M", "N", "K", "value", "unit", "source_locator"], carry)

ceiling = []
for r in rows:
    if r["metric"] == "efficiency_vs_spec" and r["gpu"] in GPU:
        dtype = "bf16" if r["dtype"] == "BF16" else "fp8" if r["dtype"].startswith("FP8 e4m3") else None
        if dtype:
            ceiling.append([GPU[r["gpu"]], dtype, r["value"], r["M"], r["N"], r["K"], r["source_locator"]])
# the fp4 ceiling: the best published fp4 throughput of a GPU over its dense fp4 spec (no
# brute-force shape search behind it, unlike MAMF's: a lower bound on the true ceiling)
FP4_SPEC_TFLOPS = {"b200": 9000.0}
best = {}
for r in published:
    g = GPU.get(r["gpu"])
    if r["dtype"] in FP4 and g in FP4_SPEC_TFLOPS and r["metric"] == "throughput" and r["unit"] == "TFLOPS":
        if g not in best or float(r["value"]) > float(best[g]["value"]):
            best[g] = r
for g, r in sorted(best.items()):
    ceiling.append([g, "fp4", f"{100.0 * float(r['value']) / FP4_SPEC_TFLOPS[g]:.1f}", r["M"], r["N"], r["K"], r["source_locator"]])
write("gemm_ceiling.csv", ["gpu", "dtype", "percent_of_spec", "M", "N", "K", "source_locator"], ceiling)

# grouped expert GEMMs: the project's own (bf16 and fp8, contiguous layout, 1-2,048 rows per
# group) and DeepGEMM's fp8 masked (decode) and contiguous (prefill) tables on H800 (README v3)
grouped = []
for r, loc in own_rows("grouped_gemm.csv"):
    grouped.append([r["silicon"], r["dtype"], r["kernel"], r["layout"], r["groups"], r["m_per_group"], r["m_padded"], r["N"], r["K"], r["value"], r["unit"], loc])
# the engines' own MoE kernel (vLLM's and SGLang's Triton fused_moe_kernel), routed layout:
# groups = the experts the routing touched, m_per_group = token copies per touched expert
for r, loc in own_rows("fused_moe.csv"):
    grouped.append([r["silicon"], r["dtype"], r["kernel"], r["layout"], r["groups"], r["m_per_group"], r["m_padded"], r["N"], r["K"], r["value"], r["unit"], loc])
# AMD's engines' MoE kernel (AITER's fused MoE, which vLLM with VLLM_ROCM_USE_AITER and
# SGLang's ROCm builds run), routed layout from the times AITER's tuner measured and ships
# (data/silicon/published/aiter_fmoe.csv): each layer's stage 1 (gate + up, N = 2 x inter_dim,
# K = model_dim) and stage 2 (down, N = model_dim, K = inter_dim) as two rows; the tuner routes
# uniformly at random, so `groups` = E (1 - (1 - topk / E)^tokens) experts touched and
# m_per_group = tokens x topk / groups copies per touched expert
for r in published:
    if r.get("library", "").startswith("AITER fused MoE") and r["gpu"] in GPU and r["metric"] == "time":
        e, k, t = float(r["E"]), float(r["topk"]), float(r["tokens"])
        touched = e * (1.0 - (1.0 - k / e) ** t)
        copies = t * k / touched
        dtype = "fp8" if r["dtype"].startswith("FP8") else "bf16"
        inter, dim = int(r["inter_dim"]), int(r["model_dim"])
        what = f"{r['library']}, {r['tokens']} tokens top-{r['topk']} of {r['E']}, inter {inter}"
        for stage, n, kk, us in (("stage 1 (gate+up)", 2 * inter, dim, r["us1"]), ("stage 2 (down)", dim, inter, r["us2"])):
            grouped.append([GPU[r["gpu"]], dtype, f"{what}, {stage}", "routed", f"{touched:.2f}", f"{copies:.4f}", f"{copies:.4f}", n, kk, us, r["unit"],
                            r["source_locator"]])
with open(os.path.join(src, "grouped_gemm.csv")) as f:
    for r in csv.DictReader(f):
        if r["source_locator"].startswith(DEEPGEMM_V3) and r["metric"] == "throughput":
            layout = "masked" if "masked" in r["op"] else "contiguous"
            grouped.append(["h800", "fp8", "DeepGEMM fp8 block-scaled m-grouped", layout, r["num_groups"], r["m_per_group"], r["m_per_group"], r["N"], r["K"],
                            r["value"], "TFLOPS", r["source_locator"]])
write("grouped_gemm.csv", ["silicon", "dtype", "kernel", "layout", "groups", "m_per_group", "m_padded", "N", "K", "value", "unit", "source_locator"], grouped)
