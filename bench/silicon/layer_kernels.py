"""The small per-layer kernels of an MoE decode step, one Triton kernel each, written here to do
what the engines' own fused kernels do in one pass (SGLang's and vLLM's fused_add_rmsnorm,
rmsnorm, per_token_group_quant_fp8, silu_and_mul, the rotary embedding, biased_grouped_topk,
moe_align_block_size and moe_sum): the same bytes read and written, one launch each.

They are not the engines' kernels (those are CUDA C++ in the engines' wheels, which the lent
GPU cannot install); they stand for them where the engines fuse the same work into one kernel.
Used by bench/silicon/measure_layer.py. Each wrapper writes into buffers it is given, so that a
CUDA graph can capture it.
"""
import torch
import triton
import triton.language as tl


def next_pow2(n):
    return 1 << (max(int(n), 1) - 1).bit_length()


@triton.jit
def _rmsnorm_kernel(x_ptr, res_in_ptr, res_out_ptr, w_ptr, out_ptr, x_stride, out_stride, H, eps,
                    HAS_RES: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < H
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0).to(tl.float32)
    if HAS_RES:
        x = x + tl.load(res_in_ptr + row * H + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(res_out_ptr + row * H + offs, x.to(tl.bfloat16), mask=mask)
    var = tl.sum(x * x, axis=0) / H
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(var + eps) * w
    tl.store(out_ptr + row * out_stride + offs, y.to(tl.bfloat16), mask=mask)


def rmsnorm(x, w, out, res_in=None, res_out=None, eps=1e-6):
    """out = RMSNorm(x [+ res_in]) * w; with a residual, res_out = x + res_in (fused_add_rmsnorm)."""
    rows, h = x.shape[0], w.shape[0]
    has_res = res_in is not None
    _rmsnorm_kernel[(rows,)](x, res_in if has_res else x, res_out if has_res else x, w, out, x.stride(0), out.stride(0),
                             h, eps, HAS_RES=has_res, BLOCK=next_pow2(h), num_warps=8 if h >= 4096 else 4)


@triton.jit
def _group_quant_kernel(x_ptr, q_ptr, s_ptr, K, x_stride, fp8_max, G: tl.constexpr):
    pid = tl.program_id(0)
    groups = K // G
    row = pid // groups
    g = pid % groups
    offs = tl.arange(0, G)
    x = tl.load(x_ptr + row * x_stride + g * G + offs).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)
    s = amax / fp8_max
    y = tl.clamp(x / s, -fp8_max, fp8_max)
    tl.store(q_ptr + row * K + g * G + offs, y.to(q_ptr.dtype.element_ty))
    tl.store(s_ptr + pid, s)


