# cmake -DIN=file -DOUT=file.cpp -DSYMBOL=name -P EmbedText.cmake
# Writes OUT, a C++ source defining `extern const char aspen::detail::<SYMBOL>[]` as the bytes
# of IN (a text file), so that a file such as the HTML profile page travels inside the library.
file(READ "${IN}" content)
set(delimiter "ASPEN_EMBED")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by cmake/EmbedText.cmake; do not edit.
namespace aspen::detail {
extern const char ${SYMBOL}[];
const char ${SYMBOL}[] = R\"${delimiter}(${content})${delimiter}\";
} // namespace aspen::detail
")
file(RENAME "${OUT}.tmp" "${OUT}")
