// The errors Aspen raises.
//
// A user's mistake raises a subclass of aspen::error whose message names the object (tensor,
// vertex, field, option, handle), the rule that was broken and the values involved. A broken
// internal invariant raises aspen::internal_error, which is deliberately not an aspen::error.
#pragma once

#include <stdexcept>
#include <string>

namespace aspen {

class error : public std::runtime_error {
public:
  explicit error(const std::string &message) : std::runtime_error(message) {}
};

// Graph construction.
class index_error : public error { using error::error; };            // slice/index out of range
class shape_error : public error { using error::error; };            // shapes that do not fit
class type_error : public error { using error::error; };             // element types that do not fit
class tensor_creation_error : public error { using error::error; };  // bad variable/constant
class invalid_tile_mapping : public error { using error::error; };   // bad or missing mapping
class unknown_vertex_type : public error { using error::error; };    // addVertex of an unknown name
class unknown_field : public error { using error::error; };          // vtx["nope"]
class graph_connection_error : public error { using error::error; }; // connect/setInitialValue misuse
class control_program_error : public error { using error::error; };  // malformed programs
class invalid_option : public error { using error::error; };         // unknown key or bad value
class codelet_error : public error { using error::error; };          // codelet file fails to compile/load

// Compilation and execution.
class graph_memory_allocation_error : public error { using error::error; };
class stream_connection_error : public error { using error::error; }; // streams and host handles
class runtime_error : public error { using error::error; };           // vertex failed, abort, ...
class serialization_error : public error { using error::error; };     // bad Executable stream

// An invariant of Aspen itself was broken: a bug in Aspen, not in the caller's program.
class internal_error : public std::logic_error {
public:
  explicit internal_error(const std::string &message) : std::logic_error(message) {}
};

} // namespace aspen
