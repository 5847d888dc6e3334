import CJackLoader
import Logging
import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// Sonora as a JACK client (`jack[:PEER][@SERVER]`): the device's capture channels are
/// input ports `in_1…N`, its playback channels output ports `out_1…N`, auto-connected as
/// the name says (`JACKDeviceName`). The procedure runs in JACK's process callback, on
/// JACK's realtime thread, with the same rules as every I/O thread; the rate and period
/// are the server's.
///
/// JACK's other callbacks only raise flags; a normal-priority control thread of the
/// device acts on them: a new buffer size or rate re-makes the engine (client
/// deactivated, the owner's format-change handler run and `.formatChanged` posted, then
/// activated again), and a server that goes away (`jack_on_info_shutdown`) is an interruption — the client
/// is closed and re-opened with back-off (50 ms doubling to 2 s) until a server is back.
/// Xruns JACK reports are counted as playback xruns, as ALSA's underruns are.
public final class JACKDevice: AudioDevice, @unchecked Sendable {
    public let driver = "jack"
    public let name: JACKDeviceName
    public let configuration: AudioDeviceConfiguration
    /// What the server granted; re-made by the control thread when the period, rate or
    /// latency changes, so it is read and written under a lock (never on the realtime thread).
    public var format: DeviceFormat { granted.withLock { $0 } }
    private let granted: ControlLock<DeviceFormat>
    /// The client name the server gave (`sonora`, or `sonora-01` when taken).
    public private(set) var clientName: String
    private let runner = DeviceRunner()
    private var monitor: DeviceMonitor { runner.monitor }
    private var client: OpaquePointer?
    private var processor: JACKProcessor
    private var procedure: IOProcedure?
    private var isActive = false
    private let latencyRanges = ControlLock<(capture: ClosedRange<Int>, playback: ClosedRange<Int>)>((0...0, 0...0))
    private let formatFollower = ControlLock<DeviceFormatChangeHandler?>(nil)
    private static let logger = Logger(label: "sonora.jack")

    /// Opens a client on the server `name` names and registers its ports; connects and
    /// activates in `start`. Throws `AudioError(.badDevice)` when no server runs.
    public init(name: JACKDeviceName, configuration: AudioDeviceConfiguration) throws(AudioError) {
        try configuration.validate()
        self.name = name
        self.configuration = configuration
        let opened = try Self.openClient(name, configuration: configuration)
        client = opened.client
        clientName = opened.clientName
        let rate = Int(sonora_jack_get_sample_rate(opened.client))
        let frames = Int(sonora_jack_get_buffer_size(opened.client))
        do {
            processor = try JACKProcessor(periodFrames: frames, sampleRate: rate, inputs: opened.inputs, outputs: opened.outputs, monitor: runner.monitor, procedure: nil)
        } catch {
            sonora_jack_client_close(opened.client)
            throw error
        }
        granted = ControlLock(Self.format(name: name, configuration: configuration, rate: rate, frames: frames, roundTrip: frames))
    }

    deinit {
        stop()
        if let client { sonora_jack_client_close(client) }
    }

    public var isRunning: Bool { runner.isRunning }
    public var statistics: DeviceStatistics { monitor.snapshot }
    public func takeEvents() -> [DeviceEvent] { monitor.takeEvents() }
    public func resetLoad() { monitor.resetLoad() }
    public var wakeUpLateness: LatenessDistribution { monitor.lateness.distribution() }
    public func setFormatChangeHandler(_ handler: DeviceFormatChangeHandler?) { formatFollower.withLock { $0 = handler } }

    /// The latency JACK reports for Sonora's ports (frames), read back after the server's
    /// latency pass: capture — from the sources to Sonora's inputs; playback — from
    /// Sonora's outputs to the sinks.
    public var portLatency: (capture: ClosedRange<Int>, playback: ClosedRange<Int>) {
        latencyRanges.withLock { $0 }
    }

