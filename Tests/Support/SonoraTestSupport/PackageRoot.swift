import Foundation

/// The repository's root (the folder holding Package.swift), found from this file's path,
/// for tests that read Configs/, scripts/ or Plugins/.
public enum PackageRoot {
    public static let url: URL = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" && !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            directory = directory.deletingLastPathComponent()
        }
        return directory
    }()

    public static var path: String { url.path }

    /// The path of `relative` below the root, e.g. `PackageRoot.path("Configs/mixer.yaml")`.
    public static func path(_ relative: String) -> String { url.appendingPathComponent(relative).path }

    /// The folder the running test binary was built into (`.build/…/debug`, or wherever
    /// `--build-path` put it): the products built with it (`sonora`, plugins) are beside it.
    public static let buildProducts: URL = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The test binary sits inside `NAME.xctest` on Linux when run as a bundle.
        if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
        return directory
    }()

    /// A product built beside the tests (`sonora`, `libSonoraGainLV2.so` …), else in the
    /// package's default build folders; nil if it was not built.
    public static func builtProduct(_ name: String) -> String? {
        let candidates = [buildProducts.appendingPathComponent(name).path]
            + ["debug", "x86_64-unknown-linux-gnu/debug", "aarch64-unknown-linux-gnu/debug", "release"].map { path(".build/\($0)/\(name)") }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }
}