def group_quant(x, q, s, group=128):
    """fp8 activations with one scale per `group` elements of a row (per_token_group_quant_fp8)."""
    rows, k = x.shape
    _group_quant_kernel[(rows * (k // group),)](x, q, s, k, x.stride(0), float(torch.finfo(q.dtype).max), G=group,
                                                num_warps=1)


@triton.jit
def _silu_mul_kernel(x_ptr, out_ptr, F, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = col < F
    g = tl.load(x_ptr + row * 2 * F + col, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * F + F + col, mask=mask, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp(-g)) * u
    tl.store(out_ptr + row * F + col, y.to(tl.bfloat16), mask=mask)


def silu_mul(x, out):
    """out = silu(x[:, :F]) * x[:, F:] (silu_and_mul)."""
    rows, f = out.shape
    block = min(1024, next_pow2(f))
    _silu_mul_kernel[(rows, triton.cdiv(f, block))](x, out, f, BLOCK=block, num_warps=4)


@triton.jit
def _rope_kernel(q_ptr, k_ptr, pos_ptr, cache_ptr, q_tok_stride, q_head_stride, k_tok_stride, k_head_stride, HQ,
                 D: tl.constexpr):
    tok = tl.program_id(0)
    head = tl.program_id(1)
    half = tl.arange(0, D // 2)
    p = tl.load(pos_ptr + tok)
    cos = tl.load(cache_ptr + p * D + half).to(tl.float32)
    sin = tl.load(cache_ptr + p * D + D // 2 + half).to(tl.float32)
    if head < HQ:
        base = q_ptr + tok * q_tok_stride + head * q_head_stride
    else:
        base = k_ptr + tok * k_tok_stride + (head - HQ) * k_head_stride
    a = tl.load(base + half).to(tl.float32)
    b = tl.load(base + D // 2 + half).to(tl.float32)
    tl.store(base + half, (a * cos - b * sin).to(tl.bfloat16))
    tl.store(base + D // 2 + half, (b * cos + a * sin).to(tl.bfloat16))


def rope(q_pe, k_pe, pos, cache):
    """Neox-style rotation in place of q_pe [T, HQ, D] and k_pe [T, D] or [T, HK, D] (strided views allowed)."""
    t, hq, d = q_pe.shape
    hk = 1 if k_pe.dim() == 2 else k_pe.shape[1]
    k_head = 0 if k_pe.dim() == 2 else k_pe.stride(1)
    _rope_kernel[(t, hq + hk)](q_pe, k_pe, pos, cache, q_pe.stride(0), q_pe.stride(1), k_pe.stride(0), k_head, hq, D=d,
                               num_warps=1)


@triton.jit
def _grouped_topk_kernel(logits_ptr, bias_ptr, ids_ptr, w_ptr, scale, E: tl.constexpr, G: tl.constexpr,
                         TOPG: tl.constexpr, K: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, E)
    s = tl.sigmoid(tl.load(logits_ptr + row * E + offs).to(tl.float32))
    sb = s + tl.load(bias_ptr + offs).to(tl.float32)
    g2 = tl.reshape(sb, (G, E // G))
    cols = tl.arange(0, E // G)
    m1 = tl.max(g2, axis=1)
    a1 = tl.argmax(g2, axis=1)
    m2 = tl.max(tl.where(cols[None, :] == a1[:, None], -1e30, g2), axis=1)
    gscore = m1 + m2
    gidx = tl.arange(0, G)
    keep = tl.zeros((G,), dtype=tl.int32)
    for _ in tl.static_range(TOPG):
        j = tl.argmax(gscore, axis=0)
        keep = tl.where(gidx == j, 1, keep)
        gscore = tl.where(gidx == j, -1e30, gscore)
    egroup = offs // (E // G)
    keep_e = tl.sum(tl.where(egroup[:, None] == gidx[None, :], keep[None, :], 0), axis=1)
    cand = tl.where(keep_e > 0, sb, -1e30)
    ko = tl.arange(0, K)
    idv = tl.zeros((K,), dtype=tl.int32)
    wv = tl.zeros((K,), dtype=tl.float32)
    for k in tl.static_range(K):
        j = tl.argmax(cand, axis=0)
        wj = tl.sum(tl.where(offs == j, s, 0.0), axis=0)
        idv = tl.where(ko == k, j, idv)
        wv = tl.where(ko == k, wj, wv)
        cand = tl.where(offs == j, -1e30, cand)
    wv = wv / tl.sum(wv, axis=0) * scale
    tl.store(ids_ptr + row * K + ko, idv)
    tl.store(w_ptr + row * K + ko, wv)


def grouped_topk(logits, bias, ids, weights, groups, top_groups, scale):
    """DeepSeek-V3's router after its GEMM: sigmoid scores plus the correction bias, the best
    `top_groups` of `groups` expert groups (each scored by its two best), the top-k experts
    within them, weights renormalised and scaled (biased_grouped_topk)."""
    rows, e = logits.shape
    _grouped_topk_kernel[(rows,)](logits, bias, ids, weights, scale, E=e, G=groups, TOPG=top_groups, K=ids.shape[1],
                                  num_warps=4)


@triton.jit
def _align_count_kernel(ids_ptr, n, starts_ptr, counts_ptr, total_ptr, E: tl.constexpr, BM: tl.constexpr,
                        CHUNK: tl.constexpr):
    experts = tl.arange(0, E)
    counts = tl.zeros((E,), dtype=tl.int32)
    for c in range(0, n, CHUNK):
        offs = c + tl.arange(0, CHUNK)
        ids = tl.load(ids_ptr + offs, mask=offs < n, other=E)
        counts += tl.sum(tl.where(ids[:, None] == experts[None, :], 1, 0), axis=0)
    padded = (counts + BM - 1) // BM * BM
    starts = tl.cumsum(padded, axis=0) - padded
    tl.store(starts_ptr + experts, starts)
    tl.store(counts_ptr + experts, counts)
    tl.store(total_ptr, tl.sum(padded, axis=0))


@triton.jit
def _align_scatter_kernel(ids_ptr, n, starts_ptr, counts_ptr, sorted_ptr, expert_ids_ptr, BM: tl.constexpr,
                          NB: tl.constexpr, MAXB: tl.constexpr):
    e = tl.program_id(0)
    start = tl.load(starts_ptr + e)
    count = tl.load(counts_ptr + e)
    padded = (count + BM - 1) // BM * BM
    offs = tl.arange(0, NB)
    ids = tl.load(ids_ptr + offs, mask=offs < n, other=-1)
    mine = ids == e
    pos = tl.cumsum(mine.to(tl.int32), axis=0) - 1
    tl.store(sorted_ptr + start + pos, offs.to(tl.int32), mask=mine)
    pads = tl.arange(0, BM)
    tl.store(sorted_ptr + start + count + pads, n, mask=count + pads < padded)
    blocks = tl.arange(0, MAXB)
    tl.store(expert_ids_ptr + start // BM + blocks, e, mask=blocks < padded // BM)


def moe_align(topk_ids, experts, block_m, sorted_ids, expert_ids, total, starts, counts):
    """moe_align_block_size: token copies grouped by expert, each expert's run padded to block_m
    with the pad value (the number of copies), one expert id per block; two launches."""
    n = topk_ids.numel()
    _align_count_kernel[(1,)](topk_ids, n, starts, counts, total, E=experts, BM=block_m, CHUNK=32, num_warps=8)
    nb = next_pow2(n)
    _align_scatter_kernel[(experts,)](topk_ids, n, starts, counts, sorted_ids, expert_ids, BM=block_m, NB=nb,
                                      MAXB=next_pow2(triton.cdiv(n, block_m) + 1), num_warps=4)


@triton.jit
def _moe_sum_kernel(x_ptr, out_ptr, H, scale, K: tl.constexpr, BLOCK: tl.constexpr):
    tok = tl.program_id(0)
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = col < H
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in tl.static_range(K):
        acc += tl.load(x_ptr + (tok * K + k) * H + col, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + tok * H + col, (acc * scale).to(tl.bfloat16), mask=mask)


def moe_sum(x, out, scale):
    """out[t] = scale * sum_k x[t, k] (moe_sum_reduce with the routed scaling factor)."""
    t, k, h = x.shape
    block = 1024
    _moe_sum_kernel[(t, triton.cdiv(h, block))](x, out, h, scale, K=k, BLOCK=block, num_warps=4)
