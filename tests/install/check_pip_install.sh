#!/usr/bin/env bash
# "pip install" of aspen_torch, as the README shows it: a virtual environment made with Debian's
# python3 (--system-site-packages: it sees python3-torch), pip install --no-build-isolation of a
# copy of python/ against the build tree, then, from another folder, the README's five lines.
# Usage: check_pip_install.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1 build_dir=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/aspen-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$source_dir/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
ASPEN_BUILD_DIR="$build_dir" "$work/venv/bin/python" -m pip install --quiet --no-build-isolation \
  --no-deps "$work/src" >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; echo "pip install failed"; exit 1; }
cd "$work"
"$work/venv/bin/python" - <<'PY'
import torch, aspen_torch
lstm = aspen_torch.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True,
                        bidirectional=True)
reference = torch.nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True,
                          bidirectional=True)
reference.load_state_dict(lstm.state_dict())
x = torch.randn(4, 10, 8)
output, (h_n, c_n) = lstm(x)
assert output.shape == (4, 10, 32) and h_n.shape == (4, 4, 16), (output.shape, h_n.shape)
torch.testing.assert_close(output, reference(x)[0], rtol=1e-5, atol=1e-6)
output.sum().backward()
assert aspen_torch.__file__.startswith("$work") or "site-packages" in aspen_torch.__file__
# Built with OpenMP: the CPU backend's work runs on torch's threads (docs/backend.md).
assert aspen_torch.default_backend("cpu").use_openmp(True), "aspen_torch was built without OpenMP"
print("pip-installed aspen_torch ok:", aspen_torch.__file__)
PY
