#!/bin/sh
# The floors of lib/ hold: every folder of lib/ is on one floor of floors.txt (next to this
# script, bottom to top), and its files include only their own floor and the floors below it —
# quoted includes of lib/ ("core/GraphState.hpp") and the floors' public headers
# (<aspen/util/TileMapping.hpp>). Floors marked `layer` (the libraries above libaspen) reach
# private code only through the floors marked `support`: a lower library's private header names
# code it does not export (hidden visibility). A quoted include without a folder must name a file
# next to the including one. Prints each offending line and fails.
# Usage: check_layer_includes.sh SOURCE_ROOT [FLOORS_FILE]
root=${1:?usage: check_layer_includes.sh SOURCE_ROOT [FLOORS_FILE]}
floors_file=${2:-$(dirname "$0")/floors.txt}
[ -f "$floors_file" ] || { echo "no floors file $floors_file"; exit 1; }

# "position name marks..." for each floor, bottom first (comments and blank lines dropped).
table=$(sed 's/#.*//' "$floors_file" | awk 'NF { print ++n, $0 }')
support_floors=$(echo "$table" | awk '{ for (i = 3; i <= NF; ++i) if ($i == "support") printf "%s%s", n++ ? ", " : "", $2 }')

problems=$(
  # Each floor's position and marks, as the variables position_<floor> and marks_<floor>.
  while read -r position name marks; do
    case "$name" in
    *[!a-z0-9_]* | [!a-z]*)
      echo "$floors_file: '$name' is not a folder name (lower case letters, digits, _)"
      continue
      ;;
    esac
    for mark in $marks; do
      case "$mark" in
      support | layer) ;;
      *) echo "$floors_file: floor $name has the unknown mark '$mark' (support, layer)" ;;
      esac
    done
    eval "seen=\${position_$name:-}"
    [ -z "$seen" ] || echo "$floors_file: floor $name is listed twice"
    [ -d "$root/lib/$name" ] || echo "$floors_file: floor $name names no folder of lib/"
    eval "position_$name=\$position; marks_$name=\" \$marks \""
  done <<EOF
$table
EOF

  for dir in "$root"/lib/*/; do
    top=$(basename "$dir")
    eval "seen=\${position_$top:-}"
    [ -n "$seen" ] || echo "lib/$top is on no floor: add it to tests/layering/floors.txt where it sits (bottom to top)"
  done

  find "$root/lib" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' \
    -o -name '*.cuh' -o -name '*.inc' -o -name '*.def' \) | sort | while read -r file; do
    rel=${file#"$root"/}
    case "${rel#lib/}" in
    */*)
      floor=${rel#lib/}
      floor=${floor%%/*}
      ;;
    *) echo "$rel is in no folder of lib/, so on no floor"; continue ;;
    esac
    eval "own=\${position_$floor:-}; own_marks=\${marks_$floor:-}"
    [ -n "$own" ] || continue # its folder is reported above
    sed -n -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/quoted \1/p' \
      -e 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(aspen\/[^>]*\)>.*/public \1/p' "$file" |
      while read -r kind included; do
        if [ "$kind" = quoted ]; then
          case "$included" in
          ../* | */../*)
            echo "$rel: #include \"$included\" climbs folders; name the floor's folder instead"
            continue
            ;;
          esac
          [ -f "$(dirname "$file")/$included" ] && continue # next to the file: its own folder
          case "$included" in
          */*) target=${included%%/*} ;;
          *)
            echo "$rel: #include \"$included\" names no file next to it and no folder of lib/"
            continue
            ;;
          esac
          shown="\"$included\""
        else
          target=${included#aspen/}
          case "$target" in
          */*) target=${target%%/*} ;;
          *) continue ;; # libaspen's own public headers
          esac
          eval "listed=\${position_$target:-}"
          [ -n "$listed" ] || continue # <aspen/detail/...> and other folders that are no floor
          shown="<$included>"
        fi
        eval "position=\${position_$target:-}"
        if [ -z "$position" ]; then
          echo "$rel: #include $shown names no floor of lib/ (outside and public headers take <...>)"
          continue
        fi
        if [ "$position" -gt "$own" ]; then
          echo "$rel: #include $shown: $floor includes $target, which sits above it (tests/layering/floors.txt, bottom to top)"
          continue
        fi
        if [ "$kind" = quoted ] && [ "$target" != "$floor" ]; then
          case "$own_marks" in
          *" layer "*)
            eval "target_marks=\${marks_$target:-}"
            case "$target_marks" in
            *" support "*) ;;
            *) echo "$rel: #include $shown: layer $floor reaches private code only through the support floors ($support_floors), not $target" ;;
            esac
            ;;
          esac
        fi
      done
  done
)

if [ -n "$problems" ]; then
  echo "$problems"
  exit 1
fi
echo "layer includes ok: every folder of lib/ on its floor ($(echo "$table" | awk '{ printf "%s%s", (NR > 1 ? " < " : ""), $2 }'))"
