#!/usr/bin/env bash
# demo.sh: the main job on a fresh machine: set up, build, then send a message to the default
# store and receive it back.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build
build/mq-send --create hello "Hello from mq at $(date -u +%FT%TZ)"
build/mq-receive hello -l
