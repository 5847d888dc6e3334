import ArgumentParser
import Foundation

struct SoakBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "The appliance for minutes or hours: RSS, descriptors, threads and xruns over time while it is reloaded, driven and unplugged.",
        discussion: """
            Runs `sonora run` (the binary beside sonora-bench) on the null device and on the
            sonoraloop device at once, each playing a tone through a gain and a meter into a
            recorder, for --minutes (or --seconds). Meanwhile: a reload every --reload-every
            seconds that changes the gain (alternately `reload` on the control socket and
            SIGHUP), control traffic four times a second per appliance (status, meters, set,
            get), and the loopback device unplugged for 2 s every minute (at 30 s, 90 s, …; the
            null device cannot vanish). Every --sample-every seconds it reads each process's
            RSS, open descriptors and threads (/proc) and its cycles, xruns and interruptions
            (`status`). At the end the appliances are stopped (SIGTERM) and each recording is
            compared with the cycles its appliance ran.

            Rows (goals from issue 21): RSS growth after the warm-up (the first minute, or a
            sixth of a short run, at least 10 s; the highest sample against the first) under
            1 MB; descriptors and threads flat (the last sample against the first); no
            xrun across reloads or at all; no reload or request refused; the recording holds
            every cycled frame; every device loss recovered. The table also prints the
            samples and a plot of RSS and xruns against time. --json prints the rows as every
            benchmark does (an array of {"metric", "unit", "sonora", "anchor", "anchor_value",
            "better"}); --json-report prints one object with the samples too:
            {"seconds", "warmup_seconds", "rows": [rows as the other benchmarks],
            "appliances": [{"device", "samples": [{"seconds", "rss_kb", "descriptors",
            "threads", "cycles", "xruns", "interruptions"}], "reloads", "reloads_refused",
            "xruns_across_reloads", "requests", "requests_failed", "device_losses",
            "device_recoveries", "exit_status", "stopped_cycles", "recorded_frames",
            "expected_frames", "rss_growth_kb", "descriptor_growth", "thread_growth",
            "failures"}], "notes"}. Exits 0 whether or not goals are met (read the rows);
            non-zero only when no appliance could start.

            Examples:
              sonora-bench soak --minutes 30
              sonora-bench soak --seconds 60 --json
              sonora-bench soak --minutes 30 --json-report > soak.json
              sonora-bench soak --minutes 5 --device null --sample-every 10
            """
    )

    @Option(help: "Minutes to soak.")
    var minutes: Double?

    @Option(help: "Seconds to soak (instead of --minutes).")
    var seconds: Double?

    @Option(help: "Seconds between samples.")
    var sampleEvery = 5.0

    @Option(help: "Seconds between reloads.")
    var reloadEvery = 5.0

    @Option(help: "Devices to soak: null, loopback (repeat the option for both; default both).")
    var device: [String] = []

    @Flag(help: "Print the rows as JSON (an array, as every benchmark).")
    var json = false

    @Flag(help: "Print one JSON object: rows, samples over time, counts.")
    var jsonReport = false

    var duration: Double { seconds ?? (minutes ?? 30) * 60 }

    func validate() throws {
        guard !(json && jsonReport) else { throw ValidationError("give --json or --json-report, not both") }
        guard minutes == nil || seconds == nil else { throw ValidationError("give --minutes or --seconds, not both") }
        guard duration >= 10 && duration <= 7 * 86400 else { throw ValidationError("the soak must last 10 s … 7 days") }
        guard sampleEvery >= 1 && sampleEvery <= 3600 else { throw ValidationError("--sample-every must be in 1…3600 s") }
        guard reloadEvery >= 1 && reloadEvery <= 3600 else { throw ValidationError("--reload-every must be in 1…3600 s") }
        for name in device where !["null", "loopback"].contains(name) {
            throw ValidationError("unknown --device '\(name)' (null, loopback)")
        }
    }

    func run() throws {
        let benchmark = SoakBenchmark(
            seconds: duration, sampleSeconds: sampleEvery, reloadSeconds: reloadEvery,
            devices: device.isEmpty ? ["null", "loopback"] : Array(Set(device)).sorted().reversed())
        let report = try benchmark.run { message in FileHandle.standardError.write(Data(("soak: " + message + "\n").utf8)) }
        if json {
            BenchmarkReport.print(report.rows, json: true, notes: report.notes)
            return
        }
        if jsonReport {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        for appliance in report.appliances {
            print("\(appliance.device): \(appliance.samples.count) samples")
            print("  seconds    RSS MB   fds  threads     cycles  xruns  interruptions")
            for sample in appliance.samples {
                print(String(
                    format: "  %7.1f  %7.2f  %4d  %7d  %9d  %5d  %13d", sample.seconds, Double(sample.rssKilobytes) / 1024, sample.descriptors,
                    sample.threads, sample.cycles, sample.xruns, sample.interruptions))
            }
            print(SoakPlot.text(appliance.samples))
            print()
        }
        BenchmarkReport.print(report.rows, json: false, notes: report.notes + report.appliances.flatMap { a in a.failures.map { "\(a.device): \($0)" } })
    }
}
