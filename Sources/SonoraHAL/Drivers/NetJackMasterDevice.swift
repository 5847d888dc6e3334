import CJackLoader
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Sonora as a netjack2 master (`netjack:master…`): one appliance drives another (a
/// Sonora `netjack:slave`, or jackd's `-d net` backend, or `jack_net_slave`) in its own
/// clock. Sonora's timer thread paces the cycles as the null device does; each cycle
/// sends the last period rendered (`jack_net_master_send`), receives the slave's reply
/// (`jack_net_master_recv`), and renders the next period from it.
///
/// Opening waits for one slave to announce itself. When it stops answering, the cycle
/// goes on in the master's clock with silent input (an interruption) while the control
/// thread waits for a slave again; the cycles run meanwhile are the cycles lost.
public final class NetJackMasterDevice: AudioDevice, @unchecked Sendable {
    public let name: NetJackDeviceName
    public let configuration: AudioDeviceConfiguration
    public let format: DeviceFormat
    /// The network latency the slave asked for, in periods.
    public private(set) var networkLatencyCycles: Int
    public var driver: String { "netjack" }

    private let runner = DeviceRunner()
    private var monitor: DeviceMonitor { runner.monitor }
    private let engine: IOEngine
    /// The connection the I/O thread uses (raw pointer bits; 0 while interrupted).
    private let connection = Atomic<Int>(0)
    /// A new connection the control thread opened, for the I/O thread to take (bits; 0: none).
    private let reopened = Atomic<Int>(0)
    private let attempts = Atomic<Int>(0)
    /// Cycles run without a slave, and interruptions ended (shared with the watcher).
    private let counters = NetJackMasterCounters()
    /// float* per channel for libjacknet, pointing into the engine's buffers.
    private let sendPointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    private let receivePointers: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
    /// The period rendered last, sent at the start of the next cycle.
    private let pending: OwnedAudioBufferList
    private let watcher: NetJackWatcher
    private let logger: Logger

    /// Waits (up to `name.timeoutSeconds`) for a slave; its channel counts must match the
    /// configuration's (outputs go to the slave, inputs come from it).
    public init(name: NetJackDeviceName, configuration: AudioDeviceConfiguration, logger: Logger = Logger(label: "sonora.netjack")) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        self.logger = logger
        let (net, slave) = try Self.open(name, configuration)
        connection.store(Int(bitPattern: UnsafeMutableRawPointer(net)), ordering: .relaxed)
        networkLatencyCycles = Int(slave.latency)
        let period = configuration.periodFrames
        let label = "netjack:\(name.text)"
        // Output rendered in cycle k is sent in k+1, returned `latency` cycles later.
        let roundTrip = period * (networkLatencyCycles + 1)
        let capture = configuration.inputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.inputChannels, sampleFormat: "FLOAT", access: "network", periodFrames: period, periods: networkLatencyCycles + 1, bufferFrames: period)
            : nil
        let playback = configuration.outputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.outputChannels, sampleFormat: "FLOAT", access: "network", periodFrames: period, periods: networkLatencyCycles + 1, bufferFrames: roundTrip)
            : nil
        format = DeviceFormat(sampleRate: configuration.sampleRate, periodFrames: period, periods: networkLatencyCycles + 1, capture: capture, playback: playback)
        do {
            engine = try IOEngine(
                periodFrames: period, sampleRate: configuration.sampleRate, inputChannels: configuration.inputChannels,
                outputChannels: configuration.outputChannels, outputOffsetFrames: 0, monitor: runner.monitor)
            pending = try OwnedAudioBufferList(channelCount: max(1, configuration.outputChannels), frameCapacity: period)
        } catch {
            sonora_jack_net_master_close(net)
            throw error
        }
        pending.list.clear()
        sendPointers = .allocate(capacity: max(1, configuration.outputChannels))
        receivePointers = .allocate(capacity: max(1, configuration.inputChannels))
        for channel in 0..<configuration.outputChannels { sendPointers[channel] = pending.list.samples(channel) }
        let input = engine.inputList
        for channel in 0..<configuration.inputChannels { receivePointers[channel] = input.samples(channel) }
        let counters = counters
        watcher = NetJackWatcher(
            label: label, monitor: runner.monitor, logger: logger,
            lostCycles: { counters.lost.load(ordering: .relaxed) }, recoveries: { counters.recovered.load(ordering: .relaxed) })
    }

    deinit {
        stop()
        if let net = OpaquePointer(bitPattern: connection.load(ordering: .relaxed)) { sonora_jack_net_master_close(net) }
        if let net = OpaquePointer(bitPattern: reopened.load(ordering: .relaxed)) { sonora_jack_net_master_close(net) }
        sendPointers.deallocate()
        receivePointers.deallocate()
    }

    private static func open(_ name: NetJackDeviceName, _ configuration: AudioDeviceConfiguration) throws(AudioError) -> (OpaquePointer, jack_slave_t) {
        try JACKLibrary.loadNet(for: "netjack:\(name.text)")
        var request = jack_master_t()
        request.audio_input = Int32(configuration.outputChannels)
        request.audio_output = Int32(configuration.inputChannels)
        request.buffer_size = UInt32(configuration.periodFrames)
        request.sample_rate = UInt32(configuration.sampleRate)
        request.time_out = Int32(name.timeoutSeconds)
        request.partial_cycle = 0
        withUnsafeMutableBytes(of: &request.master_name) { bytes in
            for (index, byte) in name.clientName.utf8.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
        }
        var slave = jack_slave_t()
        guard let net = sonora_jack_net_master_open(name.address, Int32(name.port), &request, &slave) else {
            throw AudioError(
                .badDevice,
                "netjack:\(name.text): no netjack2 slave with \(configuration.outputChannels) input(s) and \(configuration.inputChannels) output(s) announced itself at \(name.address):\(name.port) within \(name.timeoutSeconds) s")
        }
        return (net, slave)
    }

    public var isRunning: Bool { runner.isRunning }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }
    public var wakeUpLateness: LatenessDistribution { monitor.lateness.distribution() }
    /// Cycles run without a slave while the network was interrupted.
    public var lostCycles: Int { counters.lost.load(ordering: .relaxed) }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        engine.procedure = procedure
        try watcher.start()
        do {
            try runner.start(
                name: "sonora-netjack", configuration: configuration,
                ioLoop: { [unowned self] in self.ioLoop() }, control: { [unowned self] in self.controlLoop() })
        } catch {
            watcher.stop()
            throw error
        }
    }

    public func stop() {
        runner.stop()
        watcher.stop()
    }

    private func ioLoop() {
        let periodNanoseconds = UInt64(engine.periodSeconds * 1e9)
        var next = HostTime.now.nanoseconds
        engine.restartClock(at: Double(next) / 1e9)
        let outputs = Int32(configuration.outputChannels)
        let inputs = Int32(configuration.inputChannels)
        let period = engine.periodFrames
        while runner.isRunning {
            next &+= periodNanoseconds
            var deadline = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
            let wake = HostTime.now
            engine.periodBoundary(at: wake.seconds)
            var net = OpaquePointer(bitPattern: connection.load(ordering: .acquiring))
            if net == nil, let fresh = OpaquePointer(bitPattern: reopened.exchange(0, ordering: .acquiringAndReleasing)) {
                connection.store(Int(bitPattern: UnsafeMutableRawPointer(fresh)), ordering: .releasing)
                net = fresh
                counters.recovered.wrappingAdd(1, ordering: .relaxed)
                monitor.post(.interruptionEnded(attempts: Int32(truncatingIfNeeded: attempts.exchange(0, ordering: .relaxed))))
            }
            var received = false
            if let net {
                if sonora_jack_net_master_send(net, outputs, sendPointers, 0, nil) >= 0
                    && sonora_jack_net_master_recv(net, inputs, receivePointers, 0, nil) >= 0 {
                    received = true
                } else {
                    // The slave stopped answering: the control thread closes this and waits for one again.
                    connection.store(0, ordering: .releasing)
                    monitor.add(monitor.interruptions)
                    monitor.post(.interruptionBegan(.capture, errno: ETIMEDOUT))
                    reopened.store(0, ordering: .relaxed)
                    closing.store(Int(bitPattern: UnsafeMutableRawPointer(net)), ordering: .releasing)
                    runner.requestControl()
                }
            }
            if !received {
                engine.inputList.clear()
                if net == nil { counters.lost.wrappingAdd(1, ordering: .relaxed) }
            }
            _ = engine.render()
            let output = engine.outputList
            for channel in 0..<configuration.outputChannels { pending.list.samples(channel).update(from: output.samples(channel), count: period) }
            engine.recordLoad(since: wake.nanoseconds)
            // Fell more than a buffer behind (a slow network call): re-anchor.
            let now = HostTime.now.nanoseconds
            if now > next &+ periodNanoseconds &* UInt64(configuration.periods) {
                monitor.add(monitor.playbackXruns)
                monitor.xrunNanoseconds.wrappingAdd(now &- next, ordering: .relaxed)
                monitor.post(.xrun(.playback, nanoseconds: now &- next, sampleTime: engine.sampleTime))
                next = now
                engine.restartClock(at: Double(now) / 1e9)
            }
        }
    }

    /// The connection the I/O thread gave up, for the control thread to close.
    private let closing = Atomic<Int>(0)

    private func controlLoop() {
        while runner.waitForControlRequest() {
            if let old = OpaquePointer(bitPattern: closing.exchange(0, ordering: .acquiringAndReleasing)) { sonora_jack_net_master_close(old) }
            while runner.isRunning {
                attempts.wrappingAdd(1, ordering: .relaxed)
                guard let (net, _) = try? Self.open(name, configuration) else { continue }
                reopened.store(Int(bitPattern: UnsafeMutableRawPointer(net)), ordering: .releasing)
                break
            }
        }
    }
}

final class NetJackMasterCounters: Sendable {
    let lost = Atomic<Int>(0)
    let recovered = Atomic<Int>(0)
}
