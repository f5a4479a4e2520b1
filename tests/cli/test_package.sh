#!/bin/bash
# The Debian package (issue 15): `cpack -G DEB` in the build directory under test makes
# mq_VERSION_ARCH.deb; extracted with `dpkg -x` into a fresh root, it has the tools, man pages,
# completions where Debian's shells look, and the copyright file under /usr; its Depends names
# libxml2 (mq-admin's, which checks XML for the static tools) and librabbitmq4 (loaded with
# dlopen, so declared by hand); the extracted
# mq-send and mq-receive work on a store; lintian (when installed) reports no error.
. "$(dirname "$0")/lib.sh"

for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v $tool >/dev/null || skip "no $tool"
done
[ -f "$MQ_BIN/CPackConfig.cmake" ] || skip "$MQ_BIN is not a configured build directory"

(cd "$MQ_BIN" && cpack -G DEB -B "$T/pkg") >"$T/cpack.out" 2>&1 ||
  { fail "cpack -G DEB failed: $(tail -5 "$T/cpack.out")"; finish; }
debs=("$T"/pkg/mq_*_*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || { fail "no single mq_VERSION_ARCH.deb: $(ls "$T/pkg")"; finish; }
deb=${debs[0]}
version=$(mq-send --version | sed 's/.* //')
arch=$(dpkg --print-architecture)
[ "$(basename "$deb")" = "mq_${version}_$arch.deb" ] || fail "package file is $(basename "$deb")"

expect_rc 0 dpkg-deb -f "$deb" Package Version Architecture
expect_out "Package: mq
Version: $version
Architecture: $arch
"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libxml2 librabbitmq4 libisal2 libzstd1 libncursesw6; do
  [[ ",$depends" =~ ,\ ?$lib[\ ,\(]|,\ ?$lib$ ]] || fail "Depends '$depends' does not name $lib"
done

root=$T/root
expect_rc 0 dpkg -x "$deb" "$root"
for f in bin/mq-send bin/mq-peek bin/mq-receive bin/mq-watch bin/mq-admin \
         share/man/man1/mq-send.1.gz share/man/man1/mq-admin.1.gz share/man/man7/mq.7.gz \
         share/bash-completion/completions/mq-send share/bash-completion/completions/mq-admin \
         share/zsh/vendor-completions/_mq-send share/zsh/vendor-completions/_mq-admin \
         share/fish/vendor_completions.d/mq-send.fish share/fish/vendor_completions.d/mq-admin.fish \
         share/doc/mq/copyright share/doc/mq/changelog.gz \
         lib/systemd/system/mq-watch@.service lib/systemd/system/mq-sweep.service \
         lib/systemd/system/mq-sweep.timer lib/sysusers.d/mq.conf; do
  [ -e "$root/usr/$f" ] || fail "the package has no /usr/$f"
done
cmp -s "$root/usr/share/doc/mq/copyright" "$MQ_SRC/LICENSE" || fail "copyright is not LICENSE"
# Its postinst makes the user mq of the service units (lib/sysusers.d/mq.conf) at once.
dpkg-deb -I "$deb" postinst 2>/dev/null | grep -q '^ *systemd-sysusers mq.conf$' ||
  fail "the package has no postinst running systemd-sysusers mq.conf"
# Nothing outside /usr.
extra=$(cd "$root" && find . -mindepth 1 -maxdepth 1 ! -name usr)
[ -z "$extra" ] || fail "the package installs outside /usr: $extra"
# Release binaries, stripped.
file "$root/usr/bin/mq-send" 2>/dev/null | grep -q 'not stripped' && fail "mq-send is not stripped"

# The installed tools, not the build's, on a store of their own.
expect_rc 0 "$root/usr/bin/mq-admin" -s "$T/pstore" init
expect_rc 0 "$root/usr/bin/mq-admin" -s "$T/pstore" create q
expect_rc 0 "$root/usr/bin/mq-send" -s "$T/pstore" q 'from the package'
expect_rc 0 "$root/usr/bin/mq-receive" -s "$T/pstore" q
expect_out 'from the package'
expect_rc 0 "$root/usr/bin/mq-send" --version
expect_out "mq-send (mq) $version
"

if command -v lintian >/dev/null; then
  lintian --no-cfg "$deb" >"$T/lintian" 2>&1
  [ -n "${MQ_TEST_VERBOSE-}" ] && cat "$T/lintian" >&2
  grep -q '^E: ' "$T/lintian" && fail "lintian reports errors: $(grep '^E: ' "$T/lintian")"
else
  echo "note: lintian is not installed; the package was not linted" >&2
fi

finish
