#include "Streams.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <cstring>

namespace aspen::detail {

StreamConnection::StreamConnection(std::string handle, std::size_t bytes, bool hostToDevice)
    : handle_(std::move(handle)), bytes_(bytes), hostToDevice_(hostToDevice) {}

StreamConnection::~StreamConnection() { disconnect(); }

void StreamConnection::disconnect() {
  if (callback_ && havePrefetched_)
    callback_->invalidatePrefetched();
  havePrefetched_ = false;
  callback_.reset();
  broadcast_.reset();
  kind_ = Kind::None;
}

void StreamConnection::connectBuffer(void *p) {
  disconnect();
  kind_ = Kind::Buffer;
  begin_ = position_ = static_cast<std::uint8_t *>(p);
  end_ = begin_ + bytes_;
}

void StreamConnection::connectCircular(void *begin, void *end) {
  auto *b = static_cast<std::uint8_t *>(begin);
  auto *e = static_cast<std::uint8_t *>(end);
  const std::ptrdiff_t size = e - b;
  if (size <= 0 || (bytes_ != 0 && std::size_t(size) % bytes_ != 0))
    throw stream_connection_error("stream '" + handle_ + "': a circular buffer of " +
                                  std::to_string(size) + " bytes is not a positive multiple of "
                                  "the stream's " + std::to_string(bytes_) + " bytes a transfer");
  disconnect();
  kind_ = Kind::Circular;
  begin_ = position_ = b;
  end_ = e;
}

void StreamConnection::connectCallback(std::unique_ptr<StreamCallback> callback) {
  disconnect();
  kind_ = Kind::Callback;
  callback_ = std::move(callback);
  staging_.assign(bytes_, 0);
}

std::uint8_t *StreamConnection::nextChunk() {
  if (kind_ == Kind::Buffer)
    return begin_;
  std::uint8_t *chunk = position_;
  position_ += bytes_;
  if (position_ >= end_)
    position_ = begin_;
  return chunk;
}

void StreamConnection::hostToDevice(void *data) {
  switch (kind_) {
  case Kind::None:
    break;
  case Kind::Broadcast:
    broadcast_->read(reader_, data);
    return;
  case Kind::Buffer:
  case Kind::Circular:
    std::memcpy(data, nextChunk(), bytes_);
    return;
  case Kind::Callback:
    if (havePrefetched_)
      std::memcpy(data, staging_.data(), bytes_);
    else
      callback_->fetch(data);
    callback_->complete();
    // Ask for the next transfer's data now, while the device works, as Poplar does.
    havePrefetched_ = callback_->prefetch(staging_.data()) == StreamCallback::Result::Success;
    return;
  }
  throw stream_connection_error("stream '" + handle_ +
                                "' is used by a program but nothing is connected to it "
                                "(Engine::connectStream or connectStreamToCallback)");
}

void StreamConnection::deviceToHost(const void *data) {
  switch (kind_) {
  case Kind::None:
  case Kind::Broadcast: // only host-to-device streams are BROADCAST
    break;
  case Kind::Buffer:
  case Kind::Circular:
    std::memcpy(nextChunk(), data, bytes_);
    return;
  case Kind::Callback:
    // The callback may keep the pointer only for the call, so it gets a copy it may write to.
    staging_.assign(static_cast<const std::uint8_t *>(data),
                       static_cast<const std::uint8_t *>(data) + bytes_);
    callback_->fetch(staging_.data());
    callback_->complete();
    return;
  }
  throw stream_connection_error("stream '" + handle_ +
                                "' is used by a program but nothing is connected to it "
                                "(Engine::connectStream or connectStreamToCallback)");
}

StreamConnection &BroadcastSource::connection() {
  const std::lock_guard<std::mutex> lock(mutex_);
  chunks_.clear();
  first_ = 0;
  std::fill(taken_.begin(), taken_.end(), 0);
  return source_;
}

void BroadcastSource::read(std::size_t reader, void *data) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t n = taken_[reader];
  while (first_ + chunks_.size() <= n) {
    std::vector<std::uint8_t> chunk(source_.bytes_);
    source_.hostToDevice(chunk.data());
    chunks_.push_back(std::move(chunk));
  }
  std::memcpy(data, chunks_[n - first_].data(), source_.bytes_);
  ++taken_[reader];
  const std::uint64_t allHave = *std::min_element(taken_.begin(), taken_.end());
  for (; first_ < allHave; ++first_)
    chunks_.pop_front();
}

StreamConnection &broadcastSource(const std::vector<StreamConnection *> &readers) {
  StreamConnection &first = *readers.front();
  if (readers.size() == 1)
    return first;
  if (first.kind_ != StreamConnection::Kind::Broadcast) {
    auto source = std::make_shared<BroadcastSource>(
        StreamConnection(first.handle_, first.bytes_, first.hostToDevice_), readers.size());
    for (std::size_t i = 0; i < readers.size(); ++i) {
      readers[i]->disconnect();
      readers[i]->kind_ = StreamConnection::Kind::Broadcast;
      readers[i]->broadcast_ = source;
      readers[i]->reader_ = i;
    }
  }
  return first.broadcast_->connection();
}

} // namespace aspen::detail
