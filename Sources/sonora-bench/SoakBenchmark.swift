import Foundation
import SonoraCore
import SonoraFile

#if canImport(Glibc)
import Glibc
#endif

/// `sonora-bench soak`: appliances (`sonora run`) on the null device and on the sonoraloop
/// device run for the given time while the soak reloads them every few seconds (a changed
/// gain; alternately over the control socket and by SIGHUP), sends control traffic four
/// times a second (status, meters, set, get), unplugs the loopback device for two seconds
/// every minute (at 30 s, 90 s, …) and lets it come back, and each records what it plays.
/// Every few seconds it samples each process's RSS, open descriptors, threads, cycles,
/// xruns and interruptions. At the end it stops them (SIGTERM) and checks each recording
/// against the cycles the appliance ran.
struct SoakBenchmark {
    var seconds: Double
    var sampleSeconds: Double
    var reloadSeconds: Double
    var devices: [String]

    struct Sample: Codable {
        var seconds: Double
        var rssKilobytes: Int
        var descriptors: Int
        var threads: Int
        var cycles: Int
        var xruns: Int
        var interruptions: Int

        enum CodingKeys: String, CodingKey {
            case seconds, descriptors, threads, cycles, xruns, interruptions
            case rssKilobytes = "rss_kb"
        }
    }

    struct ApplianceReport: Codable {
        var device: String
        var samples: [Sample] = []
        var reloads = 0
        var reloadsRefused = 0
        var xrunsAcrossReloads = 0
        var requests = 0
        var requestsFailed = 0
        var deviceLosses = 0
        var deviceRecoveries = 0
        var exitStatus: Int32 = -1
        var stoppedCycles = 0
        var recordedFrames = 0
        var expectedFrames = 0
        var rssGrowthKilobytes = 0
        var descriptorGrowth = 0
        var threadGrowth = 0
        var failures: [String] = []

        enum CodingKeys: String, CodingKey {
            case device, samples, reloads, requests, failures
            case reloadsRefused = "reloads_refused"
            case xrunsAcrossReloads = "xruns_across_reloads"
            case requestsFailed = "requests_failed"
            case deviceLosses = "device_losses"
            case deviceRecoveries = "device_recoveries"
            case exitStatus = "exit_status"
            case stoppedCycles = "stopped_cycles"
            case recordedFrames = "recorded_frames"
            case expectedFrames = "expected_frames"
            case rssGrowthKilobytes = "rss_growth_kb"
            case descriptorGrowth = "descriptor_growth"
            case threadGrowth = "thread_growth"
        }

        /// Recorded ÷ expected frames (1: every frame the device cycled is in the file).
        var recordingCompleteness: Double { expectedFrames > 0 ? Double(recordedFrames) / Double(expectedFrames) : 0 }
    }

    struct Report: Codable {
        var seconds: Double
        var warmupSeconds: Double
        var rows: [BenchmarkRow]
        var appliances: [ApplianceReport]
        var notes: [String]

        enum CodingKeys: String, CodingKey {
            case seconds, rows, appliances, notes
            case warmupSeconds = "warmup_seconds"
        }
    }

    /// Growth is judged after this: the first minute of a long soak, a sixth of a short one (≥ 10 s).
    var warmupSeconds: Double { min(60, max(10, seconds / 6)) }

