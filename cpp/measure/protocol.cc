#include "measure/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "ir/error.h"

namespace autosched {

std::string EncodeMessage(const nlohmann::json& msg) {
  std::string body = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  AS_CHECK(body.size() < kMaxMessageBytes, "worker message of " << body.size() << " bytes is too long");
  auto n = static_cast<uint32_t>(body.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + body;
}

bool DecodeMessage(std::string* buffer, nlohmann::json* msg) {
  if (buffer->size() < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<unsigned char>((*buffer)[i])) << (8 * i);
  AS_CHECK(n < kMaxMessageBytes, "malformed worker message: length " << n);
  if (buffer->size() < 4 + static_cast<size_t>(n)) return false;
  try {
    *msg = nlohmann::json::parse(buffer->begin() + 4, buffer->begin() + 4 + n);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed worker message: ") + e.what());
  }
  buffer->erase(0, 4 + static_cast<size_t>(n));
  return true;
}

bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ReadSome(int fd, std::string* buffer, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return false;
  if (ready == 0) return true;  // nothing yet
  char chunk[1 << 16];
  ssize_t n;
  do {
    n = recv(fd, chunk, sizeof(chunk), 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  buffer->append(chunk, static_cast<size_t>(n));
  return true;
}

}  // namespace autosched
