import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What would stop the control server from taking a path, found without changing
/// anything: only a stale socket may be replaced — a regular file (even the config
/// itself), a folder or a symlink is never removed.
public enum ControlSocketPath {
    /// `sun_path`'s size on Linux, the terminating NUL included.
    public static let maximumBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// Why `path` cannot be the control socket, or nil if the server can bind it (a socket
    /// already there is fine here; `isLive` tells whether another process serves it).
    public static func problem(for path: String) -> String? {
        guard path.utf8.count < maximumBytes else {
            return "'\(Diagnostic.excerpt(path))' is \(path.utf8.count) bytes; a Unix socket path holds at most \(maximumBytes - 1)"
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFSOCK:
                // Stale, or served by a running pipeline — perhaps the very one whose config is
                // being checked before a reload; the server itself refuses a live one at start.
                return nil
            case S_IFREG: return "\(path) is a regular file, not a socket; it is never replaced — choose another path"
            case S_IFDIR: return "\(path) is a folder; give the socket's file name"
            case S_IFLNK: return "\(path) is a symbolic link; give the socket's own path"
            default: return "\(path) exists and is not a socket; it is never replaced — choose another path"
            }
        }
        let folder = (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.isEmpty ? "." : folder, isDirectory: &isFolder), isFolder.boolValue else {
            return "folder \(folder) does not exist"
        }
        guard access(folder.isEmpty ? "." : folder, W_OK | X_OK) == 0 else { return "cannot create a socket in \(folder) (not writable)" }
        return nil
    }

    /// True if something accepts connections at `path`.
    public static func isLive(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: Array(path.utf8.prefix(buffer.count - 1)) + [0])
        }
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        return result == 0
    }
}