    func run(progress: (String) -> Void) throws -> Report {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-soak-\(getpid())").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var notes: [String] = []
        var appliances: [SoakAppliance] = []
        var reports: [ApplianceReport] = []
        for device in devices {
            do {
                appliances.append(try SoakAppliance(device: device, root: root))
                reports.append(ApplianceReport(device: device))
            } catch {
                notes.append("not soaked on \(device): \(error)")
            }
        }
        guard !appliances.isEmpty else { throw AudioError(.unspecified, notes.joined(separator: "; ")) }
        progress("soaking \(appliances.map(\.device).joined(separator: " and ")) for \(Int(seconds)) s")

        let start = HostTime.now.seconds
        var nextSample = 0.0, nextReload = reloadSeconds, nextUnplug = 30.0, nextProgress = 60.0
        var replugAt: Double?
        var pendingSIGHUP: [Int: Int] = [:]  // appliance index → xruns before a SIGHUP reload
        var tick = 0
        while true {
            let now = HostTime.now.seconds - start
            if now >= seconds { break }
            for (index, appliance) in appliances.enumerated() {
                guard appliance.isRunning else { continue }
                // Control traffic: one request per appliance per tick, rotating.
                let requests = [
                    #"{"cmd":"status"}"#, #"{"cmd":"meters"}"#,
                    #"{"cmd":"set","node":"gain","param":"gain","value":"\#(tick % 2 == 0 ? "-4 dB" : "-5 dB")","ramp":0.05}"#,
                    #"{"cmd":"get","node":"gain","param":"gain"}"#,
                ]
                reports[index].requests += 1
                do { try appliance.request(requests[tick % requests.count]) } catch {
                    reports[index].requestsFailed += 1
                    note(&reports[index], "request: \(error)")
                }
                if let before = pendingSIGHUP.removeValue(forKey: index), let after = try? appliance.status() {
                    reports[index].xrunsAcrossReloads += max(0, after.xruns - before)
                }
            }
            if now >= nextReload {
                nextReload += reloadSeconds
                let bySignal = (Int(now / reloadSeconds)) % 2 == 1
                for (index, appliance) in appliances.enumerated() where appliance.isRunning {
                    reports[index].reloads += 1
                    do {
                        try appliance.writeConfig()
                        let before = try appliance.status().xruns
                        if bySignal {
                            kill(appliance.pid, SIGHUP)
                            pendingSIGHUP[index] = before
                        } else {
                            try appliance.request(#"{"cmd":"reload"}"#)
                            reports[index].xrunsAcrossReloads += max(0, try appliance.status().xruns - before)
                        }
                    } catch {
                        reports[index].reloadsRefused += 1
                        note(&reports[index], "reload: \(error)")
                    }
                }
            }
            // The loopback device vanishes for two seconds every minute.
            if let at = replugAt, now >= at {
                for appliance in appliances { if let file = appliance.unplugFile { unlink(file) } }
                replugAt = nil
            } else if now >= nextUnplug && now + 2 < seconds - 3 {
                nextUnplug += 60
                for (index, appliance) in appliances.enumerated() {
                    guard let file = appliance.unplugFile else { continue }
                    // Counted only when the unplug file exists: a loss that was not caused is not one.
                    if FileManager.default.createFile(atPath: file, contents: nil) { reports[index].deviceLosses += 1 }
                }
                replugAt = now + 2
            }
            if now >= nextSample {
                nextSample += sampleSeconds
                for (index, appliance) in appliances.enumerated() where appliance.isRunning {
                    let resources = appliance.resources()
                    guard let status = try? appliance.status() else { continue }
                    reports[index].samples.append(Sample(
                        seconds: (now * 10).rounded() / 10, rssKilobytes: resources.rssKilobytes, descriptors: resources.descriptors,
                        threads: resources.threads, cycles: status.cycles, xruns: status.xruns, interruptions: status.interruptions))
                }
                if now >= nextProgress {
                    nextProgress += 60
                    let rss = reports.map { "\($0.device) \(($0.samples.last?.rssKilobytes ?? 0) / 1024) MB, \($0.samples.last?.xruns ?? 0) xruns" }
                    progress("\(Int(now)) s: " + rss.joined(separator: "; "))
                }
            }
            tick += 1
            usleep(250_000)
        }
        for appliance in appliances { if let file = appliance.unplugFile { unlink(file) } }
        usleep(UInt32(min(3, seconds / 10) * 1e6))  // a device unplugged near the end comes back

        for (index, appliance) in appliances.enumerated() {
            // A final sample, then stop: fade, finish the recording.
            if let status = try? appliance.status() {
                let resources = appliance.resources()
                reports[index].samples.append(Sample(
                    seconds: ((HostTime.now.seconds - start) * 10).rounded() / 10, rssKilobytes: resources.rssKilobytes,
                    descriptors: resources.descriptors, threads: resources.threads, cycles: status.cycles, xruns: status.xruns,
                    interruptions: status.interruptions))
            }
            reports[index].exitStatus = appliance.stop()
            let log = appliance.logText
            reports[index].deviceRecoveries = log.components(separatedBy: "device back after").count - 1
            // "stopped after N cycles": every cycle rendered a period into the recorder.
            if let range = log.range(of: #"stopped after [0-9]+ cycles"#, options: .regularExpression) {
                reports[index].stoppedCycles = Int(log[range].split(separator: " ")[2]) ?? 0
            }
            reports[index].expectedFrames = reports[index].stoppedCycles * appliance.period
            do {
                let file = try AudioFile.open(appliance.recording)
                reports[index].recordedFrames = file.frameCount
                try file.close()
            } catch {
                note(&reports[index], "recording: \(error)")
            }
            let settled = reports[index].samples.filter { $0.seconds >= warmupSeconds }
            if let first = settled.first {
                reports[index].rssGrowthKilobytes = (settled.map(\.rssKilobytes).max() ?? 0) - first.rssKilobytes
                // Descriptors and threads: last against first (a control connection being
                // served, or a device being re-opened, holds one for a moment — not a leak).
                reports[index].descriptorGrowth = settled.last!.descriptors - first.descriptors
                reports[index].threadGrowth = settled.last!.threads - first.threads
            } else {
                notes.append("\(appliance.device): no sample after the \(Int(warmupSeconds)) s warm-up; growth not measured")
            }
            if reports[index].exitStatus != 0 { notes.append("\(appliance.device): exit status \(reports[index].exitStatus): \(appliance.lastLogLine ?? "")") }
        }
        return Report(seconds: seconds, warmupSeconds: warmupSeconds, rows: rows(reports), appliances: reports, notes: notes)
    }

    /// Keeps the first few failures' messages (a broken appliance fails every request).
    private func note(_ report: inout ApplianceReport, _ message: String) {
        if report.failures.count < 10 { report.failures.append(message) }
    }

    private func rows(_ reports: [ApplianceReport]) -> [BenchmarkRow] {
        reports.flatMap { report -> [BenchmarkRow] in
            let name = "soak \(report.device)"
            var rows = [
                BenchmarkRow(metric: "\(name): RSS growth after warm-up", unit: "MB", sonora: Double(report.rssGrowthKilobytes) / 1024, anchor: "flat (issue 21)", anchorValue: 1, better: .lower),
                BenchmarkRow(metric: "\(name): descriptor growth after warm-up", unit: "fds", sonora: Double(report.descriptorGrowth), anchor: "flat", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): thread growth after warm-up", unit: "threads", sonora: Double(report.threadGrowth), anchor: "flat", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): xruns across reloads", unit: "xruns", sonora: Double(report.xrunsAcrossReloads), anchor: "none caused by reloads", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): xruns in all", unit: "xruns", sonora: Double(report.samples.last?.xruns ?? 0), anchor: "none", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): reloads refused or failed (of \(report.reloads))", unit: "reloads", sonora: Double(report.reloadsRefused), anchor: "none", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): control requests failed (of \(report.requests))", unit: "requests", sonora: Double(report.requestsFailed), anchor: "none", anchorValue: 0, better: .lower),
                BenchmarkRow(metric: "\(name): recording complete (recorded ÷ cycled frames)", unit: "ratio", sonora: report.recordingCompleteness, anchor: "every frame", anchorValue: 1, better: .higher),
            ]
            if report.deviceLosses > 0 {
                rows.append(BenchmarkRow(
                    metric: "\(name): device losses recovered (of \(report.deviceLosses))", unit: "ratio",
                    sonora: Double(report.deviceRecoveries) / Double(report.deviceLosses), anchor: "every one", anchorValue: 1, better: .higher))
            }
            return rows
        }
    }
}
