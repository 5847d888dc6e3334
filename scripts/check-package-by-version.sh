#!/usr/bin/env bash
# Proves Sonora is usable as a versioned dependency: puts the package in a git repository
# of its own, tags it with a semantic version, and builds every library product from a
# package outside the tree that depends on it with `.package(url: "file://…", exact: …)`.
# SwiftPM refuses a product of a versioned dependency whose targets use `unsafeFlags`
# ("the target 'X' in product 'Y' contains unsafe build flags"), which a root-package
# build never reports; this is the check that does.
#
# Usage: scripts/check-package-by-version.sh [--graph] [REVISION]
#   without REVISION: the working tree as it is (tracked and new files, not ignored ones);
#   with REVISION (e.g. HEAD~3): that commit of the repository.
#   --graph: load the consumer's package graph instead of building it (`make test`'s form).
#     SwiftPM decides the refusal while it loads the graph (ModulesGraph loading), before any
#     compiling: a consumer of a copy with an unsafe flag added fails there in ~15 s, where the
#     full debug build of every library product takes ~200 s of CPU. So that the check cannot
#     pass vacuously (a SwiftPM that stopped refusing, or a load that stopped failing), the same
#     load is made of a canary copy with `-DSONORA_PACKAGE_CHECK_CANARY` added to SonoraCore,
#     and must fail with SwiftPM's message.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=build
if [ "${1:-}" = "--graph" ]; then mode=graph; shift; fi
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

# 3. Build it (debug: the check is that SwiftPM accepts and compiles the graph), or only load
#    its graph (--graph), then the canary's.
if [ "$mode" = graph ]; then
    echo "check-package-by-version: loading ${products[*]} as dependency 'sonora' $version${revision:+ ($revision)}"
    if ! swift package --package-path "$work/consumer" show-dependencies > "$work/graph.log" 2>&1; then
        grep -E "error" "$work/graph.log" | head -n 20 >&2 || tail -n 20 "$work/graph.log" >&2
        echo "check-package-by-version: FAILED — SwiftPM refuses Sonora's library products in a package that depends on it by version" >&2
        exit 1
    fi
    # The canary: the same tree with an unsafe flag on SonoraCore, tagged as its own version
    # (in a folder also named sonora: SwiftPM names a package by its URL's last component).
    canary="$work/canary/sonora"
    mkdir "$work/canary"
    cp -a "$work/sonora" "$canary"
    cat >> "$canary/Package.swift" <<'CANARY'

// check-package-by-version's canary: an unsafe flag SwiftPM must refuse in a versioned dependency.
for target in package.targets where target.name == "SonoraCore" {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-DSONORA_PACKAGE_CHECK_CANARY"])]
}
CANARY
    git -C "$canary" -c user.name=check -c user.email=check@localhost commit -q -a -m "canary"
    git -C "$canary" tag "$version-canary"
    mkdir -p "$work/canary-consumer/Sources/SonoraConsumer"
    sed -e "s|file://$work/sonora\"|file://$canary\"|" -e "s|exact: \"$version\"|exact: \"$version-canary\"|" \
        "$work/consumer/Package.swift" > "$work/canary-consumer/Package.swift"
    cp "$work/consumer/Sources/SonoraConsumer/main.swift" "$work/canary-consumer/Sources/SonoraConsumer/"
    if swift package --package-path "$work/canary-consumer" show-dependencies > "$work/canary.log" 2>&1 \
        || ! grep -q "in product 'SonoraCore' contains unsafe build flags" "$work/canary.log"; then
        tail -n 20 "$work/canary.log" >&2
        echo "check-package-by-version: FAILED — the canary (SonoraCore with an unsafe flag) was not refused with SwiftPM's message when its graph loaded, so this check proves nothing with this SwiftPM; run the full build (without --graph)" >&2
        exit 1
    fi
    echo "check-package-by-version: ok (graph loaded; the unsafe-flag canary refused: $(grep -m1 -o "the target 'SonoraCore' in product 'SonoraCore' contains unsafe build flags" "$work/canary.log"))"
    exit 0
fi
echo "check-package-by-version: building ${products[*]} as dependency 'sonora' $version${revision:+ ($revision)}"
status=0
swift build --package-path "$work/consumer" > "$work/build.log" 2>&1 || status=$?
if [ "$status" -ne 0 ] || ! "$work/consumer/.build/debug/SonoraConsumer"; then
    grep -E "error|warning: .*unsafe" "$work/build.log" | head -n 20 >&2 || tail -n 20 "$work/build.log" >&2
    echo "check-package-by-version: FAILED — a package depending on Sonora by version cannot build its library products" >&2
    exit 1
fi
echo "check-package-by-version: ok"
