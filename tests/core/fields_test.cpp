#include "core/fields.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace shardwise {
namespace {
using nlohmann::json;

TEST(Quantity, ParsesUnits) {
  EXPECT_DOUBLE_EQ(*parse_quantity("450 GB/s", Dimension::kBandwidth), 450e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("400 Gb/s", Dimension::kBandwidth), 50e9);  // bits: /8
  EXPECT_DOUBLE_EQ(*parse_quantity("3.35 TB/s", Dimension::kBandwidth), 3.35e12);
  EXPECT_DOUBLE_EQ(*parse_quantity("80 GiB", Dimension::kBytes), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(*parse_quantity("141GB", Dimension::kBytes), 141e9);
  EXPECT_DOUBLE_EQ(*parse_quantity("989.4 TFLOP/s", Dimension::kFlopRate), 989.4e12);
  EXPECT_DOUBLE_EQ(*parse_quantity("2.5 us", Dimension::kTime), 2.5e-6);
  EXPECT_DOUBLE_EQ(*parse_quantity("1e3 ms", Dimension::kTime), 1.0);
}

TEST(Quantity, RejectsMissingOrWrongUnits) {
  EXPECT_FALSE(parse_quantity("450", Dimension::kBandwidth));
  EXPECT_FALSE(parse_quantity("450 GB", Dimension::kBandwidth));  // a size, not a bandwidth
  EXPECT_FALSE(parse_quantity("GB/s", Dimension::kBandwidth));
  EXPECT_FALSE(parse_quantity("fast", Dimension::kTime));
  EXPECT_FALSE(parse_quantity("inf GB", Dimension::kBytes));
}

TEST(Yaml, ConvertsScalarsByType) {
  auto j = parse_yaml_text("a: 8\nb: 1.5\nc: \"8\"\nd: ~\ne: true\nf: h100\ng: [1, 2]\n", "t.yaml");
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_TRUE((*j)["a"].is_number_integer());
  EXPECT_TRUE((*j)["b"].is_number_float());
  EXPECT_TRUE((*j)["c"].is_string());  // quoted stays a string
  EXPECT_TRUE((*j)["d"].is_null());
  EXPECT_TRUE((*j)["e"].is_boolean());
  EXPECT_EQ((*j)["f"], "h100");
  EXPECT_EQ((*j)["g"].size(), 2u);
}

TEST(Yaml, RejectsDuplicateKeysAndDeepNesting) {
  auto d = parse_yaml_text("a: 1\na: 2\n", "dup.yaml");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("each key once"), std::string::npos);
  auto n = parse_yaml_text(std::string(200, '[') + std::string(200, ']'), "deep.yaml");
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message().find("levels of nesting"), std::string::npos);
}

TEST(Json, SyntaxErrorNamesLineAndColumn) {
  auto j = parse_json_text("{\n  \"a\": 1,\n  \"b\": }\n", "x.json");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("x.json: expected valid JSON, found a syntax error at line 3"), std::string::npos)
      << j.error().message();
  auto deep = parse_json_text(std::string(100, '[') + std::string(100, ']'), "deep.json");
  EXPECT_FALSE(deep.ok());
}

TEST(FieldReader, LatchesTheFirstError) {
  const json doc = json::parse(R"({"a": -1, "b": "x"})");
  ErrorSink sink;
  FieldReader r = root_reader(doc, "f.json", sink);
  EXPECT_EQ(r.integer("a", 1, 10), 1);  // fails: returns the lower bound
  r.integer("b", 1, 10);                // ignored: an error is already latched
  ASSERT_TRUE(sink.failed());
  EXPECT_EQ(sink.first->message(), "f.json: field 'a': expected an integer from 1 to 10, found -1");
}

TEST(FieldReader, IntegralFloatsAreIntegers) {
  const json doc = json::parse(R"({"a": 4096.0, "b": 4096.5})");
  ErrorSink sink;
  FieldReader r = root_reader(doc, "f.json", sink);
  EXPECT_EQ(r.integer("a", 1, 1 << 20), 4096);
  EXPECT_FALSE(sink.failed());
  r.integer("b", 1, 1 << 20);
  EXPECT_TRUE(sink.failed());
}

TEST(FieldReader, NestedObjectsCarryTheirPath) {
  const json doc = json::parse(R"({"gpu": {"hbm": "lots"}})");
  ErrorSink sink;
  FieldReader r = root_reader(doc, "c.yaml", sink);
  auto g = r.object("gpu", true);
  ASSERT_TRUE(g.has_value());
  g->quantity("hbm", Dimension::kBytes, 1e15);
  ASSERT_TRUE(sink.failed());
  EXPECT_EQ(sink.first->field, "gpu.hbm");
}

