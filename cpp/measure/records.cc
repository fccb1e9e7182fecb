#include "measure/records.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "measure/verifier.h"
#include "support/error.h"
#include "support/fd_io.h"
#include "support/interrupt.h"

namespace autosched {
namespace {

std::string FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void CheckRegular(const std::string& path, const struct stat& st) {
  AS_CHECK(S_ISREG(st.st_mode), "the record file '" << path << "' is " << FileKind(st.st_mode)
                                                    << ", not a regular file: a record log is a regular "
                                                       "file (or a path where one can be created)");
}

// Opens a log that must be a regular file without blocking on a FIFO nor
// touching a device: the path is checked before opening, and the opened file
// again (the path may change in between). -1 with errno ENOENT when the path
// names nothing and `flags` do not create it.
int OpenRegular(const std::string& path, int flags, const char* what) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) CheckRegular(path, st);
  int fd = open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ENOENT && !(flags & O_CREAT)) return -1;
  AS_CHECK(fd >= 0,
           "cannot open the record file '" << path << "' for " << what << ": " << std::strerror(errno));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    CheckRegular(path, st);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// The lines of a file read in chunks; a line longer than kMaxRecordLineBytes
// is reported as too long and dropped as it is read.
class LineReader {
 public:
  LineReader(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  // False at the end of the file. last_without_newline: the file ends
  // without a newline after this line.
  bool Next(std::string* line, bool* too_long, bool* last_without_newline) {
    line->clear();
    *too_long = false;
    for (;;) {
      if (pos_ < buffer_.size()) {
        size_t end = buffer_.find('\n', pos_);
        size_t stop = end == std::string::npos ? buffer_.size() : end;
        if (!*too_long) line->append(buffer_, pos_, stop - pos_);
        if (line->size() > kMaxRecordLineBytes) {
          *too_long = true;
          std::string().swap(*line);
        }
        pos_ = stop;
        if (end != std::string::npos) {
          ++pos_;
          *last_without_newline = false;
          return true;
        }
      }
      if (eof_) {
        *last_without_newline = true;
        return !line->empty() || *too_long;
      }
      Fill();
    }
  }

 private:
  void Fill() {
    buffer_.resize(kChunk);
    ssize_t n;
    do {
      n = read(fd_, buffer_.data(), kChunk);
    } while (n < 0 && errno == EINTR);
    AS_CHECK(n >= 0, "cannot read the record file '" << path_ << "': " << std::strerror(errno));
    buffer_.resize(static_cast<size_t>(n));
    pos_ = 0;
    eof_ = n == 0;
  }

  static constexpr size_t kChunk = size_t{1} << 20;
  int fd_;
  std::string path_;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// Parses one line into a record; throws Error with the reason it is skipped.
// A result without error whose time measurement would have refused (zero,
// negative, not finite, faster than the task's hardware allows: verifier.h)
// becomes an "implausible" failure, and *implausible says why.
Record ParseRecord(const nlohmann::json& doc, std::map<std::string, std::shared_ptr<const SearchTask>>* tasks,
                   std::map<std::string, std::shared_ptr<const nlohmann::json>>* task_docs,
                   std::string* implausible) {
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
  if (result.ok()) {
    *implausible = CheckPlausible(result.costs, DerivePlausibilityBound(*it->second));
    if (!implausible->empty()) {
      result.error = MeasureError::Implausible;
      result.error_msg = "loaded from a log: " + *implausible;
    }
  }
  State state(it->second->compute_dag);
  try {
    state = State::FromJson(it->second->compute_dag, doc["state"]);
  } catch (const std::exception& e) {
    throw Error(std::string("the schedule no longer applies to its task: ") + e.what());
  }
  return Record{it->second, (*task_docs)[key], state, result, 0, ""};
}

// The start of the JSON object that ends at text[end - 1] (a '}'), found by
// matching brackets backwards outside strings (a quote is inside a string's
// text when an odd number of backslashes precede it); npos when there is none.
size_t ObjectStartBefore(const std::string& text, size_t end) {
  if (end == 0 || text[end - 1] != '}') return std::string::npos;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = end; i-- > 0;) {
    const char c = text[i];
    if (c == '"') {
      size_t backslashes = 0;
      while (backslashes < i && text[i - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) in_string = !in_string;
    } else if (!in_string && (c == '}' || c == ']')) {
      ++depth;
    } else if (!in_string && (c == '{' || c == '[')) {
      if (depth == 0) return std::string::npos;
      if (--depth == 0) return c == '{' ? i : std::string::npos;
    }
  }
  return std::string::npos;
}

// A record that an older writer appended right after a torn line (it did not
// start each record on a fresh line) shares that line: "<torn part>{record}".
// The records such a line ends with, each with its span, found from the end
// of the line: each is the object that ends where the next one starts, in
// time linear in the line; empty when the line ends with none.
struct GluedRecord {
  size_t begin = 0, end = 0;
  nlohmann::json doc;
};

std::vector<GluedRecord> RecordsAfterATornPart(const std::string& text) {
  std::vector<GluedRecord> found;
  const size_t line_end = text.find_last_not_of(" \t\r") + 1;
  for (size_t end = line_end; end > 0;) {
    const size_t start = ObjectStartBefore(text, end);
    if (start == std::string::npos || (start == 0 && end == line_end)) break;  // the whole line did not parse
    nlohmann::json doc = nlohmann::json::parse(text.begin() + start, text.begin() + end, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("version")) break;
    found.push_back({start, end, std::move(doc)});
    end = start;
  }
  std::reverse(found.begin(), found.end());
  return found;
}

}  // namespace

nlohmann::json RecordToJson(const nlohmann::json& task_json, const State& state,
                            const MeasureResult& result) {
  return {{"version", kRecordVersion},
          {"task", task_json},
          {"state", state.ToJson()},
          {"result", MeasureResultToJson(result)}};
}

RecordWriter::RecordWriter(const std::string& path, bool fsync) : path_(path), fsync_(fsync) { Open(); }

void RecordWriter::Open() {
  // Read access lets Write look at the last byte through the same descriptor;
  // a file this process may only write is appended to without that check.
  const bool readable = access(path_.c_str(), F_OK) != 0 || access(path_.c_str(), R_OK) == 0;
  fd_ = OpenRegular(path_, (readable ? O_RDWR : O_WRONLY) | O_APPEND | O_CREAT, "appending");
  struct stat st {};
  if (fstat(fd_, &st) != 0) return;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

// Records written to a file no longer at the path would be lost to whoever
// reads the path: removed (rm, a notebook cleaning up) or replaced (distill
// -o onto the log itself), the path is opened again.
void RecordWriter::FollowPath() {
  struct stat st {};
  const bool gone = stat(path_.c_str(), &st) != 0;
  if (gone && errno != ENOENT) return;  // cannot tell: keep the open file
  if (!gone && st.st_dev == dev_ && st.st_ino == ino_) return;
  close(fd_);
  fd_ = -1;
  Open();
  notices_.push_back(gone ? "the record file '" + path_ +
                                "' was removed while records were written to it; a new file was created at "
                                "that path for the records that follow"
                          : "the record file '" + path_ +
                                "' was replaced while records were written to it; the records that follow "
                                "are appended to the file now at that path");
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::string> RecordWriter::TakeNotices() { return std::exchange(notices_, {}); }

namespace {

// Holds an exclusive flock on a log while one record is appended, so that
// the check of the last byte and the write are one step for every writer of
// the file, also in other processes. A file system without flock (some
// network mounts) is written without it. Another writer holds the lock for
// one write at a time (a dead one holds none): waiting for it polls, so that
// an interrupt still stops the waiting writer.
class AppendLock {
 public:
  explicit AppendLock(int fd) : fd_(fd) {
    for (;;) {
      if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
        locked_ = true;
        return;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) return;
      PollInterrupt();
      usleep(1000);
    }
  }
  ~AppendLock() {
    if (locked_) flock(fd_, LOCK_UN);
  }
  AppendLock(const AppendLock&) = delete;
  AppendLock& operator=(const AppendLock&) = delete;

 private:
  int fd_;
  bool locked_ = false;
};

// Whether the file ends in the middle of a line: another writer was killed
// while appending. False when it is empty or cannot be read.
bool EndsMidLine(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size == 0) return false;
  char last = '\n';
  return pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
}

}  // namespace

void RecordWriter::Write(const nlohmann::json& task_json, const State& state, const MeasureResult& result) {
  FollowPath();
  std::string line =
      RecordToJson(task_json, state, result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  AppendLock lock(fd_);
  // A torn last line (a writer killed mid-record, here or in another
  // process) must not swallow this record: it starts on a fresh line.
  if (EndsMidLine(fd_)) line.insert(line.begin(), '\n');
  // One write() of the whole line: nothing stays in a buffer of this process.
  AS_CHECK(WriteAllToFd(fd_, line),
           "cannot append to the record file '" << path_ << "': " << std::strerror(errno));
  if (fsync_) fdatasync(fd_);
}

LoadedRecords LoadRecords(const std::string& path) {
  LoadedRecords out;
  const int fd = OpenRegular(path, O_RDONLY, "reading");
  if (fd < 0) return out;  // missing: no records yet
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  LineReader reader(fd, path);
  std::map<std::string, std::shared_ptr<const SearchTask>> tasks;
  std::map<std::string, std::shared_ptr<const nlohmann::json>> task_docs;
  std::string text;
  bool too_long = false, last_without_newline = false;
  for (int line_no = 1; reader.Next(&text, &too_long, &last_without_newline); ++line_no) {
    PollInterrupt();
    auto warn = [&](const std::string& why) {
      out.warnings.push_back(path + ":" + std::to_string(line_no) + ": " + why + "; skipped");
    };
    if (too_long) {
      warn("line longer than " + std::to_string(kMaxRecordLineBytes >> 20) +
           " MiB (kMaxRecordLineBytes), more than any record takes");
      continue;
    }
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto take = [&](const nlohmann::json& doc, std::string record_text) {
      try {
        std::string implausible;
        Record r = ParseRecord(doc, &tasks, &task_docs, &implausible);
        if (!implausible.empty()) {
          out.warnings.push_back(path + ":" + std::to_string(line_no) + ": a record without error, but " +
                                 implausible + "; loaded as an 'implausible' failure");
        }
        r.line = line_no;
        r.text = std::move(record_text);
        out.records.push_back(std::move(r));
      } catch (const std::exception& e) {
        warn(e.what());
      }
    };
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      std::vector<GluedRecord> glued = RecordsAfterATornPart(text);
      if (glued.empty()) {
        warn(last_without_newline ? "incomplete last line (its writer was interrupted)" : "not valid JSON");
        continue;
      }
      if (text.find_first_not_of(" \t\r") < glued.front().begin) {
        out.warnings.push_back(
            path + ":" + std::to_string(line_no) + ": the line starts with a torn record (" +
            std::to_string(glued.front().begin) + " bytes, its writer was interrupted), " + "skipped; the " +
            std::to_string(glued.size()) + " record(s) appended after it on the same line are read");
      }
      for (GluedRecord& g : glued) take(g.doc, text.substr(g.begin, g.end - g.begin));
      continue;
    }
    take(doc, std::move(text));
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
