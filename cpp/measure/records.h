// The record log: one JSON object per line, one line per measurement
// (docs/records.md describes the format and its versions):
//   {"version": 1, "task": <SearchTask JSON>, "state": <State::ToJson steps>,
//    "result": {"costs": [s, ...], "error": "none", "error_msg": "", "all_cost": s, "timestamp": t}}
// Writing appends one whole line with a single write() and no user-space
// buffer, so a writer killed at any moment leaves every earlier line intact;
// fsync after each line is optional. Writers of one file take an exclusive
// flock for each record, and under it start the record on a fresh line when
// the file ends in a line torn by a writer killed mid-record. Loading skips,
// with a warning naming the line number, torn lines (the records an older
// writer appended after a torn part on its line are read), lines that are
// not JSON, lines longer than kMaxRecordLineBytes, lines of another format or
// version, and schedules that no longer replay on their task. A record without error whose time is not
// plausible (verifier.h: what measurement would have refused, e.g. a cost
// edited to -1) loads as an "implausible" failure, with a warning, so it is
// never taken as the best. A log is a regular file: a directory, a
// device or a FIFO is refused (read, it would fail, never end, or block).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "measure/measure.h"

namespace autosched {

constexpr int kRecordVersion = 1;

// The longest line the loader reads: a record takes a few hundred kB at most
// (the task's DAG and the steps of its state), so a longer line is not a
// record, and it is skipped without being held in memory.
constexpr size_t kMaxRecordLineBytes = size_t{16} << 20;

nlohmann::json RecordToJson(const nlohmann::json& task_json, const State& state, const MeasureResult& result);

class RecordWriter {
 public:
  // Opens (creating) the file for appending. Throws Error naming the path,
  // also when it exists but is not a regular file.
  explicit RecordWriter(const std::string& path, bool fsync = false);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Appends one record. task_json is the task as it should be stored (the
  // Python layer adds its "workload" field); throws Error when the write fails.
  // When the path no longer names the file opened (removed, or replaced by
  // another file), it is opened again first (created if need be) and a notice
  // says so (TakeNotices).
  void Write(const nlohmann::json& task_json, const State& state, const MeasureResult& result);
  void Write(const SearchTask& task, const State& state, const MeasureResult& result) {
    Write(task.ToJson(), state, result);
  }
  const std::string& path() const { return path_; }
  // What happened to the file since the last call: one message per reopening.
  std::vector<std::string> TakeNotices();

 private:
  void Open();
  void FollowPath();

  std::string path_;
  int fd_ = -1;
  bool fsync_ = false;
  dev_t dev_ = 0;  // the open file's identity, compared with the path's
  ino_t ino_ = 0;
  std::vector<std::string> notices_;
};

struct Record {
  std::shared_ptr<const SearchTask> task;           // shared by the records of one task
  std::shared_ptr<const nlohmann::json> task_json;  // as stored
  State state;
  MeasureResult result;
  int line = 0;      // 1-based line number in the file
  std::string text;  // the line as stored
};

struct LoadedRecords {
  std::vector<Record> records;
  std::vector<std::string> warnings;  // "path:line: why it was skipped"
};

// Throws Error naming the path when the file cannot be read or is not a
// regular file; a missing file has no records. Polls for an interrupt
// (support/interrupt.h) between lines.
LoadedRecords LoadRecords(const std::string& path);

// Index of the fastest record without error, of the given workload key and
// target (empty: any; targets compare by their canonical text), or nullopt.
std::optional<size_t> BestRecord(const std::vector<Record>& records, const std::string& workload_key = "",
                                 const std::string& target = "");

// The best record of every (workload key, target), in order of first
// appearance.
std::vector<size_t> DistillRecords(const std::vector<Record>& records);

}  // namespace autosched
