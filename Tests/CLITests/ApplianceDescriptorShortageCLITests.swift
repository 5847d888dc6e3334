import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An appliance out of file descriptors: a connection waits in the listener's queue, which
/// stays readable while `accept` fails with EMFILE. The session server's loop must not spin
/// on it (it did: `poll` returned at once, `accept` failed, again, at 100 % of a CPU) and
/// must take the client once descriptors are free again.
@Suite("the appliance short of descriptors", .serialized, .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct ApplianceDescriptorShortageCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-fds")

    @Test("a client the appliance has no descriptor for waits without the server's loop spinning, then is served")
    func waitsWithoutSpinning() throws {
        let appliance = try SessionServerCLITests.Appliance(folder: scratch.path, name: "fds")
        defer { appliance.stop() }
        try #require(appliance.isServing, "the appliance did not start")
        let pid = appliance.process.processIdentifier
        // (The socket takes connections from bind on; the loop's thread starts a little later.)
        var found: Int32?
        for _ in 0..<200 where found == nil {
            found = Self.thread(named: "sonora-server", of: pid)
            if found == nil { usleep(25_000) }
        }
        let server = try #require(found, "no sonora-server thread in \(pid)")

        // A client attached before the shortage.
        let earlier = try #require(UnixSocket.connect(appliance.sessionSocket))
        defer { close(earlier) }
        #expect(Self.send(#"{"id":1,"op":"hello","name":"earlier"}"#, to: earlier))
        #expect(Self.readLine(from: earlier, seconds: 5)?.contains(#""ok":true"#) == true)

        // Leave the appliance no descriptor; a newcomer's connection waits in the queue.
        let original = try #require(Self.openFileLimit(of: pid))
        try #require(Self.setOpenFileLimit(of: pid, to: Self.lowestFreeDescriptor(of: pid)))
        let newcomer = try #require(UnixSocket.connect(appliance.sessionSocket), "the kernel queues a connection the appliance cannot take")
        defer { close(newcomer) }
        #expect(Self.send(#"{"id":1,"op":"hello","name":"newcomer"}"#, to: newcomer))

        // Over a second, a spinning loop runs for most of it; a paused one hardly at all.
        usleep(100_000)
        let before = try #require(Self.runNanoseconds(pid, server))
        usleep(1_000_000)
        let spent = try #require(Self.runNanoseconds(pid, server)) - before
        #expect(spent < 200_000_000, "the server's loop ran \(Double(spent) / 1e6) ms of the last second while no descriptor was free")
        #expect(appliance.process.isRunning)

        // The attached client is still answered meanwhile.
        #expect(Self.send(#"{"id":2,"op":"session_status"}"#, to: earlier))
        #expect(Self.readLine(from: earlier, seconds: 5) != nil, "the attached client got no answer during the shortage")

        // Descriptors back: the newcomer is taken and answered.
        try #require(Self.setOpenFileLimit(of: pid, to: original))
        let reply = Self.readLine(from: newcomer, seconds: 5)
        #expect(reply?.contains(#""ok":true"#) == true, "no answer to hello after the shortage: \(reply ?? "nothing")")
        let outcome = appliance.stop()
        #expect(outcome.status == 0, "sonora run: \(outcome.stderr)")
    }

    @Test("a client short of descriptors gets a clear error, and the appliance keeps no stream for it")
    func clientShortOfDescriptors() throws {
        let appliance = try SessionServerCLITests.Appliance(folder: scratch.path, name: "cfds")
        defer { appliance.stop() }
        try #require(appliance.isServing, "the appliance did not start")
        let tone = scratch.path + "/tone.wav"
        _ = try runProcess("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", tone, "synth", "0.3", "sine", "440", "vol", "0.5"])
        // Somewhere between "cannot even start" and "plays", a limit leaves the client without
        // room for the two descriptors a stream comes with (the kernel drops them).
        var reasons: [String] = []
        for limit in stride(from: 8, through: 48, by: 2) {
            let outcome = try CLIRunner(executable: "/usr/bin/prlimit").run(
                ["--nofile=\(limit)", sonoraBinary!, "play", "--device", "sonora:\(appliance.sessionSocket)", tone])
            #expect(outcome.signal == nil, "limit \(limit): sonora play was killed by signal \(outcome.signal ?? 0): \(outcome.stderr)")
            if outcome.status != 0 {
                #expect(!outcome.stderr.isEmpty, "limit \(limit): failed without a reason")
                reasons.append(outcome.stderr)
            }
        }
        #expect(reasons.contains { $0.contains("stream descriptors did not arrive") && $0.contains("out of file descriptors") },
                "no run reached the stream's descriptors short of room: \(reasons)")
        // Nothing left attached, and the appliance serves on.
        #expect(appliance.isServing)
        let status = try appliance.session(["status", "--json"])
        let listed = (try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8))) as? [String: Any]
        let clients = try #require(listed?["clients"] as? [[String: Any]], "\(status.stdout)")
        #expect(clients.allSatisfy { ($0["streams"] as? Int ?? 0) == 0 }, "streams left attached: \(status.stdout)")
    }

    /// The appliance's thread called `name` (its task id).
    static func thread(named name: String, of pid: Int32) -> Int32? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? ""
            if comm.trimmingCharacters(in: .whitespacesAndNewlines) == name { return Int32(task) }
        }
        return nil
    }

    /// Nanoseconds the thread has run (the first field of its schedstat).
    static func runNanoseconds(_ pid: Int32, _ task: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { UInt64($0) }
    }

    /// The process's soft RLIMIT_NOFILE, from /proc/PID/limits.
    static func openFileLimit(of pid: Int32) -> Int? {
        let limits = (try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)) ?? ""
        guard let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else { return nil }
        return line.dropFirst("Max open files".count).split(separator: " ").first.flatMap { Int($0) }
    }

    /// Sets another process's soft RLIMIT_NOFILE with util-linux's prlimit (prlimit(2) is
    /// not in Swift's Glibc module); the hard limit stays.
    static func setOpenFileLimit(of pid: Int32, to soft: Int) -> Bool {
        guard let outcome = try? CLIRunner(executable: "/usr/bin/prlimit").run(["--pid", "\(pid)", "--nofile=\(soft):"]) else { return false }
        return outcome.status == 0 && openFileLimit(of: pid) == soft
    }

    /// The number the process's next descriptor would get: with RLIMIT_NOFILE at it, no new one fits.
    static func lowestFreeDescriptor(of pid: Int32) -> Int {
        let open = Set(((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap { Int($0) })
        var number = 0
        while open.contains(number) { number += 1 }
        return number
    }

    static func send(_ line: String, to socket: Int32) -> Bool {
        let bytes = Array((line + "\n").utf8)
        return bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    static func readLine(from socket: Int32, seconds: Double) -> String? {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var wait = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&wait, 1, 100) >= 0 else { return nil }
            if wait.revents == 0 { continue }
            let count = recv(socket, &chunk, chunk.count, 0)
            guard count > 0 else { break }
            received += chunk[..<count]
            if let newline = received.firstIndex(of: 10) { return String(decoding: received[..<newline], as: UTF8.self) }
        }
        return nil
    }
}
