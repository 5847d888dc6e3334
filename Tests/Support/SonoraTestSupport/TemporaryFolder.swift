import Foundation

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
        Self.live.insert(url.path)
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
        Self.live.remove(url.path)
    }

    /// A new folder's path, for helpers that hand out paths: the folder is kept (and
    /// removed) when the test process exits.
    public static func pathUntilExit(prefix: String = "sonora-test", in parent: String? = nil) throws -> String {
        let folder = try TemporaryFolder(prefix: prefix, in: parent)
        kept.keep(folder)
        return folder.path
    }

    private static let kept = KeptFolders()

    /// Folders not yet removed: a `static let` folder is never deinitialised, so these go at exit.
    private static let live = LivePaths()
    private static let removeAtExit: Void = {
        atexit {
            for path in TemporaryFolder.live.all { try? FileManager.default.removeItem(atPath: path) }
        }
    }()
}

/// The live folders' paths. A class with a lock, not a static `Mutex`: ThreadSanitizer took
/// concurrent `withLock` calls on the static `Mutex` for conflicting accesses to the global.
private final class LivePaths: @unchecked Sendable {
    private let lock = NSLock()
    private var paths: Set<String> = []

    func insert(_ path: String) { lock.withLock { _ = paths.insert(path) } }
    func remove(_ path: String) { lock.withLock { _ = paths.remove(path) } }
    var all: Set<String> { lock.withLock { paths } }
}

/// Runs `body` with a fresh temporary folder and removes the folder afterwards.
public func withTemporaryFolder<Result>(prefix: String = "sonora-test", _ body: (TemporaryFolder) throws -> Result) throws -> Result {
    let folder = try TemporaryFolder(prefix: prefix)
    defer { folder.remove() }
    return try body(folder)
}

/// Folders kept until the process exits (`pathUntilExit`), for the same reason as `LivePaths`.
private final class KeptFolders: @unchecked Sendable {
    private let lock = NSLock()
    private var folders: [TemporaryFolder] = []

    func keep(_ folder: TemporaryFolder) { lock.withLock { folders.append(folder) } }
}
