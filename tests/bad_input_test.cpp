// The corpus of malformed and inconsistent inputs: each file must be rejected
// with a message that names the file and contains the expected clause
// (tests/data/bad/EXPECTED.tsv). Files m* are model configs, c* clusters, w* workloads.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "hardware/cluster.hpp"
#include "model/loader.hpp"
#include "workload/workload.hpp"

namespace shardwise {
namespace {
namespace fs = std::filesystem;

std::map<std::string, std::string> expectations() {
  std::map<std::string, std::string> out;
  std::ifstream in(fs::path(SHARDWISE_TEST_DATA) / "bad" / "EXPECTED.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab != std::string::npos) out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

std::string load_error(const fs::path& p) {
  const std::string name = p.filename().string();
  const std::string path = p.string();
  switch (name[0]) {
    case 'm': {
      auto r = load_model(path);
      return r.ok() ? "" : r.error().message();
    }
    case 'c': {
      auto r = load_cluster(path);
      return r.ok() ? "" : r.error().message();
    }
    case 'w': {
      auto r = load_workload(path);
      return r.ok() ? "" : r.error().message();
    }
    default: return "";  // plan, sharding and policy files: tests/cli/bad_corpus_test.sh runs them through the CLI
  }
}

TEST(BadInput, EveryFileIsRejectedWithItsMessage) {
  const auto expected = expectations();
  ASSERT_GE(expected.size(), 30u);
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDWISE_TEST_DATA) / "bad")) {
    const std::string name = e.path().filename().string();
    if (name == "EXPECTED.tsv" || (name[0] != 'm' && name[0] != 'c' && name[0] != 'w')) continue;
    auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << name << " has no line in EXPECTED.tsv";
    const std::string msg = load_error(e.path());
    ASSERT_FALSE(msg.empty()) << name << " was accepted";
    EXPECT_EQ(msg.rfind(e.path().string() + ": ", 0), 0u) << name << ": the message must start with the file: " << msg;
    EXPECT_NE(msg.find(it->second), std::string::npos) << name << "\n  got:  " << msg << "\n  want: " << it->second;
    ++checked;
  }
  int loader_lines = 0;
  for (const auto& [name, clause] : expected) loader_lines += name[0] == 'm' || name[0] == 'c' || name[0] == 'w';
  EXPECT_EQ(checked, loader_lines);
}

}  // namespace
}  // namespace shardwise
