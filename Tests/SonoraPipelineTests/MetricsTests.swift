import Foundation
import Logging
import SonoraCore
@testable import SonoraHAL
@testable import SonoraPipeline
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `metrics`: the exposition a running pipeline answers, read back with a strict parser of
/// the text format, and the `metrics:` config section.
@Suite("Metrics: Prometheus exposition and the metrics config", .serialized)
struct MetricsTests {
    static let yaml = """
        engine: {sample_rate: 48000, period: 128, periods: 2, channels: 2}
        device: {playback: "null"}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
          - {id: meter, kind: Meter}
        connections:
          - {from: tone, to: meter}
          - {from: meter, to: output}
        metrics: {listen: "127.0.0.1:9464"}
        """

    /// A pipeline running live on the null device (its I/O thread paced by the clock).
    final class LiveRig {
        let scratch: TemporaryFolder
        let file: String
        let controller: PipelineController
        let device: any AudioDevice

        init(_ yaml: String = MetricsTests.yaml) throws {
            scratch = try TemporaryFolder(prefix: "sonora-metrics")
            file = scratch.path("pipeline.yaml")
            try yaml.write(toFile: file, atomically: true, encoding: .utf8)
            let configuration = try ConfigurationParser.parse(contentsOf: file)
            device = try DeviceOpener.open(configuration, logger: Logger(label: "test"))
            let pipeline = try PipelineBuilder.build(configuration, target: .live(device))
            controller = PipelineController(pipeline: pipeline, device: device, configPath: file, logger: Logger(label: "test"))
            try pipeline.graph.start()
        }

        func waitForCycles(_ count: Int) {
            var waited = 0
            while device.statistics.cycles < count && waited < 1000 {
                usleep(5000)
                waited += 1
            }
        }

        func metrics() throws -> (text: String, parsed: PrometheusExposition) {
            guard case .metrics(let text) = controller.handle(.metrics) else {
                Issue.record("metrics did not answer with the exposition")
                return ("", try PrometheusExposition(parsing: ""))
            }
            return (text, try PrometheusExposition(parsing: text))
        }

        deinit {
            controller.serialized { controller.pipeline.graph.stop() }
            controller.serialized { controller.pipeline.graph.uninitialize() }
        }
    }

