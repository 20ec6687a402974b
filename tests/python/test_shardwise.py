"""The Python module (bindings/python, docs/python.md) through unittest; ctest runs it
with PYTHONPATH=build/python."""
import json
import shutil
import tempfile
import os
import unittest

import shardwise as sw

DATA = os.environ.get("SHARDWISE_TEST_DATA", os.path.join(os.path.dirname(__file__), "..", "data"))
SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared")


class Inputs(unittest.TestCase):
    def test_presets_and_describe(self):
        self.assertIn("deepseek-v3", sw.models())
        self.assertIn("chat-1k-1k", sw.workloads())
        d = sw.describe(model="llama-3.1-8b")
        self.assertEqual(d["params_total"], 8030261248)  # as `shardwise models --json` says
        self.assertEqual(sw.describe(model="llama-3.1-70b")["kv_bytes_per_token"], 327680)

    def test_config_json_and_folder(self):
        scout = os.path.join(SHARED, "models", "new-architectures", "llama-4-scout.json")
        if not os.path.exists(scout):
            self.skipTest("no ../shared beside the checkout")
        d = sw.describe(model=scout)
        self.assertGreater(d["params_total"] + d["params_vision"], 108e9)

    def test_errors_carry_file_field_expected_found(self):
        with self.assertRaises(sw.Error) as c:
            sw.simulate("llama-3.1-70b", "h100x8", isl=-3)
        e = c.exception
        self.assertIsInstance(e, ValueError)
        self.assertEqual(e.file, "isl")
        self.assertEqual(e.found, "-3")
        self.assertIn("token count", e.expected)
        with self.assertRaises(sw.Error) as c:
            sw.simulate("llama-3.1-70b", "h100x8", not_a_keyword=1)
        self.assertEqual(c.exception.file, "not_a_keyword")
        bad = os.path.join(DATA, "bad", "w21-slo-unknown-percentile.yaml")
        with self.assertRaises(sw.Error) as c:
            sw.simulate("llama-3.1-8b", "h100x1", bad)
        self.assertTrue(c.exception.file.endswith("w21-slo-unknown-percentile.yaml"))
        self.assertEqual(c.exception.field, "slo.ttft_ms.p98")
        with self.assertRaises(sw.Error) as c:
            sw.simulate("llama-3.1-70b", "h100x8", tp=3)  # 3 divides neither the heads nor the kv heads
        self.assertEqual(c.exception.field, "plan")


class Simulate(unittest.TestCase):
    def test_one_plan_as_a_dict(self):
        r = sw.simulate("llama-3.1-70b", "h100x8", "chat-1k-1k", tp=8)
        self.assertTrue(r["feasible"])
        self.assertGreater(r["throughput_tok_s_per_gpu"], 0)
        # TP 1 has no collectives
        one = sw.simulate("llama-3.1-8b", "h100x1", "decode-16k", batch=8)
        self.assertTrue(all(op["collective"] == "-" and op["comm_bytes_per_gpu"] == 0 for op in one["breakdown"]["ops"]))

    def test_two_batch_overlap(self):
        kw = dict(attn_dp=32, ep=32, sharding="dp-mlp", context=2000, batch=8192, tpot_ms=1000)
        on = sw.simulate("deepseek-v3", "h200x32", "decode-16k", two_batch_overlap=True, **kw)
        off = sw.simulate("deepseek-v3", "h200x32", "decode-16k", **kw)
        self.assertTrue(on["plan"]["two_batch_overlap"] and on["two_batch_overlap_applied"])
        self.assertFalse(off["plan"]["two_batch_overlap"])
        # over four nodes the all-to-all outweighs the compute: hiding it is faster
        self.assertGreater(on["throughput_tok_s_per_gpu"], off["throughput_tok_s_per_gpu"])
        with self.assertRaises(sw.Error):
            sw.simulate("deepseek-v3", "h200x8", "decode-16k", tp=8, two_batch_overlap=True)
        p = sw.plan("deepseek-v3", "h200x32", "decode-16k", tpot_ms=200, engine="vllm")
        self.assertTrue(p["two_batch_overlap_added"] and p["plan"]["two_batch_overlap"])

    def test_serving_keys_percentiles_and_seed(self):
        kw = dict(tp=8, mode="serve", rate=4, requests=400, engine="vllm")
        r = sw.simulate("llama-3.1-70b", "h100x8", "chat-1k-1k", seed=3, **kw)
        for key in ("ttft_ms", "tpot_ms", "ttft_ms_p50", "ttft_ms_p90", "ttft_ms_p99", "tpot_ms_p50", "tpot_ms_p90", "tpot_ms_p99",
                    "e2e_ms_p50", "e2e_ms_p99", "output_tok_s_per_gpu", "total_tok_s_per_gpu", "requests_per_s",
                    "goodput_requests_per_s", "feasible", "reason", "knee"):
            self.assertIn(key, r)
        self.assertLessEqual(r["ttft_ms_p50"], r["ttft_ms_p90"])
        self.assertLessEqual(r["ttft_ms_p90"], r["ttft_ms_p99"])
        self.assertEqual(r, sw.simulate("llama-3.1-70b", "h100x8", "chat-1k-1k", seed=3, **kw))
        with self.assertRaises(sw.Error):
            sw.simulate("llama-3.1-70b", "h100x8", "chat-1k-1k", tp=8, mode="serve")  # no arrivals

    def test_disaggregated(self):
        r = sw.simulate("llama-3.1-8b", "h100x4", "chat-1k-1k", mode="serve", rate=8, requests=300, replicas=3, prefill_instances=1)
        self.assertEqual(r["disaggregated"]["prefill_instances"], 1)
        self.assertIn("prefill", r["plan"]["disaggregated"])


