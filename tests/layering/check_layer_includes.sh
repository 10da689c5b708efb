#!/bin/sh
# The layer libraries (lib/util, lib/ops, lib/linalg, lib/nn, in that order) reach libaspen's
# private code only through the support layer (lib/support), and each uses only the layers
# below it: every quoted #include in them names support/..., a lower or the same layer's
# folder, or a header next to the file. Prints each offending line and fails.
# Usage: check_layer_includes.sh SOURCE_ROOT
root=${1:?usage: check_layer_includes.sh SOURCE_ROOT}
layers="util ops linalg nn"
status=0
allowed="support"
for layer in $layers; do
  allowed="$allowed $layer"
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
        echo "${file#"$root"/}: #include \"$included\" is not the support layer, layer $layer or one below it"
        status=1
      fi
    done
  done
done
[ "$status" -eq 0 ] && echo "layer includes ok"
exit "$status"
