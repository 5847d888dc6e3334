import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// The appliance process (`sonora run CONFIG`): validate, build, start the I/O thread,
/// serve the control socket, print a status line each interval, reload on SIGHUP, and on
/// SIGINT/SIGTERM (or SIGUSR1, SIGUSR2, SIGQUIT) fade out, stop the device, finish the
/// recorders and exit 0. A second signal skips the fade; the files are finished anyway.
/// A recorder's write error is logged at once and makes the exit status 1.
public final class PipelineRuntime {
    public struct Options {
        /// Stop by itself after this many seconds (nil: run until a signal).
        public var seconds: Double?
        /// Milliseconds of fade-out before stopping.
        public var fadeMilliseconds = 20.0
        public init(seconds: Double? = nil) { self.seconds = seconds }
    }

    public let configPath: String
    public let options: Options
    let logger: Logger
    let status: (String) -> Void
    /// systemd's notify protocol (READY, STATUS, WATCHDOG, RELOADING); inert without NOTIFY_SOCKET.
    let service = ServiceSupervision()
    /// "running CONFIG on DEVICE": the supervisor's status until the first status line.
    private var runningLine = ""

    /// `status` receives the status lines (stdout in the CLI); events go to `logger`.
    public init(configPath: String, options: Options, logger: Logger, status: @escaping (String) -> Void) {
        self.configPath = configPath
        self.options = options
        self.logger = logger
        self.status = status
    }

    /// Blocks the signals the runtime handles in the calling thread and every thread
    /// created after, so only the runtime's wait sees them. Call first thing in `main`.
    public static func blockSignals() {
        var set = handledSignals
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Signals that stop the runtime cleanly. SIGUSR1/2 and SIGQUIT would otherwise kill
    /// the process on the spot and leave an unfinished recording.
    static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGQUIT]