class Explain(unittest.TestCase):
    def test_explain_and_kernel_tables_as_on_the_cli(self):
        r = sw.simulate("llama-3.1-8b", "h100x8", "chat-1k-1k", batch=8, explain=True, kernel_tables=True)
        self.assertGreater(r["explain"]["measured_share"], 0.1)
        self.assertIn(r["breakdown"]["ops"][0]["basis"], ("model", "measured", "transferred", "extrapolated"))
        plain = sw.simulate("llama-3.1-8b", "h100x8", "chat-1k-1k", batch=8)
        self.assertNotIn("explain", plain)
        with self.assertRaisesRegex(sw.Error, r"explain: expected a closed-form mode"):
            sw.simulate("llama-3.1-8b", "h100x8", "chat-1k-1k", mode="serve", rate=2, explain=True)
        with self.assertRaises(sw.Error):
            sw.simulate("llama-3.1-8b", "h100x8", "chat-1k-1k", batch=8, explain=1)  # a bool, not a number

    def test_silicon_folder_as_on_the_cli(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "grouped_gemm.csv"), "w") as f:
                f.write("silicon,dtype,kernel,layout,groups,m_per_group,m_padded,N,K,value,unit,source_locator\n"
                        "h100,bf16,mine,contiguous,32,1,8,4096,7168,700,us,my lab\n"
                        "h100,bf16,mine,contiguous,32,16,16,4096,7168,720,us,my lab\n")
            r = sw.simulate("qwen3-30b-a3b", "h100x8", "chat-1k-1k", batch=8, explain=True, silicon=d)
            ops = {o["op"]: o for o in r["breakdown"]["ops"]}
            self.assertIn(d, ops["moe:expert_ffn1"]["table"])
            self.assertEqual(ops["moe:expert_ffn1"]["basis"], "measured")
            self.assertTrue(sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", budget=50, silicon=d)["found"])
        with self.assertRaisesRegex(sw.Error, r"silicon: expected a folder of kernel tables"):
            sw.simulate("llama-3.1-8b", "h100x8", "chat-1k-1k", batch=8, silicon="/no/such/folder")


class Phases(unittest.TestCase):
    def test_phase_plans_offline_and_under_load(self):
        # a 70B model on 8 A100-40GB without NVLink, long prompts: the phase plan beats the static one
        d = tempfile.mkdtemp()
        try:
            c = os.path.join(d, "a100pcie.yaml")
            with open(c, "w") as f:
                f.write("gpu: {base: a100-40gb, pcie_bandwidth: 17.18 GB/s}\nnvlink_domain: 1\nnum_gpus: 8\n")
            w = os.path.join(d, "arxiv.yaml")
            with open(w, "w") as f:
                f.write("mode: offline\nisl: 2542\nosl: 297\n")
            r = sw.phases("llama-2-70b", c, w)
            self.assertTrue(r["found"])
            self.assertGreater(r["output_tok_s_per_gpu"], r["static"]["output_tok_s_per_gpu"])
            self.assertEqual(r["phases"]["prefill"]["pp"], 8)
            s = sw.phases("llama-2-70b", c, w, mode="serve", requests=200, budget=60, search="rl")
            self.assertIn("phases", s)
            self.assertGreater(s["output_tok_s_per_gpu"], 0)
            with self.assertRaisesRegex(sw.Error, r"host_buffer_gib: expected GiB"):
                sw.phases("llama-2-70b", c, w, host_buffer_gib=-1)
            with self.assertRaisesRegex(sw.Error, r"search: expected rl, sa or ga"):
                sw.phases("llama-2-70b", c, w, search="exact")
        finally:
            shutil.rmtree(d)


class PlanAndLaunch(unittest.TestCase):
    def test_plan_then_launch(self):
        p = sw.plan("llama-3.1-70b", "h100x8", "chat-1k-1k", search="exact")
        self.assertTrue(p["found"])
        self.assertEqual(p["plan"]["schema"], "shardwise-plan/1")
        text = sw.launch(p["plan"], "vllm")
        self.assertIn("vllm serve", text)
        # the plan dict is a plan.json; its degrees, per-op sharding and batch simulate as a
        # feasible plan with the plan's own metrics
        deg = p["plan"]["degrees"]
        with tempfile.TemporaryDirectory() as d:
            sharding = os.path.join(d, "sharding.json")
            with open(sharding, "w") as f:
                json.dump(p["plan"]["sharding"], f)
            r = sw.simulate("llama-3.1-70b", "h100x8", "chat-1k-1k", tp=deg["tp"], pp=deg["pp"], attn_dp=deg["attn_dp"],
                            replicas=deg["replicas"], batch=p["plan"]["batch"], sharding=sharding)
        self.assertTrue(r["feasible"], r["reason"])
        self.assertAlmostEqual(r["tpot_ms"], p["metrics"]["tpot_ms"], places=6)
        with self.assertRaises(sw.Error):
            sw.launch(p["plan"], "tgi")

    def test_the_plan_records_its_engine_and_launch_replays_it(self):
        p = sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", search="exact", engine="sglang")
        self.assertEqual(p["plan"]["engine"], {"name": "sglang", "version": "0.5"})
        self.assertIn("sglang.launch_server", sw.launch(p["plan"]))
        self.assertIn("vllm serve", sw.launch(p["plan"], "vllm"))
        q = sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", search="exact")
        self.assertNotIn("engine", q["plan"])
        with self.assertRaisesRegex(sw.Error, r"engine: expected vllm, sglang or trtllm \(the plan records no engine\)"):
            sw.launch(q["plan"])

    def test_launch_checks_as_the_cli(self):
        # one code path (report/launch_plan): a disaggregated plan larger than its cluster and a
        # model folder of another model are refused, as on the CLI
        with open(os.path.join(DATA, "good", "plan-disagg.json")) as f:
            plan = json.load(f)
        self.assertIn("vllm serve", sw.launch(plan, "vllm"))
        plan["disaggregated"]["prefill"]["degrees"]["replicas"] = 2  # 2 prefill + 3 decode on 4 GPUs
        with self.assertRaisesRegex(sw.Error, r"pools that fit the cluster's 4 GPUs, found 2 prefill \+ 3 decode = 5 GPUs"):
            sw.launch(plan, "vllm")
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(os.path.join(SHARED, "models", "qwen3-8b.json"), os.path.join(d, "config.json"))
            p = sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", search="exact")
            with self.assertRaisesRegex(sw.Error, r"^model_path: expected a checkpoint of the plan's model llama-3.1-8b"):
                sw.launch(p["plan"], "vllm", model_path=d)
            with self.assertRaisesRegex(sw.Error, r"model_path: expected a value without control characters"):
                sw.launch(p["plan"], "vllm", model_path="x\nrm -rf ~")

    def test_decode_steps_is_the_clis_flag(self):
        # decode_steps= is --decode-steps: SGLang runs k decode iterations per decision, the
        # plan records it, and an engine that schedules every iteration refuses more than 1
        one = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", engine="sglang", mode="serve", rate=4, requests=200)
        four = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", engine="sglang", mode="serve", rate=4, requests=200, decode_steps=4)
        self.assertNotEqual(one["ttft_ms_p99"], four["ttft_ms_p99"])
        p = sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", engine="sglang", decode_steps=4)
        self.assertEqual(p["plan"]["engine_settings"]["decode_steps"], 4)
        with self.assertRaisesRegex(sw.Error, r"^decode_steps: "):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", engine="vllm", mode="serve", rate=4, requests=200, decode_steps=2)

    def test_cuda_graph_batch_sizes_is_the_clis_flag(self):
        # cuda_graph_batch_sizes= (a list or '128,256') is --cuda-graph-batch-sizes: decode-only
        # iterations padded up to the sizes, recorded by the serve report and the plan
        kw = dict(mode="decode", batch=100, context=1024)
        off = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", **kw)
        on = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes=[256, 128], **kw)
        same = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes="128,256", **kw)
        self.assertGreater(on["tpot_ms"], off["tpot_ms"])  # 100 sequences run as 128
        self.assertEqual(on["tpot_ms"], same["tpot_ms"])
        served = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", engine="vllm", mode="serve", rate=5, requests=100,
                             cuda_graph_batch_sizes="64,128")
        self.assertEqual(served["engine"]["cuda_graph_batch_sizes"], [64, 128])
        p = sw.plan("llama-3.1-8b", "h100x8", "chat-1k-1k", engine="vllm", mode="serve", requests=200, cuda_graph_batch_sizes=[8, 16])
        self.assertEqual(p["plan"]["engine_settings"]["cuda_graph_batch_sizes"], [8, 16])
        with self.assertRaisesRegex(sw.Error, r"^cuda_graph_batch_sizes: expected a comma-separated list"):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes="128;256", **kw)
        with self.assertRaisesRegex(sw.Error, r"^cuda_graph_batch_sizes: expected 1 to 256 batch sizes from 1 to 65536, found 0$"):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes=[0, 8], **kw)
        with self.assertRaisesRegex(sw.Error, r"^cuda_graph_batch_sizes: expected whole batch sizes"):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes=[1.5], **kw)
        with self.assertRaisesRegex(sw.Error, r"^cuda_graph_batch_sizes: expected an integer that fits 64 bits"):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes=[2**70], **kw)
        with self.assertRaisesRegex(sw.Error, r"^cuda_graph_batch_sizes: expected 1 to 256 batch sizes from 1 to 65536, found '0,8'$"):
            sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", cuda_graph_batch_sizes="0,8", **kw)

    def test_adp_balance_is_the_clis_flag(self):
        # adp_balance='W,T' is --adp-balance: TensorRT-LLM holds new prompts under attention DP,
        # the serve report and the plan record it, and another engine refuses it
        kw = dict(attn_dp=8, ep=8, engine="trtllm", mode="serve", rate=5, requests=200)
        off = sw.simulate("deepseek-v3", "b200x8", "chat-1k-1k", **kw)
        on = sw.simulate("deepseek-v3", "b200x8", "chat-1k-1k", adp_balance="3,9", **kw)
        self.assertIsNone(off["engine"]["adp_balance"])
        self.assertEqual(on["engine"]["adp_balance"], {"batching_wait_iters": 3, "timeout_iters": 9})
        self.assertGreater(on["ttft_ms"], off["ttft_ms"])
        p = sw.plan("deepseek-v3", "b200x8", "chat-1k-1k", engine="trtllm", mode="serve", requests=200, adp_balance="3,9")
        self.assertEqual(p["plan"]["engine_settings"]["adp_balance"], {"batching_wait_iters": 3, "timeout_iters": 9})
        with self.assertRaisesRegex(sw.Error, r"^adp_balance: expected engine='trtllm' beside it .*found engine='sglang'$"):
            sw.simulate("deepseek-v3", "b200x8", "chat-1k-1k", attn_dp=8, ep=8, engine="sglang", mode="serve", rate=5, adp_balance="3,9")
        with self.assertRaisesRegex(sw.Error, r"^adp_balance: expected WAIT,TIMEOUT"):
            sw.simulate("deepseek-v3", "b200x8", "chat-1k-1k", adp_balance="3;9", **kw)
        # where it can hold nothing, a warning as the CLI's note
        with self.assertWarnsRegex(UserWarning, r"^adp_balance has no effect in mode offline"):
            sw.simulate("qwen3-30b-a3b", "h100x1", "chat-1k-1k", engine="trtllm", mode="offline", isl=100, osl=100, adp_balance="3,9")
        with self.assertWarnsRegex(UserWarning, r"^adp_balance has no effect: each instance has one attention-DP rank"):
            sw.simulate("qwen3-30b-a3b", "h100x1", "chat-1k-1k", engine="trtllm", mode="serve", isl=100, osl=100, rate=5, requests=50,
                        adp_balance="3,9")

    def test_max_num_seqs_caps_batch_max_of_a_named_engine(self):
        # as the CLI: outside serve, a named engine's running-sequence cap bounds batch max
        kw = dict(mode="offline", isl=871, osl=129, weights_dtype="fp4", kv_dtype="fp8", batch="max")
        capped = sw.simulate("llama-3.1-8b", "b200x1", "chat-1k-1k", engine="vllm", max_num_seqs=16, **kw)
        self.assertEqual(capped["batch"], 16)
        self.assertTrue(capped["batch_at_engine_cap"])
        free = sw.simulate("llama-3.1-8b", "b200x1", "chat-1k-1k", **kw)
        self.assertGreater(free["batch"], 16)
        self.assertFalse(free["batch_at_engine_cap"])
        # offline on trtllm without caps: trtllm-bench's, as the CLI's simulate
        bench = sw.simulate("llama-3.1-8b", "b200x1", "chat-1k-1k", engine="trtllm", **kw)
        self.assertEqual(bench["engine"]["caps_origin"], "trtllm-bench")
        # its estimate: 2,606 requests of 871 + 129 tokens on the B200's 183,359 MiB -> 2,606 up to
        # a multiple of 256 = 2,816; 2,606 x (1 + 871/129) = 20,202 tokens up to 1,024s = 20,480
        self.assertEqual((bench["engine"]["max_num_seqs"], bench["engine"]["max_num_tokens"]), (2816, 20480))
        given = sw.simulate("llama-3.1-8b", "b200x1", "chat-1k-1k", engine="trtllm", max_num_seqs=64, **kw)
        self.assertNotIn("caps_origin", given["engine"])
        self.assertEqual(given["engine"]["max_num_seqs"], 64)

    def test_spec_tokens_alone_take_the_models_mtp_acceptance(self):
        r = sw.simulate("deepseek-v3", "h200x8", tp=8, ep=4, batch=1, spec_tokens=3)
        self.assertAlmostEqual(r["speculative"]["acceptance"], 0.85)
        with self.assertRaisesRegex(sw.Error, r"^spec_acceptance: expected a probability .*llama-3.1-8b has no MTP modules"):
            sw.simulate("llama-3.1-8b", "h100x8", spec_tokens=2)

    def test_launch_writes_kubernetes_manifests(self):
        # format="k8s" is the CLI's --format k8s: a disaggregated plan gives a Dynamo graph; a
        # bad format or an image without k8s names the keyword
        with open(os.path.join(DATA, "k8s", "disagg-plan.json")) as f:
            plan = json.load(f)
        out = sw.launch(plan, "sglang", format="k8s", image="registry.local/dynamo-sglang:1")
        self.assertIn("kind: DynamoGraphDeployment", out)
        self.assertIn('image: "registry.local/dynamo-sglang:1"', out)
        with self.assertRaisesRegex(sw.Error, r"^format: expected text or k8s, found 'helm'"):
            sw.launch(plan, "sglang", format="helm")
        with self.assertRaisesRegex(sw.Error, r"^image: expected --format k8s beside it"):
            sw.launch(plan, "sglang", image="x")

    def test_a_local_folder_named_like_a_preset_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            try:
                os.chdir(d)
                os.mkdir("llama-3.1-8b")
                with self.assertRaisesRegex(sw.Error, r"shadows the preset of the same name"):
                    sw.describe(model="llama-3.1-8b")
                shutil.copy(os.path.join(SHARED, "models", "qwen3-8b.json"), os.path.join("llama-3.1-8b", "config.json"))
                with self.assertWarnsRegex(UserWarning, r"the local folder 'llama-3.1-8b' is read, not the preset"):
                    sw.describe(model="llama-3.1-8b")
            finally:
                os.chdir(cwd)

    def test_serve_plan_with_a_target_rate(self):
        r = sw.plan("llama-3.1-8b", "h100x4", "chat-1k-1k", mode="serve", ttft_ms=3000, tpot_ms=40, requests=300, target_rate=6)
        self.assertTrue(r["feasible"], r["reason"])
        self.assertLessEqual(r["gpus"], 4)
        self.assertIn("frontier", r)
        self.assertIn(r["chosen"], ("aggregated", "disaggregated"))
        # the disaggregated deployments sized for the target, or why there is none
        self.assertTrue(r["disaggregated_candidates"] or r["disaggregated_reason"])
        json.dumps(r)  # plain data all the way down