TEST(Files, ADirectoryOrAnUnreachablePathIsAnErrorNotAnException) {
  // issue 16, defects 2 and 7: a directory read as a file was "a syntax error at line 1";
  // a name too long for the file system must be an answer, never a thrown filesystem_error
  auto d = read_text_file(".");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().message(), ".: expected a file, found a directory");
  const std::string long_name = std::string(5000, 'a') + "/x.json";
  auto l = read_text_file(long_name);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message().find("expected a readable file"), std::string::npos);
}

TEST(Yaml, ASecondDocumentIsRefusedNotIgnored) {
  auto two = parse_yaml_text("a: 1\n---\nb: 2\n", "f.yaml");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message(), "f.yaml: expected one YAML document, found a second document (after a '---' line)");
  EXPECT_TRUE(parse_yaml_text("a: 1\n", "f.yaml").ok());
  EXPECT_TRUE(parse_yaml_text("---\na: 1\n", "f.yaml").ok());  // a leading marker opens the one document
  EXPECT_TRUE(parse_yaml_text("# c\n---\na: 1\n---\n# only a comment\n", "f.yaml").ok());  // an empty second one is none
  EXPECT_TRUE(parse_yaml_text("a: 1\n...\n", "f.yaml").ok());
  EXPECT_FALSE(parse_yaml_text("a: 1\n...\nb: 2\n", "f.yaml").ok());
  EXPECT_FALSE(parse_yaml_text("a: 1\n--- {b: 2}\n", "f.yaml").ok());
  EXPECT_TRUE(parse_yaml_text("a: |\n  ---\n  text\n", "f.yaml").ok());  // indented: scalar text, not a marker
  // found by fuzz_sharding: YAML::LoadAll never returned on a lone ","; the loader answers
  EXPECT_TRUE(parse_yaml_text(",", "f.yaml").ok() || !parse_yaml_text(",", "f.yaml").error().message().empty());
}

TEST(Quantity, ImplausiblySmallRatesAndSizesAreRefused) {
  // issue 16, defect 8: an HBM bandwidth of 1e-300 B/s gave feasible plans with an infinite TPOT
  nlohmann::json j = {{"bw", "1e-300 B/s"}, {"ok", "2 MB/s"}, {"hbm", "100 B"}, {"peak", "1 FLOP/s"}, {"lat", "1 ns"}};
  ErrorSink sink;
  FieldReader r(j, "f.yaml", sink);
  EXPECT_DOUBLE_EQ(r.quantity("ok", Dimension::kBandwidth, 1e15), 2e6);
  EXPECT_DOUBLE_EQ(r.quantity("lat", Dimension::kTime, 1.0), 1e-9);
  EXPECT_FALSE(sink.failed());
  (void)r.quantity("bw", Dimension::kBandwidth, 1e15);
  ASSERT_TRUE(sink.failed());
  EXPECT_NE(sink.first->message().find("implausibly small: at least 1 MB/s"), std::string::npos) << sink.first->message();
  for (const auto& [key, dim] : {std::pair{"hbm", Dimension::kBytes}, std::pair{"peak", Dimension::kFlopRate}}) {
    ErrorSink s2;
    FieldReader r2(j, "f.yaml", s2);
    (void)r2.quantity(key, dim, 1e18);
    EXPECT_TRUE(s2.failed()) << key;
  }
}

TEST(Files, AFileOverTheLimitIsRefusedNotReadWhole) {
  // a sparse regular file of 64 MiB + 1 byte: the reader stops at kMaxInputFileBytes and says so
  const std::string path = ::testing::TempDir() + "/big.yaml";
  std::filesystem::resize_file((std::ofstream(path), path), kMaxInputFileBytes + 1);
  auto z = read_text_file(path);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().message(), path + ": expected a file of at most 64 MiB, found a larger file");
  std::filesystem::remove(path);
}

TEST(Files, OnlyRegularFilesAreRead) {
  // a device never ends and a FIFO blocks until a writer comes: both refused before opening
  auto z = read_text_file("/dev/zero");
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().message(), "/dev/zero: expected a regular file, found a character device");
  const std::string fifo = ::testing::TempDir() + "/trace.fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = read_text_file(fifo);  // returns at once (a hang here is the bug)
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("a FIFO"), std::string::npos) << f.error().message();
  std::filesystem::remove(fifo);
}

TEST(Files, ParsesRefuseDeepNestingBeforeBuilding) {
  // 65 levels: refused by the scan, before a parser builds anything; strings are skipped
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  EXPECT_FALSE(json_nesting_within_limit(deep));
  EXPECT_TRUE(json_nesting_within_limit(std::string(64, '[') + std::string(64, ']')));
  EXPECT_TRUE(json_nesting_within_limit("{\"k\": \"" + std::string(100, '[') + "\"}"));
  EXPECT_TRUE(json_nesting_within_limit("{\"k\": \"\\\" [[\"}"));  // an escaped quote stays inside the string
  auto e = parse_json_text(deep, "deep.json");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message(), "deep.json: expected at most 64 levels of nesting, found deeper nesting");
}

}  // namespace
}  // namespace shardwise
