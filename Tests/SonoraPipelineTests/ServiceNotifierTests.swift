import Logging
import Testing
@testable import SonoraPipeline

#if canImport(Glibc)
import Glibc
#endif

@Suite("systemd notify protocol: addresses, watchdog rule, journal lines")
struct ServiceNotifierTests {
    private var pathOffset: Int { MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! }

    @Test("a path is NUL-terminated; an abstract @name starts with NUL and its length is exactly the name's")
    func addresses() throws {
        let (path, pathLength) = try #require(ServiceNotifier.address(of: "/run/systemd/notify"))
        #expect(Int(pathLength) == pathOffset + "/run/systemd/notify".utf8.count + 1)
        #expect(withUnsafeBytes(of: path.sun_path) { Array($0.prefix(5)) } == Array("/run/".utf8))
        let (abstract, abstractLength) = try #require(ServiceNotifier.address(of: "@sonora/notify"))
        #expect(Int(abstractLength) == pathOffset + "@sonora/notify".utf8.count)
        #expect(withUnsafeBytes(of: abstract.sun_path) { Array($0.prefix(7)) } == [0] + Array("sonora".utf8))
    }

    @Test("relative, empty, bare-@ and over-long names disable notification instead of sending somewhere else")
    func refusedNames() {
        for name in ["", "@", "relative/notify", String(repeating: "/x", count: 80)] {
            #expect(ServiceNotifier.address(of: name) == nil, "\(name)")
            #expect(!ServiceNotifier(environment: ["NOTIFY_SOCKET": name]).isEnabled)
        }
        #expect(!ServiceNotifier(environment: [:]).isEnabled)
        #expect(!ServiceNotifier(environment: [:]).send("READY=1"))
    }

    @Test("STATUS= stays one assignment even when the text has newlines")
    func statusLine() {
        #expect(ServiceNotifier.statusLine("a\nb\r\nc") == "STATUS=a b c")
    }

    @Test("the watchdog pings every half timeout, only when the cycle count moved (or the device is being re-opened)")
    func watchdogRule() throws {
        #expect(ServiceWatchdog(environment: [:], processID: 1, now: 0) == nil)
        #expect(ServiceWatchdog(environment: ["WATCHDOG_USEC": "0"], processID: 1, now: 0) == nil)
        #expect(ServiceWatchdog(environment: ["WATCHDOG_USEC": "x"], processID: 1, now: 0) == nil)
        #expect(ServiceWatchdog(environment: ["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "2"], processID: 1, now: 0) == nil)
        var watchdog = try #require(ServiceWatchdog(environment: ["WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "7"], processID: 7, now: 0))
        #expect(watchdog.interval == 0.5)
        // (time, cycles, interrupted) → ping?, in order: the rule keeps state between calls.
        let steps: [(Double, Int, Bool, Bool, String)] = [
            (0.4, 10, false, false, "not due yet"),
            (0.5, 10, false, true, "due, and the count moved"),
            (0.9, 20, false, false, "due again only at 1.0"),
            (1.2, 10, false, false, "stuck: the count did not move since the last ping"),
            (5.0, 10, false, false, "still stuck"),
            (5.1, 10, true, true, "a device being re-opened is recovery, not a hang"),
            (5.7, 3, false, true, "a switched device counts from 0 again"),
        ]
        for (now, cycles, interrupted, expected, why) in steps {
            let pinged = watchdog.shouldPing(now: now, cycles: cycles, interrupted: interrupted)
            #expect(pinged == expected, "at \(now) s: \(why)")
        }
    }

    @Test("journal lines: syslog priority prefixes per level, each line of a message prefixed, metadata after, escapes dropped")
    func journalFormat() {
        let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
        #expect(levels.map(JournalLogHandler.priority(of:)) == [7, 7, 6, 5, 4, 3, 2])
        #expect(JournalLogHandler.format(level: .error, message: "recorder: disk full", metadata: [:]) == "<3>recorder: disk full\n")
        #expect(JournalLogHandler.format(level: .warning, message: "a\nb", metadata: ["node": "rec"]) == "<4>a\n<4>b node=rec\n")
        #expect(JournalLogHandler.format(level: .info, message: "\u{1B}[31mred\u{1B}[0m", metadata: [:]) == "<6>[31mred[0m\n")
    }

    @Test("a notifier sends one datagram per message to the socket NOTIFY_SOCKET names")
    func sendsDatagrams() throws {
        let name = "@sonora-notifier-unit-\(getpid())"
        let receiver = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(receiver) }
        var (address, length) = try #require(ServiceNotifier.address(of: name))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(receiver, $0, length) } }
        try #require(bound == 0)
        let notifier = ServiceNotifier(environment: ["NOTIFY_SOCKET": name])
        #expect(notifier.send("RELOADING=1", "MONOTONIC_USEC=5"))
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(receiver, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(count > 0 && String(decoding: buffer[0..<max(0, count)], as: UTF8.self) == "RELOADING=1\nMONOTONIC_USEC=5")
    }
}
