import Prometheus
import SonoraHAL

/// What `metrics` reports, gathered in one go on the control side (the I/O thread only
/// ever writes the atomics these numbers are read from). `exposition()` renders it in
/// Prometheus' text format (0.0.4) through swift-prometheus' registry, so names, label
/// escaping and TYPE/HELP lines follow the library rather than hand-written text.
public struct PipelineMetrics: Sendable {
    /// One client stream of the appliance server.
    public struct ClientStream: Sendable {
        public var stream: Int
        public var pid: Int32
        public var program: String
        public var direction: String
        public var underruns: Int
        public var overruns: Int
        public var faulted: Bool
    }

    public var driver: String
    public var deviceName: String
    public var running: Bool
    public var statistics: DeviceStatistics
    public var lateness: LatenessDistribution
    public var sampleRate: Int
    public var roundTripFrames: Int
    public var meters: [ControlResponse.MeterReading]
    public var reloadsAccepted: Int
    public var reloadsRefused: Int
    /// nil: the config has no `session:` section (no appliance server).
    public var clients: Int?
    public var clientStreams: [ClientStream]
    public var recorderFailures: Int

    /// The wake-up lateness percentiles reported (as `percentile` label values).
    public static let percentiles: [(label: String, fraction: Double)] = [("50", 0.5), ("90", 0.9), ("99", 0.99), ("99.9", 0.999)]

