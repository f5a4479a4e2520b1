#!/usr/bin/env bash
# build.sh [DIR [CMAKE-ARGS...]]: configure and build mq into DIR (default build/), warnings as
# errors (MQ_WERROR is off by default, for users and packagers).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMQ_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
