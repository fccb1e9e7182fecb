// The record log: round trip, torn and foreign lines, records glued after a
// torn one, lines too long, logs that are not regular files, best record,
// distill.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>

#include "measure/records.h"
#include "schedule_test_util.h"
#include "search/sketch_policy.h"
#include "test_util.h"

namespace autosched {
namespace {

using sched_test::MatmulRelu;

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/" + name + "_" + std::to_string(getpid()) + ".json";
}

MeasureResult Result(double cost, MeasureError error = MeasureError::None) {
  MeasureResult r;
  if (cost > 0) r.costs = {cost, cost};
  r.error = error;
  r.error_msg = error == MeasureError::None ? "" : "why";
  r.all_cost = 0.5;
  r.timestamp = 1.7e9;
  return r;
}

TEST(MeasureRecords, RoundTripKeepsTaskStateAndResult) {
  std::string path = TempPath("roundtrip");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(8, 8, 8), Target::Parse("llvm -num-cores=2"));
  State s(task.compute_dag);
  s = s.Split(s.StageIndex("C"), 0, {std::optional<int64_t>(2)});
  {
    RecordWriter w(path);
    w.Write(task, s, Result(1e-3));
    w.Write(task, State(task.compute_dag), Result(0, MeasureError::WrongAnswer));
  }
  LoadedRecords loaded = LoadRecords(path);
  EXPECT_TRUE(loaded.warnings.empty());
  ASSERT_EQ(loaded.records.size(), 2u);
  const Record& r = loaded.records[0];
  EXPECT_EQ(r.task->workload_key, task.workload_key);
  EXPECT_EQ(r.task->target.str(), task.target.str());
  EXPECT_EQ(r.task->hardware_params, task.hardware_params);
  EXPECT_TRUE(r.state.SameSteps(s));
  EXPECT_EQ(r.result.costs, std::vector<double>({1e-3, 1e-3}));
  EXPECT_EQ(loaded.records[1].result.error, MeasureError::WrongAnswer);
  EXPECT_EQ(loaded.records[1].result.error_msg, "why");
  EXPECT_EQ(loaded.records[0].task.get(), loaded.records[1].task.get());  // one task object per task
  // The state field carries step names.
  EXPECT_NE(r.text.find("\"error\":\"none\""), std::string::npos);
  unlink(path.c_str());
}

TEST(MeasureRecords, AKernelsWorkGroupMaximumTravelsWithItsRefusal) {
  MeasureResult refused = Result(0, MeasureError::Compile);
  refused.kernel_max_threads = 256;
  nlohmann::json doc = MeasureResultToJson(refused);
  EXPECT_EQ(doc.at("kernel_max_threads"), 256);
  EXPECT_EQ(MeasureResultFromJson(doc).kernel_max_threads, 256);
  EXPECT_FALSE(MeasureResultToJson(Result(1e-3)).contains("kernel_max_threads"));  // absent when none
  // Records written before the field: the refusal's message names the maximum.
  doc.erase("kernel_max_threads");
  doc["error_msg"] =
      "refused: the candidate exceeds the device's limits: kernel 'k0' needs work groups of 1024 work items "
      "(threadIdx extents 1024 x 1 x 1), but [1] NVIDIA H200 (NVIDIA CUDA) runs it with at most 128 "
      "(CL_KERNEL_WORK_GROUP_SIZE): bind smaller threadIdx loops";
  EXPECT_EQ(MeasureResultFromJson(doc).kernel_max_threads, 128);
  doc["error_msg"] = "runs it with at most x (CL_KERNEL_WORK_GROUP_SIZE)";
  EXPECT_EQ(MeasureResultFromJson(doc).kernel_max_threads, 0);
  doc["kernel_max_threads"] = -3;
  EXPECT_THROW(MeasureResultFromJson(doc), Error);
}

TEST(MeasureRecords, AResumedRefusalLowersTheSearchsWorkGroupLimit) {
  HardwareParams params = DefaultHardwareParams(Target::Parse("opencl"));
  params.max_threads_per_block = 1024;
  SearchTask task(MatmulRelu(64, 64, 64), "", Target::Parse("opencl"), params);
  SketchPolicy policy(task);
  MeasureResult refused = Result(0, MeasureError::Compile);
  refused.error_msg =
      "... runs it with at most 256 (CL_KERNEL_WORK_GROUP_SIZE): bind smaller threadIdx loops";
  MeasureResult loaded = MeasureResultFromJson(MeasureResultToJson(refused));  // as a resumed log gives it
  policy.RecordMeasured({State(task.compute_dag)}, {loaded});
  EXPECT_EQ(policy.task().hardware_params.max_threads_per_block, 256);
}