    public func start(_ procedure: IOProcedure) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        self.procedure = procedure
        if client == nil {
            // Stopped during an interruption: the client is gone; a server must be back.
            try reopen()
        }
        processor.engine.procedure = procedure
        try activate()
        try runner.start(name: "sonora-jack", configuration: configuration, realtime: false, ioLoop: { [unowned self] in self.controlLoop() })
    }

    public func stop() {
        runner.stop()
        if let client, isActive { sonora_jack_deactivate(client) }
        isActive = false
    }

    // MARK: Opening

    private struct Opened {
        var client: OpaquePointer
        var clientName: String
        var inputs: [OpaquePointer?]
        var outputs: [OpaquePointer?]
    }

    private static func openClient(_ name: JACKDeviceName, configuration: AudioDeviceConfiguration) throws(AudioError) -> Opened {
        try JACKLibrary.load(for: name.deviceName)
        silenceLibrary()
        var status = jack_status_t(rawValue: 0)
        let options = jack_options_t(rawValue: JackNoStartServer.rawValue)
        let opened: OpaquePointer? = if let server = name.server {
            sonora_jack_client_open(JACKDeviceName.clientName, options, &status, server)
        } else {
            sonora_jack_client_open(JACKDeviceName.clientName, options, &status, nil)
        }
        guard let client = opened else {
            let server = name.server ?? getenv("JACK_DEFAULT_SERVER").map { String(cString: $0) } ?? "default"
            if status.rawValue & JackServerFailed.rawValue != 0 {
                throw AudioError(.badDevice, "'\(name.deviceName)': no JACK server '\(server)' is running (start jackd, or name the server: jack:PEER@SERVER)")
            }
            throw AudioError(.badDevice, "'\(name.deviceName)': JACK server '\(server)' refused the client (status 0x\(String(status.rawValue, radix: 16)))")
        }
        let clientName = String(cString: sonora_jack_get_client_name(client))
        var inputs: [OpaquePointer?] = []
        var outputs: [OpaquePointer?] = []
        for (count, isInput) in [(configuration.inputChannels, true), (configuration.outputChannels, false)] {
            for index in 0..<count {
                let portName = "\(isInput ? "in" : "out")_\(index + 1)"
                let flags = UInt(isInput ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue)
                guard let port = sonora_jack_port_register(client, portName, "32 bit float mono audio", flags, 0) else {
                    sonora_jack_client_close(client)
                    throw AudioError(.badDevice, "'\(name.deviceName)': JACK refused the port \(clientName):\(portName)")
                }
                if isInput { inputs.append(port) } else { outputs.append(port) }
            }
        }
        return Opened(client: client, clientName: clientName, inputs: inputs, outputs: outputs)
    }

    private static func format(name: JACKDeviceName, configuration: AudioDeviceConfiguration, rate: Int, frames: Int, roundTrip: Int) -> DeviceFormat {
        let label = name.deviceName
        let capture = configuration.inputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.inputChannels, sampleFormat: "FLOAT", access: "jack", periodFrames: frames, periods: 2, bufferFrames: frames)
            : nil
        let playback = configuration.outputChannels > 0
            ? DeviceStreamFormat(pcmName: label, channels: configuration.outputChannels, sampleFormat: "FLOAT", access: "jack", periodFrames: frames, periods: 2, bufferFrames: roundTrip)
            : nil
        var notes: [String] = []
        if rate != configuration.sampleRate { notes.append("the JACK server runs at \(rate) Hz (asked \(configuration.sampleRate) Hz): the server's rate is taken") }
        if frames != configuration.periodFrames { notes.append("the JACK server's period is \(frames) frames (asked \(configuration.periodFrames)): the server's period is taken") }
        return DeviceFormat(sampleRate: rate, periodFrames: frames, periods: 2, capture: capture, playback: playback, notes: notes)
    }

    /// Installs the callbacks, activates the client, connects its ports and reads the
    /// latency back.
    private func activate() throws(AudioError) {
        guard let client else { throw AudioError(.badDevice, "'\(name.deviceName)': no JACK client") }
        processor.install(on: client)
        guard sonora_jack_activate(client) == 0 else { throw AudioError(.badDevice, "'\(name.deviceName)': JACK could not activate the client \(clientName)") }
        isActive = true
        do {
            try connect(client)
        } catch {
            sonora_jack_deactivate(client)
            isActive = false
            throw error
        }
        readLatency()
    }

    private func connect(_ client: OpaquePointer) throws(AudioError) {
        let inputs = (0..<processor.inputCount).map { String(cString: sonora_jack_port_name(processor.inputs[$0])) }
        let outputs = (0..<processor.outputCount).map { String(cString: sonora_jack_port_name(processor.outputs[$0])) }
        switch name.peer {
        case .none:
            return
        case .itself:
            for (source, sink) in zip(outputs, inputs) { sonora_jack_connect(client, source, sink) }
        case .client(let peer):
            let sources = Self.ports(client, of: peer, flags: JackPortIsOutput)
            let sinks = Self.ports(client, of: peer, flags: JackPortIsInput)
            guard !sources.isEmpty || !sinks.isEmpty else {
                throw AudioError(.badDevice, "'\(name.deviceName)': the JACK server has no client '\(peer)' with audio ports (`sonora devices` lists them)")
            }
            for (source, sink) in zip(sources, inputs) { sonora_jack_connect(client, source, sink) }
            for (source, sink) in zip(outputs, sinks) { sonora_jack_connect(client, source, sink) }
        }
    }

    /// The audio ports of `peer` with `flags`, in the server's order.
    private static func ports(_ client: OpaquePointer, of peer: String, flags: JackPortFlags) -> [String] {
        JACKPortDirectory.audioPorts(client, flags: flags).filter { $0.hasPrefix(peer + ":") }
    }

    private func readLatency() {
        let capture = JACKProcessor.union(of: processor.inputs, count: processor.inputCount, mode: JackCaptureLatency)
        let playback = JACKProcessor.union(of: processor.outputs, count: processor.outputCount, mode: JackPlaybackLatency)
        latencyRanges.withLock { $0 = (capture, playback) }
        // JACK delays a feedback path by one period; the rest is what the ports report.
        let roundTrip = processor.periodFrames + capture.upperBound + playback.upperBound
        let made = Self.format(name: name, configuration: configuration, rate: Int(processor.engine.sampleRate), frames: processor.periodFrames, roundTrip: roundTrip)
        granted.withLock { if $0 != made { $0 = made } }
    }

    /// A new client with the same ports and a new processor (after the server came back).
    private func reopen() throws(AudioError) {
        let opened = try Self.openClient(name, configuration: configuration)
        let rate = Int(sonora_jack_get_sample_rate(opened.client))
        let frames = Int(sonora_jack_get_buffer_size(opened.client))
        let made: JACKProcessor
        do {
            made = try JACKProcessor(periodFrames: frames, sampleRate: rate, inputs: opened.inputs, outputs: opened.outputs, monitor: monitor, procedure: procedure)
        } catch {
            sonora_jack_client_close(opened.client)
            throw error
        }
        client = opened.client
        clientName = opened.clientName
        processor = made
        let granted = Self.format(name: name, configuration: configuration, rate: rate, frames: frames, roundTrip: frames)
        self.granted.withLock { $0 = granted }
    }

    // MARK: The control thread

    /// Polls the flags JACK's threads raise (every 10 ms) until the device stops.
    private func controlLoop() {
        var latencyCheck = 0
        while runner.isRunning {
            usleep(10_000)
            if processor.serverGone.load(ordering: .acquiring) {
                recoverFromShutdown()
            } else if processor.formatChanged.load(ordering: .acquiring) {
                followFormatChange()
            } else {
                latencyCheck += 1
                if latencyCheck % 50 == 0 { readLatency() }
            }
        }
    }

    /// The server went away: report an interruption, close the client and open a new
    /// one with back-off until a server answers (or the device stops).
    private func recoverFromShutdown() {
        monitor.add(monitor.interruptions)
        monitor.post(.interruptionBegan(.playback, errno: ECONNRESET))
        Self.logger.debug("JACK server '\(name.server ?? "default")' went away; re-attaching with back-off")
        if let client { sonora_jack_client_close(client) }
        client = nil
        isActive = false
        let before = format
        _ = runner.retryWithBackOff { attempts in
            do {
                try reopen()
                // Posted before activation: the event queue has one producer at a time.
                monitor.post(.interruptionEnded(attempts: attempts))
                // A server back at another rate or period is a format change to the owner.
                let now = format
                if now.sampleRate != before.sampleRate || now.periodFrames != before.periodFrames { announce(now) }
                try activate()
                return true
            } catch {
                if let client { sonora_jack_client_close(client) }
                client = nil
                isActive = false
                return false
            }
        }
    }

    /// The server announced another period or rate: deactivate, re-make the engine at
    /// the new format, let the owner follow it (its handler, while no cycle runs), activate
    /// again.
    private func followFormatChange() {
        guard let client else { return }
        sonora_jack_deactivate(client)
        isActive = false
        let rate = Int(sonora_jack_get_sample_rate(client))
        let frames = Int(sonora_jack_get_buffer_size(client))
        let inputs = (0..<processor.inputCount).map { processor.inputs[$0] }
        let outputs = (0..<processor.outputCount).map { processor.outputs[$0] }
        do {
            processor = try JACKProcessor(periodFrames: frames, sampleRate: rate, inputs: inputs, outputs: outputs, monitor: monitor, procedure: procedure)
            let made = Self.format(name: name, configuration: configuration, rate: rate, frames: frames, roundTrip: frames)
            granted.withLock { $0 = made }
            announce(made)
            try activate()
            Self.logger.debug("JACK changed the format: \(rate) Hz, \(frames) frames")
        } catch {
            Self.logger.error("\(error.message)")
        }
    }

    /// Posts `.formatChanged` and runs the owner's handler; only while the client is not
    /// active (the event queue's other producer, the process callback, is not running).
    private func announce(_ format: DeviceFormat) {
        monitor.post(.formatChanged(sampleRate: format.sampleRate, periodFrames: format.periodFrames))
        let handler = formatFollower.withLock { $0 }
        handler?(format)
    }

    /// Routes libjack's own messages ("jack server is not running …") where alsa-lib's
    /// go: the debug log, or stderr with `--verbose` (`ALSAConfiguration.showLibraryMessages`).
    static func silenceLibrary() {
        ALSAConfiguration.routeErrors
        ALSAConfiguration.routeJackMessages(loading: false)  // the driver has loaded libjack (JACKLibrary)
    }
}
