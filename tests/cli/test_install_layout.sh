#!/bin/bash
# `cmake --install` under /usr/local (issue 15, section 3): completions land where each shell
# looks (zsh: share/zsh/site-functions, in zsh's default fpath; fish: /etc/fish/completions,
# as Debian's fish reads nothing of /usr/local when XDG_DATA_DIRS is unset, and under another
# prefix share/fish/vendor_completions.d; bash-completion: share/ of an XDG data directory), and the systemd units mq-watch@.service,
# mq-sweep.service and mq-sweep.timer are installed and pass `systemd-analyze verify` against
# the installed tools (which it finds through systemd's fixed search path), with the user mq
# they run as declared in lib/sysusers.d/mq.conf, next to them, and their hardening on.
. "$(dirname "$0")/lib.sh"

[ -f "$MQ_BIN/cmake_install.cmake" ] || skip "$MQ_BIN is not a configured build directory"
root=$T/root
DESTDIR=$root cmake --install "$MQ_BIN" --prefix /usr/local --strip >"$T/install.log" 2>&1 ||
  { fail "cmake --install failed: $(tail -5 "$T/install.log")"; finish; }
L=$root/usr/local
for f in bin/mq-watch bin/mq-admin \
         share/zsh/site-functions/_mq-send share/zsh/site-functions/_mq-watch \
         share/bash-completion/completions/mq-send \
         lib/systemd/system/mq-watch@.service lib/systemd/system/mq-sweep.service \
         lib/systemd/system/mq-sweep.timer lib/systemd/system/mq-serve.socket \
         lib/systemd/system/mq-serve.service lib/sysusers.d/mq.conf; do
  [ -e "$L/$f" ] || fail "no /usr/local/$f"
done
[ -e "$L/share/zsh/vendor-completions" ] && fail "zsh completions in vendor-completions under /usr/local"
for t in mq-send mq-peek mq-receive mq-watch mq-admin; do
  [ -f "$root/etc/fish/completions/$t.fish" ] || fail "no /etc/fish/completions/$t.fish"
done
[ -e "$L/share/fish" ] && fail "a second copy of the fish completions under /usr/local/share/fish"

# Each shell, as installed here, looks there.
if command -v zsh >/dev/null; then
  zsh -fc 'print -rl -- $fpath' | grep -qx /usr/local/share/zsh/site-functions ||
    fail "zsh's fpath lacks /usr/local/share/zsh/site-functions: $(zsh -fc 'print -r -- $fpath')"
fi
# fish, with XDG_DATA_DIRS unset (a console, an ssh session) or set, looks in
# /etc/fish/completions; and what is installed there completes (fish is told to look in the
# DESTDIR copy, as the real /etc is not this test's to write).
if command -v fish >/dev/null; then
  for xdg in unset /usr/local/share:/usr/share; do
    if [ "$xdg" = unset ]; then
      env -u XDG_DATA_DIRS HOME=$T/home fish -c 'printf "%s\n" $fish_complete_path' >"$T/fish-path"
    else
      HOME=$T/home XDG_DATA_DIRS=$xdg fish -c 'printf "%s\n" $fish_complete_path' >"$T/fish-path"
    fi
    grep -qx /etc/fish/completions "$T/fish-path" ||
      fail "fish (XDG_DATA_DIRS $xdg) does not look in /etc/fish/completions: $(cat "$T/fish-path")"
  done
  HOME=$T/home fish -c 'set -p fish_complete_path $argv[1]; complete -C "mq-send --prio"' \
    "$root/etc/fish/completions" >"$T/fish-offers" 2>&1
  grep -q '^--priority' "$T/fish-offers" ||
    fail "the installed fish completions offer no --priority: $(cat "$T/fish-offers")"
fi
# Under a user's prefix (~/.local): fish's own per-user vendor directory.
cmake --install "$MQ_BIN" --prefix "$T/home/.local" --strip >"$T/install2.log" 2>&1 ||
  fail "cmake --install --prefix ~/.local failed: $(tail -5 "$T/install2.log")"
