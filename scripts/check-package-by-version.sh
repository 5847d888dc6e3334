#!/usr/bin/env bash
# Proves Sonora is usable as a versioned dependency: puts the package in a git repository
# of its own, tags it with a semantic version, and builds every library product from a
# package outside the tree that depends on it with `.package(url: "file://…", exact: …)`.
# SwiftPM refuses a product of a versioned dependency whose targets use `unsafeFlags`
# ("the target 'X' in product 'Y' contains unsafe build flags"), which a root-package
# build never reports; this is the check that does.
#
# Usage: scripts/check-package-by-version.sh [REVISION]
#   without REVISION: the working tree as it is (tracked and new files, not ignored ones);
#   with REVISION (e.g. HEAD~3): that commit of the repository.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
revision=${1:-}
version=0.0.0-check
products=(SonoraCore SonoraDSP SonoraHAL SonoraFile SonoraUnits SonoraLV2 SonoraVoice SonoraToolbox SonoraPipeline)

work=$(mktemp -d "${TMPDIR:-/tmp}/sonora-package-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/sonora" "$work/consumer"

# 1. Sonora as a tagged repository.
if [ -n "$revision" ]; then
    git -C "$root" archive "$revision" | tar -x -C "$work/sonora"
else
    (cd "$root" && git ls-files -z --cached --others --exclude-standard) |
        while IFS= read -r -d '' file; do
            if [ -e "$root/$file" ]; then
                mkdir -p "$work/sonora/$(dirname "$file")"
                cp -P "$root/$file" "$work/sonora/$file"
            fi
        done
fi
rm -f "$work/sonora/Package.resolved"
git -C "$work/sonora" init -q
git -C "$work/sonora" add -A
git -C "$work/sonora" -c user.name=check -c user.email=check@localhost commit -q -m "Sonora under check"
git -C "$work/sonora" tag "$version"

# 2. A package that uses every library product by that version.
dependencies=""
imports=""
for product in "${products[@]}"; do
    dependencies+="                .product(name: \"$product\", package: \"sonora\"),"$'\n'
    imports+="import $product"$'\n'
done
cat > "$work/consumer/Package.swift" <<MANIFEST
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "SonoraConsumer",
    dependencies: [.package(url: "file://$work/sonora", exact: "$version")],
    targets: [
        .executableTarget(
            name: "SonoraConsumer",
            dependencies: [
$dependencies            ]
        )
    ]
)
MANIFEST
mkdir -p "$work/consumer/Sources/SonoraConsumer"
{
    printf '%s' "$imports"
    echo 'print("Sonora by version: built \(SampleRing.self), \(RealFFT.self), \(EchoCanceller.self)")'
} > "$work/consumer/Sources/SonoraConsumer/main.swift"

# 3. Build it (debug: the check is that SwiftPM accepts and compiles the graph).
echo "check-package-by-version: building ${products[*]} as dependency 'sonora' $version${revision:+ ($revision)}"
status=0
swift build --package-path "$work/consumer" > "$work/build.log" 2>&1 || status=$?
if [ "$status" -ne 0 ] || ! "$work/consumer/.build/debug/SonoraConsumer"; then
    grep -E "error|warning: .*unsafe" "$work/build.log" | head -n 20 >&2 || tail -n 20 "$work/build.log" >&2
    echo "check-package-by-version: FAILED — a package depending on Sonora by version cannot build its library products" >&2
    exit 1
fi
echo "check-package-by-version: ok"