    @Test("a running pipeline's metrics parse line by line and carry every series")
    func runningPipeline() throws {
        let rig = try LiveRig()
        rig.waitForCycles(40)
        let (text, parsed) = try rig.metrics()
        #expect(text.hasSuffix("\n"))
        #expect(try #require(parsed.value("sonora_cycles_total")) >= 40)
        #expect(parsed.value("sonora_xruns_total", ["stream": "capture"]) != nil)
        #expect(parsed.value("sonora_xruns_total", ["stream": "playback"]) != nil)
        #expect(parsed.types["sonora_xruns_total"] == "counter")
        #expect(parsed.value("sonora_cycle_load_ratio", ["stat": "mean"]) != nil)
        #expect(parsed.value("sonora_cycle_load_ratio", ["stat": "max"]) != nil)
        for percentile in ["50", "90", "99", "99.9"] {
            let seconds = try #require(parsed.value("sonora_wakeup_lateness_seconds", ["percentile": percentile]))
            #expect(seconds >= 0)
        }
        #expect(try #require(parsed.value("sonora_wakeups_total")) >= 40)
        // 2 periods of 128 frames at 48 kHz.
        #expect(parsed.value("sonora_round_trip_latency_seconds") == 256.0 / 48000)
        #expect(parsed.value("sonora_info", ["driver": "null"]) == 1)
        #expect(parsed.value("sonora_running") == 1)
        let meters = parsed.samples("sonora_meter", ["node": "meter"])
        #expect(!meters.isEmpty, "the Meter node's meters")
        #expect(meters.allSatisfy { $0.labels["meter"] != nil && $0.labels["unit"] != nil && $0.labels["element"] != nil })
        #expect(parsed.value("sonora_reloads_total", ["result": "accepted"]) == 0)
        // No session section: no client series.
        #expect(parsed.samples("sonora_clients").isEmpty)
        for family in Set(parsed.samples.map(\.name)) { #expect(parsed.help[family] != nil, "HELP for \(family)") }
    }

    @Test("reloads are counted by result, SIGHUP's path and the socket's alike")
    func reloadsCounted() throws {
        let rig = try LiveRig()
        #expect(rig.controller.handle(.reload).isSuccess)
        try "nodes: [".write(toFile: rig.file, atomically: true, encoding: .utf8)
        #expect(!rig.controller.handle(.reload).isSuccess)
        #expect(rig.controller.serialized { rig.controller.reload() }.isEmpty == false)
        let (_, parsed) = try rig.metrics()
        #expect(parsed.value("sonora_reloads_total", ["result": "accepted"]) == 1)
        #expect(parsed.value("sonora_reloads_total", ["result": "refused"]) == 2)
    }

    @Test("the metrics command travels the wire: request and answer round-trip")
    func wireForm() throws {
        #expect(try ControlRequest.decode(Array(#"{"cmd":"metrics"}"#.utf8)).get() == .metrics)
        if case .failure(let failure) = ControlRequest.decode(Array(#"{"cmd":"metrics","node":"x"}"#.utf8)) {
            #expect(failure.field == "node")
        } else {
            Issue.record("a metrics request with a field it does not take was accepted")
        }
        let text = "# TYPE a gauge\na{b=\"c\\\"d\"} 1\n"
        let line = ControlResponse.metrics(text).line()
        let decoded = try ControlResponse.decode(Data(line.dropLast()), for: .metrics)
        #expect(decoded == .metrics(text))
    }

    @Test("hostile label values are escaped and silent meters read -Inf")
    func escapingAndNonFinite() throws {
        let program = "evil\"} 1\nsonora_fake 2\\"
        let metrics = PipelineMetrics(
            driver: "null", deviceName: "null", running: true, statistics: DeviceStatistics(
                cycles: 5, captureXruns: 0, playbackXruns: 1, xrunNanoseconds: 0, renderErrors: 0, interruptions: 0, loadMean: 0.1,
                loadMax: 0.2, jitterMeanNanoseconds: 0, jitterMaxNanoseconds: 0, rateScalar: 1, driftPPM: 0, sampleTime: 0,
                reportedDelayFrames: nil),
            lateness: LatenessDistribution(), sampleRate: 48000, roundTripFrames: 512,
            meters: [
                .init(node: "meter", meter: "peak 0", scope: "global", element: 0, value: -.infinity, unit: "dB"),
                .init(node: "voice", meter: "erle_db", scope: "global", element: 0, value: 23.5, unit: "dB"),
                .init(node: "odd", meter: "nan", scope: "global", element: 0, value: .nan, unit: ""),
            ],
            reloadsAccepted: 3, reloadsRefused: 1, clients: 1,
            clientStreams: [.init(stream: 7, pid: 42, program: program, direction: "playback", underruns: 2, overruns: 0, faulted: false)],
            recorderFailures: 0)
        let text = metrics.exposition()
        let parsed = try PrometheusExposition(parsing: text)
        #expect(parsed.value("sonora_meter", ["node": "meter", "meter": "peak 0"]) == -.infinity)
        #expect(parsed.value("sonora_meter", ["node": "voice", "meter": "erle_db"]) == 23.5)
        #expect(parsed.value("sonora_meter", ["node": "odd"])?.isNaN == true)
        #expect(parsed.value("sonora_client_xruns_total", ["program": program, "kind": "underrun"]) == 2)
        #expect(parsed.samples("sonora_fake").isEmpty, "a label value cannot inject a series")
        #expect(parsed.value("sonora_clients") == 1)
        #expect(parsed.value("sonora_reloads_total", ["result": "accepted"]) == 3)
        #expect(parsed.value("sonora_xruns_total", ["stream": "playback"]) == 1)
        // No wake-up measured yet: percentiles read 0, not a made-up figure.
        #expect(parsed.value("sonora_wakeups_total") == 0)
    }

    // MARK: The config section

    static func parse(_ metricsLine: String) -> Result<PipelineConfiguration, ConfigurationErrors> {
        let text = "nodes:\n  - {id: t, kind: tone}\nconnections:\n  - {from: t, to: output}\n" + metricsLine
        do { return .success(try ConfigurationParser.parse(text, file: "m.yaml")) } catch { return .failure(error) }
    }

    @Test("loopback addresses are accepted", arguments: [
        ("127.0.0.1:9464", "127.0.0.1", 9464), ("localhost:9100", "127.0.0.1", 9100), ("[::1]:9464", "::1", 9464), ("127.1.2.3:80", "127.1.2.3", 80),
    ])
    func loopbackAccepted(listen: String, host: String, port: Int) throws {
        let configuration = try Self.parse("metrics: {listen: \"\(listen)\"}\n").get()
        #expect(configuration.metrics?.host == host)
        #expect(configuration.metrics?.port == port)
        #expect(configuration.metrics?.listen == listen)
    }

    @Test("no metrics section, no endpoint")
    func noSection() throws {
        #expect(try Self.parse("").get().metrics == nil)
    }

    @Test("anything not loopback is refused at the value, with file:line:column", arguments: [
        ("0.0.0.0:9464", "not a loopback address"), ("192.168.1.10:9464", "not a loopback address"), ("[::]:9464", "not a loopback address"),
        ("[2001:db8::1]:9464", "not a loopback address"), ("example.com:9464", "not an IP address or localhost"),
        ("127.0.0.1", "not HOST:PORT"), ("127.0.0.1:0", "not a number 1…65535"), ("127.0.0.1:70000", "not a number 1…65535"),
        ("::1:9464", "not HOST:PORT"),
    ])
    func refused(listen: String, expected: String) throws {
        guard case .failure(let errors) = Self.parse("metrics:\n  listen: \"\(listen)\"\n") else {
            Issue.record("\(listen) was accepted")
            return
        }
        let diagnostic = try #require(errors.diagnostics.first)
        #expect(diagnostic.location.file == "m.yaml")
        #expect(diagnostic.location.line == 6 && diagnostic.location.column == 11, "\(diagnostic)")
        #expect(diagnostic.message.contains("metrics.listen") && diagnostic.message.contains(expected), "\(diagnostic.message)")
    }

    @Test("a metrics section without listen, with an unknown key or not a mapping is refused")
    func malformedSection() {
        for (text, expected) in [
            ("metrics: {}\n", "metrics needs `listen`"), ("metrics: {listen: \"127.0.0.1:9464\", port: 1}\n", "unknown key 'port'"),
            ("metrics: on\n", "metrics must be a mapping"), ("metrics: {listen: 9464}\n", "metrics.listen"),
        ] {
            guard case .failure(let errors) = Self.parse(text) else {
                Issue.record("'\(text)' was accepted")
                continue
            }
            #expect(errors.diagnostics.contains { $0.message.contains(expected) && $0.location.line == 5 }, "\(errors.diagnostics)")
        }
    }

    @Test("save writes the metrics section back; reload refuses a changed one")
    func saveAndReload() throws {
        let rig = try LiveRig()
        let saved = rig.scratch.path("saved.yaml")
        try rig.controller.save(to: saved)
        #expect(try ConfigurationParser.parse(contentsOf: saved).metrics?.listen == "127.0.0.1:9464")
        try MetricsTests.yaml.replacingOccurrences(of: "9464", with: "9465").write(toFile: rig.file, atomically: true, encoding: .utf8)
        let problems = rig.controller.serialized { rig.controller.reload() }
        #expect(problems.contains { $0.message.contains("metrics changed") })
    }
}
