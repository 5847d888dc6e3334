#!/usr/bin/env python3
"""Every module a Swift file imports must be a declared dependency of its target.

SwiftPM lets a target import any module its dependencies reach transitively, so an
undeclared import builds today and breaks when a dependency changes its own. This
reads the manifest through `swift package dump-package`, scans each Swift target's
sources for imports, and lists every import its target does not declare.
Modules from the toolchain (Foundation, Glibc, Synchronization, Testing, ...) need no declaration.

Usage: scripts/check-imports.py [package-root]     (exit 1 and one line per problem)
"""
import json
import os
import re
import subprocess
import sys

TOOLCHAIN_MODULES = {
    "Swift", "_Concurrency", "_StringProcessing", "Foundation", "FoundationEssentials",
    "FoundationInternationalization", "FoundationNetworking", "FoundationXML", "Dispatch",
    "Glibc", "Musl", "Android", "Synchronization", "Observation", "RegexBuilder", "Testing", "XCTest",
    "Distributed", "Cxx", "CxxStdlib",
}
# `import X`, `@testable import X`, `public import X`, `import struct X.Y`, `@_implementationOnly import X`, ...
IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)


def main() -> int:
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    manifest = json.loads(subprocess.run(
        ["swift", "package", "dump-package"], cwd=root, check=True, capture_output=True, text=True).stdout)
    problems = []
    for target in manifest["targets"]:
        if target["type"] in ("system", "binary", "plugin", "macro"):
            continue
        declared = set()
        for dependency in target.get("dependencies", []):
            # {"byName": [name, condition]}, {"target": [name, condition]}, {"product": [name, package, moduleAliases, condition]}
            for kind in ("byName", "target", "product"):
                if kind in dependency:
                    declared.add(dependency[kind][0])
        default_folder = "Tests" if target["type"] == "test" else "Sources"
        folder = os.path.join(root, target.get("path") or os.path.join(default_folder, target["name"]))
        excluded = [os.path.normpath(os.path.join(folder, path)) for path in target.get("exclude", [])]
        for directory, subdirectories, files in os.walk(folder):
            subdirectories[:] = [d for d in subdirectories if os.path.normpath(os.path.join(directory, d)) not in excluded]
            for file in sorted(files):
                if not file.endswith(".swift"):
                    continue
                path = os.path.join(directory, file)
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        match = IMPORT.match(line)
                        if not match:
                            continue
                        module = match.group(1)
                        if module in TOOLCHAIN_MODULES or module in declared or module == target["name"]:
                            continue
                        problems.append(f"{os.path.relpath(path, root)}:{number}: target '{target['name']}' imports '{module}' "
                                        f"but does not declare it in Package.swift")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} undeclared import(s)", file=sys.stderr)
        return 1
    print("check-imports: every imported module is declared by its target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