TEST(MeasureRecords, BadLinesAreSkippedWithTheirLineNumber) {
  std::string path = TempPath("badlines");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  {
    RecordWriter w(path);
    w.Write(task, State(task.compute_dag), Result(2e-3));
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "not json\n";
    out << R"({"i": [["key", "llvm"]], "r": [[0.1], 0, 1, 2], "v": "v0.6"})"
        << "\n";
    out << R"({"version": 99, "task": {}, "state": [], "result": {}})"
        << "\n";
    out << R"({"version": 1, "task": {"nope": 1}, "state": [], "result": {}})"
        << "\n";
  }
  {
    RecordWriter w(path);  // appends after a full line
    w.Write(task, State(task.compute_dag), Result(1e-3));
  }
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"version": 1, "task": {"workl)";  // torn by a kill
  }
  LoadedRecords loaded = LoadRecords(path);
  EXPECT_EQ(loaded.records.size(), 2u);
  ASSERT_EQ(loaded.warnings.size(), 5u);
  EXPECT_NE(loaded.warnings[0].find(":2: not valid JSON"), std::string::npos) << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[1].find(":3: not an autosched record"), std::string::npos) << loaded.warnings[1];
  EXPECT_NE(loaded.warnings[2].find(":4: record version 99"), std::string::npos) << loaded.warnings[2];
  EXPECT_NE(loaded.warnings[3].find(":5:"), std::string::npos) << loaded.warnings[3];
  EXPECT_NE(loaded.warnings[4].find(":7: incomplete last line"), std::string::npos) << loaded.warnings[4];
  // A writer opened after the torn line starts a new line: its record loads.
  {
    RecordWriter w(path);
    w.Write(task, State(task.compute_dag), Result(5e-4));
  }
  loaded = LoadRecords(path);
  EXPECT_EQ(loaded.records.size(), 3u);
  unlink(path.c_str());
}

// The lines of `count` records of costs 1, 2, ... ms, without their newlines.
std::vector<std::string> RecordLines(const SearchTask& task, int count) {
  std::string path = TempPath("source");
  unlink(path.c_str());
  {
    RecordWriter w(path);
    for (int i = 0; i < count; ++i) w.Write(task, State(task.compute_dag), Result(1e-3 * (i + 1)));
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  unlink(path.c_str());
  return lines;
}

std::vector<double> Costs(const LoadedRecords& loaded) {
  std::vector<double> costs;
  for (const Record& r : loaded.records) costs.push_back(r.result.costs.at(0));
  return costs;
}

TEST(MeasureRecords, AWriterOpenBeforeAnotherTornALineStartsOnAFreshLine) {
  std::string path = TempPath("torn_by_another");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  std::vector<std::string> lines = RecordLines(task, 2);
  RecordWriter w(path);
  w.Write(task, State(task.compute_dag), Result(1e-3));
  {
    std::ofstream out(path, std::ios::app);
    out << lines[1].substr(0, 40);  // another writer, killed mid-record
  }
  w.Write(task, State(task.compute_dag), Result(3e-3));
  LoadedRecords loaded = LoadRecords(path);
  EXPECT_EQ(Costs(loaded), std::vector<double>({1e-3, 3e-3}));
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find(path + ":2: not valid JSON"), std::string::npos) << loaded.warnings[0];
  unlink(path.c_str());
}

