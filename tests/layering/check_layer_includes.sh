#!/bin/sh
# The layer libraries (lib/util, lib/ops, lib/linalg, lib/nn) reach private code only through
# the support layer (lib/support, which each library carries a copy of): every quoted #include
# in them names support/..., the same layer's folder, or a header next to the file. A lower
# layer's private header would name code its library does not export (hidden visibility), and
# libaspen's would name code no layer links. The layers below are reached through their public
# headers (<aspen/...>). Prints each offending line and fails.
# Usage: check_layer_includes.sh SOURCE_ROOT
root=${1:?usage: check_layer_includes.sh SOURCE_ROOT}
layers="util ops linalg nn"
status=0
for layer in $layers; do
  allowed="support $layer"
  for file in "$root"/lib/"$layer"/*.cpp "$root"/lib/"$layer"/*.hpp; do
    [ -f "$file" ] || continue
    for included in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file"); do
      case "$included" in
      */*)
        folder=${included%%/*}
        ok=0
        for a in $allowed; do [ "$folder" = "$a" ] && ok=1; done
        ;;
      *)
        ok=0
        [ -f "$(dirname "$file")/$included" ] && ok=1
        ;;
      esac
      if [ "$ok" -ne 1 ]; then
        echo "${file#"$root"/}: #include \"$included\" is neither the support layer nor layer $layer"
        status=1
      fi
    done
  done
done
[ "$status" -eq 0 ] && echo "layer includes ok"
exit "$status"
