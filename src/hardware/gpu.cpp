#include "hardware/gpu.hpp"

namespace shardwise {
namespace {
using namespace units;

std::vector<GpuSpec> make_catalog() {
  std::vector<GpuSpec> c;
  // H100 SXM5 80GB: 989 TFLOP/s dense BF16, 1979 dense FP8; HBM3 3.35 TB/s;
  // 81559 MiB as the driver reports it; NVLink 4 900 GB/s both directions (450 each);
  // DGX H100: one 400 Gb/s NDR NIC per GPU (50 GB/s); PCIe gen5 x16 64 GB/s.
  c.push_back({"h100", teraflops(989.4), teraflops(1978.9), FlopsPerSecond(0), Bytes(81559.0 * kMi), terabytes_per_s(3.35),
               gigabytes_per_s(450), microseconds(2.0), gigabytes_per_s(64), gigabytes_per_s(50), microseconds(6.0), 8, 8});
  // H200 SXM 141GB: same compute as H100; HBM3e 4.8 TB/s, 143771 MiB reported.
  c.push_back({"h200", teraflops(989.4), teraflops(1978.9), FlopsPerSecond(0), Bytes(143771.0 * kMi), terabytes_per_s(4.8),
               gigabytes_per_s(450), microseconds(2.0), gigabytes_per_s(64), gigabytes_per_s(50), microseconds(6.0), 8, 8});
  // A100 SXM4 80GB: 312 TFLOP/s BF16, no FP8; 2.039 TB/s; NVLink 3 600 GB/s (300 each);
  // DGX A100: 200 Gb/s HDR per GPU (25 GB/s); PCIe gen4 32 GB/s.
  c.push_back({"a100", teraflops(312), FlopsPerSecond(0), FlopsPerSecond(0), Bytes(81920.0 * kMi), terabytes_per_s(2.039),
               gigabytes_per_s(300), microseconds(2.5), gigabytes_per_s(32), gigabytes_per_s(25), microseconds(6.0), 8, 8});
  // B200 (HGX B200): 2.25 PFLOP/s dense BF16, 4.5 dense FP8, 9 dense FP4; "180GB" HBM3e at 8 TB/s,
  // 183359 MiB as the driver reports it (nvidia-smi on DGX/HGX B200: 192.3 GB, not 180);
  // NVLink 5 1.8 TB/s both directions (900 each); 400 Gb/s per GPU; PCIe gen6 128 GB/s.
  c.push_back({"b200", teraflops(2250), teraflops(4500), teraflops(9000), Bytes(183359.0 * kMi), terabytes_per_s(8.0),
               gigabytes_per_s(900), microseconds(2.0), gigabytes_per_s(128), gigabytes_per_s(50), microseconds(6.0), 8, 8});
  // GB200 NVL72 (per GPU): 2.5 PFLOP/s dense BF16, 5 dense FP8, 10 dense FP4; "186GB" at 8 TB/s,
  // 189471 MiB as the driver reports it (198.7 GB);
  // 72 GPUs in one NVLink domain, 4 GPUs per compute tray (node); 800 Gb/s CX-8 per GPU.
  c.push_back({"gb200", teraflops(2500), teraflops(5000), teraflops(10000), Bytes(189471.0 * kMi), terabytes_per_s(8.0),
               gigabytes_per_s(900), microseconds(2.0), gigabytes_per_s(128), gigabytes_per_s(100), microseconds(6.0), 4, 72});
  // B300 (HGX B300, Blackwell Ultra): 2.25 PFLOP/s dense BF16, 4.5 dense FP8, 13.5 dense FP4;
  // 288 GB HBM3e at 8 TB/s, 275040 MiB as the driver reports it (B300 SXM6 AC);
  // NVLink 5 900 GB/s per direction; 800 Gb/s ConnectX-8 per GPU.
  c.push_back({"b300", teraflops(2250), teraflops(4500), teraflops(13500), Bytes(275040.0 * kMi), terabytes_per_s(8.0),
               gigabytes_per_s(900), microseconds(2.0), gigabytes_per_s(128), gigabytes_per_s(100), microseconds(6.0), 8, 8});
  // GB300 NVL72 (per GPU): 2.5 PFLOP/s dense BF16, 5 dense FP8, 15 dense FP4; 288 GB at 8 TB/s,
  // 284208 MiB as the driver reports it (298.0 GB);
  // 72 GPUs in one NVLink domain, 4 per compute tray; 800 Gb/s per GPU.
  c.push_back({"gb300", teraflops(2500), teraflops(5000), teraflops(15000), Bytes(284208.0 * kMi), terabytes_per_s(8.0),
               gigabytes_per_s(900), microseconds(2.0), gigabytes_per_s(128), gigabytes_per_s(100), microseconds(6.0), 4, 72});
  // H20 (HGX H20, Hopper): 148 TFLOP/s dense BF16, 296 dense FP8; 96 GB HBM3 at 4.0 TB/s,
  // 97871 MiB as the driver reports it; NVLink 4 900 GB/s both directions; 400 Gb/s per GPU.
  c.push_back({"h20", teraflops(148), teraflops(296), FlopsPerSecond(0), Bytes(97871.0 * kMi), terabytes_per_s(4.0),
               gigabytes_per_s(450), microseconds(2.0), gigabytes_per_s(64), gigabytes_per_s(50), microseconds(6.0), 8, 8});
  // L40S (PCIe, Ada): 362 TFLOP/s dense BF16, 733 dense FP8; 48 GB GDDR6 at 864 GB/s; no
  // NVLink: GPUs of a node talk over PCIe gen4 x16 (32 GB/s per direction); 200 Gb/s per GPU.
  c.push_back({"l40s", teraflops(362), teraflops(733), FlopsPerSecond(0), gigabytes(48), gigabytes_per_s(864),
               gigabytes_per_s(32), microseconds(4.0), gigabytes_per_s(32), gigabytes_per_s(25), microseconds(8.0), 8, 1});
  // AMD Instinct MI300X (OAM): 1307 TFLOP/s dense BF16, 2615 dense FP8; "192GB" HBM3 at
  // 5.3 TB/s, 205,822,885,888 bytes as rocm-smi reports it (196288 MiB); 8 GPUs fully connected by
  // Infinity Fabric, 7 links of 64 GB/s per direction (448 GB/s to its peers); 400 Gb/s per
  // GPU. ROCm builds of vLLM and SGLang.
  c.push_back({"mi300x", teraflops(1307.4), teraflops(2614.9), FlopsPerSecond(0), Bytes(196288.0 * kMi), terabytes_per_s(5.3),
               gigabytes_per_s(448), microseconds(3.0), gigabytes_per_s(64), gigabytes_per_s(50), microseconds(6.0), 8, 8, "amd"});
  // MI325X: MI300X's compute; 256 GB HBM3e at 6 TB/s; the same Infinity Fabric.
  c.push_back({"mi325x", teraflops(1307.4), teraflops(2614.9), FlopsPerSecond(0), gigabytes(256), terabytes_per_s(6.0),
               gigabytes_per_s(448), microseconds(3.0), gigabytes_per_s(64), gigabytes_per_s(50), microseconds(6.0), 8, 8, "amd"});
  // MI355X: 2.5 PFLOP/s dense BF16, 5 dense FP8, 10 dense MXFP4; 288 GB HBM3e at 8 TB/s;
  // Infinity Fabric 7 links of 76.8 GB/s per direction (537.6 GB/s to its peers).
  c.push_back({"mi355x", teraflops(2500), teraflops(5000), teraflops(10000), gigabytes(288), terabytes_per_s(8.0),
               gigabytes_per_s(537.6), microseconds(3.0), gigabytes_per_s(128), gigabytes_per_s(50), microseconds(6.0), 8, 8, "amd"});
  // The GPUs of Seesaw's evaluation (MLSys 2025, Table 1; bench/seesaw), PCIe cards without NVLink:
  // A10 (NVIDIA A10 datasheet): 125 TFLOP/s dense BF16/FP16 (250 with sparsity), no FP8;
  // 24 GB GDDR6 at 600 GB/s; PCIe gen4 x16 (32 GB/s per direction; AWS g5 links each at x8,
  // 16 GiB/s: give it in a cluster YAML); g5.48xlarge: 100 Gb/s for 8 GPUs (1.5625 GB/s each).
  c.push_back({"a10", teraflops(125), FlopsPerSecond(0), FlopsPerSecond(0), gigabytes(24), gigabytes_per_s(600),
               gigabytes_per_s(32), microseconds(4.0), gigabytes_per_s(32), gigabytes_per_s(1.5625), microseconds(10.0), 8, 1});
  // L4 (NVIDIA L4 datasheet): 121 TFLOP/s dense BF16 (242 with sparsity), 242.5 dense FP8
  // (485 with sparsity); 24 GB GDDR6 at 300 GB/s; PCIe gen4 x16; g6.48xlarge: 100 Gb/s for 8.
  c.push_back({"l4", teraflops(121), teraflops(242.5), FlopsPerSecond(0), gigabytes(24), gigabytes_per_s(300),
               gigabytes_per_s(32), microseconds(4.0), gigabytes_per_s(32), gigabytes_per_s(1.5625), microseconds(10.0), 8, 1});
  // A100 SXM4 40GB (A100 datasheet): 312 TFLOP/s BF16; 40 GB HBM2 at 1.555 TB/s; NVLink 3
  // 600 GB/s (300 each way); PCIe gen4 32 GB/s; 200 Gb/s HDR per GPU (DGX A100).
  c.push_back({"a100-40gb", teraflops(312), FlopsPerSecond(0), FlopsPerSecond(0), Bytes(40960.0 * kMi), terabytes_per_s(1.555),
               gigabytes_per_s(300), microseconds(2.5), gigabytes_per_s(32), gigabytes_per_s(25), microseconds(6.0), 8, 8});
  return c;
}
}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> catalog = make_catalog();  // immutable after first use
  return catalog;
}

std::optional<GpuSpec> find_gpu(std::string_view name) {
  for (const auto& g : gpu_catalog()) {
    if (g.name == name) return g;
  }
  return std::nullopt;
}

std::string gpu_names() {
  std::string s;
  for (const auto& g : gpu_catalog()) s += (s.empty() ? "" : ", ") + g.name;
  return s;
}

}  // namespace shardwise