TEST(MeasureRecords, RecordsGluedAfterATornRecordAreRead) {
  std::string path = TempPath("glued");
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  std::vector<std::string> r = RecordLines(task, 5);
  const std::string torn = r[0].substr(0, r[0].size() / 3);
  {
    std::ofstream out(path, std::ios::trunc);
    out << r[0] << "\n"
        << torn << r[1] << "\n"
        << torn << torn << r[2] << "\n"
        << r[3] << r[4] << "\n"
        << torn;
  }
  LoadedRecords loaded = LoadRecords(path);
  EXPECT_EQ(Costs(loaded), std::vector<double>({1e-3, 2e-3, 3e-3, 4e-3, 5e-3}));
  std::vector<int> line_numbers;
  for (size_t i = 0; i < loaded.records.size(); ++i) {
    line_numbers.push_back(loaded.records[i].line);
    EXPECT_EQ(loaded.records[i].text, r[i]);  // as written, so that distill keeps it whole
  }
  EXPECT_EQ(line_numbers, std::vector<int>({1, 2, 3, 4, 4}));
  ASSERT_EQ(loaded.warnings.size(), 3u);
  EXPECT_NE(loaded.warnings[0].find(":2: the line starts with a torn record"), std::string::npos)
      << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[1].find(":3: the line starts with a torn record"), std::string::npos)
      << loaded.warnings[1];
  EXPECT_NE(loaded.warnings[2].find(":5: incomplete last line"), std::string::npos) << loaded.warnings[2];
  // Brackets and quotes inside the strings of a record do not hide its start.
  MeasureResult failed = Result(0, MeasureError::Runtime);
  failed.error_msg = R"(a "quoted} {"brace" [\"}])";
  unlink(path.c_str());
  {
    RecordWriter w(path);
    w.Write(task, State(task.compute_dag), failed);
  }
  std::string line;
  std::getline(std::ifstream(path), line);
  std::ofstream(path, std::ios::trunc) << torn << line << "\n";
  loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 1u);
  EXPECT_EQ(loaded.records[0].result.error_msg, failed.error_msg);
  EXPECT_EQ(loaded.records[0].text, line);
  unlink(path.c_str());
}

TEST(MeasureRecords, LinesOfGarbageBracesCostLittle) {
  std::string path = TempPath("braces");
  {
    std::ofstream out(path, std::ios::trunc);
    for (int i = 0; i < 200000; ++i) out << "{\"a\":";
    out << "\n";
    for (int i = 0; i < 200000; ++i) out << "{\"a\":";
    out << 1 << std::string(200001, '}') << "\n";
  }
  auto start = std::chrono::steady_clock::now();
  LoadedRecords loaded = LoadRecords(path);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(loaded.records.empty());
  ASSERT_EQ(loaded.warnings.size(), 2u);
  EXPECT_NE(loaded.warnings[0].find(":1: not valid JSON"), std::string::npos) << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[1].find(":2: not valid JSON"), std::string::npos) << loaded.warnings[1];
  unlink(path.c_str());
}

using test::ErrorOf;

// (A FIFO is tested from Python, in a child process: a regression would block.)
TEST(MeasureRecords, LogsThatAreNotRegularFilesAreRefusedNamingThem) {
  std::string folder = TempPath("folder");
  rmdir(folder.c_str());
  ASSERT_EQ(mkdir(folder.c_str(), 0755), 0);
  for (const auto& [path, kind] :
       std::vector<std::pair<std::string, std::string>>{{folder, "a directory"},
                                                        {"/dev/zero", "a character device"},
                                                        {"/dev/full", "a character device"}}) {
    if (access(path.c_str(), F_OK) != 0) continue;
    const std::string expected = "'" + path + "' is " + kind + ", not a regular file";
    EXPECT_NE(ErrorOf([&] { LoadRecords(path); }).find(expected), std::string::npos) << path;
    EXPECT_NE(ErrorOf([&] { RecordWriter w(path); }).find(expected), std::string::npos) << path;
  }
  rmdir(folder.c_str());
}

TEST(MeasureRecords, ALineLongerThanAnyRecordIsSkippedNamingTheBound) {
  std::string path = TempPath("longline");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  {
    std::ofstream out(path);
    out << std::string(kMaxRecordLineBytes + 1, '[') << "\n" << std::string(kMaxRecordLineBytes * 2, 'x');
  }
  {
    RecordWriter w(path);  // after the unterminated line: on a fresh one
    w.Write(task, State(task.compute_dag), Result(1e-3));
  }
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 1u);
  EXPECT_EQ(loaded.records[0].line, 3);
  ASSERT_EQ(loaded.warnings.size(), 2u);
  EXPECT_NE(loaded.warnings[0].find(":1: line longer than 16 MiB (kMaxRecordLineBytes)"), std::string::npos)
      << loaded.warnings[0];
  EXPECT_NE(loaded.warnings[1].find(":2: line longer than 16 MiB"), std::string::npos) << loaded.warnings[1];
  unlink(path.c_str());
}

