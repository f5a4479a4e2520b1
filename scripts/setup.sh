#!/usr/bin/env bash
# setup.sh: install the Debian packages mq needs to build, test and benchmark; idempotent.
# Installs only what is missing (apt-get as root, or through sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config      # toolchain
  lld                                    # the static tools' start-up order (cmd/startup-order.txt)
  clang                                  # the fuzz targets (libFuzzer: scripts/fuzz.sh)
  liblmdb-dev libcli11-dev libfmt-dev nlohmann-json3-dev uuid-dev libxml2-dev libmicrohttpd-dev libcurl4-openssl-dev zlib1g-dev libzstd-dev libisal-dev catch2   # libraries
  lmdb-utils mandoc jq util-linux zsh fish procps strace curl   # tests: mdb tools, man lint, setpriv, fault injection, HTTP posts (serve)
  gdb                                    # tests: a process stopped inside LMDB's open (test_open_kill.sh)
  python3                                # tests: their small helpers (bg.sh, HTTP and TCP clients)
  lintian                                # tests: the Debian package (test_package.sh)
  systemd                                # tests: systemd-analyze verify of the units (test_install_layout.sh)
  sqlite3 time                           # benchmarks: the peer and peak RSS
  librabbitmq-dev                        # mq-admin bridge: rabbitmq-c
  libncurses-dev tmux                    # mq-admin top: its screen, and the terminal of its test
  rabbitmq-server amqp-tools openssl     # bridge tests and bench: a private broker, the shell peer,
                                         # the TLS test's CA and certificates
  openssh-server openssh-client pv       # links: a private sshd for the ssh test, a throttled pipe
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "setup: need root to run: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# rabbitmq-server's postinst would start Debian's system node (as a service): the tests start
# private nodes of their own (tests/cli/rabbit.sh) and need none. A policy-rc.d that denies
# starting services stops that, for this install only, unless one is there already.
policy=/usr/sbin/policy-rc.d
own_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  own_policy=1
fi
status=0
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
[ -n "$own_policy" ] && "${sudo[@]}" rm -f "$policy"
# Where systemd started it anyway, stop and disable the system node.
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  "${sudo[@]}" systemctl disable --now rabbitmq-server >/dev/null 2>&1 || true
fi
exit "$status"