    /// The exposition: one `# HELP`, one `# TYPE` and the samples of each family.
    public func exposition() -> String {
        let registry = PrometheusCollectorRegistry()
        registry.gauge(name: "sonora_info", labels: [("version", ControlProtocol.sonoraVersion), ("driver", driver), ("device", deviceName)],
                           help: "Sonora's version and the device the pipeline runs on (always 1)").set(to: 1)
        registry.gauge(name: "sonora_running", help: "1 while the device's I/O thread runs").set(to: running ? 1 : 0)
        registry.counter(name: "sonora_cycles_total", help: "I/O cycles (periods) since the device started").increment(by: Int64(statistics.cycles))
        let xrunHelp = "Over- and underruns of the device, per stream"
        registry.counter(name: "sonora_xruns_total", labels: [("stream", "capture")], help: xrunHelp).increment(by: Int64(statistics.captureXruns))
        registry.counter(name: "sonora_xruns_total", labels: [("stream", "playback")], help: xrunHelp).increment(by: Int64(statistics.playbackXruns))
        registry.counter(name: "sonora_xrun_seconds_total", help: "Time spent in xruns until recovery")
            .increment(by: Double(statistics.xrunNanoseconds) / 1e9)
        registry.counter(name: "sonora_render_errors_total", help: "Cycles whose render failed (their output was silenced)")
            .increment(by: Int64(statistics.renderErrors))
        registry.counter(name: "sonora_interruptions_total", help: "Times the device vanished or was suspended")
            .increment(by: Int64(statistics.interruptions))
        let loadHelp = "Fraction of the period spent in the cycle's work since the last status line (mean and max)"
        registry.gauge(name: "sonora_cycle_load_ratio", labels: [("stat", "mean")], help: loadHelp).set(to: statistics.loadMean)
        registry.gauge(name: "sonora_cycle_load_ratio", labels: [("stat", "max")], help: loadHelp).set(to: statistics.loadMax)
        let latenessHelp = "Wake-up lateness of the I/O thread against the device clock since start, by percentile (from a histogram with 25 % buckets)"
        for (label, fraction) in Self.percentiles {
            registry.gauge(name: "sonora_wakeup_lateness_seconds", labels: [("percentile", label)], help: latenessHelp)
                .set(to: lateness.percentile(fraction) ?? 0)
        }
        registry.gauge(name: "sonora_wakeup_lateness_max_seconds", help: "The latest wake-up of the I/O thread since start")
            .set(to: Double(lateness.maximumNanoseconds) / 1e9)
        registry.counter(name: "sonora_wakeups_total", help: "Wake-ups of the I/O thread counted in the lateness histogram")
            .increment(by: Int64(lateness.count))
        registry.gauge(name: "sonora_round_trip_latency_seconds", help: "Capture-to-playback latency of the device as configured (buffer)")
            .set(to: Double(roundTripFrames) / Double(max(1, sampleRate)))
        if let delay = statistics.reportedDelayFrames {
            registry.gauge(name: "sonora_reported_delay_seconds", help: "Capture plus playback delay the driver last reported")
                .set(to: Double(delay) / Double(max(1, sampleRate)))
        }
        registry.gauge(name: "sonora_rate_scalar", help: "Actual over nominal rate of the device clock").set(to: statistics.rateScalar)
        registry.gauge(name: "sonora_drift_ppm", help: "Capture-to-playback clock drift (0 for one clock)").set(to: statistics.driftPPM)
        let meterHelp = "Every node's meters (read-only parameters) in their unit; the canceller's ERLE is node voice, meter erle_db"
        for meter in meters {
            registry.gauge(
                name: "sonora_meter",
                labels: [("node", meter.node), ("meter", meter.meter), ("scope", meter.scope), ("element", "\(meter.element)"), ("unit", meter.unit)],
                help: meterHelp
            ).set(to: meter.value)
        }
        registry.counter(name: "sonora_reloads_total", labels: [("result", "accepted")], help: "Config reloads (SIGHUP or ctl reload) by result")
            .increment(by: Int64(reloadsAccepted))
        registry.counter(name: "sonora_reloads_total", labels: [("result", "refused")], help: "Config reloads (SIGHUP or ctl reload) by result")
            .increment(by: Int64(reloadsRefused))
        registry.gauge(name: "sonora_recorder_failures", help: "Recorders stopped by a write error").set(to: Double(recorderFailures))
        if let clients {
            registry.gauge(name: "sonora_clients", help: "Programs attached to the appliance server").set(to: Double(clients))
            registry.gauge(name: "sonora_client_streams", help: "Streams of the attached programs").set(to: Double(clientStreams.count))
            for stream in clientStreams {
                let labels = [("stream", "\(stream.stream)"), ("program", stream.program), ("pid", "\(stream.pid)"), ("direction", stream.direction)]
                registry.counter(name: "sonora_client_xruns_total", labels: labels + [("kind", "underrun")], help: "A client stream's under- and overruns")
                    .increment(by: Int64(stream.underruns))
                registry.counter(name: "sonora_client_xruns_total", labels: labels + [("kind", "overrun")], help: "A client stream's under- and overruns")
                    .increment(by: Int64(stream.overruns))
                registry.gauge(name: "sonora_client_faulted", labels: labels, help: "1 when a client stream was cut off for a fault")
                    .set(to: stream.faulted ? 1 : 0)
            }
        }
        return Self.spellingNonFiniteValues(registry.emitToString())
    }

    /// Swift prints infinities and NaN as `inf`, `-inf`, `nan`; the text format spells
    /// them `+Inf`, `-Inf`, `NaN` (a meter at silence reads -Inf dB).
    static func spellingNonFiniteValues(_ text: String) -> String {
        var lines: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " ") else { lines.append(line); continue }
            let value = line[line.index(after: space)...]
            switch value {
            case "inf", "+inf": lines.append(line[...space] + "+Inf")
            case "-inf": lines.append(line[...space] + "-Inf")
            case "nan", "-nan": lines.append(line[...space] + "NaN")
            default: lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// swift-prometheus's descriptor-based factories (its name-and-help ones are deprecated) in
/// the call shape above: name, labels, help.
private extension PrometheusCollectorRegistry {
    func counter(name: String, labels: [(String, String)] = [], help: String) -> Counter {
        makeCounter(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }

    func gauge(name: String, labels: [(String, String)] = [], help: String) -> Gauge {
        makeGauge(descriptor: MetricNameDescriptor(metricName: name, unitName: "", helpText: help), labels: labels)
    }
}
