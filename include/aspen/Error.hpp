// The errors Aspen raises.
//
// A user's mistake raises a subclass of aspen::error whose message names the object (tensor,
// vertex, field, option, handle), the rule that was broken and the values involved. A broken
// internal invariant raises aspen::internal_error, which is deliberately not an aspen::error.
#pragma once

#include <aspen/Export.hpp>

#include <stdexcept>
#include <string>

namespace aspen {

class ASPEN_API error : public std::runtime_error {
public:
  explicit error(const std::string &message) : std::runtime_error(message) {}
};

// Graph construction.
// slice/index out of range
class ASPEN_API index_error : public error { using error::error; };
// shapes that do not fit
class ASPEN_API shape_error : public error { using error::error; };
// element types that do not fit
class ASPEN_API type_error : public error { using error::error; };
// bad variable/constant
class ASPEN_API tensor_creation_error : public error { using error::error; };
// bad or missing mapping
class ASPEN_API invalid_tile_mapping : public error { using error::error; };
// addVertex of an unknown name
class ASPEN_API unknown_vertex_type : public error { using error::error; };
// vtx["nope"]
class ASPEN_API unknown_field : public error { using error::error; };
// connect/setInitialValue misuse
class ASPEN_API graph_connection_error : public error { using error::error; };
// malformed programs
class ASPEN_API control_program_error : public error { using error::error; };
// unknown key or bad value
class ASPEN_API invalid_option : public error { using error::error; };
// codelet file fails to compile/load
class ASPEN_API codelet_error : public error { using error::error; };

// Compilation and execution.
class ASPEN_API graph_memory_allocation_error : public error { using error::error; };
// streams and host handles
class ASPEN_API stream_connection_error : public error { using error::error; };
// vertex failed, abort, ...
class ASPEN_API runtime_error : public error { using error::error; };
// bad Executable stream
class ASPEN_API serialization_error : public error { using error::error; };

// An invariant of Aspen itself was broken: a bug in Aspen, not in the caller's program.
class ASPEN_API internal_error : public std::logic_error {
public:
  explicit internal_error(const std::string &message) : std::logic_error(message) {}
};

} // namespace aspen
