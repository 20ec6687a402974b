// The SPMD executor (docs/exec.md). Activations are held as the whole logical
// tensor on every rank with NaN where the rank holds nothing, plus the layout
// (replicated, split on tokens, split on features, partial sums) over a group:
// a computation that reads data its rank does not hold yields NaN and fails the
// logits check. Splits are equal contiguous blocks: tokens in order; features in
// a canonical order where block c is what rank c of the group holds (q heads,
// then the kv features of block c for q/k/v; gate then up block c for a gated
// MLP; o heads then their softmax sums for a context-split attention).
#include "exec/executor.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace shardwise::exec {
namespace {

enum class Lay : std::uint8_t { kR, kSt, kSf, kP };
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A broken executor rule: stop every rank at once (unwinding could block in a collective
// another rank never enters); exit code 3 tells `shardwise verify` the run itself failed.
[[noreturn]] void fail(const std::string& why) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "shardwise-exec: rank %d: %s\n", rank, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}
void require(bool ok, const char* what) {
  if (!ok) fail(what);
}

Mat nanmat(Eigen::Index r, Eigen::Index c) { return Mat::Constant(r, c, kNaN); }

struct Comm {
  MPI_Comm c = MPI_COMM_NULL;
  int n = 1, me = 0;
};

// A distributed activation: the whole tensor, NaN where absent.
struct DT {
  Mat m;
  Lay lay = Lay::kR;
  double bpe = 2.0;  // logical bytes per element (activations bf16, logits fp32)
};


class Executor {
 public:
  Executor(const Case& c, const Weights& w, const Inputs& in, const Fault& f, MPI_Comm world)
      : c_(c), m_(c.model), w_(w), in_(in), fault_(f), world_(world) {
    int rank = 0, size = 0;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    const Degrees& d = c.plan.deg;
    require(size == d.instance_gpus(), "the number of MPI ranks must equal tp x attn_dp x pp");
    tp_n_ = d.tp;
    a_n_ = d.attn_dp;
    pp_n_ = d.pp;
    w_n_ = d.tp * d.attn_dp;
    ep_n_ = d.ep;
    etp_n_ = w_n_ / ep_n_;
    rank_ = rank;
    t_ = rank % tp_n_;
    ai_ = (rank / tp_n_) % a_n_;
    st_ = rank / w_n_;
    wr_ = rank % w_n_;
    split(world, st_ * a_n_ + ai_, t_, tp_);
    split(world, st_, wr_, stage_);
    split(world, st_ * ep_n_ + wr_ / etp_n_, wr_ % etp_n_, etp_);
    s_ = c.seqs_per_micro();
    bg_ = c.seqs_per_group();
    stage_range_ = stage_layers(m_.num_layers, pp_n_, st_);  // uneven when pp does not divide, as the simulator
    layers_per_stage_ = stage_range_.size();
    const auto ch = [&](Slot s) { return static_cast<int>(c.plan.sharding[static_cast<std::size_t>(s)]); };
    for (int i = 0; i < kNumSlots; ++i) choice_[i] = ch(static_cast<Slot>(i));
    attn_need_ = choice_[static_cast<int>(Slot::kAttnNorm)] == 0 ? Lay::kR : Lay::kSt;
    ffn_need_ = choice_[static_cast<int>(Slot::kFfnNorm)] == 0 ? Lay::kR : Lay::kSt;
    mla_ = m_.attention == AttentionKind::kMla;
    caches_.resize(static_cast<std::size_t>(layers_per_stage_));
  }
  ~Executor() {
    for (Comm* g : {&tp_, &stage_, &etp_}) MPI_Comm_free(&g->c);
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  RankResult run() {
    phase_ = Phase::kPrefill;
    step_ = 0;
    for (std::int32_t mu = 0; mu < c_.m; ++mu) micro_batch(mu);
    drop_foreign_positions();
    phase_ = Phase::kDecode;
    for (std::int32_t st = 1; st <= c_.decode_steps; ++st) {
      step_ = st;
      for (std::int32_t mu = 0; mu < c_.m; ++mu) micro_batch(mu);
    }
    return {std::move(logits_), std::move(ledger_), dropped_};
  }

 private:
  static void split(MPI_Comm world, int color, int key, Comm& g) {
    MPI_Comm_split(world, color, key, &g.c);
    MPI_Comm_size(g.c, &g.n);
    MPI_Comm_rank(g.c, &g.me);
  }

  int choice(Slot s) const { return choice_[static_cast<int>(s)]; }
  bool prefill() const { return phase_ == Phase::kPrefill; }
  std::int64_t tg() const { return prefill() ? s_ * c_.isl : s_; }  // tokens per attention group in a micro-batch
  std::int64_t big_t() const { return tg() * a_n_; }                 // tokens of the stage
  // row r of the group's tokens -> (sequence, position)
  std::int64_t row_seq(std::int32_t mu, std::int64_t r) const { return ai_ * bg_ + mu * s_ + (prefill() ? r / c_.isl : r); }
  std::int64_t row_pos(std::int64_t r) const { return prefill() ? r % c_.isl : c_.isl + step_ - 1; }

  // --- the ledger and the fault -------------------------------------------------
  // The fault's index counts the collectives of one execution of an op: a new op or layer
  // starts a new execution, and so do a micro-batch and a pipeline send (the receive of the
  // next micro-batch has the same op and layer).
  void new_op_execution() { last_op_.clear(); }
  // Called at every collective that moves data, in order.
  bool dropped(const char* op) {
    if (op != last_op_ || layer_ != last_layer_) {
      last_op_ = op;
      last_layer_ = layer_;
      nth_ = 0;
    } else {
      ++nth_;
    }
    const bool hit = fault_.active() && fault_.op == op && fault_.layer == layer_ && (fault_.index < 0 || fault_.index == nth_) &&
                     (fault_.phase < 0 || fault_.phase == static_cast<int>(phase_));
    dropped_ += hit ? 1 : 0;
    return hit;
  }
  void record(const char* op, CollKind k, const char* gname, double bytes) {
    if (bytes > 0) ledger_[LedgerKey{phase_, layer_, op, k, gname}] += bytes;
  }

  // --- layout conversions ----------------------------------------------------------
  // Converts x to `to` over g with the collective the simulator charges (docs/cost-model.md).
  void convert(DT& x, Lay to, const Comm& g, const char* op, const char* gname) {
    if (x.lay == to) return;
    if (g.n == 1) {  // one rank holds everything
      x.lay = to;
      return;
    }
    if (x.lay == Lay::kR) {  // a free slice: the rank keeps its block and drops the rest
      require(to != Lay::kP, "no conversion produces partial sums");
      mask(x, to, g);
      x.lay = to;
      return;
    }
    require(to != Lay::kP, "no conversion produces partial sums");
    if (dropped(op)) {
      x.lay = to;
      return;
    }
    const Eigen::Index rows = x.m.rows(), cols = x.m.cols();
    const int n = g.n, me = g.me;
    if ((x.lay == Lay::kSt || to == Lay::kSt) && rows % n != 0) fail(fmt::format("{}: {} tokens do not split over {} ranks", op, rows, n));
    if ((x.lay == Lay::kSf || to == Lay::kSf) && cols % n != 0) fail(fmt::format("{}: {} features do not split over {} ranks", op, cols, n));
    const Eigen::Index rb = rows / n, cb = cols / n;
    std::vector<double> send, recv;
    const auto pack_block = [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc, std::vector<double>& out) {
      for (Eigen::Index r = r0; r < r0 + nr; ++r)
        for (Eigen::Index cc = c0; cc < c0 + nc; ++cc) out.push_back(x.m(r, cc));
    };
    const auto unpack_block = [&](Mat& dst, Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc, const double* src) {
      for (Eigen::Index r = r0; r < r0 + nr; ++r)
        for (Eigen::Index cc = c0; cc < c0 + nc; ++cc) dst(r, cc) = *src++;
    };
    const double elems = static_cast<double>(rows * cols);
    if (x.lay == Lay::kP && to == Lay::kR) {
      MPI_Allreduce(MPI_IN_PLACE, x.m.data(), static_cast<int>(x.m.size()), MPI_DOUBLE, MPI_SUM, g.c);
      record(op, CollKind::kAllReduce, gname, 2.0 * (n - 1) / n * elems * x.bpe);
    } else if (x.lay == Lay::kP) {  // reduce-scatter to tokens or features
      const bool by_rows = to == Lay::kSt;
      for (int j = 0; j < n; ++j) by_rows ? pack_block(j * rb, rb, 0, cols, send) : pack_block(0, rows, j * cb, cb, send);
      const int count = static_cast<int>(by_rows ? rb * cols : rows * cb);
      recv.resize(static_cast<std::size_t>(count));
      MPI_Reduce_scatter_block(send.data(), recv.data(), count, MPI_DOUBLE, MPI_SUM, g.c);
      Mat out = nanmat(rows, cols);
      by_rows ? unpack_block(out, me * rb, rb, 0, cols, recv.data()) : unpack_block(out, 0, rows, me * cb, cb, recv.data());
      x.m = std::move(out);
      record(op, CollKind::kReduceScatter, gname, static_cast<double>(n - 1) * count * x.bpe);
    } else if (to == Lay::kR) {  // all-gather of tokens or features
      const bool by_rows = x.lay == Lay::kSt;
      by_rows ? pack_block(me * rb, rb, 0, cols, send) : pack_block(0, rows, me * cb, cb, send);
      const int count = static_cast<int>(send.size());
      recv.resize(static_cast<std::size_t>(count) * static_cast<std::size_t>(n));
      MPI_Allgather(send.data(), count, MPI_DOUBLE, recv.data(), count, MPI_DOUBLE, g.c);
      for (int j = 0; j < n; ++j) {
        const double* src = recv.data() + static_cast<std::ptrdiff_t>(j) * count;
        by_rows ? unpack_block(x.m, j * rb, rb, 0, cols, src) : unpack_block(x.m, 0, rows, j * cb, cb, src);
      }
      record(op, CollKind::kAllGather, gname, static_cast<double>(n - 1) * count * x.bpe);
    } else {  // tokens <-> features: all-to-all
      const bool to_features = to == Lay::kSf;
      for (int j = 0; j < n; ++j) to_features ? pack_block(me * rb, rb, j * cb, cb, send) : pack_block(j * rb, rb, me * cb, cb, send);
      const int count = static_cast<int>(rb * cb);
      recv.resize(send.size());
      MPI_Alltoall(send.data(), count, MPI_DOUBLE, recv.data(), count, MPI_DOUBLE, g.c);
      Mat out = nanmat(rows, cols);
      for (int j = 0; j < n; ++j) {
        const double* src = recv.data() + static_cast<std::ptrdiff_t>(j) * count;
        to_features ? unpack_block(out, j * rb, rb, me * cb, cb, src) : unpack_block(out, me * rb, rb, j * cb, cb, src);
      }
      x.m = std::move(out);
      record(op, CollKind::kAllToAll, gname, static_cast<double>(n - 1) * count * x.bpe);
    }
    x.lay = to;
  }

  // NaN outside the rank's block of tokens (St) or features (Sf).
  static void mask(DT& x, Lay to, const Comm& g) {
    const Eigen::Index rows = x.m.rows(), cols = x.m.cols();
    if (to == Lay::kSt) {
      if (rows % g.n != 0) fail(fmt::format("{} tokens do not split over {} ranks", rows, g.n));
      const Eigen::Index rb = rows / g.n;
      x.m.topRows(g.me * rb).setConstant(kNaN);
      x.m.bottomRows(rows - (g.me + 1) * rb).setConstant(kNaN);
    } else {
      if (cols % g.n != 0) fail(fmt::format("{} features do not split over {} ranks", cols, g.n));
      const Eigen::Index cb = cols / g.n;
      x.m.leftCols(g.me * cb).setConstant(kNaN);
      x.m.rightCols(cols - (g.me + 1) * cb).setConstant(kNaN);
    }
  }

  // Attention scope (the group's tg tokens over tp) -> MLP scope (the stage's T tokens over W).
  DT to_mlp(const DT& x, Lay need, const char* op) {
    if (a_n_ == 1) {
      DT y = x;
      convert(y, need, tp_, op, "tp");
      return y;
    }
    const std::int64_t T = big_t(), rb = T / w_n_;
    DT y{nanmat(T, x.m.cols()), Lay::kSt, x.bpe};
    y.m.middleRows(wr_ * rb, rb) = x.m.middleRows(t_ * rb, rb);  // my slice of my group's tokens is my slice of the stage's
    if (x.lay == Lay::kR && need == Lay::kR) {
      convert(y, Lay::kR, stage_, op, "attn_dp");
    } else {
      convert(y, need, stage_, op, "mlp");
    }
    return y;
  }
  // MLP scope -> attention scope.
  DT to_attn(DT y, Lay need, const char* op) {
    if (a_n_ == 1) {
      convert(y, need, tp_, op, "tp");
      return y;
    }
    convert(y, Lay::kSt, stage_, op, "mlp");
    const std::int64_t rb = big_t() / w_n_;
    DT x{nanmat(tg(), y.m.cols()), Lay::kSt, y.bpe};
    x.m.middleRows(t_ * rb, rb) = y.m.middleRows(wr_ * rb, rb);
    convert(x, need, tp_, op, "tp");
    return x;
  }

  // --- ops --------------------------------------------------------------------------
  static void norm_rows(DT& x, const Vec& gain, int n, int me) {
    if (x.lay == Lay::kSt && n > 1) {
      const Eigen::Index rb = x.m.rows() / n;
      Mat part = x.m.middleRows(me * rb, rb);
      rms_norm_rows(part, gain);
      x.m.setConstant(kNaN);
      x.m.middleRows(me * rb, rb) = part;
    } else {
      rms_norm_rows(x.m, gain);
    }
  }

  // GQA: canonical position of q / k / v features over tp (block c: q heads, k and v features of block c).
  struct QkvMap {
    std::int64_t n = 1, qh = 0, kf = 0, cs = 0, d = 0;
    [[nodiscard]] std::int64_t q(std::int64_t head, std::int64_t j) const { return head / qh * cs + head % qh * d + j; }
    [[nodiscard]] std::int64_t k(std::int64_t fi) const { return fi / kf * cs + qh * d + fi % kf; }
    [[nodiscard]] std::int64_t v(std::int64_t fi) const { return fi / kf * cs + qh * d + kf + fi % kf; }
  };
  QkvMap qkv_map() const {
    QkvMap q;
    const std::int64_t nh = m_.num_heads, nkv = m_.num_kv_heads, d = m_.head_dim;
    q.n = (nh % tp_n_ == 0 && nkv * d % tp_n_ == 0) ? tp_n_ : 1;
    // only qkv_proj=heads splits these features, and validate_plan makes them divisible then
    if (q.n == 1 && choice(Slot::kQkv) == 0 && tp_n_ > 1) fail("q/k/v features do not split over tp");
    q.qh = nh / q.n;
    q.kf = nkv * d / q.n;
    q.cs = q.qh * d + 2 * q.kf;
    q.d = d;
    return q;
  }
  std::int64_t mla_per_head() const { return m_.mla.qk_nope_head_dim * 2 + m_.mla.qk_rope_head_dim + m_.mla.v_head_dim; }

  // The q/k/v projection. Returns q.out (and, for MLA, the replicated latent and rope key in `lat`).
  DT qkv_proj(std::int64_t l, const DT& xin, Mat* lat) {
    const int c = choice(Slot::kQkv);  // heads (col) | hidden (row) | none
    const Lay in = c == 0 ? Lay::kR : c == 1 ? Lay::kSf : Lay::kR;
    DT x = xin;
    convert(x, in, tp_, "qkv_proj", "tp");
    const std::int64_t rows = tg(), nh = m_.num_heads;
    if (mla_) {
      const auto& a = m_.mla;
      const std::int64_t per = mla_per_head(), dqk = a.qk_nope_head_dim + a.qk_rope_head_dim, kvp = a.qk_nope_head_dim + a.v_head_dim;
      Mat q;
      if (a.q_lora_rank > 0) {
        Mat qa = x.m * w_.m(lname(l, "wq_a"));
        rms_norm_rows(qa, w_.v(lname(l, "q_norm")));
        q = qa * w_.m(lname(l, "wq_b"));
      } else {
        q = x.m * w_.m(lname(l, "wq"));
      }
      const Mat kva = x.m * w_.m(lname(l, "wkv_a"));
      Mat latent = kva.leftCols(a.kv_lora_rank);
      rms_norm_rows(latent, w_.v(lname(l, "kv_norm")));
      *lat = Mat(rows, a.kv_lora_rank + a.qk_rope_head_dim);
      *lat << latent, kva.rightCols(a.qk_rope_head_dim);
      const Mat kvb = latent * w_.m(lname(l, "wkv_b"));
      const std::int64_t h0 = c == 0 ? t_ * nh / tp_n_ : 0, h1 = c == 0 ? (t_ + 1) * nh / tp_n_ : nh;
      DT y{nanmat(rows, nh * per), c == 0 ? Lay::kSf : Lay::kR, 2.0};
      for (std::int64_t hd = h0; hd < h1; ++hd) {
        y.m.middleCols(hd * per, dqk) = q.middleCols(hd * dqk, dqk);
        y.m.middleCols(hd * per + dqk, kvp) = kvb.middleCols(hd * kvp, kvp);
      }
      return y;
    }
    const QkvMap mp = qkv_map();
    const std::int64_t d = m_.head_dim, nkv = m_.num_kv_heads, width = mp.cs * mp.n;
    // the weight in canonical column order
    Mat wc(m_.hidden, width);
    const Mat& wq = w_.m(lname(l, "wq"));
    const Mat& wk = w_.m(lname(l, "wk"));
    const Mat& wv = w_.m(lname(l, "wv"));
    for (std::int64_t hd = 0; hd < nh; ++hd)
      for (std::int64_t j = 0; j < d; ++j) wc.col(mp.q(hd, j)) = wq.col(hd * d + j);
    for (std::int64_t fi = 0; fi < nkv * d; ++fi) {
      wc.col(mp.k(fi)) = wk.col(fi);
      wc.col(mp.v(fi)) = wv.col(fi);
    }
    if (c == 1) {  // row-parallel: my hidden block, partial sums of everything
      const std::int64_t hb = m_.hidden / tp_n_;
      return DT{x.m.middleCols(t_ * hb, hb) * wc.middleRows(t_ * hb, hb), Lay::kP, 2.0};
    }
    if (c == 2) return DT{x.m * wc, Lay::kR, 2.0};
    // column-parallel: my canonical block, and my whole kv head when tp exceeds the kv heads
    DT y{nanmat(rows, width), Lay::kSf, 2.0};
    std::vector<std::int64_t> cols;
    for (std::int64_t j = t_ * mp.cs; j < (t_ + 1) * mp.cs; ++j) cols.push_back(j);
    if (tp_n_ > nkv && choice(Slot::kAttention) == 0) {  // heads-split attention needs its whole (shared) kv head
      const std::int64_t g = t_ / (tp_n_ / nkv);
      for (std::int64_t j = 0; j < d; ++j) {
        cols.push_back(mp.k(g * d + j));
        cols.push_back(mp.v(g * d + j));
      }
    }
    for (std::int64_t j : cols) y.m.col(j) = x.m * wc.col(j);
    return y;
  }

  // One sequence's cache in one layer: per position, GQA [K | V], MLA [latent | rope | per-head k_nope, v of
  // this call's own tokens]; empty where this rank keeps nothing.
  using SeqCache = std::vector<Vec>;
  SeqCache& cache(std::int64_t local_layer, std::int64_t seq) { return caches_[static_cast<std::size_t>(local_layer)][seq]; }
  std::int64_t kv_elems() const {
    return mla_ ? m_.mla.kv_lora_rank + m_.mla.qk_rope_head_dim : 2 * m_.num_kv_heads * m_.head_dim;
  }
  void put(SeqCache& sc, std::int64_t pos, Vec e) {
    if (static_cast<std::int64_t>(sc.size()) <= pos) sc.resize(static_cast<std::size_t>(pos + 1));
    sc[static_cast<std::size_t>(pos)] = std::move(e);
  }
  // The cache entry of row r built from q.out (GQA) or the latent (MLA; per-head parts from q.out).
  Vec entry(const DT& q, const Mat& lat, std::int64_t r) const {
    const std::int64_t nh = m_.num_heads;
    if (mla_) {
      const std::int64_t per = mla_per_head(), dqk = m_.mla.qk_nope_head_dim + m_.mla.qk_rope_head_dim;
      const std::int64_t kvp = m_.mla.qk_nope_head_dim + m_.mla.v_head_dim, base = kv_elems();
      Vec e(base + nh * kvp);
      e.head(base) = lat.row(r).transpose();
      for (std::int64_t hd = 0; hd < nh; ++hd) e.segment(base + hd * kvp, kvp) = q.m.row(r).segment(hd * per + dqk, kvp).transpose();
      return e;
    }
    const QkvMap mp = qkv_map();
    const std::int64_t kvw = m_.num_kv_heads * m_.head_dim;
    Vec e(2 * kvw);
    for (std::int64_t fi = 0; fi < kvw; ++fi) {
      e[fi] = q.m(r, mp.k(fi));
      e[kvw + fi] = q.m(r, mp.v(fi));
    }
    return e;
  }
  // Key and value of head hd at a cache entry.
  void key_value(std::int64_t l, const Vec& e, std::int64_t hd, Vec& k, Vec& v) const {
    if (mla_) {
      const auto& a = m_.mla;
      const std::int64_t kvp = a.qk_nope_head_dim + a.v_head_dim, base = kv_elems();
      Vec kvb;
      if (e.size() > base) {
        kvb = e.segment(base + hd * kvp, kvp);
      } else {  // a cached position: its heads from the latent
        kvb = (e.head(a.kv_lora_rank).transpose() * w_.m(lname(l, "wkv_b")).middleCols(hd * kvp, kvp)).transpose();
      }
      k.resize(a.qk_nope_head_dim + a.qk_rope_head_dim);
      k << kvb.head(a.qk_nope_head_dim), e.segment(a.kv_lora_rank, a.qk_rope_head_dim);
      v = kvb.tail(a.v_head_dim);
      return;
    }
    const std::int64_t d = m_.head_dim, g = hd / (m_.num_heads / m_.num_kv_heads), kvw = m_.num_kv_heads * d;
    k = e.segment(g * d, d);
    v = e.segment(kvw + g * d, d);
  }
  Vec query(const DT& q, std::int64_t r, std::int64_t hd) const {
    if (mla_) {
      const std::int64_t dqk = m_.mla.qk_nope_head_dim + m_.mla.qk_rope_head_dim;
      return q.m.row(r).segment(hd * mla_per_head(), dqk).transpose();
    }
    const QkvMap mp = qkv_map();
    Vec out(m_.head_dim);
    for (std::int64_t j = 0; j < m_.head_dim; ++j) out[j] = q.m(r, mp.q(hd, j));
    return out;
  }

  // attention over the cached positions [lo, pos] this rank holds: un-normalised output and sum
  void attend(std::int64_t l, const SeqCache& sc, std::int64_t pos, std::int64_t window, const Vec& q, std::int64_t hd, Eigen::Ref<Eigen::RowVectorXd> o,
              double& sum, bool normalise) const {
    const std::int64_t lo = window > 0 ? std::max<std::int64_t>(0, pos - window + 1) : 0;
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size()));
    Vec k, v;
    std::vector<double> s;
    std::vector<Vec> vals;
    for (std::int64_t j = lo; j <= pos; ++j) {
      if (j >= static_cast<std::int64_t>(sc.size()) || sc[static_cast<std::size_t>(j)].size() == 0) {
        if (normalise) fail("attention: a position the rank should hold is missing");
        continue;
      }
      key_value(l, sc[static_cast<std::size_t>(j)], hd, k, v);
      s.push_back(q.dot(k) * scale);
      vals.push_back(v);
    }
    o.setZero();
    sum = 0;
    if (s.empty()) return;
    // a context split sums exp(score) across ranks, so no running maximum there (scores are O(1))
    const double mx = normalise ? *std::max_element(s.begin(), s.end()) : 0.0;
    for (std::size_t j = 0; j < s.size(); ++j) {
      const double p = std::exp(s[j] - mx);
      sum += p;
      o += p * vals[j].transpose();
    }
    if (normalise) o /= sum;
  }

