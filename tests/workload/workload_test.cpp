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
  EXPECT_EQ(msg(o), "--mode: expected one of decode, prefill, offline, found 'train'");
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
            "--isl: expected no isl for a decode workload (decode uses context; prefill isl; offline isl and osl), found 100");
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

TEST(Workload, SpeculativeTokensNeedAnAcceptance) {
  Workload w;
  w.name = "t";
  w.mode = Mode::kDecode;
  w.context = 1024;
  WorkloadOverrides o;
  o.spec_tokens = 3;
  auto bad = apply_overrides(w, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "--spec-acceptance: expected a probability from 0 to 1 beside --spec-tokens (how often a draft is accepted), found none");
  o.spec_acceptance = 0.0;  // given explicitly: drafts never accepted is a valid (pessimistic) case
  EXPECT_TRUE(apply_overrides(w, o).ok());
}

}  // namespace shardwise
