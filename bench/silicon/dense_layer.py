"""One decoder layer of a dense GQA model (Llama-3.1) as one tensor-parallel rank runs it in
decode, fp8 weights with dynamic activation quantisation: the ops in the order a rank runs them,
each a callable of the rotated copy. Used by measure_layer.py (--model llama-3.1-70b-tp8,
llama-3.1-8b-tp1); the same method and kernels as its DeepSeek-V3 layer.
"""
import torch

import layer_kernels as lk
import measure as m

# (hidden, q heads, kv heads, head dim, ffn width) per rank
DENSE = {"llama-3.1-70b-tp8": (8192, 64 // 8, 8 // 8, 128, 28672 // 8, 8),
         "llama-3.1-8b-tp1": (4096, 32, 8, 128, 14336, 1)}


def fp8(shape, scale=0.05):
    return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale).to(m.fp8_dtype())


def col_scale(n):
    return torch.rand(1, n, device="cuda", dtype=torch.float32) * 0.01 + 0.005


class DenseWeights:
    def __init__(self, b, ctx, cfg):
        h, hq, hk, d, f, _ = cfg
        self.w_qkv, self.s_qkv = fp8(((hq + 2 * hk) * d, h)), col_scale((hq + 2 * hk) * d)
        self.w_o, self.s_o = fp8((h, hq * d)), col_scale(h)
        self.w_up, self.s_up = fp8((2 * f, h)), col_scale(2 * f)
        self.w_down, self.s_down = fp8((h, f)), col_scale(h)
        self.n_in = 1 + torch.randn(h, device="cuda", dtype=torch.bfloat16) * 0.1
        self.n_post = 1 + torch.randn(h, device="cuda", dtype=torch.bfloat16) * 0.1
        self.k_cache = torch.randn(b, hk, ctx, d, device="cuda", dtype=torch.bfloat16)
        self.v_cache = torch.randn(b, hk, ctx, d, device="cuda", dtype=torch.bfloat16)
        self.x_in = torch.randn(b, h, device="cuda", dtype=torch.bfloat16)
        self.res_in = torch.randn(b, h, device="cuda", dtype=torch.bfloat16)

    def nbytes(self):
        return sum(t.numel() * t.element_size() for t in vars(self).values() if torch.is_tensor(t))


