import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real full disk for a test: a tmpfs of a few hundred KiB mounted on a fresh folder,
/// unmounted (and the folder removed) when released. Needs root and a mount(2) the
/// container allows; `isAvailable` tells, for `.enabled(if:)`.
public final class SmallDisk {
    public let path: String
    private let folder: TemporaryFolder

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    public init(bytes: Int) throws {
        folder = try TemporaryFolder(prefix: "sonora-small-disk")
        path = folder.path
        guard TestProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path]) == 0 else {
            throw Unavailable(description: "mount -t tmpfs on \(path) failed (not root, or the container refuses mount)")
        }
    }

    deinit { TestProcess.run("/bin/umount", [path]) }

    /// Whether a small tmpfs can be mounted here (tried once).
    public static let isAvailable: Bool = getuid() == 0 && (try? SmallDisk(bytes: 64 << 10)) != nil
}

/// Small helpers for tests that run other programs.
public enum TestProcess {
    /// The id of a process that has exited (for stale files "left by a dead process").
    public static func deadProcessID() -> pid_t {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try? process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    /// Runs `tool` to its end with stderr discarded; its exit status (−1 if it could not start).
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
