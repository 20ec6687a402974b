#!/usr/bin/env python3
"""Measures one decoder layer as one tensor-parallel rank runs it in decode, op by op and whole,
on the GPU this runs on: DeepSeek-V3 at TP8 (MLA attention over 16 of the 128 heads, the MoE
layer's experts sliced eight ways; the default) or a dense Llama-3.1 layer in fp8
(dense_layer.py: llama-3.1-70b-tp8, llama-3.1-8b-tp1):

    python3 bench/silicon/measure_layer.py --out DIR [--model M] [--fused-moe-kernel FILE] [--rev GIT_REV]
                                           [--batches 1,8,16,32,64,128,256] [--context 1536]

DIR then holds layer_ops.csv (each op alone), layer.csv (the sum of the ops against the layer
captured whole), layer.log and layer-meta.json (a dense model: layer-M_ops.csv, layer-M.csv, ...);
docs/silicon.md, "A measured decode layer". The DeepSeek-V3 layer needs --fused-moe-kernel.

What it answers: what a decode layer costs on one rank when each kernel is what it is (the
fp8 GEMMs, the engines' Triton fused MoE, one launch per small fused op), and whether the
layer is the sum of its ops (the graph's gaps, the caches). What it is not: the engines'
attention kernel (FlashMLA / FA3 are not installable here; the attention is torch's unfused
absorbed MLA, reported apart) or their all-reduce (one GPU: none is run). Same method as
measure.py: random data, CUDA graphs, weights rotated beyond three times the L2.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure as m  # noqa: E402 - the shared timing, device facts and CSV writer

torch = m.torch
try:
    import triton  # noqa: E402
    import triton.language as tl  # noqa: E402
    import layer_kernels as lk  # noqa: E402
    import dense_layer as dl  # noqa: E402
except ImportError:  # pragma: no cover
    sys.exit("bench/silicon/measure_layer.py: needs Triton (it ships with PyTorch's CUDA wheels)")

# DeepSeek-V3 (shared/models/deepseek-v3 config.json) at tensor parallel 8
HIDDEN, HEADS, Q_LORA, KV_LORA, NOPE, ROPE_D, V_D = 7168, 128 // 8, 1536, 512, 128, 64, 128
EXPERTS, TOP_K, GROUPS, TOP_GROUPS, EXPERT_F, SHARED_F, ROUTED_SCALE = 256, 8, 8, 4, 2048 // 8, 2048 // 8, 2.5
MODEL = "deepseek-v3 tp8 decode"


def fp8(shape, scale=0.05):
    return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale).to(m.fp8_dtype())


def bf16(*shape, scale=1.0):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale


class Weights:
    """One layer's dense weights, norms, KV cache and input: one set per rotated copy."""

    def __init__(self, b, ctx):
        self.w_qkv_a, self.s_qkv_a = fp8((Q_LORA + KV_LORA + ROPE_D, HIDDEN)), self.col_scale(Q_LORA + KV_LORA + ROPE_D)
        self.w_qb, self.s_qb = fp8((HEADS * (NOPE + ROPE_D), Q_LORA)), self.col_scale(HEADS * (NOPE + ROPE_D))
        self.w_kc, self.w_vc = bf16(HEADS, NOPE, KV_LORA, scale=0.05), bf16(HEADS, KV_LORA, V_D, scale=0.05)
        self.w_o, self.s_o = fp8((HIDDEN, HEADS * V_D)), self.col_scale(HIDDEN)
        self.w_gate, self.bias = bf16(EXPERTS, HIDDEN, scale=0.02), torch.rand(EXPERTS, device="cuda") * 0.1
        self.w_sh_up, self.s_sh_up = fp8((2 * SHARED_F, HIDDEN)), self.col_scale(2 * SHARED_F)
        self.w_sh_down, self.s_sh_down = fp8((HIDDEN, SHARED_F)), self.col_scale(HIDDEN)
        self.n_in, self.n_post = 1 + bf16(HIDDEN, scale=0.1), 1 + bf16(HIDDEN, scale=0.1)
        self.n_qa, self.n_kva = 1 + bf16(Q_LORA, scale=0.1), 1 + bf16(KV_LORA, scale=0.1)
        self.cache = bf16(b, ctx, KV_LORA + ROPE_D)
        self.x_in, self.res_in = bf16(b, HIDDEN), bf16(b, HIDDEN)

    @staticmethod
    def col_scale(n):
        return torch.rand(1, n, device="cuda", dtype=torch.float32) * 0.01 + 0.005

    def nbytes(self):
        return sum(t.numel() * t.element_size() for t in vars(self).values() if torch.is_tensor(t))


