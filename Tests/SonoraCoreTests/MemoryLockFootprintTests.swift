#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import Synchronization
import Testing

/// Locking memory locks what the process touches, not every page it maps: an appliance's
/// resident size is what it uses (issue 21's footprint), and realtime stacks are resident
/// before the first cycle. Run alone (the Makefile's ALONE_SUITES): another suite locking
/// memory meanwhile would lock the very pages these tests drop and count.
@Suite(.serialized) struct MemoryLockFootprintTests {
    /// Kilobytes from a `/proc/self/status` line ("VmRSS:  1234 kB").
    private static func statusKilobytes(_ key: String) -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard text.hasPrefix(key + ":") else { continue }
            return Int(text.dropFirst(key.count + 1).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
        }
        return -1
    }

    /// One mapping of `/proc/self/smaps`: its permissions, whether a file backs it, and its
    /// Size and Rss (kB).
    private struct Mapping {
        var permissions: Substring
        var fileBacked: Bool
        var size = 0
        var resident = 0
    }

    /// The process's mappings now.
    private static func mappings() -> [Mapping] {
        guard let file = fopen("/proc/self/smaps", "r") else { return [] }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4096)
        var found: [Mapping] = []
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let fields = text.split(whereSeparator: \.isWhitespace)
            if let first = fields.first, first.contains("-"), fields.count >= 5, first.first?.isHexDigit == true {
                found.append(Mapping(permissions: fields[1], fileBacked: fields.count >= 6 && fields[5].hasPrefix("/")))
            } else if !found.isEmpty, fields.count >= 2, fields[0] == "Size:" || fields[0] == "Rss:" {
                let kilobytes = Int(fields[1]) ?? 0
                if fields[0] == "Size:" { found[found.count - 1].size = kilobytes } else { found[found.count - 1].resident = kilobytes }
            }
        }
        return found
    }

    /// Kilobytes of file-backed mappings not resident now (what locking everything would fault in):
    /// readable ones (a library's PROT_NONE gaps are never locked).
    private static func mappedFileKilobytesNotResident() -> Int {
        mappings().filter { $0.fileBacked && $0.permissions.hasPrefix("r") }.reduce(0) { $0 + max(0, $1.size - $1.resident) }
    }

    /// Kilobytes resident of file-backed executable mappings (the binary's and libraries' code).
    private static func residentCodeKilobytes() -> Int {
        mappings().filter { $0.fileBacked && $0.permissions == "r-xp" }.reduce(0) { $0 + $1.resident }
    }

    /// What start-up ran (and the kernel mapped around it) is not locked: the code mapped
    /// before locking is dropped first and only what runs afterwards faults back in.
    @Test(.enabled(if: getuid() == 0, "mlockall needs root or a large RLIMIT_MEMLOCK"))
    func lockingMemoryLeavesTheCodeRunBeforeItOut() throws {
        // A device started earlier in this process may have left memory locked, and locked
        // pages cannot be dropped (madvise refuses them): as a fresh process, unlocked.
        RealtimeThread.unlockMemory()
        let before = Self.residentCodeKilobytes()
        try #require(before > 8 * 1024, "only \(before) kB of code resident: nothing to prove")
        let warning = RealtimeThread.lockMemory()
        let after = Self.residentCodeKilobytes()
        RealtimeThread.unlockMemory()
        #expect(warning == nil)
        // What faults back in meanwhile: this test's smaps reading and the suites beside it.
        #expect(after < before / 2, "resident code \(before) kB before lockMemory(), \(after) kB after")
        print("MemoryLockFootprintTests: resident code \(before) kB before lockMemory(), \(after) kB after")
    }

    @Test(.enabled(if: getuid() == 0, "mlockall needs root or a large RLIMIT_MEMLOCK"))
    func lockingMemoryFaultsInNothingUntouched() throws {
        let untouched = Self.mappedFileKilobytesNotResident()
        // The test binary maps FFmpeg, ICU and the Swift runtime: far more than it touches.
        try #require(untouched > 32 * 1024, "only \(untouched) kB mapped and not resident: nothing to prove")
        let before = Self.statusKilobytes("VmRSS")
        let warning = RealtimeThread.lockMemory()
        let after = Self.statusKilobytes("VmRSS")
        RealtimeThread.unlockMemory()
        #expect(warning == nil)
        // Locking everything would add `untouched` (hundreds of MB); on fault it adds what
        // the suites running beside this one happen to touch meanwhile.
        #expect(after - before < min(16 * 1024, untouched / 2), "resident \(before) kB → \(after) kB after lockMemory(); \(untouched) kB were mapped and untouched")
    }

    @Test func aRealtimeThreadsStackIsResidentBeforeItsBodyRuns() throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let probedPages = 24  // 96 kB below the body's frame, within the half that is prefaulted
        let resident = Atomic<Int>(-1)
        // An unusual stack size, so glibc's cache of exited threads' stacks does not hand this
        // thread a stack another test has already touched.
        let options = RealtimeThreadOptions(name: "stack-probe", priority: nil, stackSize: 344 * 1024)
        let thread = try RealtimeThread(options) {
            var marker: UInt8 = 0
            withUnsafeMutablePointer(to: &marker) { pointer in
                let top = Int(bitPattern: pointer) & ~(pageSize - 1)
                let start = UnsafeMutableRawPointer(bitPattern: top - probedPages * pageSize)!
                var vector = [UInt8](repeating: 0, count: probedPages)
                guard mincore(start, probedPages * pageSize, &vector) == 0 else { return }
                resident.store(vector.count { $0 & 1 == 1 }, ordering: .relaxed)
            }
        }
        thread.join()
        #expect(resident.load(ordering: .relaxed) == probedPages)
    }
}