class Reliability(unittest.TestCase):
    """Issue 30: keywords checked as the CLI checks flags; long runs stop on time and on Ctrl-C."""

    def refused(self, f, *args, **kw):
        with self.assertRaises(sw.Error) as c:
            f(*args, **kw)
        return c.exception

    def test_keywords_typed_as_the_cli_types_flags(self):
        self.assertEqual(self.refused(sw.simulate, "llama-3.1-8b", "h100x8", tp=True).file, "tp")  # not 1
        self.assertEqual(self.refused(sw.simulate, "llama-3.1-8b", "h100x8", tp=1.5).file, "tp")
        self.assertEqual(self.refused(sw.plan, "llama-3.1-8b", "h100x8", budget=False).file, "budget")
        self.assertEqual(self.refused(sw.simulate, "llama-3.1-8b", "h100x8", mode="serve", isl=9, osl=9, rate=True).file, "rate")
        self.assertEqual(self.refused(sw.simulate, "llama-3.1-8b", "h100x8", engine="").file, "engine")
        self.assertEqual(self.refused(sw.simulate, "llama-3.1-8b", "h100x8", max_num_seqs=4).file, "max_num_seqs")

    def test_describe_checks_every_keyword_and_wants_something(self):
        self.assertEqual(self.refused(sw.describe).file, "describe")
        self.assertEqual(self.refused(sw.describe, model="llama-3.1-8b", bogus=1).file, "bogus")

    def test_bad_serving_input_is_an_error_not_a_result(self):
        e = self.refused(sw.simulate, "llama-3.1-8b", "h100x8", mode="serve", isl=100, osl=10, concurrency=3, replicas=2)
        self.assertEqual(e.file, "concurrency")
        e = self.refused(sw.plan, "llama-3.1-8b", "h100x8", "chat-1k-1k", mode="serve", rate=3)
        self.assertEqual(e.file, "rate")

    def test_time_limit_stops_a_long_simulation(self):
        r = sw.simulate("llama-3.1-8b", "h100x8", mode="serve", isl=1000, osl=200, rate=50, requests=3000000, time_limit=1)
        self.assertTrue(r["stopped"])
        self.assertFalse(r["feasible"])
        self.assertIn("time limit", r["reason"])

    def test_ctrl_c_stops_a_plan_within_a_second(self):
        import signal
        import subprocess
        import sys
        import time
        code = ("import signal, sys, time, shardwise as sw\n"
                "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                "print('ready', flush=True)\n"
                "try:\n"
                "    sw.plan('llama-3.1-8b', 'h100x8', 'chat-1k-1k', search='rw', budget=10**9)\n"
                "except KeyboardInterrupt:\n"
                "    print('interrupted', flush=True)\n")
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        self.assertEqual(p.stdout.readline().strip(), "ready")
        time.sleep(1.0)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
        took = time.monotonic() - t0
        self.assertIn("interrupted", out)
        self.assertLess(took, 1.0)