class Layer:
    """The buffers of one batch size and the ops of the layer, in the order a rank runs them."""

    def __init__(self, b, ctx, copies, experts_w, kernel, log):
        self.b, self.ctx, self.copies, self.log = b, ctx, copies, log
        self.W = [Weights(b, ctx) for _ in range(copies)]
        self.w1, self.s1, self.w2, self.s2 = experts_w
        self.kernel = kernel
        f8 = m.fp8_dtype()
        n = b * TOP_K
        self.block_m = 16
        self.cfg_up = (16, 64, 1, 4, 4) if b == 1 else (16, 128, 1, 4, 3)
        self.cfg_down = (16, 64, 1, 4, 4) if b <= 8 else (16, 128, 1, 4, 3)
        z = lambda *s, dt=torch.bfloat16: (torch.empty(*s, device="cuda", dtype=dt) if dt == f8  # noqa: E731
                                             else torch.zeros(*s, device="cuda", dtype=dt))
        self.row_scale = lambda rows: torch.rand(rows, 1, device="cuda", dtype=torch.float32) + 0.5  # noqa: E731
        self.sa = {k: self.row_scale(r) for k, r in (("b", b), ("n", n))}
        self.h, self.res1, self.h2, self.res2 = z(b, HIDDEN), z(b, HIDDEN), z(b, HIDDEN), z(b, HIDDEN)
        self.hq, self.hs = z(b, HIDDEN, dt=f8), z(b, HIDDEN // 128, dt=torch.float32)
        self.hq2, self.hs2 = z(b, HIDDEN, dt=f8), z(b, HIDDEN // 128, dt=torch.float32)
        self.qkv_a = z(b, Q_LORA + KV_LORA + ROPE_D)
        self.qa_n, self.qaq, self.qas = z(b, Q_LORA), z(b, Q_LORA, dt=f8), z(b, Q_LORA // 128, dt=torch.float32)
        self.q = z(b, HEADS * (NOPE + ROPE_D))
        self.q_abs, self.q_cat = z(HEADS, b, KV_LORA), z(b, HEADS, KV_LORA + ROPE_D)
        self.attn_v, self.o_in = z(HEADS, b, V_D), z(b, HEADS * V_D)
        self.oq, self.os = z(b, HEADS * V_D, dt=f8), z(b, HEADS * V_D // 128, dt=torch.float32)
        self.o_out = z(b, HIDDEN)
        self.logits = [z(b, EXPERTS) for _ in range(copies)]  # per copy: each copy's gate routes its own way
        # one routing per copy, so that an expert op timed alone streams other experts each call, as in the layer
        self.R = [Routing(n, self.block_m, z) for _ in range(copies)]
        self.sh_up, self.sh_act = z(b, 2 * SHARED_F), z(b, SHARED_F)
        self.shq, self.shs, self.sh_out = z(b, SHARED_F, dt=f8), z(b, SHARED_F // 128, dt=torch.float32), z(b, HIDDEN)
        self.c1, self.act1 = z(b, TOP_K, 2 * EXPERT_F), z(n, EXPERT_F)
        self.eq, self.es = z(n, EXPERT_F, dt=f8), z(n, EXPERT_F // 128, dt=torch.float32)
        self.c2, self.moe_out = z(b, TOP_K, HIDDEN), z(b, HIDDEN)
        self.pos = torch.full((b,), ctx - 1, device="cuda", dtype=torch.int64)
        # a true rotation (cos | sin halves), so that the rotary op timed alone, in place and a
        # thousand times over, keeps its operands' size (random halves grew them to inf, and the
        # NaN attention after collapsed the router onto a few experts)
        angle = torch.arange(ctx, device="cuda", dtype=torch.float32)[:, None] * \
            torch.logspace(0, -4, ROPE_D // 2, device="cuda")[None, :]
        self.rope_cache = torch.cat([angle.cos(), angle.sin()], 1).to(torch.bfloat16)
        self.probs = None
        self.lat = None
        self.ops = self.build()

    # -- the pieces -------------------------------------------------------------------------
    def mm(self, a, sa, w, sw, out):
        """fp8 GEMM with row-wise scales (cuBLASLt), into out."""
        out.copy_(torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)) if self.mm_copy \
            else torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16, out=out)

    def fused_moe(self, r, a, a_scale, w, w_scale, c, top_k, mul, cfg):
        bm, bn, gm, warps, stages = cfg
        rows = a.shape[0]
        em = r.sorted_ids.shape[0]
        if rows < bm:  # the engines' small-batch shortcut
            em = min(em, rows * top_k * bm)
        n, k = w.shape[1], w.shape[2]
        grid = (triton.cdiv(em, bm) * triton.cdiv(n, bn),)
        self.kernel[grid](
            a, w, c, a_scale, w_scale, r.topk_w, r.sorted_ids, r.expert_ids, r.total,
            n, k, em, rows * top_k,
            a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(-2), c.stride(-1),
            a_scale.stride(0), a_scale.stride(1), w_scale.stride(0), w_scale.stride(2), w_scale.stride(1),
            group_n=128, group_k=128, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=128, GROUP_SIZE_M=gm,
            MUL_ROUTED_WEIGHT=mul, top_k=top_k, compute_type=tl.bfloat16, use_fp8_w8a8=True, use_int8_w8a8=False,
            use_int8_w8a16=False, per_channel_quant=False, num_warps=warps, num_stages=stages)

    def attention(self, c):
        """Absorbed MLA decode over the latent cache in torch (several kernels; not FlashMLA)."""
        W = self.W[c]
        qv = self.q.view(self.b, HEADS, NOPE + ROPE_D)
        self.q_cat[:, :, :KV_LORA].copy_(self.q_abs.transpose(0, 1))
        self.q_cat[:, :, KV_LORA:].copy_(qv[:, :, NOPE:])
        scores = torch.bmm(self.q_cat, W.cache.transpose(1, 2))
        self.probs = torch.softmax(scores, -1, dtype=torch.float32).to(torch.bfloat16)
        self.lat = torch.bmm(self.probs, W.cache[:, :, :KV_LORA])

    def build(self):
        b, ctx = self.b, self.ctx
        qv = self.q.view(b, HEADS, NOPE + ROPE_D)
        # does _scaled_mm take out=? (torch >= 2.5 does); else a copy, logged
        try:
            self.mm_copy = False
            self.mm(self.hq, self.sa["b"], self.W[0].w_qkv_a, self.W[0].s_qkv_a, self.qkv_a)
        except (TypeError, RuntimeError) as err:
            self.mm_copy = True
            self.log(f"layer: torch._scaled_mm(out=) refused ({str(err).splitlines()[0][:120]}); each GEMM adds a copy")
        slot = lambda c: self.W[c].cache[:, ctx - 1, :]  # noqa: E731 - this step's KV row, per copy
        T = "Triton (one kernel, as the engines' fused op)"
        return [
            ("input_norm", T + " fused add+RMSNorm", lambda c: lk.rmsnorm(self.W[c].x_in, self.W[c].n_in, self.h,
                                                                         self.W[c].res_in, self.res1)),
            ("quant_hidden", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.h, self.hq, self.hs)),
            ("qkv_a_proj", "torch._scaled_mm fp8 rowwise (cuBLASLt)",
             lambda c: self.mm(self.hq, self.sa["b"], self.W[c].w_qkv_a, self.W[c].s_qkv_a, self.qkv_a)),
            ("q_a_norm", T + " RMSNorm", lambda c: lk.rmsnorm(self.qkv_a[:, :Q_LORA], self.W[c].n_qa, self.qa_n)),
            ("kv_a_norm", T + " RMSNorm (into the KV cache row)",
             lambda c: lk.rmsnorm(self.qkv_a[:, Q_LORA:Q_LORA + KV_LORA], self.W[c].n_kva, slot(c))),
            ("quant_q", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.qa_n, self.qaq, self.qas)),
            ("q_b_proj", "torch._scaled_mm fp8 rowwise (cuBLASLt)",
             lambda c: self.mm(self.qaq, self.sa["b"], self.W[c].w_qb, self.W[c].s_qb, self.q)),
            ("q_absorb", "torch.bmm bf16 (cuBLAS)",
             lambda c: torch.bmm(qv[:, :, :NOPE].transpose(0, 1), self.W[c].w_kc, out=self.q_abs)),
            ("rope", T + " rotary (q and k)",
             lambda c: lk.rope(qv[:, :, NOPE:], self.qkv_a[:, Q_LORA + KV_LORA:], self.pos, self.rope_cache)),
            ("kv_store", "torch copy (the rotated k into the KV cache row)",
             lambda c: slot(c)[:, KV_LORA:].copy_(self.qkv_a[:, Q_LORA + KV_LORA:])),
            ("attention", "torch absorbed MLA decode: cat, bmm, softmax, bmm (unfused; not FlashMLA)",
             lambda c: self.attention(c)),
            ("v_absorb", "torch.bmm bf16 (cuBLAS) + transpose copy",
             lambda c: (torch.bmm(self.lat.transpose(0, 1), self.W[c].w_vc, out=self.attn_v),
                        self.o_in.view(b, HEADS, V_D).copy_(self.attn_v.transpose(0, 1)))),
            ("quant_o", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.o_in, self.oq, self.os)),
            ("o_proj", "torch._scaled_mm fp8 rowwise (cuBLASLt)",
             lambda c: self.mm(self.oq, self.sa["b"], self.W[c].w_o, self.W[c].s_o, self.o_out)),
            ("post_norm", T + " fused add+RMSNorm",
             lambda c: lk.rmsnorm(self.o_out, self.W[c].n_post, self.h2, self.res1, self.res2)),
            ("router_gemm", "torch mm bf16 (cuBLAS)",
             lambda c: torch.mm(self.h2, self.W[c].w_gate.t(), out=self.logits[c])),
            ("router_topk", T + " biased grouped top-k",
             lambda c: lk.grouped_topk(self.logits[c], self.W[c].bias, self.R[c].topk_ids, self.R[c].topk_w, GROUPS,
                                       TOP_GROUPS, 1.0)),
            ("moe_align", "Triton (two kernels) moe_align_block_size",
             lambda c: lk.moe_align(self.R[c].topk_ids, EXPERTS, self.block_m, self.R[c].sorted_ids, self.R[c].expert_ids,
                                    self.R[c].total, self.R[c].starts, self.R[c].counts)),
            ("quant_moe_in", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.h2, self.hq2, self.hs2)),
            ("shared_up", "torch._scaled_mm fp8 rowwise (cuBLASLt)",
             lambda c: self.mm(self.hq2, self.sa["b"], self.W[c].w_sh_up, self.W[c].s_sh_up, self.sh_up)),
            ("shared_act", T + " silu_and_mul", lambda c: lk.silu_mul(self.sh_up, self.sh_act)),
            ("quant_shared", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.sh_act, self.shq, self.shs)),
            ("shared_down", "torch._scaled_mm fp8 rowwise (cuBLASLt)",
             lambda c: self.mm(self.shq, self.sa["b"], self.W[c].w_sh_down, self.W[c].s_sh_down, self.sh_out)),
            ("experts_up", "vLLM fused_moe_kernel (Triton) fp8 block 128x128, config %s" % (self.cfg_up,),
             lambda c: self.fused_moe(self.R[c], self.hq2, self.hs2, self.w1, self.s1, self.c1, TOP_K, False, self.cfg_up)),
            ("experts_act", T + " silu_and_mul", lambda c: lk.silu_mul(self.c1.view(-1, 2 * EXPERT_F), self.act1)),
            ("quant_experts", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.act1, self.eq, self.es)),
            ("experts_down", "vLLM fused_moe_kernel (Triton) fp8 block 128x128, config %s" % (self.cfg_down,),
             lambda c: self.fused_moe(self.R[c], self.eq, self.es, self.w2, self.s2, self.c2, 1, True, self.cfg_down)),
            ("moe_sum", T + " moe_sum_reduce x routed scale", lambda c: lk.moe_sum(self.c2, self.moe_out, ROUTED_SCALE)),
            ("shared_add", "torch add_", lambda c: self.moe_out.add_(self.sh_out)),
        ]

    def run(self, c):
        for _, _, fn in self.ops:
            fn(c)

    def check(self):
        """Cheap checks that the layer computes what it claims (logged, not fatal)."""
        torch.cuda.synchronize()
        r = self.R[0]
        ids = r.topk_ids.long()
        notes = []
        rows_unique = all(len(set(r)) == TOP_K for r in ids.tolist())
        groups_ok = all(len({e // (EXPERTS // GROUPS) for e in r}) <= TOP_GROUPS for r in ids.tolist())
        in_range = bool(((ids >= 0) & (ids < EXPERTS)).all())
        notes.append(f"top-k ids in range {in_range}, distinct per row {rows_unique}, within {TOP_GROUPS} groups {groups_ok}")
        n = self.b * TOP_K
        total = int(r.total.item())
        counts = torch.bincount(ids.flatten(), minlength=EXPERTS)
        padded = int(((counts + self.block_m - 1) // self.block_m * self.block_m).sum())
        valid = r.sorted_ids[:total]
        got = sorted(valid[valid < n].tolist())
        notes.append(f"align total {total} (expected {padded}), copies placed {len(got)} of {n}, "
                     f"each once {got == list(range(n))}")
        blocks = r.expert_ids[: total // self.block_m].long()
        want = torch.repeat_interleave(torch.arange(EXPERTS, device="cuda"),
                                       (counts + self.block_m - 1) // self.block_m)
        notes.append(f"expert per block as expected {bool(torch.equal(blocks, want))}")
        hit = [int(torch.unique(x.topk_ids).numel()) for x in self.R]
        every = int(torch.unique(torch.cat([x.topk_ids.flatten() for x in self.R])).numel())
        notes.append(f"experts hit per copy {hit}, by all copies {every}")
        for name, t in (("c1", self.c1), ("c2", self.c2), ("moe_out", self.moe_out), ("lat", self.lat)):
            notes.append(f"{name} finite {bool(torch.isfinite(t.float()).all())} nonzero {bool((t != 0).any())}")
        return "; ".join(notes)


class Routing:
    """One copy's routing: the router's top-k and moe_align_block_size's output for n token copies."""

    def __init__(self, n, block_m, z):
        size = n + EXPERTS * (block_m - 1)
        self.topk_ids, self.topk_w = z(n // TOP_K, TOP_K, dt=torch.int32), z(n // TOP_K, TOP_K, dt=torch.float32)
        self.sorted_ids, self.expert_ids = z(size, dt=torch.int32), z(triton.cdiv(size, block_m), dt=torch.int32)
        self.total, self.starts, self.counts = z(1, dt=torch.int32), z(EXPERTS, dt=torch.int32), z(EXPERTS, dt=torch.int32)


def experts_weights(log):
    t0 = time.time()
    w1 = fp8((EXPERTS, 2 * EXPERT_F, HIDDEN))
    w2 = fp8((EXPERTS, HIDDEN, EXPERT_F))
    s1 = torch.rand(EXPERTS, triton.cdiv(2 * EXPERT_F, 128), HIDDEN // 128, device="cuda") * 0.01 + 0.005
    s2 = torch.rand(EXPERTS, HIDDEN // 128, triton.cdiv(EXPERT_F, 128), device="cuda") * 0.01 + 0.005
    log(f"layer: routed experts {(w1.numel() + w2.numel()) / 1e9:.2f} GB fp8 made in {time.time() - t0:.1f} s")
    return w1, s1, w2, s2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="deepseek-v3-tp8", choices=["deepseek-v3-tp8"] + sorted(dl.DENSE),
                    help="the layer: DeepSeek-V3's at TP8 (MLA, MoE) or a dense Llama-3.1 layer (GQA)")
    ap.add_argument("--fused-moe-kernel", default="", help="a Python file defining vLLM's Triton fused_moe_kernel "
                    "(the DeepSeek-V3 layer needs it)")
    ap.add_argument("--rev", default="", help="the shardwise git revision, for the rows' provenance")
    ap.add_argument("--batches", default="1,8,16,32,64,128,256")
    ap.add_argument("--context", type=int, default=1536, help="tokens in each sequence's KV cache")
    ap.add_argument("--silicon", default="")
    args = ap.parse_args()
    try:
        batches = [int(x) for x in args.batches.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"bench/silicon/measure_layer.py: --batches: '{args.batches}' is not a comma-separated list of integers")
    if not torch.cuda.is_available():
        sys.exit("bench/silicon/measure_layer.py: PyTorch sees no GPU")
    dense = args.model in dl.DENSE
    kernel, origin = (None, "none (dense)") if dense else m.load_fused_moe_kernel(args.fused_moe_kernel)
    if kernel is None and not dense:
        sys.exit("bench/silicon/measure_layer.py: --fused-moe-kernel: the DeepSeek-V3 layer needs vLLM's fused_moe_kernel")
    label, tp = (f"{args.model.rsplit('-tp', 1)[0]} tp{dl.DENSE[args.model][5]} decode", dl.DENSE[args.model][5]) if dense \
        else (MODEL, 8)
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    facts = m.device_facts()
    name = m.silicon_name(facts["device"], args.silicon)
    smi = (facts["nvidia_smi"] or "").replace(",", ";")
    locator = (f"shardwise bench/silicon/measure_layer.py@{args.rev or 'unknown-rev'}: {facts['device']}; nvidia-smi {smi}; "
               f"torch {facts['torch']} CUDA {facts['cuda']}; triton {triton.__version__}; fused MoE {origin}; "
               f"CUDA-graph median of {m.REPLAYS} replays; {facts['date']}")
    facts.update({"silicon": name, "locator": locator, "fused_moe": origin, "triton": triton.__version__})
    stem = "layer" if not dense else f"layer-{args.model}"
    log_file = open(os.path.join(args.out, f"{stem}.log"), "w")

    def log(msg):
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    log(json.dumps(facts))
    experts_w = None if dense else experts_weights(log)
    op_rows, layer_rows, failed = [], [], []
    for b in batches:
        t0 = time.time()
        mine = []  # this batch's op rows, kept only when its whole layer was measured
        try:
            per_copy = dl.DenseWeights(1, 1, dl.DENSE[args.model]).nbytes() if dense else Weights(1, 1).nbytes()
            copies = max(4, m.rotation(per_copy, facts["l2_bytes"]))
            layer = dl.DenseLayer(args.model, b, args.context, copies, log) if dense else \
                Layer(b, args.context, copies, experts_w, kernel, log)
            for c in range(copies):
                layer.run(c)
            log(f"layer b={b}: {layer.check()}")
            total = 0.0
            for op, kname, fn in layer.ops:
                for c in range(copies):  # every op's inputs as the layer leaves them, not as the last op alone did
                    layer.run(c)
                us, reps = m.time_graph(lambda i, fn=fn: fn(i % copies), copies, target_ms=1.0)
                total += us
                mine.append([name, label, tp, op, kname, b, args.context, f"{us:.3f}", "us", locator])
                log(f"layer b={b:4d} {op:14s} {us:9.2f} us  ({kname})")
            for c in range(copies):
                layer.run(c)
            log(f"layer b={b}: after the ops alone and the layer again: {layer.check()}")
            byname = {op: fn for op, _, fn in layer.ops}
            for op in [o for o in ("experts_up", "experts_down", "attention", "qkv_a_proj", "gate_up") if o in byname]:
                ev = m.time_events(lambda i, fn=byname[op]: fn(i % copies), copies, reps=40)
                gr, _ = m.time_graph(lambda i, fn=byname[op]: fn(i % copies), copies, target_ms=5.0)
                log(f"layer b={b}: cross-check {op}: eager events {ev:.2f} us, graph (5 ms) {gr:.2f} us")
            parts = [("without attention", [o for o, _, _ in layer.ops if o != "attention"])]
            if not dense:
                parts.insert(0, ("moe block", [o for o, _, _ in layer.ops][15:]))
            for part, names in parts:
                fns = [byname[o] for o in names]
                for c in range(copies):
                    layer.run(c)
                gr, _ = m.time_graph(lambda i, fns=fns: [f(i % copies) for f in fns], copies, target_ms=20.0)
                log(f"layer b={b}: {part} ({len(fns)} ops, from {names[0]}) whole {gr:.2f} us")
            us, reps = m.time_graph(lambda i: layer.run(i % copies), copies, target_ms=20.0)
            attn = sum(float(r[7]) for r in mine if r[3] == "attention")
            op_rows.extend(mine)
            layer_rows.append([name, label, tp, b, args.context, len(layer.ops), f"{total:.3f}", f"{us:.3f}", "us", locator])
            log(f"layer b={b:4d} SUM of {len(layer.ops)} ops {total:9.2f} us; WHOLE layer {us:9.2f} us ({reps} layers per graph, "
                f"{copies} copies); attention (torch) {attn:.2f} us; {time.time() - t0:.0f} s")
            del layer
            torch.cuda.empty_cache()
        except (RuntimeError, torch.OutOfMemoryError, TypeError, ValueError, AttributeError) as err:
            log(f"layer b={b}: FAILED {type(err).__name__}: {str(err)[:600]} (its op rows are left out)")
            failed.append(b)
            torch.cuda.empty_cache()
        m.write_csv(os.path.join(args.out, f"{stem}_ops.csv"),
                    ["silicon", "model", "tp", "op", "kernel", "tokens", "context", "value", "unit", "source_locator"], op_rows)
        m.write_csv(os.path.join(args.out, f"{stem}.csv"),
                    ["silicon", "model", "tp", "tokens", "context", "ops", "ops_sum", "layer", "unit", "source_locator"],
                    layer_rows)
    meta = os.path.join(args.out, f"{stem}-meta.json")
    with open(meta + ".tmp", "w") as f:
        json.dump(facts, f, indent=1)
    os.replace(meta + ".tmp", meta)  # whole or not at all, as the tables
    log_file.close()
    if failed:
        sys.exit(f"bench/silicon/measure_layer.py: the layer failed at {len(failed)} of {len(batches)} batch sizes "
                 f"({', '.join(map(str, failed))}); {stem}.log says why")


if __name__ == "__main__":
    main()