TEST(MeasureRecords, AWriterFollowsItsPathWhenTheFileIsRemovedOrReplaced) {
  std::string path = TempPath("followed"), other = TempPath("other");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  RecordWriter w(path);
  w.Write(task, State(task.compute_dag), Result(3e-3));
  EXPECT_TRUE(w.TakeNotices().empty());
  ASSERT_EQ(unlink(path.c_str()), 0);
  w.Write(task, State(task.compute_dag), Result(2e-3));
  std::vector<std::string> notices = w.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("'" + path + "' was removed"), std::string::npos) << notices[0];
  ASSERT_EQ(LoadRecords(path).records.size(), 1u);
  {
    RecordWriter o(other);
    o.Write(task, State(task.compute_dag), Result(1e-3));
  }
  ASSERT_EQ(rename(other.c_str(), path.c_str()), 0);
  w.Write(task, State(task.compute_dag), Result(4e-3));
  notices = w.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("'" + path + "' was replaced"), std::string::npos) << notices[0];
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 2u);
  EXPECT_EQ(loaded.records[0].result.costs[0], 1e-3);
  EXPECT_EQ(loaded.records[1].result.costs[0], 4e-3);
  w.Write(task, State(task.compute_dag), Result(5e-3));
  EXPECT_TRUE(w.TakeNotices().empty());
  EXPECT_EQ(LoadRecords(path).records.size(), 3u);
  unlink(path.c_str());
}

TEST(MeasureRecords, ATimeMeasurementWouldRefuseLoadsAsAnImplausibleFailure) {
  std::string path = TempPath("implausible");
  unlink(path.c_str());
  SearchTask task(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  {
    RecordWriter w(path);
    w.Write(task, State(task.compute_dag), Result(2e-3));
    for (double cost : {-1.0, 0.0, std::nan(""), 1e-30}) {
      MeasureResult edited = Result(2e-3);
      edited.costs = {cost};
      w.Write(task, State(task.compute_dag), edited);
    }
  }
  LoadedRecords loaded = LoadRecords(path);
  ASSERT_EQ(loaded.records.size(), 5u);
  ASSERT_EQ(loaded.warnings.size(), 4u);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(loaded.records[i].result.error, MeasureError::Implausible) << i;
    EXPECT_NE(loaded.warnings[i - 1].find(":" + std::to_string(i + 1) +
                                          ": a record without error, but measured time"),
              std::string::npos)
        << loaded.warnings[i - 1];
  }
  EXPECT_EQ(BestRecord(loaded.records), std::optional<size_t>(0));
  EXPECT_EQ(DistillRecords(loaded.records), std::vector<size_t>({0}));
  unlink(path.c_str());
}

TEST(MeasureRecords, BestAndDistillKeepTargetsApart) {
  SearchTask cpu(MatmulRelu(4, 4, 4), Target::Parse("llvm"));
  SearchTask other(MatmulRelu(4, 4, 4), Target::Parse("llvm -num-cores=1"));
  std::vector<Record> records;
  auto add = [&](const SearchTask& t, double cost, MeasureError e = MeasureError::None) {
    records.push_back(Record{std::make_shared<SearchTask>(t), std::make_shared<nlohmann::json>(t.ToJson()),
                             State(t.compute_dag), Result(cost, e), 0, ""});
  };
  add(cpu, 3e-3);
  add(other, 1e-4);
  add(cpu, 2e-3);
  add(cpu, 1e-5, MeasureError::Implausible);
  EXPECT_EQ(BestRecord(records, cpu.workload_key, "llvm"), std::optional<size_t>(2));
  EXPECT_EQ(BestRecord(records, "", "llvm -num-cores=1"), std::optional<size_t>(1));
  EXPECT_EQ(BestRecord(records), std::optional<size_t>(1));
  EXPECT_EQ(BestRecord(records, "nokey"), std::nullopt);
  EXPECT_EQ(DistillRecords(records), std::vector<size_t>({2, 1}));
}

}  // namespace
}  // namespace autosched