[ -f "$T/home/.local/share/fish/vendor_completions.d/mq-send.fish" ] ||
  fail "no ~/.local/share/fish/vendor_completions.d/mq-send.fish"
if command -v fish >/dev/null; then
  env -u XDG_DATA_DIRS HOME=$T/home fish -c 'printf "%s\n" $fish_complete_path' |
    grep -qx "$T/home/.local/share/fish/vendor_completions.d" ||
    fail "fish does not look in ~/.local/share/fish/vendor_completions.d"
fi
if [ -f /usr/share/bash-completion/bash_completion ]; then
  grep -q 'XDG_DATA_DIRS' /usr/share/bash-completion/bash_completion ||
    fail "bash-completion does not search the XDG data directories"
fi

# The units, checked by systemd against a root that holds the installed tools and systemd's
# own units (for the targets they name).
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (scripts/setup.sh installs systemd)"
[ -d /lib/systemd/system ] || skip "no /lib/systemd/system to verify against"
mkdir -p "$root/lib/systemd"
cp -a /lib/systemd/system "$root/lib/systemd/"
units=(/usr/local/lib/systemd/system/mq-sweep.service /usr/local/lib/systemd/system/mq-sweep.timer
       /usr/local/lib/systemd/system/mq-watch@jobs.service
       /usr/local/lib/systemd/system/mq-serve.socket /usr/local/lib/systemd/system/mq-serve.service)
expect_rc 0 systemd-analyze verify --man=no --root="$root" "${units[@]}"
[ -s "$T/out" ] || [ -s "$T/err" ] && fail "systemd-analyze verify said: $(cat "$T/out" "$T/err")"
grep -q '^User=mq$' "$L/lib/systemd/system/mq-watch@.service" || fail "mq-watch@.service has no User=mq"
grep -q '^StateDirectory=mq$' "$L/lib/systemd/system/mq-watch@.service" || fail "no StateDirectory=mq"
grep -q '^EnvironmentFile=/etc/mq/watch-%i.env$' "$L/lib/systemd/system/mq-watch@.service" ||
  fail "mq-watch@.service reads no environment file per queue"
for u in mq-watch@.service mq-sweep.service mq-serve.service; do
  for d in User=mq Group=mq StateDirectory=mq NoNewPrivileges=yes ProtectSystem=strict \
           PrivateTmp=yes PrivateDevices=yes 'ProtectHome=(yes|read-only)' CapabilityBoundingSet=; do
    grep -Eqx "$d" "$L/lib/systemd/system/$u" || fail "$u has no $d"
  done
done
# The user and group: systemd-sysusers finds mq.conf where it was installed (a root holding
# /usr/local as installed), and would make the group mq and the user mq, home /var/lib/mq.
if command -v systemd-sysusers >/dev/null; then
  sysroot=$T/sysroot
  mkdir -p "$sysroot/etc" "$sysroot/usr/local/lib"
  cp -a "$L/lib/sysusers.d" "$sysroot/usr/local/lib/"
  expect_rc 0 systemd-sysusers --root="$sysroot" mq.conf
  grep -Eq '^mq:x:[0-9]+:' "$sysroot/etc/group" || fail "sysusers made no group mq"
  grep -Eq '^mq:x:[0-9]+:[0-9]+:[^:]*:/var/lib/mq:' "$sysroot/etc/passwd" ||
    fail "sysusers made no user mq with home /var/lib/mq: $(cat "$sysroot/etc/passwd")"
fi
# The check is real: without the tool, the same verify fails.
mv "$L/bin/mq-admin" "$T/mq-admin.moved"
expect_rc 1 systemd-analyze verify --man=no --root="$root" "${units[0]}"
grep -q 'mq-admin is not executable' "$T/err" || fail "verify without mq-admin: $(cat "$T/err")"
finish
