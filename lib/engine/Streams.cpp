#include "Streams.hpp"

#include <aspen/Error.hpp>

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

} // namespace aspen::detail
