import Foundation
import Synchronization

/// A folder of its own under the system's temporary directory (`mkdtemp`, so parallel tests
/// and processes never share one), removed with everything in it when the folder object
/// goes away — or, for one held in a `static let`, when the test process exits.
///
///     let folder = try TemporaryFolder()      // a suite's stored property
///     try withTemporaryFolder { folder in … }   // or scoped to a block
public final class TemporaryFolder: Sendable {
    public let url: URL
    public var path: String { url.path }

    /// Creates `PARENT/PREFIX-XXXXXX`; the parent is `$TMPDIR` (or /tmp) unless given (e.g.
    /// "/tmp" for socket paths, which must stay under 108 bytes).
    public init(prefix: String = "sonora-test", in parent: String? = nil) throws {
        var template = Array(((parent ?? NSTemporaryDirectory()) + "/" + prefix + "-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        url = URL(fileURLWithPath: String(cString: made)).standardizedFileURL
        Self.live.withLock { $0.insert(url.path) }
        _ = Self.removeAtExit
    }

    deinit { remove() }

    /// The path of `name` inside the folder (not created).
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// The URL of `name` inside the folder (not created).
    public func url(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// Removes the folder and its contents now (again later is harmless).
    public func remove() {
        try? FileManager.default.removeItem(at: url)
        _ = Self.live.withLock { $0.remove(url.path) }
    }

    /// A new folder's path, for helpers that hand out paths: the folder is kept (and
    /// removed) when the test process exits.
    public static func pathUntilExit(prefix: String = "sonora-test", in parent: String? = nil) throws -> String {
        let folder = try TemporaryFolder(prefix: prefix, in: parent)
        kept.withLock { $0.append(folder) }
        return folder.path
    }

    private static let kept = Mutex<[TemporaryFolder]>([])

    /// Folders not yet removed: a `static let` folder is never deinitialised, so these go at exit.
    private static let live = Mutex<Set<String>>([])
    private static let removeAtExit: Void = {
        atexit {
            for path in TemporaryFolder.live.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }()
}

/// Runs `body` with a fresh temporary folder and removes the folder afterwards.
public func withTemporaryFolder<Result>(prefix: String = "sonora-test", _ body: (TemporaryFolder) throws -> Result) throws -> Result {
    let folder = try TemporaryFolder(prefix: prefix)
    defer { folder.remove() }
    return try body(folder)
}
