#!/usr/bin/env python3
"""Measures the kernels shardwise's cost model reads on the GPU this runs on, and writes rows
in the formats of data/silicon/ (docs/silicon.md), each with its provenance:

    python3 bench/silicon/measure.py --out DIR [--only gemm,grouped,attention,overheads,elementwise]
                                     [--silicon NAME] [--rev GIT_REV] [--quick]

DIR then holds gemm.csv, grouped_gemm.csv, attention.csv, overheads.csv, elementwise.csv and meta.json; pass
it to any command with `--silicon DIR` (the rows of DIR are read beside the built-in ones and
win where both measure the same GPU), or curate it into data/silicon/ with
scripts/curate_silicon.py --measured DIR.

Needs PyTorch with CUDA (or ROCm). Nothing else in shardwise depends on a GPU.

Method (each row): random data, never zeros; the kernel captured N times in a CUDA graph and
the graph replayed 7 times, the row the median of the replays divided by N (what an engine
running CUDA graphs sees: kernel time plus the graph's launch gap); weights rotated among
enough copies that together they exceed three times the L2 cache, so a decode GEMM reads its
weights from HBM as it does inside a model; the first call of each kernel is a warm-up.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

try:
    import torch
except ImportError:  # pragma: no cover - the script's only requirement
    sys.exit("bench/silicon/measure.py: needs PyTorch with a GPU (pip install torch)")

# the catalog's names for what torch.cuda.get_device_name() says (src/hardware/gpu.cpp)
NAMES = [("GB300", "gb300"), ("GB200", "gb200"), ("B300", "b300"), ("B200", "b200"), ("H200", "h200"), ("H100", "h100"),
         ("H800", "h800"), ("H20", "h20"), ("GH200", "gh200"), ("A100", "a100"), ("L40S", "l40s"),
         ("MI355X", "mi355x"), ("MI325X", "mi325x"), ("MI300X", "mi300x")]

# (N, K) of the projections a model runs per rank: Llama-3.1-8B TP1, Llama-3.1-70B TP8 and
# TP4, Llama-3.1-405B TP8, Qwen3-32B TP2, and DeepSeek-V3's dense and attention GEMMs
GEMM_SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
               (1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584),
               (2560, 8192), (8192, 2048), (14336, 8192), (8192, 7168),
               (2304, 16384), (16384, 2048), (13312, 16384), (16384, 6656),
               (10240, 5120), (5120, 12800),
               (2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
GEMM_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]

# (groups = experts per rank, N, K) of MoE expert GEMMs per rank: DeepSeek-V3 at EP8 and
# EP32 (gate+up N=4096, down K=2048), Qwen3-235B at EP8, GPT-OSS-120B at EP4, Qwen3-30B EP1
GROUPED_SHAPES = [(32, 4096, 7168), (32, 7168, 2048), (8, 4096, 7168), (8, 7168, 2048),
                  (16, 3072, 4096), (16, 4096, 1536), (32, 5760, 2880), (32, 2880, 2880),
                  (128, 1536, 2048), (128, 2048, 768)]
GROUPED_M = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]

# attention: (q_heads, kv_heads, head_dim) of Llama-3.1-8B, -70B at TP8, and a TP1 70B
ATTN_HEADS = [(32, 8, 128), (8, 1, 128), (64, 8, 128)]
DECODE_BATCH = [1, 8, 32, 128, 256]
DECODE_KV = [512, 2048, 8192, 32768]
PREFILL_LEN = [512, 1024, 2048, 4096, 8192, 16384]

REPLAYS = 7


def device_facts():
    props = torch.cuda.get_device_properties(0)
    facts = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
             "hip": getattr(torch.version, "hip", None), "sms": props.multi_processor_count,
             "l2_bytes": getattr(props, "L2_cache_size", 50 << 20), "memory_bytes": props.total_memory,
             "host": platform.node(), "date": datetime.date.today().isoformat()}
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        facts["nvidia_smi"] = q.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        facts["nvidia_smi"] = None
    return facts


def silicon_name(device, override):
    if override:
        return override
    for key, name in NAMES:
        if key in device.upper():
            return name
    return device.lower().replace(" ", "-")


def time_graph(fn, copies, target_ms=2.0):
    """Median per-call time in microseconds of fn(i) captured back to back in a CUDA graph."""
    for i in range(2):
        fn(i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(3):
        fn(i)
    end.record()
    torch.cuda.synchronize()
    est_ms = max(start.elapsed_time(end) / 3, 1e-3)
    reps = int(min(max(target_ms / est_ms, 4), 1000))
    reps = max(copies, reps - reps % copies) if reps >= copies else reps
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            fn(i)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / reps)
    del graph
    times.sort()
    return times[len(times) // 2], reps


def rotation(bytes_each, l2):
    return int(min(64, max(1, math.ceil(3 * l2 / max(bytes_each, 1)))))


def fp8_dtype():
    return getattr(torch, "float8_e4m3fnuz" if torch.version.hip else "float8_e4m3fn")


def fp4_supported():
    """Whether torch can run NVFP4 GEMMs here: torch's packed e2m1 dtype and a GPU with fp4
    tensor cores (compute capability 10.x, Blackwell datacenter parts)."""
    if torch.version.hip or not hasattr(torch, "float4_e2m1fn_x2"):
        return False
    return torch.cuda.get_device_capability(0)[0] == 10


def nvfp4_operand(rows, k):
    """A [rows, k] NVFP4 operand for torch._scaled_mm: random packed e2m1 pairs ([rows, k/2]
    bytes; every bit pattern is a finite e2m1 value) and its e4m3 scales, one per 16 elements,
    in cuBLAS's swizzled layout (round_up(rows, 128) x round_up(k / 16, 4), flattened)."""
    x = torch.randint(0, 256, (rows, k // 2), dtype=torch.uint8, device="cuda").view(torch.float4_e2m1fn_x2)
    n_scales = -(-rows // 128) * 128 * (-(-(k // 16) // 4) * 4)
    s = (torch.rand(n_scales, device="cuda") + 0.5).to(torch.float8_e4m3fn)
    return x, s


def measure_gemm(facts, name, locator, quick, log):
    rows = []
    l2 = facts["l2_bytes"]
    shapes = GEMM_SHAPES[:4] if quick else GEMM_SHAPES
    ms = [1, 16, 256, 4096] if quick else GEMM_M
    dtypes = ("bf16", "fp8", "fp4") if fp4_supported() else ("bf16", "fp8")
    if "fp4" not in dtypes:
        log("gemm fp4: not measured (needs torch.float4_e2m1fn_x2 and a GPU of compute capability 10.x)")
    for n, k in shapes:
        for dtype in dtypes:
            wbytes = n * k * {"bf16": 2, "fp8": 1, "fp4": 0.5625}[dtype]
            copies = rotation(wbytes, l2)
            try:
                if dtype == "fp4":
                    w = [nvfp4_operand(n, k) for _ in range(copies)]
                else:
                    w = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
                if dtype == "fp8":
                    w = [x.to(fp8_dtype()) for x in w]
            except torch.OutOfMemoryError:
                log(f"gemm {n}x{k} {dtype}: out of memory for {copies} weight copies, skipped")
                continue
            for m in ms:
                try:
                    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * 0.05 if dtype != "fp4" else None
                    if dtype == "bf16":
                        fn = lambda i, a=a: torch.nn.functional.linear(a, w[i % copies])
                        kernel = "torch linear (cuBLAS)"
                    elif dtype == "fp4":
                        # the activations already in NVFP4 (engines fuse their quantisation into the
                        # kernel before): the GEMM alone, as the other formats' rows
                        a4, sa = nvfp4_operand(m, k)
                        fn = lambda i, a4=a4, sa=sa: torch._scaled_mm(a4, w[i % copies][0].t(), scale_a=sa, scale_b=w[i % copies][1],
                                                                      out_dtype=torch.bfloat16)
                        kernel = "torch._scaled_mm nvfp4 (e2m1, e4m3 scales per 16; cuBLASLt)"
                    else:
                        a8 = a.to(fp8_dtype())
                        sa = torch.rand(m, 1, device="cuda", dtype=torch.float32) + 0.5
                        sb = torch.rand(1, n, device="cuda", dtype=torch.float32) + 0.5
                        fn = lambda i, a8=a8, sa=sa, sb=sb: torch._scaled_mm(a8, w[i % copies].t(), scale_a=sa, scale_b=sb,
                                                                             out_dtype=torch.bfloat16)
                        kernel = "torch._scaled_mm fp8 rowwise scales (cuBLASLt)"
                    us, reps = time_graph(fn, copies)
                except (RuntimeError, torch.OutOfMemoryError, TypeError, ValueError) as err:
                    log(f"gemm M={m} N={n} K={k} {dtype}: {str(err).splitlines()[0][:160]}")
                    continue
                tflops = 2.0 * m * n * k / (us * 1e-6) / 1e12
                rows.append([name, dtype, kernel, m, n, k, f"{us:.3f}", "us", locator])
                log(f"gemm {dtype} M={m:6d} N={n:6d} K={k:6d}: {us:9.2f} us {tflops:7.1f} TFLOP/s ({reps} per graph, {copies} weight copies)")
            del w
            torch.cuda.empty_cache()
    return rows


def measure_grouped(facts, name, locator, quick, log):
    rows = []
    if not hasattr(torch, "_grouped_mm"):
        log("grouped: this PyTorch has no torch._grouped_mm; skipped")
        return rows
    l2 = facts["l2_bytes"]
    shapes = GROUPED_SHAPES[:2] if quick else GROUPED_SHAPES
    ms = [1, 16, 256] if quick else GROUPED_M
    for g, n, k in shapes:
        for dtype in ("bf16", "fp8"):
            align = 8 if dtype == "bf16" else 16
            copies = rotation(g * n * k * (2 if dtype == "bf16" else 1), l2)
            try:
                w = [torch.randn(g, n, k, device="cuda", dtype=torch.bfloat16) * 0.05 for _ in range(copies)]
                if dtype == "fp8":
                    w = [x.to(fp8_dtype()) for x in w]
            except torch.OutOfMemoryError:
                log(f"grouped {g}x{n}x{k} {dtype}: out of memory, skipped")
                continue
            for m in ms:
                padded = (m + align - 1) // align * align
                try:
                    a = torch.randn(g * padded, k, device="cuda", dtype=torch.bfloat16) * 0.05
                    offs = torch.arange(1, g + 1, device="cuda", dtype=torch.int32) * padded
                    if dtype == "bf16":
                        fn = lambda i, a=a, offs=offs: torch._grouped_mm(a, w[i % copies].transpose(-2, -1), offs=offs,
                                                                         out_dtype=torch.bfloat16)
                        kernel = "torch._grouped_mm bf16 (CUTLASS)"
                    else:
                        if not hasattr(torch, "_scaled_grouped_mm"):
                            break
                        a8 = a.to(fp8_dtype())
                        sa = torch.rand(g * padded, device="cuda", dtype=torch.float32) + 0.5
                        sb = torch.rand(g, n, device="cuda", dtype=torch.float32) + 0.5
                        fn = lambda i, a8=a8, sa=sa, sb=sb, offs=offs: torch._scaled_grouped_mm(
                            a8, w[i % copies].transpose(-2, -1), sa, sb, offs=offs, out_dtype=torch.bfloat16)
                        kernel = "torch._scaled_grouped_mm fp8 rowwise (CUTLASS)"
                    us, reps = time_graph(fn, copies)
                except (RuntimeError, torch.OutOfMemoryError, TypeError) as err:
                    log(f"grouped G={g} m={m} N={n} K={k} {dtype}: {str(err).splitlines()[0][:160]}")
                    continue
                rows.append([name, dtype, kernel, "contiguous", g, m, padded, n, k, f"{us:.3f}", "us", locator])
                tflops = 2.0 * g * padded * n * k / (us * 1e-6) / 1e12
                gbs = g * n * k * (2 if dtype == "bf16" else 1) / (us * 1e-6) / 1e9
                log(f"grouped {dtype} G={g:3d} m={m:5d} ({padded:5d}) N={n:5d} K={k:5d}: {us:9.2f} us "
                    f"{tflops:7.1f} TFLOP/s weights {gbs:7.0f} GB/s")
            del w
            torch.cuda.empty_cache()
    return rows


# The engines' own MoE kernel: vLLM's (and SGLang's) Triton fused MoE, which runs every
# tensor-parallel MoE layer in those engines (each rank holds all experts, sliced). (label,
# experts E, N, K of the gate+up GEMM, top-k, formats): the down GEMM is E x hidden x N/2.
FUSED_MOE_SHAPES = [("deepseek-v3 tp8", 256, 512, 7168, 8, ("fp8",)),
                    ("deepseek-v3 tp16", 256, 256, 7168, 8, ("fp8",)),
                    ("deepseek-v3 ep8", 32, 4096, 7168, 8, ("fp8",)),
                    ("qwen3-235b tp8", 128, 384, 4096, 8, ("bf16", "fp8")),
                    ("qwen3-30b tp1", 128, 1536, 2048, 8, ("bf16", "fp8")),
                    ("llama-4-scout tp8", 16, 2048, 5120, 1, ("bf16",)),
                    ("gpt-oss-120b tp1", 128, 5760, 2880, 4, ("bf16",))]
FUSED_MOE_TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
# the configurations tried per shape (BLOCK_M, BLOCK_N, GROUP_M, warps, stages), the best
# kept, as the engines' tuning script picks them (BLOCK_K: 128 for fp8 block scales, 64 bf16)
FUSED_MOE_CONFIGS = [(16, 64, 1, 4, 4), (16, 128, 1, 4, 3), (32, 64, 16, 4, 4), (32, 128, 1, 8, 3),
                     (64, 64, 16, 4, 4), (64, 128, 32, 4, 3), (128, 128, 16, 8, 3), (128, 64, 1, 4, 4)]


def load_fused_moe_kernel(path):
    """vLLM's Triton fused_moe_kernel: from a file (--fused-moe-kernel) or an installed vLLM."""
    import importlib
    import importlib.util
    if path:
        spec = importlib.util.spec_from_file_location("fused_moe_source", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        # the file may say where it was copied from (SOURCE = "owner/repo@commit:path")
        return mod.fused_moe_kernel, getattr(mod, "SOURCE", path)
    for name in ("vllm.model_executor.layers.fused_moe.fused_moe", "sglang.srt.layers.moe.fused_moe_triton.fused_moe"):
        try:
            mod = importlib.import_module(name)
            return mod.fused_moe_kernel, name
        except (ImportError, AttributeError):
            continue
    return None, None


def moe_align(topk_ids, experts, block_m):
    """The engines' moe_align_block_size in torch: token copies sorted by expert, each expert's
    run padded to block_m (pad entries = the number of copies), one expert id per block."""
    flat = topk_ids.flatten().to(torch.int64)
    valid = flat.numel()
    counts = torch.bincount(flat, minlength=experts)
    padded = (counts + block_m - 1) // block_m * block_m
    starts = torch.cumsum(padded, 0) - padded
    cstarts = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)
    by_expert = flat[order]
    pos = torch.arange(valid, device=flat.device) - cstarts[by_expert]
    size = valid + experts * (block_m - 1)
    sorted_ids = torch.full((size,), valid, dtype=torch.int32, device=flat.device)
    sorted_ids[starts[by_expert] + pos] = order.to(torch.int32)
    blocks = (size + block_m - 1) // block_m
    expert_ids = torch.full((blocks,), -1, dtype=torch.int32, device=flat.device)
    per = torch.repeat_interleave(torch.arange(experts, device=flat.device, dtype=torch.int32), padded // block_m)
    expert_ids[:per.numel()] = per
    total = torch.tensor([int(padded.sum())], dtype=torch.int32, device=flat.device)
    return sorted_ids, expert_ids, total


def measure_fused_moe(facts, name, locator, quick, log, kernel_path=None):
    rows = []
    kernel, origin = load_fused_moe_kernel(kernel_path)
    if kernel is None:
        log("fused_moe: no vLLM or SGLang installed and no --fused-moe-kernel FILE given; skipped")
        return rows
    import triton.language as tl
    params = list(getattr(kernel, "arg_names", []))
    l2 = facts["l2_bytes"]
    shapes = FUSED_MOE_SHAPES[:1] if quick else FUSED_MOE_SHAPES
    tokens = [1, 64, 1024] if quick else FUSED_MOE_TOKENS
    sets = 4  # routings rotated so that one replay's experts are not the last one's, in L2

    def launch(a, w, c, a_scale, w_scale, weights, routing, top_k, mul, fp8, cfg, m):
        # m: the rows of a (tokens for the gate+up GEMM, tokens x top-k for the down GEMM,
        # which the engines call with top_k 1), as in the engines' invoke_fused_moe_kernel
        sorted_ids, expert_ids, total = routing
        bm, bn, gm, warps, stages = cfg
        em = sorted_ids.shape[0]
        if m < bm:  # the engines' small-batch shortcut: no more blocks than copies
            em = min(em, m * top_k * bm)
        n, k = w.shape[1], w.shape[2]
        args = dict(a_ptr=a, b_ptr=w, c_ptr=c, a_scale_ptr=a_scale, b_scale_ptr=w_scale, topk_weights_ptr=weights,
                    sorted_token_ids_ptr=sorted_ids, expert_ids_ptr=expert_ids, num_tokens_post_padded_ptr=total,
                    N=n, K=k, EM=em, num_valid_tokens=m * top_k, stride_am=a.stride(0), stride_ak=a.stride(1),
                    stride_be=w.stride(0), stride_bk=w.stride(2), stride_bn=w.stride(1),
                    stride_cm=c.stride(-2), stride_cn=c.stride(-1),
                    stride_asm=a_scale.stride(0) if fp8 else 0, stride_ask=a_scale.stride(1) if fp8 else 0,
                    stride_bse=w_scale.stride(0) if fp8 else 0, stride_bsk=w_scale.stride(2) if fp8 else 0,
                    stride_bsn=w_scale.stride(1) if fp8 else 0,
                    group_n=128 if fp8 else 0, group_k=128 if fp8 else 0,
                    BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=128 if fp8 else 64, GROUP_SIZE_M=gm,
                    MUL_ROUTED_WEIGHT=mul, top_k=top_k, compute_type=tl.bfloat16, use_fp8_w8a8=fp8,
                    use_int8_w8a8=False, use_int8_w8a16=False, per_channel_quant=False)
        missing = [p for p in params if p not in args]
        if missing:
            raise TypeError(f"this fused_moe_kernel takes arguments the script does not know: {missing}")
        grid = (triton_cdiv(em, bm) * triton_cdiv(n, bn),)
        kernel[grid](**{p: args[p] for p in params}, num_warps=warps, num_stages=stages)

    for label, experts, n_up, k_up, top_k, dtypes in shapes:
        for dtype in dtypes:
            fp8 = dtype == "fp8"
            for which, n, k in (("up", n_up, k_up), ("down", k_up, n_up // 2)):
                wbytes = experts * n * k * (1 if fp8 else 2)
                copies = rotation(wbytes, l2)
                try:
                    w = [(torch.randn(experts, n, k, device="cuda", dtype=torch.bfloat16) * 0.05) for _ in range(copies)]
                    if fp8:
                        w = [x.to(fp8_dtype()) for x in w]
                    ws = [torch.rand(experts, triton_cdiv(n, 128), triton_cdiv(k, 128), device="cuda", dtype=torch.float32) + 0.5
                          for _ in range(copies)] if fp8 else [None] * copies
                except torch.OutOfMemoryError:
                    log(f"fused_moe {label} {which} {dtype}: out of memory, skipped")
                    continue
                for m in tokens:
                    topk_ids = [torch.rand(m, experts, device="cuda").topk(top_k, dim=1).indices for _ in range(sets)]
                    touched = sum(int(torch.unique(t).numel()) for t in topk_ids) / sets
                    rows_in = m if which == "up" else m * top_k
                    kk = top_k if which == "up" else 1
                    a = torch.randn(rows_in, k, device="cuda", dtype=torch.bfloat16) * 0.05
                    a_scale = torch.rand(rows_in, triton_cdiv(k, 128), device="cuda", dtype=torch.float32) + 0.5 if fp8 else None
                    if fp8:
                        a = a.to(fp8_dtype())
                    c = torch.empty(m, top_k, n, device="cuda", dtype=torch.bfloat16)
                    weights = torch.rand(m, top_k, device="cuda", dtype=torch.float32)
                    best = None
                    try:
                        for cfg in FUSED_MOE_CONFIGS:
                            if cfg[0] > 16 and cfg[0] > 4 * max(m * top_k / max(touched, 1), 1):
                                continue  # a block of rows many times an expert's share: never the tuned pick
                            routings = [moe_align(t, experts, cfg[0]) for t in topk_ids]
                            fn = (lambda i, cfg=cfg, routings=routings:
                                  launch(a, w[i % copies], c, a_scale, ws[i % copies], weights, routings[i % sets], kk,
                                         which == "down", fp8, cfg, rows_in))
                            us = time_events(fn, max(copies, sets))
                            if best is None or us < best[0]:
                                best = (us, cfg, routings)
                        us_best, cfg, routings = best
                        fn = (lambda i: launch(a, w[i % copies], c, a_scale, ws[i % copies], weights, routings[i % sets], kk,
                                               which == "down", fp8, cfg, rows_in))
                        us, reps = time_graph(fn, max(copies, sets))
                    except (RuntimeError, torch.OutOfMemoryError, TypeError) as err:
                        log(f"fused_moe {label} {which} {dtype} tokens={m}: {str(err).splitlines()[0][:200]}")
                        if isinstance(err, TypeError):
                            return rows
                        continue
                    per = m * top_k / max(touched, 1e-9)
                    kname = (f"vLLM fused_moe_kernel (Triton; {origin}) {'fp8 w8a8 block 128x128' if fp8 else 'bf16'}, "
                             f"{label} {which}, {m} tokens top-{top_k} of {experts}, config M{cfg[0]} N{cfg[1]} G{cfg[2]} "
                             f"w{cfg[3]} s{cfg[4]}")
                    rows.append([name, dtype, kname, "routed", f"{touched:.2f}", f"{per:.4f}", f"{per:.4f}", n, k,
                                 f"{us:.3f}", "us", locator])
                    gbs = touched * n * k * (1 if fp8 else 2) / (us * 1e-6) / 1e9
                    tflops = 2.0 * m * top_k * n * k / (us * 1e-6) / 1e12
                    log(f"fused_moe {dtype} {label:18s} {which:4s} tokens={m:5d} experts hit {touched:6.1f} rows/expert {per:8.2f}: "
                        f"{us:9.2f} us (events {us_best:8.2f}) {tflops:7.1f} TFLOP/s weights {gbs:6.0f} GB/s "
                        f"cfg {cfg}")
                del w, ws
                torch.cuda.empty_cache()
    return rows


def triton_cdiv(a, b):
    return (a + b - 1) // b


def time_events(fn, copies, reps=None):
    """Mean per-call time (us) of fn(i) over a few eager calls: to pick a configuration."""
    for i in range(2):
        fn(i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n = reps or max(2 * copies, 8)
    start.record()
    for i in range(n):
        fn(i)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / n


def sdpa_backends():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return []
    return [(b, sdpa_kernel) for b in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION)]


def run_sdpa(q, k, v, causal):
    """The first SDPA backend that runs this shape, as (name, callable)."""
    for backend, ctx in sdpa_backends():
        def fn(i, backend=backend, ctx=ctx):
            with ctx([backend]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                                        enable_gqa=q.shape[1] != k.shape[1])
        try:
            fn(0)
            torch.cuda.synchronize()
            return backend.name.lower(), fn
        except RuntimeError:
            continue
    return None, None


def flashinfer_decode(b, hq, hkv, d, kv, kv_dtype, l2):
    """FlashInfer's paged decode kernel (vLLM's and SGLang's on Hopper; the engines' kernel, where
    torch SDPA does not share a KV head's reads among its query heads) on `b` sequences of `kv`
    tokens in pages of 16, as (kernel name, fn(i)); (None, None) where FlashInfer is not installed."""
    try:
        import flashinfer
    except ImportError:
        return None, None, 1
    page = 16
    pages_per_seq = (kv + page - 1) // page
    # enough copies of the cache that together they exceed three times the L2 (each call then reads
    # its KV from HBM, as each layer does inside a model), as the GEMMs rotate their weights
    cache_bytes = b * pages_per_seq * 2 * hkv * page * d * (1 if kv_dtype != torch.bfloat16 else 2)
    copies = rotation(cache_bytes, l2)
    caches = [torch.randn(b * pages_per_seq, 2, hkv, page, d, device="cuda", dtype=torch.bfloat16).to(kv_dtype) for _ in range(copies)]
    indptr = torch.arange(0, b + 1, device="cuda", dtype=torch.int32) * pages_per_seq
    indices = torch.arange(0, b * pages_per_seq, device="cuda", dtype=torch.int32)
    last = torch.full((b,), kv - (pages_per_seq - 1) * page, device="cuda", dtype=torch.int32)
    workspace = torch.empty(128 << 20, device="cuda", dtype=torch.uint8)
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "HND", use_tensor_cores=hq // hkv > 4)
    wrapper.plan(indptr, indices, last, hq, hkv, d, page, pos_encoding_mode="NONE", q_data_type=torch.bfloat16, kv_data_type=kv_dtype)
    q = torch.randn(b, hq, d, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(q)

    def fn(i):
        return wrapper.run(q, caches[i % copies], out=out)
    fn(0)
    torch.cuda.synchronize()
    return f"FlashInfer BatchDecodeWithPagedKVCacheWrapper {getattr(flashinfer, '__version__', '?')} (HND, page 16)", fn, copies


def measure_attention(facts, name, locator, quick, log):
    rows = []
    heads = ATTN_HEADS[:1] if quick else ATTN_HEADS
    # decode: FlashInfer's paged kernel where installed (bf16 and fp8 KV), else torch SDPA (bf16)
    fi_formats = [("bf16", torch.bfloat16)] + ([] if torch.version.hip else [("fp8", fp8_dtype())])
    for hq, hkv, d in heads:
        for b in ([1, 32] if quick else DECODE_BATCH):
            for kv in ([2048] if quick else DECODE_KV):
                if b * kv > (1 << 21):
                    continue
                done = False
                for fmt, kv_dtype in fi_formats:
                    try:
                        kernel, fn, copies = flashinfer_decode(b, hq, hkv, d, kv, kv_dtype, facts["l2_bytes"])
                        if fn is None:
                            break
                        try:
                            us, _ = time_graph(fn, copies)
                        except RuntimeError:  # a wrapper not planned for graph capture: eager, named so
                            us = time_events(fn, copies)
                            kernel += " (eager, CUDA events)"
                    except (RuntimeError, TypeError, ValueError, torch.OutOfMemoryError) as err:
                        log(f"attention decode flashinfer {fmt} b={b} kv={kv}: {str(err).splitlines()[0][:160]}")
                        continue
                    gbs = 2 * b * hkv * kv * d * (1 if fmt == "fp8" else 2) / (us * 1e-6) / 1e9
                    rows.append([name, fmt, kernel, "decode", b, hq, hkv, d, 1, kv, 0, f"{us:.3f}", "us", locator])
                    log(f"attention decode H={hq}/{hkv}x{d} b={b:4d} kv={kv:6d} {fmt}: {us:9.2f} us, KV {gbs:6.0f} GB/s ({kernel})")
                    done = True
                    torch.cuda.empty_cache()
                if done:
                    continue
                try:
                    q = torch.randn(b, hq, 1, d, device="cuda", dtype=torch.bfloat16)
                    kk = torch.randn(b, hkv, kv, d, device="cuda", dtype=torch.bfloat16)
                    vv = torch.randn(b, hkv, kv, d, device="cuda", dtype=torch.bfloat16)
                    backend, fn = run_sdpa(q, kk, vv, False)
                    if fn is None:
                        log(f"attention decode b={b} kv={kv}: no SDPA backend runs it")
                        continue
                    us, _ = time_graph(fn, 1)
                except (RuntimeError, torch.OutOfMemoryError) as err:
                    log(f"attention decode b={b} kv={kv}: {str(err).splitlines()[0][:160]}")
                    continue
                gbs = 2 * b * hkv * kv * d * 2 / (us * 1e-6) / 1e9
                rows.append([name, "bf16", f"torch SDPA ({backend})", "decode", b, hq, hkv, d, 1, kv, 0, f"{us:.3f}", "us", locator])
                log(f"attention decode H={hq}/{hkv}x{d} b={b:4d} kv={kv:6d}: {us:9.2f} us, KV {gbs:6.0f} GB/s ({backend})")
                del q, kk, vv
        for n in ([2048] if quick else PREFILL_LEN):
            try:
                q = torch.randn(1, hq, n, d, device="cuda", dtype=torch.bfloat16)
                kk = torch.randn(1, hkv, n, d, device="cuda", dtype=torch.bfloat16)
                vv = torch.randn(1, hkv, n, d, device="cuda", dtype=torch.bfloat16)
                backend, fn = run_sdpa(q, kk, vv, True)
                if fn is None:
                    log(f"attention prefill n={n}: no SDPA backend runs it")
                    continue
                us, _ = time_graph(fn, 1)
            except (RuntimeError, torch.OutOfMemoryError) as err:
                log(f"attention prefill n={n}: {str(err).splitlines()[0][:160]}")
                continue
            tflops = 4.0 * hq * d * n * n / 2 / (us * 1e-6) / 1e12  # causal: half of QK^T and PV
            rows.append([name, "bf16", f"torch SDPA ({backend})", "prefill", 1, hq, hkv, d, n, n, 1, f"{us:.3f}", "us", locator])
            log(f"attention prefill H={hq}/{hkv}x{d} n={n:6d}: {us:9.2f} us, {tflops:6.1f} TFLOP/s causal ({backend})")
            del q, kk, vv
        torch.cuda.empty_cache()
    return rows


def measure_overheads(facts, name, locator, quick, log):
    rows = []
    x = torch.zeros(1, device="cuda")
    us, reps = time_graph(lambda i: x.add_(1.0), 1, target_ms=1.0)
    rows.append([name, "graph_kernel", 4, f"{us:.3f}", "us", locator])
    log(f"overheads: a one-element kernel in a CUDA graph {us:.2f} us ({reps} per graph)")
    for _ in range(20):
        x.add_(1.0)
    torch.cuda.synchronize()
    n, t0 = 2000, time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) / n * 1e6
    rows.append([name, "eager_launch", 4, f"{eager:.3f}", "us", locator])
    log(f"overheads: a one-element kernel launched eagerly {eager:.2f} us")
    # the small per-layer kernels around the GEMMs, at DeepSeek-V3's hidden size: an RMSNorm,
    # SiLU-and-multiply over the expert width, a residual add and the router's top-8 of 256
    for m in ([1, 64] if quick else [1, 8, 64, 512, 4096]):
        h = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
        g = torch.randn(7168, device="cuda", dtype=torch.bfloat16)
        up = torch.randn(m, 2 * 2048, device="cuda", dtype=torch.bfloat16)
        logits = torch.randn(m, 256, device="cuda", dtype=torch.float32)
        res = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
        small = [("rmsnorm_7168", lambda i: torch.nn.functional.rms_norm(h, (7168,), g, 1e-6), 2 * m * 7168 * 2),
                 ("silu_mul_2048", lambda i: torch.nn.functional.silu(up[:, :2048]) * up[:, 2048:], m * 2048 * 2 * 3),
                 ("residual_add_7168", lambda i: res.add_(h), 3 * m * 7168 * 2),
                 ("router_top8_of_256", lambda i: torch.topk(torch.softmax(logits, -1), 8, dim=-1), m * 256 * 4 * 2)]
        for metric, fn, nbytes in small:
            try:
                us, _ = time_graph(fn, 1, target_ms=1.0)
            except RuntimeError as err:
                log(f"{metric} m={m}: {str(err).splitlines()[0][:160]}")
                continue
            rows.append([name, f"{metric}@m={m}", nbytes, f"{us:.3f}", "us", locator])
            log(f"overheads: {metric} m={m:5d} {us:8.2f} us (torch eager kernels in a graph)")
    for exp in ([20, 26, 30] if quick else range(16, 33, 2)):
        size = 1 << exp
        try:
            src = torch.randint(0, 255, (size,), device="cuda", dtype=torch.uint8)
            dst = torch.empty_like(src)
            us, _ = time_graph(lambda i: dst.copy_(src), 1)
        except (RuntimeError, torch.OutOfMemoryError) as err:
            log(f"copy {size} B: {str(err).splitlines()[0][:160]}")
            continue
        rows.append([name, "copy", size, f"{us:.3f}", "us", locator])
        log(f"overheads: copy {size:>11d} B {us:10.2f} us, {2 * size / (us * 1e-6) / 1e9:7.0f} GB/s read+written")
        del src, dst
    torch.cuda.empty_cache()
    return rows


# elementwise kernels between the GEMMs (data/silicon/elementwise.csv): the gated activation
# over an intermediate width f (Llama-3.1-8B TP1, Llama-3.1-70B TP8, DeepSeek-V3's experts,
# Qwen3-235B's experts) and the rotary embedding over (q heads, kv heads, head dim) on one rank
ACT_WIDTHS = [("llama-3.1-8b tp1", 14336), ("llama-3.1-70b tp8", 3584), ("deepseek-v3 expert", 2048), ("qwen3-235b expert", 1536)]
ROPE_HEADS = [("llama-3.1-8b tp1", 32, 8, 128), ("llama-3.1-70b tp8", 8, 1, 128), ("llama-3.1-70b tp1", 64, 8, 128)]
ELEMENTWISE_TOKENS = [1, 8, 64, 512, 4096, 16384]


def engine_ops():
    """The engines' own activation and rotary kernels where installed (vLLM's, else SGLang's)."""
    try:
        from vllm import _custom_ops as ops  # noqa: PLC0415 - optional
        return "vLLM", ops
    except Exception:  # noqa: BLE001 - any import failure means: not installed here
        return None, None


def measure_elementwise(facts, name, locator, quick, log):
    rows = []
    who, ops = engine_ops()
    tokens = [1, 512] if quick else ELEMENTWISE_TOKENS

    def timed(op, label, kernel, m, nbytes, fn):
        """One row of `op` moving nbytes, or a log line where the kernel cannot run."""
        try:
            us, _ = time_graph(fn, 1, target_ms=1.0)
        except (RuntimeError, torch.OutOfMemoryError) as err:
            log(f"elementwise {op} {label} m={m}: {str(err).splitlines()[0][:160]}")
            return
        rows.append([name, op, f"{label} ({kernel})", m, 1, nbytes, f"{us:.3f}", "us", locator])
        log(f"elementwise: {op} {label:<20} m={m:6d} {us:9.2f} us {nbytes / (us * 1e-6) / 1e9:7.0f} GB/s ({kernel})")

    for label, f in ACT_WIDTHS[:1] if quick else ACT_WIDTHS:
        for m in tokens:
            x = torch.randn(m, 2 * f, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(m, f, device="cuda", dtype=torch.bfloat16)
            if ops is not None and hasattr(ops, "silu_and_mul"):
                kernel, fn = f"{who} silu_and_mul", lambda i: ops.silu_and_mul(out, x)
            else:  # torch: three kernels where the engines run one
                kernel, fn = "torch silu * mul (unfused)", lambda i: torch.mul(torch.nn.functional.silu(x[:, :f]), x[:, f:], out=out)
            timed("mlp_act", label, kernel, m, m * 3 * f * 2, fn)
            del x, out
    for label, nq, nkv, d in ROPE_HEADS[:1] if quick else ROPE_HEADS:
        for m in tokens:
            q = torch.randn(m, nq * d, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(m, nkv * d, device="cuda", dtype=torch.bfloat16)
            pos = torch.randint(0, 4096, (m,), device="cuda", dtype=torch.int64)
            cache = torch.randn(4096, d, device="cuda", dtype=torch.bfloat16)  # cos | sin halves
            if ops is not None and hasattr(ops, "rotary_embedding"):
                kernel, fn = f"{who} rotary_embedding", lambda i: ops.rotary_embedding(pos, q, k, d, cache, True)
            else:  # torch: neox-style rotation of q and k in place
                def fn(i):
                    cs = cache[pos]
                    cos, sin = cs[:, : d // 2].unsqueeze(1), cs[:, d // 2 :].unsqueeze(1)
                    for t, h in ((q, nq), (k, nkv)):
                        v = t.view(m, h, d)
                        a, b = v[..., : d // 2].clone(), v[..., d // 2 :].clone()
                        v[..., : d // 2] = a * cos - b * sin
                        v[..., d // 2 :] = b * cos + a * sin
                kernel = "torch rotation (unfused)"
            timed("attn_rope", label, kernel, m, 2 * m * (nq + nkv) * d * 2, fn)
            del q, k, pos, cache
    torch.cuda.empty_cache()
    return rows


HEADERS = {
    "gemm": ["silicon", "dtype", "kernel", "M", "N", "K", "value", "unit", "source_locator"],
    "grouped": ["silicon", "dtype", "kernel", "layout", "groups", "m_per_group", "m_padded", "N", "K", "value", "unit", "source_locator"],
    "attention": ["silicon", "dtype", "kernel", "phase", "batch", "q_heads", "kv_heads", "head_dim", "q_len", "kv_len", "causal",
                  "value", "unit", "source_locator"],
    "overheads": ["silicon", "metric", "bytes", "value", "unit", "source_locator"],
    "elementwise": ["silicon", "op", "model", "tokens", "tp", "bytes", "value", "unit", "source_locator"],
}
HEADERS["fused_moe"] = HEADERS["grouped"]
FILES = {"gemm": "gemm.csv", "grouped": "grouped_gemm.csv", "attention": "attention.csv", "overheads": "overheads.csv",
         "fused_moe": "fused_moe.csv", "elementwise": "elementwise.csv"}
MEASURE = {"gemm": measure_gemm, "grouped": measure_grouped, "attention": measure_attention, "overheads": measure_overheads,
           "fused_moe": measure_fused_moe, "elementwise": measure_elementwise}


def write_csv(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)  # whole or not at all


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for the tables (created)")
    ap.add_argument("--only", default="gemm,grouped,attention,overheads,elementwise",
                    help="comma-separated: gemm, grouped, attention, overheads, elementwise, fused_moe")
    ap.add_argument("--silicon", default="", help="the catalog name of this GPU (default: from the device name)")
    ap.add_argument("--rev", default="", help="the shardwise git revision of this script, for the rows' provenance")
    ap.add_argument("--quick", action="store_true", help="a few shapes of each kind (a smoke test)")
    ap.add_argument("--fused-moe-kernel", default="", help="fused_moe: a Python file defining vLLM's Triton fused_moe_kernel "
                    "(default: the installed vLLM's or SGLang's)")
    args = ap.parse_args()
    kinds = [k.strip() for k in args.only.split(",") if k.strip()]
    for k in kinds:
        if k not in MEASURE:
            sys.exit(f"bench/silicon/measure.py: --only: '{k}' is not one of {', '.join(MEASURE)}")
    if not torch.cuda.is_available():
        sys.exit("bench/silicon/measure.py: PyTorch sees no GPU")
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    facts = device_facts()
    name = silicon_name(facts["device"], args.silicon)
    smi = (facts["nvidia_smi"] or "").replace(",", ";")
    rev = args.rev or "unknown-rev"
    locator = (f"shardwise bench/silicon/measure.py@{rev}: {facts['device']}; nvidia-smi {smi}; torch {facts['torch']}"
               f" CUDA {facts['cuda']}; CUDA-graph median of {REPLAYS} replays; {facts['date']}")
    facts.update({"silicon": name, "rev": rev, "locator": locator})
    log_file = open(os.path.join(args.out, "measure.log"), "w")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")

    log(json.dumps(facts))
    for k in kinds:
        t0 = time.time()
        if k == "fused_moe":
            rows = measure_fused_moe(facts, name, locator, args.quick, log, args.fused_moe_kernel)
        else:
            rows = MEASURE[k](facts, name, locator, args.quick, log)
        write_csv(os.path.join(args.out, FILES[k]), HEADERS[k], rows)
        log(f"== {FILES[k]}: {len(rows)} rows in {time.time() - t0:.0f} s")
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(facts, f, indent=1)
    log_file.close()


if __name__ == "__main__":
    main()
