#include "workload/workload.hpp"

#include <gtest/gtest.h>

namespace shardwise {
namespace {

Workload preset(const std::string& n) {
  auto w = load_workload(n);
  EXPECT_TRUE(w.ok()) << (w.ok() ? "" : w.error().message());
  return w.ok() ? *w : Workload{};
}

TEST(Workload, Presets) {
  EXPECT_EQ(workload_preset_names().size(), 6u);
  const Workload d = preset("decode-16k");
  EXPECT_EQ(d.mode, Mode::kDecode);
  EXPECT_EQ(d.context, 16384);
  EXPECT_FALSE(d.batch.has_value());  // max
  EXPECT_EQ(d.tpot_ms, 50.0);
  EXPECT_EQ(preset("decode-32k").context, 32768);
  EXPECT_EQ(preset("decode-64k").context, 65536);
  const Workload c = preset("chat-1k-1k");
  EXPECT_EQ(c.mode, Mode::kOffline);
  EXPECT_EQ(c.isl, 1024);
  EXPECT_EQ(c.osl, 1024);
  EXPECT_EQ(c.ttft_ms, 1000.0);
  const Workload o = preset("offline-2k-128");
  EXPECT_EQ(o.isl, 2048);
  EXPECT_EQ(o.osl, 128);
  EXPECT_FALSE(o.tpot_ms.has_value());
  const Workload p = preset("prefill-4k");
  EXPECT_EQ(p.mode, Mode::kPrefill);
  EXPECT_EQ(p.isl, 4096);
}

TEST(Workload, FromFile) {
  auto w = load_workload(std::string(SHARDWISE_TEST_DATA) + "/good/workload-custom.yaml");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->batch, 64);
  EXPECT_EQ(w->weights_dtype, DType::kFp8);
  EXPECT_EQ(w->kv_dtype, DType::kFp8);
  EXPECT_EQ(w->tpot_ms, 40.0);
}

TEST(Workload, OverridesReplaceFields) {
  WorkloadOverrides o;
  o.context = 4096;
  o.batch = "32";
  o.tpot_ms = 20;
  o.kv_dtype = "fp8";
  auto w = apply_overrides(preset("decode-16k"), o);
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->context, 4096);
  EXPECT_EQ(w->batch, 32);
  EXPECT_EQ(w->tpot_ms, 20.0);
  EXPECT_EQ(w->kv_dtype, DType::kFp8);
  o = {};
  o.batch = "max";
  EXPECT_FALSE(apply_overrides(*w, o)->batch.has_value());
}

TEST(Workload, ModeSwitchNeedsItsFields) {
  WorkloadOverrides o;
  o.mode = "offline";  // decode-16k has no isl/osl
  auto w = apply_overrides(preset("decode-16k"), o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("field 'isl'"), std::string::npos) << w.error().message();
  o.isl = 1000;
  o.osl = 100;
  w = apply_overrides(preset("decode-16k"), o);
  ASSERT_TRUE(w.ok()) << w.error().message();
  // prefill drops the tpot SLO of a decode workload rather than failing
  WorkloadOverrides p;
  p.mode = "prefill";
  p.isl = 512;
  auto pw = apply_overrides(preset("decode-16k"), p);
  ASSERT_TRUE(pw.ok()) << pw.error().message();
  EXPECT_FALSE(pw->tpot_ms.has_value());
}

TEST(Workload, BadOverridesNameTheFlag) {
  const Workload base = preset("decode-16k");
  const auto msg = [&](WorkloadOverrides o) {
    auto w = apply_overrides(base, o);
    return w.ok() ? std::string("ok") : w.error().message();
  };
  WorkloadOverrides o;
  o.batch = "0";
  EXPECT_EQ(msg(o), "--batch: expected a positive number of concurrent sequences or 'max', found '0'");
  o = {};
  o.context = -1;
  EXPECT_EQ(msg(o), "--context: expected a token count from 1 to 16777216, found -1");
  o = {};
  o.mode = "train";
  EXPECT_EQ(msg(o), "--mode: expected one of decode, prefill, offline, serve, found 'train'");
  o = {};
  o.weights_dtype = "fp6";
  EXPECT_EQ(msg(o), "--weights-dtype: expected one of fp32, bf16, fp16, fp8, int8, int4, fp4, or auto (the checkpoint's own), found 'fp6'");
  o = {};
  o.tpot_ms = 0;
  EXPECT_EQ(msg(o), "--tpot-ms: expected a positive number of milliseconds up to 3600000, found 0");
}

