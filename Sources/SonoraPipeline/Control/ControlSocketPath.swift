import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What may stand at a control socket's path, found without changing anything. Only a
/// stale socket (one nothing answers on) is ever replaced; a regular file (even the config
/// itself), a folder, a symbolic link, a FIFO or a device is refused, so a mistyped
/// `control.socket` can never delete a user's file.
public enum ControlSocketPath {
    /// `sun_path`'s size on Linux (108), the terminating NUL included.
    public static let maximumBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
    /// The longest path `bind` takes (107 bytes).
    public static let maximumPathBytes = maximumBytes - 1

    /// What stands at the path now.
    public enum State: Equatable, Sendable {
        /// Nothing: the server creates the socket.
        case free
        /// A socket nothing answers on (left by a process that died): the server replaces it.
        case staleSocket
    }

    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Why `path` cannot be the control socket, or nil if a server could bind it. It only
    /// looks (lstat, access). A socket already there is fine here, live or stale: the
    /// config being checked may be the one whose running pipeline serves it (a reload);
    /// `check` and the server itself refuse a live one at start.
    public static func problem(for path: String) -> String? {
        staticProblem(path)?.message
    }

    /// As `problem(for:)`, for a server that makes the socket's folder when it is missing
    /// (the session server, as systemd's RuntimeDirectory= would): a missing folder is fine
    /// when its own parent is a folder it can write in.
    public static func problem(forFolderMadeIfMissing path: String) -> String? {
        staticProblem(path, folderMadeIfMissing: true)?.message
    }

    /// The path's state for a server about to bind it, or what is wrong with it: every
    /// problem `problem(for:)` finds, and a live server already there. To tell live from
    /// stale it connects once (non-blocking) to an existing socket.
    public static func check(_ path: String) -> Result<State, Problem> {
        if let problem = staticProblem(path) { return .failure(problem) }
        var info = stat()
        guard lstat(path, &info) == 0 else { return .success(.free) }
        if isLive(path) { return .failure(Problem("another process is serving \(path); stop it or choose another control.socket")) }
        return .success(.staleSocket)
    }

    private static func staticProblem(_ path: String, folderMadeIfMissing: Bool = false) -> Problem? {
        guard !path.isEmpty else { return Problem("the socket path is empty") }
        let length = path.utf8.count
        guard length <= maximumPathBytes else {
            return Problem("'\(Diagnostic.excerpt(path))' is \(length) bytes; a Unix socket path holds at most \(maximumPathBytes) (choose a shorter path)")
        }
        guard !path.utf8.contains(0) else { return Problem("the socket path contains a NUL byte") }
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFSOCK:
                return nil
            case S_IFLNK:
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map { " (to \($0))" } ?? ""
                return Problem("\(path) is a symbolic link\(target), not a socket; it is never replaced — give the socket's own path")
            case S_IFDIR:
                return Problem("\(path) is a folder, not a socket; give the socket's file name (such as \(path.hasSuffix("/") ? path : path + "/")sonora.sock)")
            case S_IFREG:
                return Problem("\(path) is a regular file, not a socket; it is never replaced — choose another path")
            default:
                return Problem("\(path) exists and is not a socket (a FIFO or a device); it is never replaced — choose another path")
            }
        }
        let reason = errno
        guard reason == ENOENT else { return Problem("cannot use \(path): \(String(cString: strerror(reason)))") }
        let folder = parentFolder(of: path)
        var parent = stat()
        guard stat(folder, &parent) == 0 else {
            let reason = errno
            if reason == ENOENT && folderMadeIfMissing {
                let above = parentFolder(of: folder)
                var grandparent = stat()
                if stat(above, &grandparent) == 0, grandparent.st_mode & S_IFMT == S_IFDIR, access(above, W_OK | X_OK) == 0 { return nil }
                return Problem("folder \(folder) does not exist, and \(above) is not a folder it can be made in")
            }
            return Problem("folder \(folder) \(reason == ENOENT ? "does not exist" : String(cString: strerror(reason)))")
        }
        guard parent.st_mode & S_IFMT == S_IFDIR else { return Problem("\(folder) is not a folder") }
        guard access(folder, W_OK | X_OK) == 0 else { return Problem("cannot create a socket in \(folder) (not writable)") }
        return nil
    }

    static func parentFolder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// `path` as a socket address (the caller has checked its length).
    static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: Array(path.utf8.prefix(buffer.count - 1)) + [0])
        }
        return address
    }

    /// True if something accepts (or queues) connections at `path`. Non-blocking, so a
    /// hung server with a full backlog counts as live instead of stalling the caller.
    public static func isLive(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = address(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0 || errno == EAGAIN || errno == EINPROGRESS
    }
}