    static var handledSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in stopSignals + [SIGHUP] { sigaddset(&set, signal) }
        return set
    }

    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGQUIT: "SIGQUIT"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }

    public enum Failure: Error, CustomStringConvertible {
        case configuration(ConfigurationErrors)
        case device(AudioError)
        /// A service of the run could not start (the control or session socket, the metrics
        /// endpoint): the message names which.
        case service(String)
        /// Ran and stopped cleanly, but a recording failed (each was logged when it happened).
        case recording([String])

        public var description: String {
            switch self {
            case .configuration(let errors): errors.description
            case .device(let error): "device: \(error)"
            case .service(let message): message
            case .recording(let failures): failures.joined(separator: "\n")
            }
        }

        /// 2 for an invalid config (as `sonora check`), 1 otherwise.
        public var exitStatus: Int32 {
            if case .configuration = self { return 2 }
            return 1
        }
    }

    /// Runs until a signal (or `options.seconds`). Throws before starting if anything is wrong.
    public func run() throws(Failure) {
        let configuration: PipelineConfiguration
        do { configuration = try ConfigurationParser.parse(contentsOf: configPath) } catch { throw .configuration(error) }
        let problems = PipelineBuilder.check(configuration)
        guard problems.isEmpty else { throw .configuration(ConfigurationErrors(problems)) }
        defer { ServedClientStreams.table = nil }
        let served = try Self.serve(configuration, logger: logger)
        let (device, sessionServer, pipeline) = (served.device, served.sessionServer, served.pipeline)
        for stale in pipeline.staleRecordings { logger.warning("\(stale)") }
        let controller = PipelineController(pipeline: pipeline, device: device, configPath: configPath, logger: logger)
        controller.sessionServer = sessionServer
        var server: ControlServer?
        if let path = configuration.socketPath {
            do {
                server = try ControlServer(path: path, timeout: configuration.control.requestTimeout, logger: logger) { [service] request in
                    guard request.command == .reload else { return controller.handle(request) }
                    return service.reloading({ controller.handle(request) }) { response in
                        if case .failure = response { return "reload over the control socket refused; the running pipeline is unchanged" }
                        return "reloaded over the control socket"
                    }
                }
            } catch {
                pipeline.graph.uninitialize()
                throw .service("control socket: \(error)")
            }
            server?.start()
        }
        let metricsServer: MetricsHTTPServer?
        do { metricsServer = try startMetricsEndpoint(configuration, controller: controller) } catch {
            server?.stop()
            sessionServer?.stop()
            pipeline.graph.uninitialize()
            throw error
        }
        do { try pipeline.graph.start() } catch {
            metricsServer?.stop()
            server?.stop()
            sessionServer?.stop()
            throw .device(error)
        }
        sessionServer?.start()
        let deviceName = device.driver == "alsa" ? "ALSA \(device.format.playback?.pcmName ?? device.format.capture?.pcmName ?? "")" : "the \(device.driver) device"
        logger.info("running \(configPath) on \(deviceName): \(device.format.sampleRate) Hz, period \(device.format.periodFrames) × \(device.format.periods)\(server.map { ", control at \($0.path)" } ?? "")\(sessionServer.map { ", session server at \($0.server.path)" } ?? "")")
        for note in device.format.notes { logger.notice("\(note)") }
        runningLine = "running \(configPath) on \(deviceName)"

        var reported = Set<String>()
        waitForSignals(controller: controller, reported: &reported)

        // Stop: fade (a second stop signal cuts it short), stop the device, finish the
        // files, close the socket. Signals stay blocked: nothing interrupts the finishing.
        if let io = controller.pipeline.io {
            io.fadeOut(frames: Int(options.fadeMilliseconds / 1000 * Double(device.format.sampleRate)))
            let deadline = HostTime.now.seconds + 0.5
            // The device it runs on now (`ctl device` may have switched it).
            let device = controller.device
            while !io.isFadedOut && device.isRunning && HostTime.now.seconds < deadline {
                if let signal = pendingStopSignal() {
                    logger.info("\(Self.signalName(signal)) again: skipping the fade-out; finishing the files")
                    break
                }
                usleep(2000)
            }
        }
        controller.serialized { controller.pipeline.graph.stop() }
        sessionServer?.stop()
        server?.stop()
        metricsServer?.stop()
        reportRecorderFailures(controller, reported: &reported)
        do { try controller.pipeline.finishRecorders() } catch {
            if !reported.contains((error as? AudioError)?.message ?? "\(error)") { logger.error("recorder: \(error)") }
        }
        let failures = controller.serialized { controller.pipeline.recorderFailures }
        for event in controller.device.takeEvents() { logger.notice("\(event)") }
        let statistics = controller.device.statistics
        logger.info("stopped after \(statistics.cycles) cycles, \(statistics.xruns) xruns")
        controller.serialized { controller.pipeline.graph.uninitialize() }
        if !failures.isEmpty { throw .recording(failures.map(\.description)) }
    }

    /// What `run()` starts before the device runs: the device `configuration` names, the
    /// session server if it has a session section (its stream table published for the
    /// `clients` node kind, `ServedClientStreams.table`; the caller clears it), and the
    /// pipeline built on the device, with the client streams' cycle end on its I/O unit.
    /// Nothing runs yet: the caller starts the graph, then the session server.
    /// `sonora-bench refcounts` serves clients in its own process through this, to count on
    /// the appliance's I/O thread.
    @_spi(Benchmark) public struct Served {
        public let device: any AudioDevice
        public let sessionServer: ApplianceSessionServer?
        public let pipeline: BuiltPipeline
    }

    @_spi(Benchmark) public static func serve(_ configuration: PipelineConfiguration, logger: Logger = Logger(label: "sonora.run")) throws(Failure) -> Served {
        let device: any AudioDevice
        do { device = try DeviceOpener.open(configuration, logger: logger) } catch { throw .device(error) }
        var sessionServer: ApplianceSessionServer?
        if let session = configuration.session {
            let format = ApplianceServerFormat(
                sampleRate: device.format.sampleRate, periodFrames: device.format.periodFrames, periods: device.format.periods,
                outputChannels: configuration.engine.channels, inputChannels: configuration.engine.channels,
                device: PipelineController.routeName(of: device))
            do {
                sessionServer = try ApplianceSessionServer(
                    policy: SessionPolicy(session, sampleRate: device.format.sampleRate),
                    socketPath: configuration.sessionSocketPath ?? ApplianceSocket.defaultPath,
                    group: session.group.flatMap { SessionGroup.id(of: $0) }, maximumStreams: session.maxClients,
                    format: format, logger: logger)
            } catch {
                throw .service("session socket: \(error.message)")
            }
            ServedClientStreams.table = sessionServer?.streams
            if !configuration.nodes.contains(where: { $0.nodeKind?.name == NodeKind.clients.name }) {
                logger.warning("the config has a session section but no `clients` node: programs can attach, but their audio goes nowhere")
            }
        }
        let pipeline: BuiltPipeline
        do { pipeline = try PipelineBuilder.build(configuration, target: .live(device)) } catch { throw .configuration(error) }
        if let table = sessionServer?.streams, let io = pipeline.io {
            let cycleEnd = ClientStreamsCycleEnd(table: table)
            do { try io.addRenderNotify(RenderCallback(cycleEnd), keeping: cycleEnd) } catch { throw .service("session server: \(error.message)") }
        }
        return Served(device: device, sessionServer: sessionServer, pipeline: pipeline)
    }

    /// Logs each recorder failure once, as soon as it is seen (the writer thread only publishes it).
    func reportRecorderFailures(_ controller: PipelineController, reported: inout Set<String>) {
        for failure in controller.serialized({ controller.pipeline.recorderFailures }) where !reported.contains(failure.message) {
            reported.insert(failure.message)
            logger.error("\(failure)")
        }
    }

    /// A stop signal already delivered and waiting, taken (without waiting).
    private func pendingStopSignal() -> Int32? {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in Self.stopSignals { sigaddset(&set, signal) }
        var immediately = timespec(tv_sec: 0, tv_nsec: 0)
        let signal = sigtimedwait(&set, nil, &immediately)
        return signal > 0 ? signal : nil
    }

    private func waitForSignals(controller: PipelineController, reported: inout Set<String>) {
        var set = Self.handledSignals
        let started = HostTime.now.seconds
        var nextStatus = started + controller.pipeline.configuration.status.interval
        while true {
            // Until READY=1 is out, look at the device more often: the supervisor is waiting.
            var timeout = timespec(tv_sec: 0, tv_nsec: service.isEnabled && !service.isReady ? 5_000_000 : 100_000_000)
            let signal = sigtimedwait(&set, nil, &timeout)
            switch signal {
            case SIGHUP:
                reload(controller)
            case _ where Self.stopSignals.contains(signal):
                logger.info("\(Self.signalName(signal)): stopping")
                service.stopping("\(Self.signalName(signal)): stopping")
                return
            default:
                break
            }
            for event in controller.device.takeEvents() {
                logger.notice("\(event)")
                service.saw(event)
                controller.sessionServer?.deviceReported(event)
            }
            reportRecorderFailures(controller, reported: &reported)
            let now = HostTime.now.seconds
            let interval = controller.pipeline.configuration.status.interval
            if interval > 0 && now >= nextStatus {
                let line = statusLine(controller)
                status(line)
                service.status(line)
                nextStatus = now + interval
            }
            service.tick(statistics: controller.device.statistics, running: runningLine)
            if let seconds = options.seconds, now - started >= seconds {
                service.stopping("stopping after \(seconds) s")
                return
            }
        }
    }

    func reload(_ controller: PipelineController) {
        logger.info("SIGHUP: reloading \(configPath)")
        let problems = service.reloading({ controller.serialized { controller.reload() } }) {
            $0.isEmpty ? "reloaded \(self.configPath)" : "reload refused; the running pipeline is unchanged"
        }
        if problems.isEmpty {
            logger.info("reloaded \(configPath)")
        } else {
            for problem in problems { logger.error("\(problem)") }
            logger.error("reload refused; the running pipeline is unchanged")
        }
    }

    func statusLine(_ controller: PipelineController) -> String {
        let statistics = controller.device.statistics
        let format = controller.device.format
        let latency = format.roundTripFrames
        var line = String(
            format: "status: %d cycles, %d xruns, load %.1f%% mean %.1f%% max, latency %d frames %.2f ms",
            statistics.cycles, statistics.xruns, statistics.loadMean * 100, statistics.loadMax * 100, latency,
            Double(latency) * 1000 / Double(format.sampleRate))
        controller.device.resetLoad()
        let wanted = Set(controller.pipeline.configuration.status.meters)
        let channels = controller.pipeline.configuration.engine.channels
        // Per-channel meters (names ending in a channel number) only for the engine's channels.
        let meters = controller.serialized { controller.meters() }.filter { meter in
            guard wanted.isEmpty || wanted.contains(meter.node) else { return false }
            if let last = meter.meter.last, let digit = last.wholeNumberValue { return digit < channels }
            return true
        }
        if !meters.isEmpty {
            let text = meters.prefix(8).map { meter in
                String(format: "%@.%@%@ %.1f %@", meter.node, meter.meter, meter.element > 0 ? "[\(meter.element)]" : "", meter.value, meter.unit)
            }.joined(separator: ", ")
            line += ", meters: " + text
        }
        let failed = controller.serialized { controller.pipeline.recorderFailures }
        if !failed.isEmpty { line += ", recording failed: " + failed.map(\.node).joined(separator: ", ") }
        return line
    }
}