class Sweep(unittest.TestCase):
    def test_a_serving_sweep_plans_serve_mode_per_point_and_skips_what_cannot_run(self):
        r = sw.sweep("llama-3.1-8b", ["h100", "mi300x"], [1, 2], engines=["vllm", "trtllm"], mode="serve",
                     slo="ttft:p99<=2000,tpot:p90<=50", requests=200, top_k=3)
        self.assertEqual(r["mode"], "serve")
        self.assertEqual(len(r["points"]), 8)
        served = [p for p in r["points"] if p["found"]]
        self.assertEqual(len(served), 6)
        for p in served:
            s = p["serving"]
            self.assertGreater(s["requests_per_s"], 0)
            self.assertEqual((s["ttft_stat"], s["tpot_stat"]), ("p99", "p90"))
            self.assertLessEqual(s["tpot_ms"], 50)
        skipped = [p for p in r["points"] if "skipped" in p]
        self.assertEqual([(p["gpu"], p["engine"]) for p in skipped], [("mi300x", "trtllm")] * 2)
        # mi300x is not in the shipped price table: no price, and why
        self.assertIsNone(next(p for p in served if p["gpu"] == "mi300x")["usd_per_mtok"])
        self.assertIn("no price for mi300x", next(p for p in served if p["gpu"] == "mi300x")["price_note"])
        # the command's checks, named by keyword
        with self.assertRaises(sw.Error) as e:
            sw.sweep("llama-3.1-8b", ["h100"], [1], target_rate=5)
        self.assertEqual(e.exception.file, "target_rate")
        with self.assertRaises(sw.Error) as e:
            sw.plan("llama-3.1-8b", "mi300xx8", "chat-1k-1k", engine="trtllm")
        self.assertEqual(e.exception.file, "engine")


