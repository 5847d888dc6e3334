#!/usr/bin/env bash
# Builds the installable Debian package (`make deb`): sonora with the Swift runtime linked in
# (--static-swift-stdlib: runs without the toolchain), the loopback ALSA plugin, the LV2 bundle
# sonora-gain.lv2, the unit file, /etc/sonora/sonora.yaml and a postinst that adds the user.
# Usage: scripts/build-deb.sh [OUTPUT_DIR]   (default: .build-deb; prints the .deb's path last)
# Its own scratch folder (.build-deb) keeps the static release build apart from .build's.
set -euo pipefail

cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SCRATCH=${SONORA_DEB_SCRATCH:-.build-deb}
OUT=${1:-$SCRATCH}
build=("$SWIFT" build -c release --scratch-path "$SCRATCH")

"${build[@]}" --static-swift-stdlib --product sonora
# The LV2 plugin links its Swift runtime statically (Package.swift, -static-stdlib).
"${build[@]}" --product SonoraGainLV2
bin=$("${build[@]}" --show-bin-path)

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
version=$("$bin/sonora" --version)
root="$SCRATCH/deb/root"
rm -rf "$SCRATCH/deb"
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/$multiarch/alsa-lib" "$root/usr/lib/lv2/sonora-gain.lv2" \
  "$root/lib/systemd/system" "$root/etc/sonora" "$root/usr/share/doc/sonora"

# Stripped (Debian's rule; lintian warns otherwise): symbol tables only; Swift's reflection
# metadata lives in allocated sections, which strip keeps.
install -m 0755 "$bin/sonora" "$root/usr/bin/sonora"
# The loopback plugin is plain C: compiled here, since SwiftPM links every dynamic library
# product against libswiftCore (swiftrt.o), which a Debian machine does not have.
cc -shared -fPIC -DPIC -O2 -ISources/SonoraLoopPCM/include Sources/SonoraLoopPCM/sonoraloop.c \
  -lasound -lpthread -lm -Wl,-z,relro,-z,now -o "$root/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_sonoraloop.so"
chmod 0644 "$root/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_sonoraloop.so"
install -m 0644 Plugins/sonora-gain.lv2/*.ttl "$bin/libSonoraGainLV2.so" "$root/usr/lib/lv2/sonora-gain.lv2/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/sonora" \
  "$root/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_sonoraloop.so" "$root/usr/lib/lv2/sonora-gain.lv2/libSonoraGainLV2.so"
# FFmpeg opens on first use (Sources/CFFmpegLoader): no av* symbol is left for libavformat to
# resolve, but CFFmpeg's pkg-config line still puts it in DT_NEEDED (which would map FFmpeg's ~90
# libraries at start). Dropped here, after checking nothing is bound to it.
if nm -D --undefined-only "$root/usr/bin/sonora" | grep -qE ' (av|avformat|avcodec|avio|swr)_'; then
  echo "build-deb: sonora binds an FFmpeg symbol directly; CFFmpegLoader must define it" >&2
  exit 1
fi
# JACK too (Sources/CJackLoader), and nothing links it: a jack_ symbol bound here would put
# libjack (and libdb behind it) back into every process.
if nm -D --undefined-only "$root/usr/bin/sonora" | grep -qE ' jack_'; then
  echo "build-deb: sonora binds a JACK symbol directly; call it through CJackLoader" >&2
  exit 1
fi
# dpkg-shlibdeps reads the binary as linked, so Depends keeps the libavformat it will open.
cp "$root/usr/bin/sonora" "$SCRATCH/deb/sonora.as-linked"
for needed in $(readelf -d "$root/usr/bin/sonora" | sed -n 's/.*NEEDED.*\[\(libav[a-z]*\.so\.[0-9]*\)\].*/\1/p'); do
  patchelf --remove-needed "$needed" "$root/usr/bin/sonora"
done
# SwiftPM's run paths ($ORIGIN, the toolchain's folder on the C plugin) mean nothing installed.
for object in "$root/usr/bin/sonora" "$root/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_sonoraloop.so" "$root/usr/lib/lv2/sonora-gain.lv2/libSonoraGainLV2.so"; do
  patchelf --remove-rpath "$object"
done
# Yams (the YAML parser) compiles in its own copy of libyaml; lintian's embedded-library is that.
mkdir -p "$root/usr/share/lintian/overrides"
install -m 0644 dist/debian/lintian-overrides "$root/usr/share/lintian/overrides/sonora"
install -m 0644 dist/sonora.service "$root/lib/systemd/system/sonora.service"
install -m 0644 dist/sonora.yaml "$root/etc/sonora/sonora.yaml"

doc="$root/usr/share/doc/sonora"
{
  cat dist/debian/copyright
  sed -e 's/^[[:space:]]*$/./' -e 's/^/ /' LICENSE
} >"$doc/copyright"
{
  echo "sonora ($version) unstable; urgency=medium"
  echo
  echo "  * Built by make deb from $(git rev-parse --short HEAD 2>/dev/null || echo 'a source tree')."
  echo
  echo " -- ${SONORA_DEB_MAINTAINER:-"$(git config user.name) <$(git config user.email)>"}  $(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/copyright" "$doc/changelog.gz"

# Depends: the Debian packages of the shared libraries the binaries load (dpkg-shlibdeps wants a
# debian/control beside it; a throw-away one is enough).
shlibs_dir=$(mktemp -d)
trap 'rm -rf "$shlibs_dir"' EXIT
mkdir -p "$shlibs_dir/debian"
printf 'Source: sonora\n\nPackage: sonora\nArchitecture: any\n' >"$shlibs_dir/debian/control"
objects=("$SCRATCH/deb/sonora.as-linked" "$root/usr/lib/$multiarch/alsa-lib/libasound_module_pcm_sonoraloop.so" "$root/usr/lib/lv2/sonora-gain.lv2/libSonoraGainLV2.so")
absolute=()
for object in "${objects[@]}"; do absolute+=("$(realpath "$object")"); done
depends=$(cd "$shlibs_dir" && dpkg-shlibdeps -O "${absolute[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n "$depends" ]] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
# The maintainer: $SONORA_DEB_MAINTAINER, else who git says is building.
maintainer=${SONORA_DEB_MAINTAINER:-"$(git config user.name) <$(git config user.email)>"}
sed -e "s/@VERSION@/$version/" -e "s|@MAINTAINER@|$maintainer|" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
  dist/debian/control.in >"$root/DEBIAN/control"
install -m 0755 dist/debian/postinst dist/debian/postrm "$root/DEBIAN/"
echo /etc/sonora/sonora.yaml >"$root/DEBIAN/conffiles"
(cd "$root" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

mkdir -p "$OUT"
deb="$OUT/sonora_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
