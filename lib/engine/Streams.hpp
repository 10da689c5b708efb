// StreamConnection: where one host stream's data comes from or goes to — a buffer, a circular
// buffer, or a callback (with prefetch for host-to-device streams).
#pragma once

#include <aspen/Engine.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

class StreamConnection {
public:
  StreamConnection(std::string handle, std::size_t bytes, bool hostToDevice);
  StreamConnection(StreamConnection &&) noexcept = default;
  StreamConnection &operator=(StreamConnection &&) noexcept = default;
  ~StreamConnection();

  void connectBuffer(void *p);
  // Raises stream_connection_error unless [begin, end) holds a whole number of transfers.
  void connectCircular(void *begin, void *end);
  void connectCallback(std::unique_ptr<StreamCallback> callback);

  // One transfer of the stream's bytes; raises stream_connection_error when nothing is
  // connected.
  void hostToDevice(void *data);
  void deviceToHost(const void *data);

private:
  void disconnect();
  std::uint8_t *nextChunk();

  enum class Kind { None, Buffer, Circular, Callback };
  std::string handle_;
  std::size_t bytes_;
  bool hostToDevice_;
  Kind kind_ = Kind::None;
  std::uint8_t *begin_ = nullptr, *end_ = nullptr, *position_ = nullptr;
  std::unique_ptr<StreamCallback> callback_;
  std::vector<std::uint8_t> staging_;
  bool havePrefetched_ = false;
};

} // namespace aspen::detail
