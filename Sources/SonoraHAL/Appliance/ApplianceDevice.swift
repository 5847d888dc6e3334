import CSonoraSystem
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The appliance client driver (`sonora`, `sonora:PATH`): plays and records through a
/// running Sonora appliance instead of a sound card. `start` opens one stream per
/// direction the configuration has, prefills one period of silence in the playback
/// ring (so the appliance hears this device one period after it renders), and runs the
/// I/O thread: it waits on the stream's eventfd, which the appliance writes once per
/// cycle, then reads capture, calls the procedure and writes playback.
///
/// The format is the appliance's rate and period (a request for others is noted in
/// `format.notes`). When the appliance goes away or removes a stream, the I/O thread
/// posts `interruptionBegan` and idles; a control thread reconnects with back-off (as
/// `ALSADevice` re-opens a vanished PCM) and the I/O thread posts `interruptionEnded`.
public final class ApplianceDevice: AudioDevice, @unchecked Sendable {
    public let driver = "sonora"
    /// The socket asked for (nil: `ApplianceSocket.clientPath()` at each connect).
    public let socketPath: String?
    public let configuration: AudioDeviceConfiguration
    public private(set) var format: DeviceFormat
    /// The name this device gives the appliance in `hello`.
    public let clientName: String

    private let runner = DeviceRunner()
    private var monitor: DeviceMonitor { runner.monitor }
    private let engine: IOEngine
    /// The appliance's period (frames) and channel counts, fixed at open.
    private let period: Int
    private let outputChannels: Int
    private let inputChannels: Int

    // Control side (the caller's thread or the control thread; never the I/O thread).
    private var connection: ApplianceConnection?
    private var playbackStream: ApplianceClientStream?
    private var captureStream: ApplianceClientStream?

    // What the I/O thread uses: raw views, swapped only while it idles.
    private var playbackRing: ApplianceRing?
    private var captureRing: ApplianceRing?
    private var wakeDescriptor: Int32 = -1
    private var otherWakeDescriptor: Int32 = -1

    /// Set by the connection's reader thread when the appliance goes away or removes a
    /// stream; read by the I/O thread (through a raw pointer: no reference counting there).
    private let lost: LossFlag
    private let recovery = Atomic<Int>(Recovery.none)
    private let recoveryAttempts = Atomic<Int32>(0)
    private enum Recovery {
        static let none = 0
        static let lost = 1
        static let restored = 2
    }

