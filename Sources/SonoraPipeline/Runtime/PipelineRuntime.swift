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
/// SIGINT/SIGTERM fade out, stop the device, finish the recorders and exit 0. A second
/// SIGINT/SIGTERM exits at once.
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

    /// `status` receives the status lines (stdout in the CLI); events go to `logger`.
    public init(configPath: String, options: Options, logger: Logger, status: @escaping (String) -> Void) {
        self.configPath = configPath
        self.options = options
        self.logger = logger
        self.status = status
    }

    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread created
    /// after, so only the runtime's wait sees them. Call first thing in `main`.
    public static func blockSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    public enum Failure: Error, CustomStringConvertible {
        case configuration(ConfigurationErrors)
        case device(AudioError)
        case control(String)

        public var description: String {
            switch self {
            case .configuration(let errors): errors.description
            case .device(let error): "device: \(error)"
            case .control(let message): "control socket: \(message)"
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
        let device: any AudioDevice
        do { device = try DeviceOpener.open(configuration, logger: logger) } catch { throw .device(error) }
        let pipeline: BuiltPipeline
        do { pipeline = try PipelineBuilder.build(configuration, target: .live(device)) } catch { throw .configuration(error) }
        let controller = PipelineController(pipeline: pipeline, device: device, configPath: configPath, logger: logger)
        var server: ControlServer?
        if let path = configuration.socketPath {
            do {
                server = try ControlServer(path: path, timeout: configuration.control.requestTimeout, logger: logger) { request in controller.handle(request) }
            } catch {
                pipeline.graph.uninitialize()
                throw .control("\(error)")
            }
            server?.start()
        }
        do { try pipeline.graph.start() } catch {
            server?.stop()
            throw .device(error)
        }
        let deviceName = device.driver == "alsa" ? "ALSA \(device.format.playback?.pcmName ?? device.format.capture?.pcmName ?? "")" : "the \(device.driver) device"
        logger.info("running \(configPath) on \(deviceName): \(device.format.sampleRate) Hz, period \(device.format.periodFrames) × \(device.format.periods)\(server.map { ", control at \($0.path)" } ?? "")")
        for note in device.format.notes { logger.notice("\(note)") }

        waitForSignals(controller: controller)

        // Stop: fade, stop the device, finish the files, close the socket.
        if let io = controller.pipeline.io {
            io.fadeOut(frames: Int(options.fadeMilliseconds / 1000 * Double(device.format.sampleRate)))
            let deadline = HostTime.now.seconds + 0.5
            while !io.isFadedOut && device.isRunning && HostTime.now.seconds < deadline { usleep(2000) }
        }
        controller.serialized { controller.pipeline.graph.stop() }
        server?.stop()
        do { try controller.pipeline.finishRecorders() } catch { logger.error("recorder: \(error)") }
        for event in device.takeEvents() { logger.notice("\(event)") }
        let statistics = device.statistics
        logger.info("stopped after \(statistics.cycles) cycles, \(statistics.xruns) xruns")
        controller.serialized { controller.pipeline.graph.uninitialize() }
    }

    private func waitForSignals(controller: PipelineController) {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGHUP)
        let started = HostTime.now.seconds
        var nextStatus = started + controller.pipeline.configuration.status.interval
        while true {
            var timeout = timespec(tv_sec: 0, tv_nsec: 100_000_000)
            let signal = sigtimedwait(&set, nil, &timeout)
            switch signal {
            case SIGINT, SIGTERM:
                logger.info("\(signal == SIGINT ? "SIGINT" : "SIGTERM"): stopping")
                installImmediateExit()
                return
            case SIGHUP:
                reload(controller)
            default:
                break
            }
            for event in controller.device.takeEvents() { logger.notice("\(event)") }
            let now = HostTime.now.seconds
            let interval = controller.pipeline.configuration.status.interval
            if interval > 0 && now >= nextStatus {
                status(statusLine(controller))
                nextStatus = now + interval
            }
            if let seconds = options.seconds, now - started >= seconds { return }
        }
    }

    /// A second SIGINT/SIGTERM while stopping exits at once.
    private func installImmediateExit() {
        let handler: @convention(c) (Int32) -> Void = { _ in _exit(130) }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    func reload(_ controller: PipelineController) {
        logger.info("SIGHUP: reloading \(configPath)")
        let problems = controller.serialized { controller.reload() }
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
        return line
    }
}
