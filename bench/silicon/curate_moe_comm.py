#!/usr/bin/env python3
"""Curates data/silicon/moe_comm.csv from ../shared/silicon/moe_comm.csv: the measured time of the
expert-parallel dispatch and combine kernels the engines run, by EP size and tokens per rank
(docs/silicon.md, "Dispatch and combine").

Kept: the rows that state a time (metric latency / latency_mean, in us) of the kernels an engine runs
in decode, each under the family shardwise prices it as:

  nvlink_one_sided  TensorRT-LLM's NVLinkOneSided AlltoAll (GB200 NVL72, EP 8-64, 1-2,048 tokens per
                    rank, bf16 dispatch and combine, perfect router; TensorRT-LLM tech blog 18)
  deepep_ll         DeepEP's low-latency kernels as of de8cfca3 (NVLink for intranode peers, RDMA
                    across nodes; H800 with one 400 Gb/s CX7 NIC per GPU, EP 8-256, 128 tokens, fp8
                    dispatch and bf16 combine), and on AMD ROCm's MORI-EP low-latency kernels
                    (MI300X, MI355X; EP 8 and 16, 128 tokens; the EP 32 rows the README marks stale
                    are left out)

Left out: bandwidth-only rows (the normal/high-throughput kernels at 4,096 tokens, whose byte
definitions differ by library), pplx and NVSHMEM rows (the README names no GPU), UCCL-EP (EFA and
CPU-proxy specific) and the post-quant dispatch rows (one EP, one size).

bytes: the logical payload one rank sends, tokens x top-k x hidden x bytes per element (bf16 2; fp8
with one fp32 scale per 128 elements 1 + 4/128), the quantity the TensorRT-LLM blog divides by the
latency; every kept row has ep >= top-k, so min(ep, top-k) = top-k.
usage: curate_moe_comm.py [SHARED_DIR] > data/silicon/moe_comm.csv
"""
import csv
import sys

SILICON = {"GB200 NVL72": "gb200", "H800 SXM": "h800", "MI300X": "mi300x", "MI355X": "mi355x"}


def family(r):
    lib, mode, ic = r["library"], r["kernel_mode"], r["interconnect"]
    if r["gpu"] == "GB200 NVL72" and lib.startswith("TensorRT-LLM NVLinkOneSided") and mode.startswith("one-sided"):
        return "nvlink_one_sided"
    if r["gpu"] == "H800 SXM" and lib == "DeepEP" and mode.startswith("low-latency") and "NVLink for intranode" in ic:
        return "deepep_ll"
    if r["gpu"] in ("MI300X", "MI355X") and lib.startswith("ROCm MORI-EP") and mode == "low-latency":
        return None if "stale" in r["notes"] else "deepep_ll"
    return None


def payload(r, op):
    d = r["dtype"].upper()
    if d.startswith("BF16"):
        return 2.0
    if d.startswith("FP8 DISPATCH"):  # "FP8 dispatch / BF16 combine"
        return 1.0 + 4.0 / 128.0 if op == "dispatch" else 2.0
    if d.startswith("FP8"):
        return 1.0 + 4.0 / 128.0
    sys.exit(f"curate_moe_comm.py: {r['source_locator']}: dtype '{r['dtype']}' not understood")


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["silicon", "family", "library", "op", "ep", "tokens", "hidden", "topk", "payload_bytes", "bytes", "value", "unit",
                  "source_locator"])
    seen = set()
    with open(f"{shared}/silicon/moe_comm.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            if r["metric"] not in ("latency", "latency_mean") or r["gpu"] not in SILICON:
                continue
            fam = family(r)
            if fam is None or r["op"] not in ("dispatch", "combine"):
                continue
            if r["unit"] != "us":
                sys.exit(f"curate_moe_comm.py: {r['source_locator']}: expected unit us, found {r['unit']}")
            ep, tokens, hidden, topk = int(r["ep_size"]), int(r["tokens_per_rank"]), int(r["hidden"]), int(r["topk"])
            if ep < topk:
                sys.exit(f"curate_moe_comm.py: {r['source_locator']}: ep {ep} below top-k {topk}")
            key = (SILICON[r["gpu"]], fam, r["op"], ep, tokens)
            if key in seen:  # the same point from two README versions: the first (curated order) is kept
                continue
            seen.add(key)
            pb = payload(r, r["op"])
            b = tokens * topk * hidden * pb
            out.writerow([SILICON[r["gpu"]], fam, r["library"].split(" (")[0], r["op"], ep, tokens, hidden, topk, f"{pb:g}", f"{b:.0f}",
                          f"{float(r['value']):.1f}", "us", r["source_locator"]])


if __name__ == "__main__":
    main()
