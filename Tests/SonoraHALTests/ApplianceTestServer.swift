import Logging
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A session handler that records what the server tells it and refuses capture on demand.
final class RecordingSessionHandler: ApplianceSessionHandler, @unchecked Sendable {
    let detached = Mutex<[ApplianceClientInfo]>([])
    let refusesCapture: Bool

    init(refusesCapture: Bool = false) { self.refusesCapture = refusesCapture }

    func handle(op: String, fields: [String: ApplianceValue], from client: ApplianceClientInfo) throws(AudioError) -> [String: ApplianceValue] {
        ["handled": .string(op), "pid": .int(Int(client.pid))]
    }

    func clientDetached(_ client: ApplianceClientInfo) { detached.withLock { $0.append(client) } }

    func mayOpenStream(direction: ApplianceStreamDirection, client: ApplianceClientInfo) -> String? {
        direction == .capture && refusesCapture ? "recording is not allowed for \(client.name)" : nil
    }
}

/// The appliance's I/O side for tests: once per period of a timer-paced null device it
/// delivers a known capture signal (`captureValue(t)`) to the capture streams, mixes the
/// playback streams, and keeps what the mix produced on channels 0 and 1.
final class ApplianceTestDriver: IOCycleTarget, @unchecked Sendable {
    let table: ApplianceStreamTable
    let capacity: Int
    let mixed: [UnsafeMutableBufferPointer<Float>]
    let capture: OwnedAudioBufferList
    let cycles = Atomic<Int>(0)
    /// The routing groups this driver mixes (as one `clients` node for those roles would).
    let playbackGroups = Atomic<UInt64>(.max)
    private(set) var framesMixed = 0
    /// Count heap calls on the I/O thread from cycle `countFrom` to `countUntil`.
    var countFrom = -1
    var countUntil = -1
    let allocations = Atomic<Int>(-1)

    /// Capture frame t (from the server's start) is (t + 1) / 2^24: exact in Float, and it
    /// says which frame it is.
    static func captureValue(_ frame: Int) -> Float { Float(frame + 1) / Float(1 << 24) }

    init(table: ApplianceStreamTable, period: Int, capacity: Int) throws {
        self.table = table
        self.capacity = capacity
        mixed = (0..<2).map { _ in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: capacity)
            buffer.initialize(repeating: .nan)
            return buffer
        }
        capture = try OwnedAudioBufferList(channelCount: 1, frameCapacity: period)
    }

    deinit { for buffer in mixed { buffer.deallocate() } }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let index = cycles.load(ordering: .relaxed)
        if index == countFrom { AllocationCounter.begin() }
        if index == countUntil { allocations.store(AllocationCounter.end(), ordering: .relaxed) }
        let frames = cycle.pointee.frameCount
        let input = capture.list(frameCount: frames)
        let samples = input.samples(0)
        for frame in 0..<frames { samples[frame] = Self.captureValue(framesMixed + frame) }
        table.deliverCapture(input, frameCount: frames)
        let output = cycle.pointee.output
        table.mixPlayback(into: output, frameCount: frames, groups: playbackGroups.load(ordering: .relaxed))
        table.finishCycle(frameCount: frames)
        if framesMixed + frames <= capacity {
            for channel in 0..<min(2, output.channelCount) {
                (mixed[channel].baseAddress! + framesMixed).update(from: output.samples(channel), count: frames)
            }
        }
        framesMixed += frames
        cycles.store(index + 1, ordering: .releasing)
        return 0
    }

    func wait(cycles count: Int, seconds: Double = 20) -> Bool {
        let deadline = HostTime.now.seconds + seconds
        while cycles.load(ordering: .acquiring) < count {
            if HostTime.now.seconds > deadline { return false }
            usleep(2000)
        }
        return true
    }

    /// Mixed samples of `channel` so far (safe to read: frames behind the cycle count).
    func mixedSamples(_ channel: Int = 0) -> [Float] {
        let done = min(cycles.load(ordering: .acquiring) * capture.frameCapacity, capacity)
        return Array(mixed[channel][..<done])
    }
}

/// A server on a fresh socket with its I/O driven by a null device.
final class ApplianceTestRig {
    static let period = 1024
    static let sampleRate = 48000
    let folder: TemporaryFolder
    let path: String
    let handler: RecordingSessionHandler
    let limits: ApplianceServerLimits
    private(set) var server: ApplianceServer
    private(set) var driver: ApplianceTestDriver
    private(set) var device: TimerDevice

    static var format: ApplianceServerFormat {
        ApplianceServerFormat(sampleRate: sampleRate, periodFrames: period, periods: 2, outputChannels: 2, inputChannels: 1, device: "null")
    }

    init(limits: ApplianceServerLimits = ApplianceServerLimits(), handler: RecordingSessionHandler = RecordingSessionHandler(), capacity: Int = 1 << 20) throws {
        folder = try TemporaryFolder(prefix: "sonora-appliance", in: "/tmp")
        path = folder.path("server.sock")
        self.handler = handler
        self.limits = limits
        (server, driver, device) = try Self.serve(path: path, limits: limits, handler: handler, capacity: capacity)
    }

    private static func serve(path: String, limits: ApplianceServerLimits, handler: RecordingSessionHandler, capacity: Int) throws -> (ApplianceServer, ApplianceTestDriver, TimerDevice) {
        let server = try ApplianceServer(path: path, limits: limits, format: format, handler: handler, logger: Logger(label: "test.appliance"))
        server.start()
        let driver = try ApplianceTestDriver(table: server.streams, period: period, capacity: capacity)
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(sampleRate: sampleRate, periodFrames: period, periods: 2, inputChannels: 0, outputChannels: 2, realtimePriority: 60),
            mode: .null)
        try device.start(IOProcedure(driver))
        return (server, driver, device)
    }

    /// Stops the server and its I/O (clients see it vanish).
    func stop() {
        device.stop()
        server.stop()
    }

    /// A new server (and driver) on the same path.
    func restart() throws {
        stop()
        (server, driver, device) = try Self.serve(path: path, limits: limits, handler: handler, capacity: driver.capacity)
    }

    deinit { stop() }

    /// A client device of this server.
    func client(inputs: Int = 0, outputs: Int = 1, name: String = "test-client") throws -> ApplianceDevice {
        try ApplianceDevice(
            socketPath: path,
            configuration: AudioDeviceConfiguration(sampleRate: Self.sampleRate, periodFrames: Self.period, periods: 2, inputChannels: inputs, outputChannels: outputs, realtimePriority: 50),
            clientName: name)
    }

    /// Waits until `condition` holds (polling), up to `seconds`.
    static func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = HostTime.now.seconds + seconds
        while !condition() {
            if HostTime.now.seconds > deadline { return false }
            usleep(5000)
        }
        return true
    }
}

/// A raw protocol client: lines in, lines out, on a blocking socket with a receive timeout.
final class RawApplianceClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(path: String) throws {
        guard let fd = UnixSocket.connect(path) else { throw AudioError(.hardwareNotRunning, "cannot connect to \(path)") }
        self.fd = fd
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    /// The next line, or nil at end of stream (or after the timeout).
    func line() -> String? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let got = recv(fd, &chunk, chunk.count, 0)
            if got <= 0 { return nil }
            buffer += chunk[..<got]
        }
    }

    /// Sends one request line and returns the reply line.
    func ask(_ text: String) -> String? {
        send(text + "\n")
        return line()
    }
}