  // qkv_proj -> attention -> o_proj; returns o_proj's output and its layout.
  DT attention_block(std::int64_t l, std::int64_t local_l, std::int32_t mu, const DT& xn, std::int64_t window) {
    Mat lat;
    DT q = qkv_proj(l, xn, &lat);
    const int ac = choice(Slot::kAttention);  // heads | context | none
    const bool ctx = ac == 1;
    const Lay attn_in = ac == 0 ? Lay::kSf : ctx ? (prefill() ? Lay::kSt : Lay::kR) : Lay::kR;
    if (q.lay == Lay::kR && attn_in == Lay::kSf && !mla_ && tp_n_ > m_.num_kv_heads) {
      // sliced from a replicated tensor, a rank keeps its q block and its whole (shared) kv head
      const QkvMap mp = qkv_map();
      const std::int64_t d = m_.head_dim, g = t_ / (tp_n_ / m_.num_kv_heads);
      const Mat keep = q.m;
      convert(q, attn_in, tp_, "attention", "tp");
      for (std::int64_t j = 0; j < d; ++j) {
        q.m.col(mp.k(g * d + j)) = keep.col(mp.k(g * d + j));
        q.m.col(mp.v(g * d + j)) = keep.col(mp.v(g * d + j));
      }
    } else {
      convert(q, attn_in, tp_, "attention", "tp");
    }
    const std::int64_t rows = tg(), nh = m_.num_heads;
    const std::int64_t dv = mla_ ? m_.mla.v_head_dim : m_.head_dim;
    // rows this rank queries, and heads
    const std::int64_t rb = rows / tp_n_;
    const std::int64_t r0 = (ctx && prefill()) ? t_ * rb : 0, r1 = (ctx && prefill()) ? (t_ + 1) * rb : rows;
    const std::int64_t h0 = ac == 0 ? t_ * nh / tp_n_ : 0, h1 = ac == 0 ? (t_ + 1) * nh / tp_n_ : nh;
    // 1. new tokens into the cache
    if (ctx && prefill()) {
      DT kv{nanmat(rows, kv_elems()), Lay::kSt, 2.0};  // the KV cache is bf16 in the case's workload
      for (std::int64_t r = r0; r < r1; ++r) kv.m.row(r) = entry(q, lat, r).head(kv_elems()).transpose();
      convert(kv, Lay::kR, tp_, "attention", "tp");  // every rank gets the keys and values of the group's tokens
      for (std::int64_t r = 0; r < rows; ++r) {
        Vec e = (r >= r0 && r < r1) ? entry(q, lat, r) : Vec(kv.m.row(r).transpose());
        put(cache(local_l, row_seq(mu, r)), row_pos(r), std::move(e));
      }
    } else {
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t pos = row_pos(r);
        if (ctx && pos % tp_n_ != t_) continue;  // decode with a context split: the position's owner keeps it
        put(cache(local_l, row_seq(mu, r)), pos, entry(q, lat, r));
      }
    }
    // 2. attend
    DT out;
    if (ctx && !prefill()) {
      // partial outputs and sums per head, canonical blocks [o heads of block c | sums of block c]
      const std::int64_t n = nh % tp_n_ == 0 ? tp_n_ : 1, qh = nh / n, cs = qh * (dv + 1);
      out = DT{Mat::Zero(rows, nh * (dv + 1)), Lay::kP, (static_cast<double>(nh * dv) * 2.0 + static_cast<double>(nh) * 4.0) / static_cast<double>(nh * (dv + 1))};
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t hd = 0; hd < nh; ++hd) {
          double sum = 0;
          const std::int64_t base = hd / qh * cs;
          attend(l, cache(local_l, row_seq(mu, r)), row_pos(r), window, query(q, r, hd), hd,
                 out.m.row(r).segment(base + hd % qh * dv, dv), sum, false);
          out.m(r, base + qh * dv + hd % qh) = sum;
        }
      }
      const int oc = choice(Slot::kOProj);
      convert(out, oc == 0 ? Lay::kSf : Lay::kR, tp_, "o_proj", "tp");
      DT o{nanmat(rows, nh * dv), out.lay, 2.0};
      for (std::int64_t hd = 0; hd < nh; ++hd) {
        const std::int64_t base = hd / qh * cs;
        for (std::int64_t r = 0; r < rows; ++r) {
          o.m.row(r).segment(hd * dv, dv) = out.m.row(r).segment(base + hd % qh * dv, dv) / out.m(r, base + qh * dv + hd % qh);
        }
      }
      out = std::move(o);
    } else {
      out = DT{nanmat(rows, nh * dv), ac == 0 ? Lay::kSf : ctx ? Lay::kSt : Lay::kR, 2.0};
      for (std::int64_t r = r0; r < r1; ++r) {
        for (std::int64_t hd = h0; hd < h1; ++hd) {
          double sum = 0;
          attend(l, cache(local_l, row_seq(mu, r)), row_pos(r), window, query(q, r, hd), hd, out.m.row(r).segment(hd * dv, dv), sum, true);
        }
      }
    }
    // MLA keeps only the latent in its cache: drop this call's per-head parts
    if (mla_) {
      for (std::int64_t r = 0; r < rows; ++r) {
        auto& sc = cache(local_l, row_seq(mu, r));
        const auto pos = static_cast<std::size_t>(row_pos(r));
        if (pos < sc.size() && sc[pos].size() > kv_elems()) sc[pos] = Vec(sc[pos].head(kv_elems()));
      }
    }
    // 3. o_proj: heads (row) | hidden (col) | none
    const int oc = choice(Slot::kOProj);
    const Lay o_in = oc == 0 ? Lay::kSf : Lay::kR;
    convert(out, o_in, tp_, "o_proj", "tp");
    const Mat& wo = w_.m(lname(l, "wo"));
    if (oc == 0) {
      const std::int64_t fb = nh * dv / tp_n_;
      return DT{out.m.middleCols(t_ * fb, fb) * wo.middleRows(t_ * fb, fb), Lay::kP, 2.0};
    }
    if (oc == 1) {
      const std::int64_t hb = m_.hidden / tp_n_;
      DT y{nanmat(rows, m_.hidden), Lay::kSf, 2.0};
      y.m.middleCols(t_ * hb, hb) = out.m * wo.middleCols(t_ * hb, hb);
      return y;
    }
    return DT{out.m * wo, Lay::kR, 2.0};
  }

  // A two-matrix MLP op pair over a group of g ranks (member me): ffn1 (ffn = col | hidden = row | none),
  // the activation, ffn2 (ffn = row | hidden = col | none). Canonical pre-activation blocks: [gate c | up c].
  DT mlp(const Mat& w1, const Mat& w2, std::int64_t f, DT x, int c1, int c2, const Comm& g, const char* op1, const char* op2,
         const char* gname) {
    const int n = g.n, me = g.me;
    const bool gated = m_.mlp_gated;
    const std::int64_t up = gated ? 2 : 1, fb = f / n, h = m_.hidden, hb = h / n;
    if (f % n != 0 || h % n != 0) fail(fmt::format("{}: the MLP width {} or hidden {} does not split over {} ranks", op1, f, h, n));
    // canonical ffn1 weight
    Mat w1c(h, up * f);
    for (int cb = 0; cb < n; ++cb) {
      w1c.middleCols(cb * up * fb, fb) = w1.middleCols(cb * fb, fb);
      if (gated) w1c.middleCols(cb * up * fb + fb, fb) = w1.middleCols(f + cb * fb, fb);
    }
    DT pre;
    if (c1 == 0) {
      pre = DT{nanmat(x.m.rows(), up * f), Lay::kSf, 2.0};
      pre.m.middleCols(me * up * fb, up * fb) = x.m * w1c.middleCols(me * up * fb, up * fb);
    } else if (c1 == 1) {
      pre = DT{x.m.middleCols(me * hb, hb) * w1c.middleRows(me * hb, hb), Lay::kP, 2.0};
    } else {
      pre = DT{x.m * w1c, Lay::kR, 2.0};
    }
    const Lay f2_in = c2 == 0 ? Lay::kSf : Lay::kR;
    const auto activate = [&](const DT& p) {
      DT a{nanmat(p.m.rows(), f), p.lay, 2.0};
      for (int cb = 0; cb < n; ++cb) a.m.middleCols(cb * fb, fb) = mlp_activate(p.m.middleCols(cb * up * fb, up * fb), gated, fb);
      return a;
    };
    DT act;
    if (pre.lay == Lay::kP) {  // partial sums are reduced before the activation (gate and up together)
      convert(pre, f2_in, g, op2, gname);
      act = activate(pre);
    } else {
      act = activate(pre);
      convert(act, f2_in, g, op2, gname);
    }
    if (c2 == 0) return DT{act.m.middleCols(me * fb, fb) * w2.middleRows(me * fb, fb), Lay::kP, 2.0};
    if (c2 == 1) {
      DT y{nanmat(act.m.rows(), h), Lay::kSf, 2.0};
      y.m.middleCols(me * hb, hb) = act.m * w2.middleCols(me * hb, hb);
      return y;
    }
    return DT{act.m * w2, Lay::kR, 2.0};
  }

  // --- MoE ----------------------------------------------------------------------------
  struct Copy {
    std::int64_t token;  // stage token index
    std::int64_t j;      // which of its top-k
    std::int64_t expert;
  };
  // The copies source W-rank `src` sends to W-rank `dst`, in order.
  std::vector<Copy> copies(int src, int dst) const {
    const std::int64_t n = big_t() / w_n_, k = m_.moe.top_k, e_n = m_.moe.num_experts, per_group = e_n / ep_n_;
    std::vector<std::int64_t> sent(static_cast<std::size_t>(ep_n_), 0);
    std::vector<Copy> out;
    for (std::int64_t t = src * n; t < (src + 1) * n; ++t) {
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t e = routed_expert(t, j, k, e_n), gi = e / per_group;
        const std::int64_t i = sent[static_cast<std::size_t>(gi)]++;
        const std::int64_t member = (i + src) % etp_n_;
        if (gi * etp_n_ + member == dst) out.push_back({t, j, e});
      }
    }
    return out;
  }

  // Replicated tokens (no attention data parallel, the input whole on every rank): each rank
  // takes its expert group's copies itself and returns the gated partial sums over W, which
  // layer_out reduces once (docs/cost-model.md, "Replicated input").
  DT moe_replicated(std::int64_t l, const DT& hn, const DT* shared_partial) {
    const std::int64_t T = big_t(), k = m_.moe.top_k, h = m_.hidden, fe = m_.moe.expert_ffn, e_n = m_.moe.num_experts;
    const std::int64_t per_group = e_n / ep_n_, my_group = wr_ / etp_n_;
    DT xr = hn;
    const bool split_router = choice(Slot::kRouter) != 0;
    convert(xr, split_router ? Lay::kSt : Lay::kR, tp_, "router", "tp");
    DT lg{xr.m * w_.m(lname(l, "router")), xr.lay, 2.0};  // rows this rank does not hold are NaN
    if (split_router) convert(lg, Lay::kR, tp_, "router", "tp");  // every rank routes every token
    const Mat& logits = lg.m;
    // the group's copies in token order, the same list on each of its etp members
    std::vector<Copy> mine;
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t e = routed_expert(t, j, k, e_n);
        if (e / per_group == my_group) mine.push_back({t, j, e});
      }
    }
    const auto grows = static_cast<std::int64_t>(mine.size());
    if (grows % etp_n_ != 0) fail("balanced routing gave an expert group copies that do not split over its ranks");
    const std::int64_t blk = grows / etp_n_, g0 = etp_.me * blk;
    DT xe{Mat(grows, h), Lay::kR, 2.0};
    for (std::int64_t r = 0; r < grows; ++r) xe.m.row(r) = hn.m.row(mine[static_cast<std::size_t>(r)].token);
    const int c1 = choice(Slot::kExpertFfn1), c2 = choice(Slot::kExpertFfn2);
    const bool gated = m_.mlp_gated;
    const std::int64_t up = gated ? 2 : 1, fb = fe / etp_n_;
    convert(xe, c1 == 0 ? Lay::kR : Lay::kSt, etp_, "expert_ffn1", "etp");  // a free slice either way
    DT act{nanmat(grows, fe), c1 == 0 ? Lay::kSf : Lay::kSt, 2.0};
    for (std::int64_t r = 0; r < grows; ++r) {
      if (c1 == 1 && (r < g0 || r >= g0 + blk)) continue;
      const Mat& w1 = w_.m(fmt::format("L{}.e{}.w1", l, mine[static_cast<std::size_t>(r)].expert));
      const Mat row = xe.m.row(r);
      if (c1 == 0) {
        Mat wc(h, up * fb);
        wc.leftCols(fb) = w1.middleCols(etp_.me * fb, fb);
        if (gated) wc.rightCols(fb) = w1.middleCols(fe + etp_.me * fb, fb);
        act.m.row(r).segment(etp_.me * fb, fb) = mlp_activate(row * wc, gated, fb);
      } else {
        act.m.row(r) = mlp_activate(row * w1, gated, fe);
      }
    }
    convert(act, c2 == 0 ? Lay::kSf : Lay::kSt, etp_, "expert_ffn2", "etp");
    // each rank: its copies' outputs (partial over the ffn split, or whole for its block of
    // copies), gated and summed into the T tokens: partial sums over W
    DT y{Mat::Zero(T, h), Lay::kP, 2.0};
    for (std::int64_t r = 0; r < grows; ++r) {
      if (c2 == 1 && (r < g0 || r >= g0 + blk)) continue;
      const Copy& cp = mine[static_cast<std::size_t>(r)];
      const Mat& w2 = w_.m(fmt::format("L{}.e{}.w2", l, cp.expert));
      const Mat out = c2 == 0 ? Mat(act.m.row(r).segment(etp_.me * fb, fb) * w2.middleRows(etp_.me * fb, fb)) : Mat(act.m.row(r) * w2);
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (std::int64_t j = 0; j < k; ++j) mx = std::max(mx, logits(cp.token, routed_expert(cp.token, j, k, e_n)));
      for (std::int64_t j = 0; j < k; ++j) sum += std::exp(logits(cp.token, routed_expert(cp.token, j, k, e_n)) - mx);
      y.m.row(cp.token) += std::exp(logits(cp.token, cp.expert) - mx) / sum * out;
    }
    if (shared_partial) y.m += shared_partial->m;  // the shared experts' partial sums join before the one reduction
    return y;  // partial sums over W: reduced once at layer_out, as the engines all-reduce them
  }

  // Router, dispatch, experts, combine; returns the routed output: partial sums over W for a
  // replicated input (moe_replicated), else tokens split over W (T rows).
  bool replicated_moe(const DT& hn) const { return a_n_ == 1 && hn.lay == Lay::kR && w_n_ > 1; }
  DT moe(std::int64_t l, const DT& hn, const DT* shared_partial = nullptr) {
    if (replicated_moe(hn)) return moe_replicated(l, hn, shared_partial);
    const std::int64_t T = big_t(), nrank = T / w_n_, k = m_.moe.top_k, h = m_.hidden, fe = m_.moe.expert_ffn;
    // router: none (replicated in the tp group) | tokens
    DT xr = hn;
    convert(xr, choice(Slot::kRouter) == 0 ? Lay::kR : Lay::kSt, tp_, "router", "tp");
    const Mat logits = xr.m * w_.m(lname(l, "router"));  // rows this rank does not hold are NaN
    // my tokens: my slice of the group's (= my slice of the stage's)
    const std::int64_t my0 = t_ * nrank;
    // dispatch: all-to-all over W of the copies
    std::vector<int> scount(static_cast<std::size_t>(w_n_)), sdisp(static_cast<std::size_t>(w_n_)), rcount(scount), rdisp(scount);
    std::vector<double> sbuf, rbuf;
    std::vector<std::vector<Copy>> out_copies(static_cast<std::size_t>(w_n_)), in_copies(out_copies);
    for (int dst = 0; dst < w_n_; ++dst) {
      out_copies[static_cast<std::size_t>(dst)] = copies(wr_, dst);
      sdisp[static_cast<std::size_t>(dst)] = static_cast<int>(sbuf.size());
      for (const Copy& cp : out_copies[static_cast<std::size_t>(dst)]) {
        const std::int64_t r = my0 + (cp.token - wr_ * nrank);
        for (std::int64_t q = 0; q < h; ++q) sbuf.push_back(hn.m(r, q));
      }
      scount[static_cast<std::size_t>(dst)] = static_cast<int>(sbuf.size()) - sdisp[static_cast<std::size_t>(dst)];
    }
    int rtotal = 0;
    for (int src = 0; src < w_n_; ++src) {
      in_copies[static_cast<std::size_t>(src)] = copies(src, wr_);
      rdisp[static_cast<std::size_t>(src)] = rtotal;
      rcount[static_cast<std::size_t>(src)] = static_cast<int>(in_copies[static_cast<std::size_t>(src)].size() * static_cast<std::size_t>(h));
      rtotal += rcount[static_cast<std::size_t>(src)];
    }
    const std::int64_t mine = rtotal / h;  // copies this rank received
    if (mine != nrank * k) fail("balanced routing gave this rank an uneven share of the copies");
    rbuf.assign(static_cast<std::size_t>(rtotal), 0.0);
    const bool drop_dispatch = w_n_ > 1 && dropped("dispatch");  // one rank: a local copy, nothing to drop
    if (!drop_dispatch) {
      MPI_Alltoallv(sbuf.data(), scount.data(), sdisp.data(), MPI_DOUBLE, rbuf.data(), rcount.data(), rdisp.data(), MPI_DOUBLE, stage_.c);
      double sent = 0;
      for (int dst = 0; dst < w_n_; ++dst) sent += dst == wr_ ? 0 : scount[static_cast<std::size_t>(dst)];
      const char* op = "dispatch";
      record(op, CollKind::kAllToAll, "mlp", sent * 2.0);
    } else {
      std::fill(rbuf.begin(), rbuf.end(), kNaN);
    }
    // the expert group's copies, St over etp: member m's block = what it received
    const std::int64_t grows = mine * etp_n_, g0 = etp_.me * mine;
    std::vector<std::int64_t> group_expert(static_cast<std::size_t>(grows));
    for (int mbr = 0; mbr < etp_n_; ++mbr) {
      std::int64_t r = mbr * mine;
      const int dst = static_cast<int>(wr_ / etp_n_ * etp_n_ + mbr);
      for (int src = 0; src < w_n_; ++src) {
        for (const Copy& cp : copies(src, dst)) group_expert[static_cast<std::size_t>(r++)] = cp.expert;
      }
    }
    DT xe{nanmat(grows, h), Lay::kSt, 2.0};
    for (std::int64_t r = 0; r < mine; ++r)
      for (std::int64_t q = 0; q < h; ++q) xe.m(g0 + r, q) = rbuf[static_cast<std::size_t>(r * h + q)];
    // expert_ffn1: ffn (R -> Sf over etp) | tokens (St -> St); expert_ffn2: ffn (Sf -> P) | tokens (St -> St)
    const int c1 = choice(Slot::kExpertFfn1), c2 = choice(Slot::kExpertFfn2);
    const bool gated = m_.mlp_gated;
    const std::int64_t up = gated ? 2 : 1, fb = fe / etp_n_;
    convert(xe, c1 == 0 ? Lay::kR : Lay::kSt, etp_, "expert_ffn1", "etp");
    DT act{nanmat(grows, fe), c1 == 0 ? Lay::kSf : Lay::kSt, 2.0};
    for (std::int64_t r = 0; r < grows; ++r) {
      if (c1 == 1 && (r < g0 || r >= g0 + mine)) continue;
      const Mat& w1 = w_.m(fmt::format("L{}.e{}.w1", l, group_expert[static_cast<std::size_t>(r)]));
      const Mat row = xe.m.row(r);
      if (c1 == 0) {
        Mat wc(h, up * fb);
        wc.leftCols(fb) = w1.middleCols(etp_.me * fb, fb);
        if (gated) wc.rightCols(fb) = w1.middleCols(fe + etp_.me * fb, fb);
        act.m.row(r).segment(etp_.me * fb, fb) = mlp_activate(row * wc, gated, fb);
      } else {
        act.m.row(r) = mlp_activate(row * w1, gated, fe);
      }
    }
    convert(act, c2 == 0 ? Lay::kSf : Lay::kSt, etp_, "expert_ffn2", "etp");
    DT ye{c2 == 0 ? Mat::Zero(grows, h) : nanmat(grows, h), c2 == 0 ? Lay::kP : Lay::kSt, 2.0};
    for (std::int64_t r = 0; r < grows; ++r) {
      if (c2 == 1 && (r < g0 || r >= g0 + mine)) continue;
      const Mat& w2 = w_.m(fmt::format("L{}.e{}.w2", l, group_expert[static_cast<std::size_t>(r)]));
      if (c2 == 0) {
        ye.m.row(r) = act.m.row(r).segment(etp_.me * fb, fb) * w2.middleRows(etp_.me * fb, fb);
      } else {
        ye.m.row(r) = act.m.row(r) * w2;
      }
    }
    // combine: reduce inside the expert group, send the copies back, weight and sum
    convert(ye, Lay::kSt, etp_, "combine", "etp");
    std::vector<double> back_s, back_r(sbuf.size(), 0.0);
    for (std::int64_t r = 0; r < mine; ++r)
      for (std::int64_t q = 0; q < h; ++q) back_s.push_back(ye.m(g0 + r, q));
    if (w_n_ == 1 || !dropped("combine")) {
      MPI_Alltoallv(back_s.data(), rcount.data(), rdisp.data(), MPI_DOUBLE, back_r.data(), scount.data(), sdisp.data(), MPI_DOUBLE, stage_.c);
      double sent = 0;
      for (int src = 0; src < w_n_; ++src) sent += src == wr_ ? 0 : rcount[static_cast<std::size_t>(src)];
      record("combine", CollKind::kAllToAll, "mlp", sent * 2.0);
    } else {
      std::fill(back_r.begin(), back_r.end(), kNaN);
    }
    DT y{nanmat(T, h), Lay::kSt, 2.0};
    y.m.middleRows(wr_ * nrank, nrank).setZero();
    // gates: softmax of the router logits over each token's chosen experts
    for (int dst = 0; dst < w_n_; ++dst) {
      const auto& cps = out_copies[static_cast<std::size_t>(dst)];
      for (std::size_t i = 0; i < cps.size(); ++i) {
        const Copy& cp = cps[i];
        const std::int64_t r = my0 + (cp.token - wr_ * nrank);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::int64_t j = 0; j < k; ++j) mx = std::max(mx, logits(r, routed_expert(cp.token, j, k, m_.moe.num_experts)));
        for (std::int64_t j = 0; j < k; ++j) sum += std::exp(logits(r, routed_expert(cp.token, j, k, m_.moe.num_experts)) - mx);
        const double gate = std::exp(logits(r, cp.expert) - mx) / sum;
        const double* src = back_r.data() + sdisp[static_cast<std::size_t>(dst)] + static_cast<std::ptrdiff_t>(i) * h;
        for (std::int64_t q = 0; q < h; ++q) y.m(cp.token, q) += gate * src[q];
      }
    }
    return y;
  }

  // --- a layer ---------------------------------------------------------------------------
  DT layer(std::int64_t l, std::int64_t local_l, std::int32_t mu, DT x) {
    layer_ = l;
    const LayerFacts f = layer_facts(m_, l);
    DT xn = x;
    norm_rows(xn, w_.v(lname(l, "attn_norm")), tp_.n, tp_.me);
    DT o = attention_block(l, local_l, mu, xn, f.window);
    // ffn_norm: the attention output and the residual into ffn_norm's layout, added
    convert(o, ffn_need_, tp_, "ffn_norm", "tp");
    convert(x, ffn_need_, tp_, "ffn_norm", "tp");
    DT hres{x.m + o.m, ffn_need_, 2.0};
    DT hn = hres;
    norm_rows(hn, w_.v(lname(l, "ffn_norm")), tp_.n, tp_.me);
    // MLP (dense, or the shared experts), then the routed experts
    DT out;
    bool have = false, local = false;
    if (f.mlp > 0) {
      const int c1 = choice(Slot::kFfn1), c2 = choice(Slot::kFfn2);
      local = c1 == 2 && c2 == 2;
      const char* op1 = f.moe ? "shared_ffn1" : "ffn1";
      const char* op2 = f.moe ? "shared_ffn2" : "ffn2";
      const Lay f1_in = c1 == 1 ? Lay::kSf : Lay::kR;
      DT xin = hn;
      if (local) {
        convert(xin, f1_in, tp_, op1, "tp");
        out = mlp(w_.m(lname(l, "w1")), w_.m(lname(l, "w2")), f.mlp, xin, c1, c2, tp_, op1, op2, "tp");
      } else {
        xin = to_mlp(hn, f1_in, op1);
        out = mlp(w_.m(lname(l, "w1")), w_.m(lname(l, "w2")), f.mlp, xin, c1, c2, stage_, op1, op2, "mlp");
      }
      have = true;
    }
    if (f.moe) {
      DT routed;
      if (have && !local && replicated_moe(hn) && out.lay == Lay::kP) {
        routed = moe(l, hn, &out);  // the shared experts' partial sums fused into the combine's reduction
        have = false;
      } else {
        routed = moe(l, hn);
      }
      if (have && routed.lay == Lay::kP) {
        // beside partial sums the shared branch joins free: each rank adds its own share (its
        // partial sums, its slice of a split tensor, or 1/W of a replicated one)
        // (a == 1 here: the stage is the tp group, W ranks)
        DT shared = out;
        if (shared.lay == Lay::kR) {
          shared.m /= static_cast<double>(w_n_);
        } else if (shared.lay != Lay::kP) {
          // my block of a split output, zeros where the layout says I hold nothing (a NaN in
          // my block stays: data used without being held must still show)
          Mat mine = Mat::Zero(shared.m.rows(), shared.m.cols());
          const Eigen::Index rows = shared.m.rows(), cols = shared.m.cols();
          if (shared.lay == Lay::kSt) {
            const Eigen::Index rb = rows / w_n_;
            mine.middleRows(wr_ * rb, rb) = shared.m.middleRows(wr_ * rb, rb);
          } else {
            const Eigen::Index cb = cols / w_n_;
            mine.middleCols(wr_ * cb, cb) = shared.m.middleCols(wr_ * cb, cb);
          }
          shared.m = std::move(mine);
        }
        routed.m += shared.m;
      } else if (have) {
        DT shared;
        if (local) {  // in the attention scope, replicated in the group: my slice is free
          shared = DT{nanmat(big_t(), m_.hidden), Lay::kSt, 2.0};
          const std::int64_t rb = big_t() / w_n_;
          shared.m.middleRows(wr_ * rb, rb) = out.m.middleRows(t_ * rb, rb);
        } else {
          shared = out;
          convert(shared, Lay::kSt, stage_, "shared_join", "mlp");
        }
        routed.m += shared.m;
      }
      out = std::move(routed);
      local = false;
    }
    // back to the attention scope in attn_norm's layout; the residual too
    DT y = (local && !f.moe) ? out : to_attn(out, attn_need_, "layer_out");
    if (local && !f.moe) convert(y, attn_need_, tp_, "layer_out", "tp");
    convert(hres, attn_need_, tp_, "layer_out", "tp");
    return DT{hres.m + y.m, attn_need_, 2.0};
  }

  // --- a micro-batch through this rank's stage -----------------------------------------------
  void micro_batch(std::int32_t mu) {
    const std::int64_t rows = tg(), h = m_.hidden;
    DT x;
    layer_ = -1;
    new_op_execution();
    if (st_ == 0) {
      // embedding: vocab (partial sums over tp) | none (replicated lookup)
      const bool vocab = choice(Slot::kEmbedding) == 0;
      const std::int64_t vb = m_.vocab / tp_n_;
      x = DT{Mat::Zero(rows, h), vocab ? Lay::kP : Lay::kR, 2.0};
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t seq = row_seq(mu, r);
        const std::int64_t id = prefill() ? in_.prompt[static_cast<std::size_t>(seq)][static_cast<std::size_t>(row_pos(r))]
                                          : in_.decode[static_cast<std::size_t>(step_ - 1)][static_cast<std::size_t>(seq)];
        if (!vocab || id / vb == t_) x.m.row(r) = w_.m("embed").row(id);
      }
      convert(x, attn_need_, tp_, "embedding_out", "tp");
    } else {
      // pipeline: each rank receives its 1/tp slice of the residual stream; R is re-gathered
      const std::int64_t rb = rows / tp_n_;
      x = DT{nanmat(rows, h), Lay::kSt, 2.0};
      if (!dropped("pp_send_recv")) {
        Mat part(rb, h);
        MPI_Recv(part.data(), static_cast<int>(part.size()), MPI_DOUBLE, rank_ - static_cast<int>(w_n_), 7, world_, MPI_STATUS_IGNORE);
        x.m.middleRows(t_ * rb, rb) = part;
      }
      convert(x, attn_need_, tp_, "pp_send_recv", "tp");
    }
    for (std::int64_t i = 0; i < layers_per_stage_; ++i) x = layer(stage_range_.first + i, i, mu, std::move(x));
    layer_ = -1;
    if (st_ < pp_n_ - 1) {
      const std::int64_t rb = rows / tp_n_;
      new_op_execution();  // the send is its own execution of pp_send_recv (the next stage's receive is index 0)
      if (!dropped("pp_send_recv")) {
        Mat part = x.m.middleRows(t_ * rb, rb);
        MPI_Send(part.data(), static_cast<int>(part.size()), MPI_DOUBLE, rank_ + static_cast<int>(w_n_), 7, world_);
        record("pp_send_recv", CollKind::kSendRecv, "pp", static_cast<double>(part.size()) * 2.0);
      }
      return;
    }
    lm_head(mu, std::move(x));
  }

  void lm_head(std::int32_t mu, DT x) {
    convert(x, Lay::kR, tp_, "lm_head", "tp");
    const std::int64_t rows = tg(), nsel = prefill() ? rows / c_.isl : rows, v = m_.vocab;
    Mat sel(nsel, m_.hidden);
    for (std::int64_t i = 0; i < nsel; ++i) sel.row(i) = x.m.row(prefill() ? i * c_.isl + c_.isl - 1 : i);
    rms_norm_rows(sel, w_.v("final_norm"));
    const Mat& wl = w_.m("lm_head");
    DT lg;
    if (choice(Slot::kLmHead) == 0) {  // vocab-parallel, logits gathered in fp32
      const std::int64_t vb = v / tp_n_;
      lg = DT{nanmat(nsel, v), Lay::kSf, 4.0};
      lg.m.middleCols(t_ * vb, vb) = sel * wl.middleCols(t_ * vb, vb);
      convert(lg, Lay::kR, tp_, "lm_head", "tp");
    } else {
      lg = DT{sel * wl, Lay::kR, 4.0};
    }
    if (t_ != 0) return;
    for (std::int64_t i = 0; i < nsel; ++i) {
      const std::int64_t seq = row_seq(mu, prefill() ? i * c_.isl : i);
      logits_[{seq, step_}] = std::vector<double>(lg.m.row(i).data(), lg.m.row(i).data() + v);
    }
  }

  // After a context-split prefill every rank has gathered all positions: keep the ones it owns.
  void drop_foreign_positions() {
    if (choice(Slot::kAttention) != 1) return;
    for (auto& layer_caches : caches_) {
      for (auto& [seq, sc] : layer_caches) {
        for (std::size_t p = 0; p < sc.size(); ++p) {
          if (static_cast<std::int64_t>(p) % tp_n_ != t_) sc[p] = Vec();
        }
      }
    }
  }

  const Case& c_;
  const ModelSpec& m_;
  const Weights& w_;
  const Inputs& in_;
  Fault fault_;
  MPI_Comm world_;
  int tp_n_ = 1, a_n_ = 1, pp_n_ = 1, w_n_ = 1, ep_n_ = 1, etp_n_ = 1;
  int rank_ = 0;
  int t_ = 0, ai_ = 0, st_ = 0, wr_ = 0;
  Comm tp_, stage_, etp_;
  std::int64_t s_ = 1, bg_ = 1, layers_per_stage_ = 1;
  LayerRange stage_range_;
  int choice_[kNumSlots] = {};
  Lay attn_need_ = Lay::kR, ffn_need_ = Lay::kR;
  bool mla_ = false;
  Phase phase_ = Phase::kPrefill;
  std::int32_t step_ = 0;
  std::int64_t layer_ = -1;
  std::vector<std::map<std::int64_t, SeqCache>> caches_;
  Logits logits_;
  Ledger ledger_;
  std::int64_t dropped_ = 0;
  std::string last_op_;
  std::int64_t last_layer_ = -3;
  int nth_ = 0;
};

}  // namespace

RankResult execute(const Case& c, const Weights& w, const Inputs& in, const Fault& fault, void* world) {
  Executor ex(c, w, in, fault, *static_cast<MPI_Comm*>(world));
  return ex.run();
}

}  // namespace shardwise::exec