class DenseLayer:
    def __init__(self, model, b, ctx, copies, log):
        self.cfg = DENSE[model]
        h, hq, hk, d, f, self.tp = self.cfg
        self.b, self.ctx, self.copies = b, ctx, copies
        self.W = [DenseWeights(b, ctx, self.cfg) for _ in range(copies)]
        f8 = m.fp8_dtype()
        z = lambda *s, dt=torch.bfloat16: (torch.empty(*s, device="cuda", dtype=dt) if dt == f8  # noqa: E731
                                             else torch.zeros(*s, device="cuda", dtype=dt))
        self.sa = torch.rand(b, 1, device="cuda", dtype=torch.float32) + 0.5
        self.h, self.res1, self.h2, self.res2 = z(b, h), z(b, h), z(b, h), z(b, h)
        self.hq, self.hs = z(b, h, dt=f8), z(b, h // 128, dt=torch.float32)
        self.h2q, self.h2s = z(b, h, dt=f8), z(b, h // 128, dt=torch.float32)
        self.qkv = z(b, (hq + 2 * hk) * d)
        self.attn = z(b, hq * d)
        self.oq, self.os = z(b, hq * d, dt=f8), z(b, hq * d // 128, dt=torch.float32)
        self.o_out = z(b, h)
        self.up, self.act = z(b, 2 * f), z(b, f)
        self.aq, self.as_ = z(b, f, dt=f8), z(b, f // 128, dt=torch.float32)
        self.down = z(b, h)
        self.pos = torch.full((b,), ctx - 1, device="cuda", dtype=torch.int64)
        angle = torch.arange(ctx, device="cuda", dtype=torch.float32)[:, None] * \
            torch.logspace(0, -4, d // 2, device="cuda")[None, :]
        self.rope_cache = torch.cat([angle.cos(), angle.sin()], 1).to(torch.bfloat16)
        # does _scaled_mm take out=? (torch >= 2.5 does); else a copy per GEMM, logged
        self.mm_copy = False
        try:
            self.mm(self.hq, self.W[0].w_qkv, self.W[0].s_qkv, self.qkv)
        except (TypeError, RuntimeError) as err:
            self.mm_copy = True
            log(f"layer: torch._scaled_mm(out=) refused ({str(err).splitlines()[0][:120]}); each GEMM adds a copy")
        self.ops = self.build()

    def mm(self, a, w, sw, out):
        """fp8 GEMM with row-wise scales (cuBLASLt), into out (a copy where torch refuses out=)."""
        if self.mm_copy:
            out.copy_(torch._scaled_mm(a, w.t(), scale_a=self.sa, scale_b=sw, out_dtype=torch.bfloat16))
        else:
            torch._scaled_mm(a, w.t(), scale_a=self.sa, scale_b=sw, out_dtype=torch.bfloat16, out=out)

    def attention(self, c):
        """GQA decode over the KV cache: torch's scaled_dot_product_attention (its flash or
        memory-efficient kernel), not the engines' paged decode kernel."""
        h, hq, hk, d, f, _ = self.cfg
        W = self.W[c]
        q = self.qkv[:, : hq * d].view(self.b, hq, 1, d)
        out = torch.nn.functional.scaled_dot_product_attention(q, W.k_cache, W.v_cache, enable_gqa=hq != hk)
        self.attn.view(self.b, hq, d).copy_(out.view(self.b, hq, d))

    def build(self):
        h, hq, hk, d, f, _ = self.cfg
        b, ctx = self.b, self.ctx
        qkv = self.qkv.view(b, hq + 2 * hk, d)
        T = "Triton (one kernel, as the engines' fused op)"
        G = "torch._scaled_mm fp8 rowwise (cuBLASLt)"
        return [
            ("input_norm", T + " fused add+RMSNorm", lambda c: lk.rmsnorm(self.W[c].x_in, self.W[c].n_in, self.h,
                                                                         self.W[c].res_in, self.res1)),
            ("quant_hidden", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.h, self.hq, self.hs)),
            ("qkv_proj", G, lambda c: self.mm(self.hq, self.W[c].w_qkv, self.W[c].s_qkv, self.qkv)),
            ("rope", T + " rotary (q and k)", lambda c: lk.rope(qkv[:, :hq], qkv[:, hq:hq + hk], self.pos, self.rope_cache)),
            ("kv_store", "torch copy (k and v into the KV cache)",
             lambda c: (self.W[c].k_cache[:, :, ctx - 1, :].copy_(qkv[:, hq:hq + hk]),
                        self.W[c].v_cache[:, :, ctx - 1, :].copy_(qkv[:, hq + hk:]))),
            ("attention", "torch scaled_dot_product_attention (GQA decode; not the engines' paged kernel) + copy",
             lambda c: self.attention(c)),
            ("quant_o", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.attn, self.oq, self.os)),
            ("o_proj", G, lambda c: self.mm(self.oq, self.W[c].w_o, self.W[c].s_o, self.o_out)),
            ("post_norm", T + " fused add+RMSNorm",
             lambda c: lk.rmsnorm(self.o_out, self.W[c].n_post, self.h2, self.res1, self.res2)),
            ("quant_ffn", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.h2, self.h2q, self.h2s)),
            ("gate_up", G, lambda c: self.mm(self.h2q, self.W[c].w_up, self.W[c].s_up, self.up)),
            ("act", T + " silu_and_mul", lambda c: lk.silu_mul(self.up, self.act)),
            ("quant_act", T + " per-token-group fp8 quant", lambda c: lk.group_quant(self.act, self.aq, self.as_)),
            ("down", G, lambda c: self.mm(self.aq, self.W[c].w_down, self.W[c].s_down, self.down)),
        ]

    def run(self, c):
        for _, _, fn in self.ops:
            fn(c)

    def check(self):
        torch.cuda.synchronize()
        return "; ".join(f"{n} finite {bool(torch.isfinite(t.float()).all())} nonzero {bool((t != 0).any())}"
                         for n, t in (("attn", self.attn), ("down", self.down), ("h2", self.h2)))
