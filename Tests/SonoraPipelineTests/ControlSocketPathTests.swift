import Foundation
import Logging
import SonoraPipeline
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fresh folder for socket paths (short: sun_path is 108 bytes), removed when the tests exit.
func socketFolder() -> String {
    try! TemporaryFolder.pathUntilExit(prefix: "sonora-sock", in: "/tmp")
}

/// Binds a socket at `path` and closes it without removing the file: a stale socket.
func makeStaleSocket(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
    return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } } == 0
}

@Suite("ControlSocketPath: only a stale socket is ever replaced")
struct ControlSocketPathTests {
    let logger = Logger(label: "test")

    func server(_ path: String) throws -> ControlServer {
        try ControlServer(path: path, timeout: 5, logger: logger) { _ in .reloaded }
    }

    @Test("a regular file is refused, by the check and by the server, and kept")
    func regularFile() throws {
        let path = socketFolder() + "/notes.txt"
        try Data("keep me\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(ControlSocketPath.problem(for: path)?.contains("is a regular file, not a socket") == true)
        #expect(throws: ControlServerError.self) { try server(path) }
        #expect(FileManager.default.contents(atPath: path) == Data("keep me\n".utf8))
    }

    @Test("the config file itself is refused and kept")
    func configFile() throws {
        let path = socketFolder() + "/pipeline.yaml"
        let text = "control: {socket: \(path)}\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(ControlSocketPath.problem(for: path) != nil)
        #expect(throws: ControlServerError.self) { try server(path) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
    }

    @Test("a folder, a symbolic link (to a file or to a socket) and a FIFO are refused")
    func others() throws {
        let folder = socketFolder()
        #expect(ControlSocketPath.problem(for: folder)?.contains("is a folder") == true)
        let target = folder + "/target.txt"
        try Data("x".utf8).write(to: URL(fileURLWithPath: target))
        let link = folder + "/link.sock"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(ControlSocketPath.problem(for: link)?.contains("is a symbolic link (to \(target))") == true)
        #expect(throws: ControlServerError.self) { try server(link) }
        #expect(FileManager.default.contents(atPath: target) == Data("x".utf8))
        let stale = folder + "/stale.sock"
        #expect(makeStaleSocket(stale))
        let socketLink = folder + "/socket-link.sock"
        try FileManager.default.createSymbolicLink(atPath: socketLink, withDestinationPath: stale)
        #expect(ControlSocketPath.problem(for: socketLink)?.contains("symbolic link") == true)
        let fifo = folder + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(ControlSocketPath.problem(for: fifo)?.contains("not a socket") == true)
    }

    @Test("the length limit is sun_path's: 107 bytes bind, 108 are refused")
    func length() throws {
        #expect(ControlSocketPath.maximumPathBytes == 107 && ControlSocketPath.maximumBytes == 108)
        let folder = socketFolder()
        let fits = folder + "/" + String(repeating: "a", count: 107 - folder.utf8.count - 1)
        #expect(fits.utf8.count == 107)
        #expect(ControlSocketPath.problem(for: fits) == nil)
        let server = try server(fits)
        server.start()
        #expect(FileManager.default.fileExists(atPath: fits))
        #expect(ControlSocketPath.check(fits) == .failure(.init("another process is serving \(fits); stop it or choose another control.socket")))
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: fits))
        let long = fits + "b"
        #expect(ControlSocketPath.problem(for: long)?.contains("is 108 bytes; a Unix socket path holds at most 107") == true)
        #expect(throws: ControlServerError.self) { try self.server(long) }
    }

    @Test("the parent folder must exist and be a folder")
    func parent() throws {
        let folder = socketFolder()
        #expect(ControlSocketPath.problem(for: folder + "/missing/x.sock")?.contains("does not exist") == true)
        try Data().write(to: URL(fileURLWithPath: folder + "/file"))
        #expect(ControlSocketPath.problem(for: folder + "/file/x.sock") != nil)
        #expect(ControlSocketPath.problem(for: "")?.contains("empty") == true)
    }

    @Test("a stale socket is replaced; a live one is refused and left serving")
    func staleAndLive() throws {
        let path = socketFolder() + "/s.sock"
        #expect(makeStaleSocket(path))
        #expect(ControlSocketPath.check(path) == .success(.staleSocket))
        #expect(ControlSocketPath.problem(for: path) == nil)
        let first = try server(path)
        first.start()
        #expect(try ControlClient(path: path).send(.reload) == .reloaded)
        // `problem(for:)` leaves a live socket alone (a reload checks the running config);
        // `check`, which the server uses, refuses it.
        #expect(ControlSocketPath.problem(for: path) == nil)
        guard case .failure(let live) = ControlSocketPath.check(path) else { Issue.record("a live socket passed"); return }
        #expect(live.message.contains("another process is serving"))
        #expect(throws: ControlServerError.self) { try server(path) }
        #expect(try ControlClient(path: path).send(.reload) == .reloaded)
        first.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("stop removes only the socket it created, not a file put there since")
    func stopKeepsOthers() throws {
        let path = socketFolder() + "/s.sock"
        let server = try server(path)
        server.start()
        unlink(path)
        try Data("new".utf8).write(to: URL(fileURLWithPath: path))
        server.stop()
        #expect(FileManager.default.contents(atPath: path) == Data("new".utf8))
    }
}
