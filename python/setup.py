"""Builds aspen_torch's extension (aspen_torch/_backend.cpp, pybind11) against Aspen's layer
backend (libaspen_backend, aspen/backend.h):
  - ASPEN_PREFIX=<prefix>: an installed Aspen (cmake --install build --prefix <prefix>);
  - otherwise a build tree (ASPEN_BUILD_DIR, default ../build: what scripts/setup.sh makes),
    with the headers of the source tree it was configured from.
pybind11's headers come from Debian's pybind11-dev (/usr/include) or the pybind11 package.
"""
import os
import pathlib

from setuptools import Extension, setup

here = pathlib.Path(__file__).resolve().parent
repo = here.parent

if os.environ.get("ASPEN_PREFIX"):
    prefix = pathlib.Path(os.environ["ASPEN_PREFIX"]).resolve()
    include_dir = prefix / "include"
    candidates = [prefix / "lib", *sorted((prefix / "lib").glob("*-linux-gnu"))]
else:
    build = pathlib.Path(os.environ.get("ASPEN_BUILD_DIR", repo / "build")).resolve()
    candidates = [build / "lib"]
    # The headers are in the source tree the build was configured from.
    source = repo
    cache = build / "CMakeCache.txt"
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                source = pathlib.Path(line.split("=", 1)[1])
    include_dir = source / "include"
library_dir = next((d for d in candidates if (d / "libaspen_backend.so").exists()), None)
if library_dir is None:
    raise SystemExit("aspen_torch: no Aspen backend library (libaspen_backend.so) in "
                     f"{', '.join(map(str, candidates))}: build Aspen first (scripts/setup.sh) or "
                     "set ASPEN_PREFIX to an installed Aspen")
if not (include_dir / "aspen" / "backend.h").exists():
    raise SystemExit(f"aspen_torch: no aspen/backend.h in {include_dir}")

include_dirs = [str(include_dir)]
try:
    import pybind11
    include_dirs.append(pybind11.get_include())
except ImportError:
    pass  # Debian's pybind11-dev: the headers are in /usr/include

setup(ext_modules=[Extension(
    "aspen_torch._backend",
    sources=["aspen_torch/_backend.cpp"],  # relative: setuptools refuses absolute ones
    include_dirs=include_dirs,
    library_dirs=[str(library_dir)],
    runtime_library_dirs=[str(library_dir)],
    libraries=["aspen_backend"],
    # OpenMP (libgomp, as Debian's torch): the CPU backend's work runs on torch's OpenMP team
    # (Backend.use_openmp, docs/backend.md).
    extra_compile_args=["-std=c++17", "-fvisibility=hidden", "-O2", "-fopenmp"],
    extra_link_args=["-fopenmp"],
    language="c++",
)])
