# aspen_add_codelets(): precompile a codelet file with aspen-cc at build time.
#
#   aspen_add_codelets(TARGET <name> SOURCE <codelets.cpp> OUTPUT <codelets.gp>
#                      [FLAGS <compiler flag>...] [DEPENDS <file>...])
#
# Creates the custom target <name> (built by default) that writes OUTPUT, a file that
# Graph::addCodelets("codelets.gp") loads without compiling. SOURCE is relative to the current
# source directory and OUTPUT to the current binary directory. List the headers SOURCE includes
# under DEPENDS to rebuild when they change. aspen-cc comes from this build (target aspen-cc) or
# from an installed Aspen (imported target Aspen::aspen-cc after find_package(Aspen)); its cache
# of compiled codelets is <build dir>/codelet-cache.
function(aspen_add_codelets)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "TARGET;SOURCE;OUTPUT" "FLAGS;DEPENDS")
  if(NOT ARG_TARGET OR NOT ARG_SOURCE OR NOT ARG_OUTPUT)
    message(FATAL_ERROR "aspen_add_codelets: TARGET, SOURCE and OUTPUT are required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "aspen_add_codelets: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(TARGET aspen-cc)
    set(compiler aspen-cc)
  elseif(TARGET Aspen::aspen-cc)
    set(compiler Aspen::aspen-cc)
  else()
    message(FATAL_ERROR "aspen_add_codelets: aspen-cc is not known here; call find_package(Aspen) first")
  endif()

  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(output "${ARG_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(flags)
  if(ARG_FLAGS)
    list(JOIN ARG_FLAGS " " joined)
    set(flags --flags "${joined}")
  endif()

  add_custom_command(OUTPUT "${output}"
    COMMAND ${CMAKE_COMMAND} -E env "ASPEN_CACHE_DIR=${CMAKE_BINARY_DIR}/codelet-cache"
            $<TARGET_FILE:${compiler}> "${source}" -o "${output}" ${flags}
    DEPENDS "${source}" ${compiler} ${ARG_DEPENDS}
    COMMENT "Precompiling codelets ${ARG_SOURCE}"
    VERBATIM)
  add_custom_target(${ARG_TARGET} ALL DEPENDS "${output}")
endfunction()