class CheckAndCalibrate(unittest.TestCase):
    """check(), calibrate() and calibration= (docs/check.md, docs/calibration.md)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def result(self, name, rate, tpot):
        # vllm bench serve --save-result keys (vllm/benchmarks/serve.py)
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump({"num_prompts": 200, "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "duration": 52.0,
                       "completed": 200, "total_input_tokens": 200 * 1024, "total_output_tokens": 200 * 128,
                       "request_throughput": rate, "output_throughput": rate * 128, "mean_ttft_ms": 45.0,
                       "median_ttft_ms": 40.0, "mean_tpot_ms": tpot, "median_tpot_ms": tpot}, f)
        return path

    def test_check_calibrate_and_use_the_profile(self):
        p = sw.plan("llama-3.1-8b", "h100x1", "chat-1k-1k", engine="vllm")["plan"]
        r = sw.check(p, self.result("a.json", 4.0, 8.0))
        self.assertEqual(r["tool"], "vllm")
        self.assertEqual(r["traffic"]["requests"], 200)
        metrics = {row["metric"]: row for row in r["rows"]}
        self.assertAlmostEqual(metrics["tpot_mean_ms"]["measured"], 8.0)
        out = os.path.join(self.tmp, "profile.yaml")
        c = sw.calibrate(p, [self.result("a.json", 4.0, 8.0), self.result("b.json", 8.0, 9.0)], out=out)
        self.assertEqual(c["terms"][0]["term"], "step_overhead_us")
        self.assertLess(c["rms_log_error_after"], c["rms_log_error_before"])
        self.assertTrue(os.path.exists(out))
        base = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", batch=8)["tpot_ms"]
        fitted = sw.simulate("llama-3.1-8b", "h100x1", "chat-1k-1k", batch=8, calibration=out)["tpot_ms"]
        self.assertNotAlmostEqual(base, fitted)
        with self.assertRaises(sw.Error) as e:
            sw.simulate("llama-3.1-8b", "h200x1", "chat-1k-1k", batch=8, calibration=out)
        self.assertEqual(e.exception.field, "gpu")
        with self.assertRaises(sw.Error) as e:
            sw.check(p, os.path.join(self.tmp, "missing.json"))


if __name__ == "__main__":
    unittest.main()