TEST(Workload, OverridesFromAFileNameTheFileAndItsField) {
  // issue 16, defect 7: values from a plan file were blamed on flags the user never passed
  WorkloadOverrides o;
  o.isl = 0;
  auto w = apply_overrides(preset("chat-1k-1k"), o, "plan.json");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message(), "plan.json: field 'workload_overrides.isl': expected a token count from 1 to 16777216, found 0");
  o = {};
  o.tpot_ms = -1;
  w = apply_overrides(preset("chat-1k-1k"), o, "plan.json");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().file, "plan.json");
  EXPECT_EQ(w.error().field, "workload_overrides.tpot_ms");
}

TEST(Workload, LengthsTheModeDoesNotUseAreRefusedNotIgnored) {
  // issue 16, defect 8: decode workloads accepted isl/osl silently
  WorkloadOverrides o;
  o.isl = 100;
  auto w = apply_overrides(preset("decode-16k"), o);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message(),
            "--isl: expected no isl for a decode workload (decode uses context; prefill isl; offline and serve isl and osl), found 100");
  o = {};
  o.context = 5;
  EXPECT_FALSE(apply_overrides(preset("chat-1k-1k"), o).ok());  // offline uses no context
  // a mode switch by flag drops what the new mode does not use, as it drops SLOs
  o = {};
  o.mode = "decode";
  o.context = 2048;
  auto d = apply_overrides(preset("chat-1k-1k"), o);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->isl, 0);
  EXPECT_EQ(d->osl, 0);
  EXPECT_EQ(d->context, 2048);
  auto y = parse_workload_yaml("mode: decode\ncontext: 10\nosl: 5\n", "w.yaml", "w");
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.error().field, "osl");
}

}  // namespace

TEST(Workload, SpeculativeTokensTakeTheModelsMtpAcceptanceOrNeedOne) {
  Workload w;
  w.name = "t";
  w.mode = Mode::kDecode;
  w.context = 1024;
  WorkloadOverrides o;
  o.spec_tokens = 3;
  auto left = apply_overrides(w, o);  // no acceptance given: the model's, resolved with it
  ASSERT_TRUE(left.ok()) << left.error().message();
  EXPECT_EQ(left->spec_acceptance, kModelsAcceptance);
  // a model with MTP modules (DeepSeek-V3: num_nextn_predict_layers 1): 0.85, DeepSeek-V3's
  // report's 85-90% second-token acceptance at its lower end, and a note saying so
  ModelSpec mtp;
  mtp.name = "mtp-model";
  mtp.num_mtp_layers = 1;
  std::string note;
  auto r = resolve_speculation(mtp, *left, &note);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->spec_acceptance, 0.85);
  EXPECT_NE(note.find("--spec-acceptance 0.85: mtp-model's MTP module"), std::string::npos) << note;
  // a model without: bad input naming the flag and the model
  ModelSpec plain;
  plain.name = "plain-model";
  auto bad = resolve_speculation(plain, *left);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "--spec-acceptance: expected a probability from 0 to 1 beside --spec-tokens (how often a draft is accepted; plain-model has no "
            "MTP modules, num_nextn_predict_layers, whose acceptance is published), found none");
  // an acceptance given stays, on any model (0: drafts never accepted, a valid pessimistic case)
  o.spec_acceptance = 0.0;
  auto given = apply_overrides(w, o);
  ASSERT_TRUE(given.ok());
  EXPECT_DOUBLE_EQ(resolve_speculation(plain, *given)->spec_acceptance, 0.0);
  EXPECT_DOUBLE_EQ(resolve_speculation(mtp, *given)->spec_acceptance, 0.0);
}

TEST(ServeWorkload, ArrivalsLengthsAndPercentileSlos) {
  auto w = load_workload(std::string(SHARDWISE_TEST_DATA) + "/good/workload-serve.yaml");
  ASSERT_TRUE(w.ok()) << w.error().message();
  EXPECT_EQ(w->mode, Mode::kServe);
  EXPECT_EQ(w->serve.arrivals.kind, Arrivals::Kind::kPoisson);
  EXPECT_EQ(w->serve.arrivals.rate, 6.0);
  EXPECT_EQ(w->serve.requests, 500);
  EXPECT_EQ(w->serve.seed, 3u);
  ASSERT_TRUE(w->serve.input && w->serve.output);
  EXPECT_EQ(w->serve.input->kind, LengthDist::Kind::kLognormal);
  EXPECT_EQ(w->serve.input->mean, 1024.0);  // the lognormal's mean defaults to isl
  EXPECT_EQ(w->serve.input->max, 8192);
  EXPECT_EQ(mean_of(*w->serve.output), 512.0);  // uniform 64..960
  EXPECT_EQ(w->ttft_ms, 800.0);                 // {mean: 800}
  ASSERT_EQ(w->ttft_pct.size(), 1u);
  EXPECT_EQ(w->ttft_pct[0], (SloBound{99, 2000}));
  ASSERT_EQ(w->tpot_pct.size(), 1u);
  EXPECT_EQ(w->tpot_pct[0], (SloBound{90, 50}));
  // the tightest bound of TTFT is the mean's 800 ms
  EXPECT_EQ(tightest_slo(w->ttft_ms, w->ttft_pct)->ms, 800.0);
}

