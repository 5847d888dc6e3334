import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What may stand at a control socket's path. Only a stale socket (one nothing answers
/// on) is ever replaced; a file, folder, link or live server there is refused, so a
/// mistyped `control.socket` can never delete a user's file.
public enum ControlSocketPath {
    /// The longest path `bind` takes: `sun_path` holds it with its terminating NUL
    /// (108 bytes on Linux, so 107).
    public static let maximumBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// What stands at the path now.
    public enum State: Equatable, Sendable {
        /// Nothing: the server creates the socket.
        case free
        /// A socket nothing answers on (left by a process that died): the server replaces it.
        case staleSocket
    }

    /// Why a server cannot use `path`, or nil when it can (nothing there, or a stale
    /// socket it will replace). Touches nothing: it only looks (lstat, access) and, for
    /// an existing socket, tries to connect to tell a live server from a stale one.
    public static func problem(for path: String) -> String? {
        switch check(path) {
        case .success: nil
        case .failure(let problem): problem.message
        }
    }

    /// The path's state, or what is wrong with it.
    public static func check(_ path: String) -> Result<State, Problem> {
        guard !path.isEmpty else { return .failure(Problem("the socket path is empty")) }
        let length = path.utf8.count
        guard length <= maximumBytes else {
            return .failure(Problem("socket path '\(ControlText.excerpt(path, limit: 80))' is \(length) bytes; a Unix socket path holds at most \(maximumBytes) (choose a shorter path)"))
        }
        guard !path.utf8.contains(0) else { return .failure(Problem("socket path contains a NUL byte")) }
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFSOCK:
                if isLive(path) { return .failure(Problem("another process is serving \(path); stop it or choose another control.socket")) }
                return .success(.staleSocket)
            case S_IFLNK:
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)).map { " (to \($0))" } ?? ""
                return .failure(Problem("\(path) is a symbolic link\(target), not a socket; only a stale socket is replaced — remove it or choose another control.socket"))
            case S_IFDIR:
                return .failure(Problem("\(path) is a folder, not a socket; choose a file path such as \(path.hasSuffix("/") ? path : path + "/")sonora.sock"))
            case S_IFREG:
                return .failure(Problem("\(path) is a regular file (\(info.st_size) bytes), not a socket; only a stale socket is replaced — remove the file yourself or choose another control.socket"))
            default:
                return .failure(Problem("\(path) exists and is not a socket (a FIFO or a device); only a stale socket is replaced"))
            }
        }
        let reason = errno
        guard reason == ENOENT else {
            return .failure(Problem("cannot use \(path): \(String(cString: strerror(reason)))"))
        }
        let parent = parentFolder(of: path)
        var folder = stat()
        guard stat(parent, &folder) == 0 else {
            let why = errno == ENOENT ? "does not exist" : String(cString: strerror(errno))
            return .failure(Problem("cannot create \(path): the folder \(parent) \(why)"))
        }
        guard folder.st_mode & S_IFMT == S_IFDIR else {
            return .failure(Problem("cannot create \(path): \(parent) is not a folder"))
        }
        guard access(parent, W_OK | X_OK) == 0 else {
            return .failure(Problem("cannot create \(path): the folder \(parent) is not writable"))
        }
        return .success(.free)
    }

    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public var message: String
        init(_ message: String) { self.message = message }
        public var description: String { message }
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
            let bytes = Array(path.utf8.prefix(buffer.count - 1))
            buffer.copyBytes(from: bytes + [0])
        }
        return address
    }

    /// True if something accepts (or queues) connections at `path`. Non-blocking, so a
    /// hung server with a full backlog counts as live instead of stalling the caller.
    static func isLive(_ path: String) -> Bool {
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