    /// Connects to the appliance at `socketPath` (default: `SONORA_SERVER`, else
    /// `ApplianceSocket.defaultPath`) to learn its format; streams open at `start`.
    public init(socketPath: String? = nil, configuration: AudioDeviceConfiguration, clientName: String? = nil) throws(AudioError) {
        try configuration.validate()
        self.socketPath = socketPath
        self.configuration = configuration
        self.clientName = clientName ?? ApplianceSocket.programName
        let connection = try ApplianceConnection.connect(path: socketPath, name: self.clientName)
        let server = connection.serverFormat
        period = server.periodFrames
        outputChannels = configuration.outputChannels
        inputChannels = configuration.inputChannels
        var notes: [String] = []
        if configuration.sampleRate != server.sampleRate {
            notes.append("the appliance runs at \(server.sampleRate) Hz; \(configuration.sampleRate) Hz was asked for")
        }
        if configuration.periodFrames != server.periodFrames {
            notes.append("the appliance's period is \(server.periodFrames) frames; \(configuration.periodFrames) was asked for")
        }
        let label = "sonora:\(connection.path)"
        let capture = inputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: inputChannels, sampleFormat: "FLOAT", access: "shared memory", periodFrames: period, periods: 2, bufferFrames: 2 * period)
            : nil
        let playback = outputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: outputChannels, sampleFormat: "FLOAT", access: "shared memory", periodFrames: period, periods: 2, bufferFrames: 2 * period)
            : nil
        format = DeviceFormat(sampleRate: server.sampleRate, periodFrames: period, periods: 2, capture: capture, playback: playback, notes: notes)
        engine = try IOEngine(
            periodFrames: period, sampleRate: server.sampleRate, inputChannels: inputChannels, outputChannels: outputChannels,
            outputOffsetFrames: period, monitor: runner.monitor)
        lost = LossFlag.make()
        self.connection = connection
        watch(connection)
    }

    deinit {
        stop()
        connection?.close()
        lost.free()
    }

    public var isRunning: Bool { runner.isRunning }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }
    public var wakeUpLateness: LatenessDistribution { monitor.lateness.distribution() }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        if connection == nil || !connection!.isConnected || lost.isSet {
            try reconnect()
        } else {
            try openStreams()
        }
        recovery.store(Recovery.none, ordering: .releasing)
        engine.procedure = procedure
        try runner.start(
            name: "sonora-client-io", configuration: configuration,
            ioLoop: { [unowned self] in self.ioLoop() },
            control: { [unowned self] in self.controlLoop() })
    }

    /// Stops the I/O thread and closes the streams (the connection stays for a restart).
    public func stop() {
        guard runner.stop() else { return }
        closeStreams()
    }

    /// Marks the device lost when the appliance goes away or removes one of its streams.
    private func watch(_ connection: ApplianceConnection) {
        let flag = lost
        connection.onEvent { event in
            switch event {
            case .disconnected, .streamRemoved: flag.set()
            default: break
            }
        }
    }

    // MARK: Control side

    private func openStreams() throws(AudioError) {
        closeStreams()
        guard let connection else { throw AudioError(.hardwareNotRunning, "not connected to an appliance") }
        do {
            if outputChannels > 0 { playbackStream = try ApplianceClientStream(connection: connection, direction: .playback, channels: outputChannels) }
            if inputChannels > 0 { captureStream = try ApplianceClientStream(connection: connection, direction: .capture, channels: inputChannels) }
        } catch {
            closeStreams()
            throw error
        }
        playbackRing = playbackStream?.ring
        captureRing = captureStream?.ring
        wakeDescriptor = playbackStream?.wakeDescriptor ?? captureStream!.wakeDescriptor
        otherWakeDescriptor = playbackStream != nil ? captureStream?.wakeDescriptor ?? -1 : -1
        // One period of silence: the appliance's next cycle reads it while this device
        // renders the period after.
        if let ring = playbackRing {
            let position = ring.writePosition.pointee.load(ordering: .relaxed)
            for channel in 0..<ring.channels { ring.samples(channel).update(repeating: 0, count: period) }
            ring.writePosition.pointee.store(position + period, ordering: .releasing)
        }
    }

    private func closeStreams() {
        playbackRing = nil
        captureRing = nil
        wakeDescriptor = -1
        otherWakeDescriptor = -1
        if let connection, connection.isConnected {
            for stream in [playbackStream, captureStream].compactMap({ $0 }) {
                _ = try? connection.request("close_stream", ["stream": .int(stream.id)])
            }
        }
        playbackStream = nil
        captureStream = nil
    }

    /// A new connection and streams; the format must not have changed.
    private func reconnect() throws(AudioError) {
        closeStreams()
        connection?.close()
        connection = nil
        lost.clear()
        let fresh = try ApplianceConnection.connect(path: socketPath, name: clientName)
        guard fresh.serverFormat.sampleRate == format.sampleRate, fresh.serverFormat.periodFrames == period else {
            fresh.close()
            throw AudioError(.deviceUnsupportedFormat, "the appliance now runs at \(fresh.serverFormat.sampleRate) Hz, period \(fresh.serverFormat.periodFrames); open the device again")
        }
        connection = fresh
        watch(fresh)
        try openStreams()
    }

    private func controlLoop() {
        while runner.waitForControlRequest() {
            guard recovery.load(ordering: .acquiring) == Recovery.lost else { continue }
            if reconnectWithBackOff() { recovery.store(Recovery.restored, ordering: .releasing) }
        }
    }

    /// Reconnects, waiting 50 ms, doubling to 2 s between attempts, until it works (true)
    /// or the device stops. The I/O thread idles meanwhile.
    private func reconnectWithBackOff() -> Bool {
        guard let attempts = runner.retryWithBackOff({ _ in (try? reconnect()) != nil }) else { return false }
        recoveryAttempts.store(attempts, ordering: .relaxed)
        return true
    }

    // MARK: The I/O thread

    private func ioLoop() {
        engine.restartClock(at: HostTime.now.seconds)
        let timeout = Int32(max(20.0, engine.periodSeconds * 4000))
        while runner.isRunning {
            if lost.isSet {
                interrupted()
                continue
            }
            var wait = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&wait, 1, timeout)
            guard runner.isRunning else { return }
            if ready <= 0 { continue }
            _ = sonora_eventfd_drain(wakeDescriptor)
            if otherWakeDescriptor >= 0 { _ = sonora_eventfd_drain(otherWakeDescriptor) }
            // Keep the playback ring one period ahead of the appliance (capture only:
            // take every whole period it delivered); at most a few periods per wake.
            var cycles = 0
            while cycles < 4 {
                let due = periodDue()
                if due < 0 {
                    lost.set()
                    break
                }
                if due == 0 { break }
                cycle()
                cycles += 1
            }
        }
    }

    /// 1 when a period is due, 0 when not, −1 when the appliance's position is impossible.
    @inline(__always)
    private func periodDue() -> Int {
        if let ring = playbackRing {
            let written = ring.writePosition.pointee.load(ordering: .relaxed)
            let read = ring.readPosition.pointee.load(ordering: .acquiring)
            guard read <= written, read >= written - ring.capacity else { return -1 }
            return written - read < period ? 1 : 0
        }
        if let ring = captureRing {
            let read = ring.readPosition.pointee.load(ordering: .relaxed)
            let written = ring.writePosition.pointee.load(ordering: .acquiring)
            guard written >= read, written <= read + ring.capacity else { return -1 }
            return written - read >= period ? 1 : 0
        }
        return 0
    }

    @inline(__always)
    private func cycle() {
        let wake = HostTime.now
        engine.periodBoundary(at: wake.seconds)
        if let ring = captureRing {
            var read = ring.readPosition.pointee.load(ordering: .relaxed)
            let written = ring.writePosition.pointee.load(ordering: .acquiring)
            if written >= read + period && written <= read + ring.capacity {
                // Duplex, woken late: the appliance went on without this client (it never
                // waits), so the periods it delivered meanwhile are queued here while their
                // playback went out as silence. Rendering the oldest would put every later
                // cycle that many periods behind for good (the round trip grows by the
                // stall); as a duplex card does after an xrun, the client goes on from the
                // newest period and counts the loss.
                if playbackRing != nil && written - read >= 2 * period {
                    read = written - period
                    monitor.add(monitor.captureXruns)
                }
                ring.read(into: engine.inputList, frames: period, at: read)
                ring.readPosition.pointee.store(read + period, ordering: .releasing)
            } else {
                engine.inputList.clear()
                monitor.add(monitor.captureXruns)
            }
        } else {
            engine.inputList.clear()
        }
        _ = engine.render()
        if let ring = playbackRing {
            let written = ring.writePosition.pointee.load(ordering: .relaxed)
            ring.write(from: engine.outputList, offset: 0, frames: period, at: written)
            ring.writePosition.pointee.store(written + period, ordering: .releasing)
        }
        engine.recordLoad(since: wake.nanoseconds)
    }

    /// Reports the loss, idles until the control thread reconnected (or the device stops).
    private func interrupted() {
        monitor.add(monitor.interruptions)
        monitor.post(.interruptionBegan(outputChannels > 0 ? .playback : .capture, errno: EPIPE))
        recovery.store(Recovery.lost, ordering: .releasing)
        runner.requestControl()
        while runner.isRunning {
            if recovery.load(ordering: .acquiring) == Recovery.restored {
                recovery.store(Recovery.none, ordering: .relaxed)
                monitor.post(.interruptionEnded(attempts: recoveryAttempts.load(ordering: .relaxed)))
                engine.restartClock(at: HostTime.now.seconds)
                return
            }
            usleep(5_000)
        }
    }
}

/// A flag the connection's reader thread sets and the I/O thread polls: a pointer to an
/// atomic, so neither the event handler nor the I/O thread touches a reference count. The
/// device frees it after closing its connection (whose reader is then joined).
struct LossFlag: @unchecked Sendable, BitwiseCopyable {
    private let value: UnsafeMutablePointer<Atomic<Bool>>

    static func make() -> LossFlag {
        let value = UnsafeMutablePointer<Atomic<Bool>>.allocate(capacity: 1)
        value.initialize(to: Atomic(false))
        return LossFlag(value: value)
    }

    private init(value: UnsafeMutablePointer<Atomic<Bool>>) { self.value = value }

    func free() {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    var isSet: Bool { value.pointee.load(ordering: .acquiring) }
    func set() { value.pointee.store(true, ordering: .releasing) }
    func clear() { value.pointee.store(false, ordering: .releasing) }
}