TEST(ServeWorkload, TraceSetsTheMeanLengths) {
  auto w = load_workload(std::string(SHARDWISE_TEST_DATA) + "/good/workload-trace.yaml");
  ASSERT_TRUE(w.ok()) << w.error().message();
  ASSERT_EQ(w->serve.trace.size(), 4u);
  EXPECT_EQ(w->serve.trace[1].input, 2048);
  EXPECT_EQ(w->serve.trace[3].arrival_s, 1.10);
  // (512 + 2048 + 1024 + 700) / 4 = 1071; (128 + 64 + 256 + 300) / 4 = 187
  EXPECT_EQ(w->isl, 1071);
  EXPECT_EQ(w->osl, 187);
  auto bad = load_trace(std::string(SHARDWISE_TEST_DATA) + "/good/trace-bad.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 3"), std::string::npos) << bad.error().message();
}

TEST(ServeWorkload, FlagsSetArrivalsAndRefuseOtherModes) {
  Workload w = preset("chat-1k-1k");
  WorkloadOverrides o;
  o.mode = "serve";
  o.rate = "12.5";
  o.requests = 300;
  auto s = apply_overrides(w, o);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->serve.arrivals.kind, Arrivals::Kind::kPoisson);
  EXPECT_EQ(s->serve.arrivals.rate, 12.5);
  EXPECT_EQ(s->serve.requests, 300);
  o.rate = "inf";
  EXPECT_EQ(apply_overrides(w, o)->serve.arrivals.kind, Arrivals::Kind::kBurst);
  o.rate.reset();
  o.concurrency = 64;
  EXPECT_EQ(apply_overrides(w, o)->serve.arrivals.concurrency, 64);
  o.rate = "3";
  EXPECT_FALSE(apply_overrides(w, o).ok());  // both
  WorkloadOverrides off;
  off.rate = "3";
  auto e = apply_overrides(w, off);  // chat-1k-1k is offline
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("--rate"), std::string::npos);
  WorkloadOverrides none;
  none.mode = "serve";
  auto bare = apply_overrides(w, none);  // plan --mode serve searches the rate: no arrivals needed
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(has_arrivals(*bare));
  EXPECT_TRUE(has_arrivals(*s));
  o.concurrency.reset();
  o.rate = "-2";
  EXPECT_FALSE(apply_overrides(w, o).ok());
}


TEST(ServeWorkload, SloFlagReplacesTheWorkloadsBounds) {
  auto w = load_workload("chat-1k-1k");
  ASSERT_TRUE(w.ok());
  WorkloadOverrides o;
  o.mode = "serve";
  o.slo = "ttft:p99<=2000,tpot:p90<=50,tpot<=30,ttft:p50<=400";
  auto s = apply_overrides(*w, o);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_FALSE(s->ttft_ms.has_value());
  ASSERT_EQ(s->ttft_pct.size(), 2U);  // sorted: p50 400, p99 2000
  EXPECT_EQ(s->ttft_pct[0], (SloBound{50, 400}));
  EXPECT_EQ(s->ttft_pct[1], (SloBound{99, 2000}));
  EXPECT_EQ(s->tpot_ms, 30.0);        // no statistic: the mean
  ASSERT_EQ(s->tpot_pct.size(), 1U);
  EXPECT_EQ(s->tpot_pct[0], (SloBound{90, 50}));
  o.tpot_ms = 25;  // --tpot-ms after --slo: the mean
  EXPECT_EQ(apply_overrides(*w, o)->tpot_ms, 25.0);
  for (const char* bad : {"", "ttft:p98<=2000", "itl<=5", "ttft<2000", "ttft<=-1", "ttft<=2e9", "ttft<=20ms", "ttft<=1,ttft:mean<=2"}) {
    WorkloadOverrides b;
    b.mode = "serve";
    b.slo = bad;
    auto r = apply_overrides(*w, b);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().file, "--slo") << bad;
  }
}
}  // namespace shardwise
