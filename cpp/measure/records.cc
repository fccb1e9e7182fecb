#include "measure/records.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/error.h"

namespace autosched {
namespace {

bool WriteFully(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Parses one line into a record; throws Error with the reason it is skipped.
Record ParseRecord(const nlohmann::json& doc, std::map<std::string, std::shared_ptr<const SearchTask>>* tasks,
                   std::map<std::string, std::shared_ptr<const nlohmann::json>>* task_docs) {
  AS_CHECK(doc.is_object() && doc.contains("version"),
           "not an autosched record (TVM auto_scheduler logs are not read)");
  AS_CHECK(doc["version"].is_number_integer() && doc["version"].get<int>() == kRecordVersion,
           "record version " << doc["version"].dump() << " is not supported (this build reads version "
                             << kRecordVersion << ")");
  for (const char* field : {"task", "state", "result"}) {
    AS_CHECK(doc.contains(field), "record lacks the field '" << field << "'");
  }
  const nlohmann::json& task_doc = doc["task"];
  std::string key = task_doc.dump();
  auto it = tasks->find(key);
  if (it == tasks->end()) {
    auto task = std::make_shared<const SearchTask>(SearchTask::FromJson(task_doc));
    it = tasks->emplace(key, task).first;
    (*task_docs)[key] = std::make_shared<const nlohmann::json>(task_doc);
  }
  MeasureResult result = MeasureResultFromJson(doc["result"]);
  State state(it->second->compute_dag);
  try {
    state = State::FromJson(it->second->compute_dag, doc["state"]);
  } catch (const std::exception& e) {
    throw Error(std::string("the schedule no longer applies to its task: ") + e.what());
  }
  return Record{it->second, (*task_docs)[key], state, result, 0, ""};
}

}  // namespace

nlohmann::json RecordToJson(const nlohmann::json& task_json, const State& state,
                            const MeasureResult& result) {
  return {{"version", kRecordVersion},
          {"task", task_json},
          {"state", state.ToJson()},
          {"result", MeasureResultToJson(result)}};
}

RecordWriter::RecordWriter(const std::string& path, bool fsync) : path_(path), fsync_(fsync) {
  fd_ = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  AS_CHECK(fd_ >= 0, "cannot open the record file '" << path << "' for appending: " << std::strerror(errno));
  // A torn last line (a writer killed mid-line) must not swallow the next
  // record: start on a fresh line.
  struct stat st {};
  if (fstat(fd_, &st) == 0 && st.st_size > 0) {
    int rd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    char last = '\n';
    if (rd >= 0) {
      if (pread(rd, &last, 1, st.st_size - 1) != 1) last = '\n';
      close(rd);
    }
    if (last != '\n') WriteFully(fd_, "\n");
  }
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) close(fd_);
}

void RecordWriter::Write(const nlohmann::json& task_json, const State& state, const MeasureResult& result) {
  std::string line =
      RecordToJson(task_json, state, result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  // One write() of the whole line: nothing stays in a buffer of this process.
  AS_CHECK(WriteFully(fd_, line),
           "cannot append to the record file '" << path_ << "': " << std::strerror(errno));
  if (fsync_) fdatasync(fd_);
}

LoadedRecords LoadRecords(const std::string& path) {
  LoadedRecords out;
  if (access(path.c_str(), F_OK) != 0) return out;
  std::ifstream in(path, std::ios::binary);
  AS_CHECK(in, "cannot read the record file '" << path << "'");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::map<std::string, std::shared_ptr<const SearchTask>> tasks;
  std::map<std::string, std::shared_ptr<const nlohmann::json>> task_docs;
  size_t pos = 0;
  for (int line_no = 1; pos < content.size(); ++line_no) {
    size_t end = content.find('\n', pos);
    bool last_without_newline = end == std::string::npos;
    if (last_without_newline) end = content.size();
    std::string text = content.substr(pos, end - pos);
    pos = end + 1;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto warn = [&](const std::string& why) {
      out.warnings.push_back(path + ":" + std::to_string(line_no) + ": " + why + "; skipped");
    };
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      warn(last_without_newline ? "incomplete last line (its writer was interrupted)" : "not valid JSON");
      continue;
    }
    try {
      Record r = ParseRecord(doc, &tasks, &task_docs);
      r.line = line_no;
      r.text = std::move(text);
      out.records.push_back(std::move(r));
    } catch (const std::exception& e) {
      warn(e.what());
    }
  }
  return out;
}

std::optional<size_t> BestRecord(const std::vector<Record>& records, const std::string& workload_key,
                                 const std::string& target) {
  std::string canonical = target.empty() ? "" : Target::Parse(target).str();
  std::optional<size_t> best;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (!r.result.ok() || r.result.costs.empty()) continue;
    if (!workload_key.empty() && r.task->workload_key != workload_key) continue;
    if (!canonical.empty() && r.task->target.str() != canonical) continue;
    if (!best || r.result.mean_cost() < records[*best].result.mean_cost()) best = i;
  }
  return best;
}

std::vector<size_t> DistillRecords(const std::vector<Record>& records) {
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, size_t> best;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (!r.result.ok() || r.result.costs.empty()) continue;
    std::pair<std::string, std::string> key{r.task->workload_key, r.task->target.str()};
    auto it = best.find(key);
    if (it == best.end()) {
      order.push_back(key);
      best[key] = i;
    } else if (r.result.mean_cost() < records[it->second].result.mean_cost()) {
      it->second = i;
    }
  }
  std::vector<size_t> out;
  for (const auto& key : order) out.push_back(best[key]);
  return out;
}

}  // namespace autosched
