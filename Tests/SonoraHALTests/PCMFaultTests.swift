#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import Synchronization
import Testing

/// Every `snd_pcm_*` call that can fail, made to fail in turn through `PCMFaults`, on
/// Sonora's loopback plugin: opening and negotiating fail with an error naming the call
/// and the PCM (nothing leaked); failures while running are counted and recovered, or
/// reported as an interruption that ends.
@Suite("Every ALSA call failing in turn", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct PCMFaultTests {
    static let loopNumber = Atomic<Int>(0)

    static func loopName() -> String { "sonoraloop:fault\(loopNumber.add(1, ordering: .relaxed).newValue)" }

    /// Open file descriptors (number → what it points at) and the thread count of this process.
    static func resources() -> (descriptors: Set<String>, threads: Int) {
        var descriptors = Set<String>()
        if let directory = opendir("/proc/self/fd") {
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
                guard name != ".", name != ".." else { continue }
                var target = [CChar](repeating: 0, count: 512)
                let length = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
                descriptors.insert("\(name) → \(length > 0 ? String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?")")
            }
        }
        var threads = 0
        if let directory = opendir("/proc/self/task") {
            defer { closedir(directory) }
            while readdir(directory) != nil { threads += 1 }
        }
        return (descriptors, threads)
    }

    /// Descriptors open now that were not before: what a failed open or close leaked. (A
    /// count would also move when an earlier suite's straggler closes its pipes meanwhile,
    /// as CI saw: 49 after against 51 before.)
    static func leaked(since before: Set<String>) -> Set<String> {
        resources().descriptors.subtracting(before)
    }

    static let openingCalls: [PCMFaults.Operation] = [.open, .hardwareSpace, .hardwareParameters, .softwareSpace, .softwareParameters]

    @Test("a failure while opening or negotiating is an error naming the call and the PCM; nothing leaks", arguments: openingCalls, [0, 1])
    func openingFailure(operation: PCMFaults.Operation, afterCalls: Int) throws {
        // Warm up: the first open loads the plugin and reads ALSA's configuration.
        _ = try ALSADevice(capture: Self.loopName(), playback: Self.loopName(), configuration: AudioDeviceConfiguration())
        let before = Self.resources()
        let name = Self.loopName()
        let faults = PCMFaults()
        faults.inject(operation, errno: EIO, afterCalls: afterCalls)
        #expect {
            _ = try ALSADevice(capture: name, playback: name, configuration: AudioDeviceConfiguration(), faults: faults)
        } throws: { error in
            guard let error = error as? AudioError else { return false }
            let direction = afterCalls == 0 ? "capture" : "playback"
            return error.message.contains("\(operation)") && error.message.contains("\(direction) PCM '\(name)'")
                && error.message.contains(String(cString: strerror(EIO)))
        }
        #expect(faults.injectedFailures(operation) == 1)
        #expect(Self.leaked(since: before.descriptors).isEmpty)
        #expect(Self.resources().threads == before.threads)
    }

    /// What a failure while running must lead to.
    enum Outcome: Sendable { case xrun, interruption, resumed, harmless }

    struct RunningCase: Sendable, CustomTestStringConvertible {
        var operation: PCMFaults.Operation
        var errno: Int32
        var afterCalls: Int
        var access: DeviceAccess?
        var outcome: Outcome
        var testDescription: String { "\(operation) → \(outcome)" }
    }

    static let runningCases: [RunningCase] = [
        RunningCase(operation: .availUpdate, errno: EIO, afterCalls: 40, outcome: .interruption),
        RunningCase(operation: .availUpdate, errno: EPIPE, afterCalls: 40, outcome: .xrun),
        RunningCase(operation: .pollDescriptors, errno: EIO, afterCalls: 20, outcome: .interruption),
        RunningCase(operation: .pollRevents, errno: EIO, afterCalls: 20, outcome: .harmless),
        RunningCase(operation: .mmapBegin, errno: EPIPE, afterCalls: 40, outcome: .xrun),
        RunningCase(operation: .mmapBegin, errno: ENODEV, afterCalls: 40, outcome: .interruption),
        RunningCase(operation: .mmapCommit, errno: EPIPE, afterCalls: 40, outcome: .xrun),
        RunningCase(operation: .read, errno: EPIPE, afterCalls: 20, access: .readWriteInterleaved, outcome: .xrun),
        RunningCase(operation: .read, errno: EIO, afterCalls: 20, access: .readWriteNonInterleaved, outcome: .interruption),
        RunningCase(operation: .write, errno: EPIPE, afterCalls: 20, access: .readWriteInterleaved, outcome: .xrun),
        RunningCase(operation: .write, errno: EBADFD, afterCalls: 20, access: .readWriteNonInterleaved, outcome: .interruption),
        RunningCase(operation: .prepare, errno: EIO, afterCalls: 0, outcome: .interruption),
        RunningCase(operation: .start, errno: EIO, afterCalls: 0, outcome: .interruption),
        RunningCase(operation: .drop, errno: EIO, afterCalls: 0, outcome: .harmless),
        RunningCase(operation: .delay, errno: EIO, afterCalls: 10, outcome: .harmless),
    ]

    @Test("a failure while running is counted and recovered, or an interruption that ends", arguments: runningCases)
    func runningFailure(_ test: RunningCase) throws {
        let name = Self.loopName()
        let faults = PCMFaults()
        let device = try ALSADevice(
            capture: name, playback: name,
            configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 3, access: test.access, realtimePriority: 60),
            faults: faults)
        device.samplesReportedDelay = test.operation == .delay
        faults.inject(test.operation, errno: test.errno, afterCalls: test.afterCalls)
        let probe = Probe(capacity: 256)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 100))
        device.stop()
        #expect(faults.injectedFailures(test.operation) == 1)
        let statistics = device.statistics
        let events = device.takeEvents()
        switch test.outcome {
        case .xrun:
            #expect(statistics.xruns >= 1)
            #expect(statistics.interruptions == 0)
        case .interruption:
            #expect(statistics.interruptions == 1)
            #expect(events.contains { if case .interruptionBegan(_, let code) = $0 { code == test.errno } else { false } })
            #expect(events.contains { if case .interruptionEnded = $0 { true } else { false } })
        case .resumed:
            #expect(events.contains { if case .resumed = $0 { true } else { false } })
        case .harmless:
            #expect(statistics.interruptions == 0)
        }
    }

    @Test("a resume that fails after a suspend is recovered by preparing again")
    func resumeFailure() throws {
        let name = Self.loopName()
        let faults = PCMFaults()
        let device = try ALSADevice(capture: name, playback: name, configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 3, realtimePriority: 60), faults: faults)
        faults.inject(.availUpdate, errno: ESTRPIPE, afterCalls: 30)
        faults.inject(.resume, errno: EIO)
        let probe = Probe(capacity: 256)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 80))
        device.stop()
        #expect(faults.injectedFailures(.resume) == 1)
        #expect(device.takeEvents().contains { if case .resumed = $0 { true } else { false } })
        #expect(device.statistics.interruptions == 0)
    }

    @Test("a link that fails leaves the streams starting back to back, still exact")
    func linkFailure() throws {
        let name = Self.loopName()
        let faults = PCMFaults()
        faults.inject(.link, errno: EINVAL)
        let device = try ALSADevice(capture: name, playback: name, configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2, realtimePriority: 60), faults: faults)
        #expect(!device.isLinked)
        #expect(faults.injectedFailures(.link) == 1)
        let probe = Probe(capacity: 256)
        try device.start(IOProcedure(probe))
        #expect(probe.wait(cycles: 40))
        device.stop()
        #expect(device.statistics.interruptions == 0)
    }

    @Test("a delay query that fails reports no delay")
    func delayFailure() throws {
        let name = Self.loopName()
        let faults = PCMFaults()
        let device = try ALSADevice(capture: name, playback: name, configuration: AudioDeviceConfiguration(), faults: faults)
        #expect(device.reportedDelay.capture != nil)
        faults.inject(.delay, errno: EIO, times: 2)
        let delay = device.reportedDelay
        #expect(delay.capture == nil && delay.playback == nil)
    }

    @Test("a close that fails is logged, and the descriptor is still released")
    func closeFailure() throws {
        _ = try ALSADevice(capture: Self.loopName(), playback: Self.loopName(), configuration: AudioDeviceConfiguration())
        let before = Self.resources()
        let faults = PCMFaults()
        let name = Self.loopName()
        var device: ALSADevice? = try ALSADevice(capture: name, playback: name, configuration: AudioDeviceConfiguration(), faults: faults)
        faults.inject(.close, errno: EIO, times: 2)
        #expect(device?.isRunning == false)
        device = nil
        #expect(faults.injectedFailures(.close) == 2)
        #expect(Self.leaked(since: before.descriptors).isEmpty)
    }

    @Test("every operation is covered by a test here")
    func everyOperationCovered() {
        let covered = Set(Self.openingCalls + Self.runningCases.map(\.operation) + [.resume, .link, .delay, .close])
        #expect(covered == Set(PCMFaults.Operation.allCases))
    }
}

@Suite("Probing a PCM whose calls fail")
struct PCMProbeFaultTests {
    @Test("a probe whose open or configuration space fails says which call on which PCM", arguments: [PCMFaults.Operation.open, .hardwareSpace])
    func probeFailure(operation: PCMFaults.Operation) {
        let faults = PCMFaults()
        faults.inject(operation, errno: ENODEV)
        #expect {
            _ = try PCMDirectory.probe("null", capture: false, faults: faults)
        } throws: { error in
            let message = (error as? AudioError)?.message ?? ""
            return message.contains("playback PCM 'null'") && message.contains("\(operation)")
        }
        #expect(throws: Never.self) { _ = try PCMDirectory.probe("null", capture: false, faults: faults) }
    }
}
