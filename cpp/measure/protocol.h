// The worker protocol's framing: each message is a 4-byte little-endian length
// followed by that many bytes of JSON text. Supervisor and worker talk over one
// AF_UNIX stream socket (the worker's end is its fd 3). Messages are listed in
// worker.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autosched {

constexpr uint32_t kMaxMessageBytes = 1u << 30;

std::string EncodeMessage(const nlohmann::json& msg);

// Takes one complete message off the front of `buffer` into *msg; false when
// the buffer does not hold a complete one yet. Throws Error for a frame that is
// too long or not JSON.
bool DecodeMessage(std::string* buffer, nlohmann::json* msg);

// Writes every byte (retrying short writes); false when the peer is gone.
// Never raises SIGPIPE.
bool WriteAll(int fd, const std::string& data);

// Appends what can be read now (waiting at most timeout_ms, -1: forever) to
// *buffer. Returns false at end of file or on an error of the socket.
bool ReadSome(int fd, std::string* buffer, int timeout_ms);

}  // namespace autosched
