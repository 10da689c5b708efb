// StreamConnection: where one host stream's data comes from or goes to — a buffer, a circular
// buffer, or a callback (with prefetch for host-to-device streams); for a BROADCAST stream
// (ReplicatedStreamMode) of an engine that runs several replicas, the one host source they all
// read (BroadcastSource).
#pragma once

#include <aspen/Engine.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::detail {

class BroadcastSource;

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
  friend class BroadcastSource;
  friend StreamConnection &broadcastSource(const std::vector<StreamConnection *> &readers);
  void disconnect();
  std::uint8_t *nextChunk();

  enum class Kind { None, Buffer, Circular, Callback, Broadcast };
  std::string handle_;
  std::size_t bytes_;
  bool hostToDevice_;
  Kind kind_ = Kind::None;
  std::uint8_t *begin_ = nullptr, *end_ = nullptr, *position_ = nullptr;
  std::unique_ptr<StreamCallback> callback_;
  std::vector<std::uint8_t> staging_;
  bool havePrefetched_ = false;
  std::shared_ptr<BroadcastSource> broadcast_; // Broadcast: the source, read as reader_
  std::size_t reader_ = 0;
};

// The one host source of a BROADCAST stream that several replicas read (each its own
// StreamConnection, a reader): the n-th transfer of every reader gets the source's n-th, taken
// from the host once (the first reader to need it takes it; a chunk is kept until every reader
// has had it). Readers run on their replicas' threads at once.
class BroadcastSource {
public:
  explicit BroadcastSource(StreamConnection source, std::size_t readers)
      : source_(std::move(source)), taken_(readers, 0) {}
  // For connecting the host's side: every reader starts again at the source's next transfer.
  StreamConnection &connection();
  void read(std::size_t reader, void *data);

private:
  std::mutex mutex_;
  StreamConnection source_;
  std::deque<std::vector<std::uint8_t>> chunks_; // transfers first_, first_ + 1, ...
  std::uint64_t first_ = 0;
  std::vector<std::uint64_t> taken_; // each reader's transfers so far
};

// The connection to connect for a BROADCAST stream that `readers` (every replica's connection
// of the stream, in replica order) read: the readers' shared source, made on first use (one
// reader: that reader itself).
StreamConnection &broadcastSource(const std::vector<StreamConnection *> &readers);

} // namespace aspen::detail
