import Foundation
import SonoraTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Libraries a pipeline does not use stay unmapped (`sonora run` locks what it maps): JACK opens
/// on first use (CJackLoader). FFmpeg does too (CFFmpegLoader), but SwiftPM's link line still
/// names libavformat, which only the package build drops (scripts/build-deb.sh; deb-test checks it).
@Suite("libraries open on first use", .serialized, .enabled(if: CLIRunner.sonora != nil, "needs the sonora binary"))
struct LibraryLoadingCLITests {
    let scratch = try! TemporaryFolder(prefix: "sonora-libraries")

    /// The shared objects mapped by `pid` and its children (`sonora run` supervises a child).
    static func mappedLibraries(of pid: Int32) -> Set<String> {
        var pids = [pid]
        if let children = readWhole("/proc/\(pid)/task/\(pid)/children") {
            pids += children.split(separator: " ").compactMap { Int32($0) }
        }
        var names: Set<String> = []
        for pid in pids {
            guard let maps = readWhole("/proc/\(pid)/maps") else { continue }
            for line in maps.split(separator: "\n") {
                guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.hasPrefix("/") else { continue }
                names.insert(String(path.split(separator: "/").last!))
            }
        }
        return names
    }

    /// A /proc file read to its end (Foundation's whole-file reads trust the size procfs
    /// reports, 0, and return a part).
    static func readWhole(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The null device, and ALSA's `default` falling back to null as the shipped config does
    /// (/etc/sonora/sonora.yaml): opening an ALSA PCM must not load libjack either (Sonora
    /// routes libjack's messages, and used to load it for that whenever ALSA was used).
    @Test(
        "a pipeline that uses no JACK device maps neither libjack nor libjacknet (nor libdb behind them)",
        arguments: ["{playback: \"null\"}", "{playback: default, fallback: \"null\"}"])
    func pipelineWithoutJACKMapsNoJACK(device: String) throws {
        let path = scratch.path + "/pipeline.yaml"
        let socket = "/tmp/sonora-libraries-\(getpid()).sock"
        try """
            engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
            device: \(device)
            nodes:
              - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
            connections:
              - {from: tone, to: output}
            control: {socket: \(socket)}
            status: {interval: 0}
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try CLIRunner(executable: CLIRunner.sonoraBinary!).launch(["run", path, "--seconds", "30"])
        defer {
            if run.isRunning { _ = run.signal(SIGINT) }
            _ = run.wait(timeout: 30)
        }
        // Running: the daemon answers with cycles counted (its device open and its I/O thread going).
        func cycles() throws -> Int? {
            let outcome = try CLIRunner(executable: CLIRunner.sonoraBinary!, timeout: 30).run(["ctl", "--socket", socket, "--json", "status"])
            guard outcome.status == 0, let answer = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any] else { return nil }
            return (answer["status"] as? [String: Any])?["cycles"] as? Int
        }
        var counted = try cycles()
        for _ in 0..<200 where (counted ?? 0) == 0 && run.isRunning {
            usleep(50_000)
            counted = try cycles()
        }
        try #require((counted ?? 0) > 0, "the daemon did not run: \(run.isRunning ? "" : run.wait(timeout: 5).stderr)")
        let libraries = Self.mappedLibraries(of: run.processIdentifier)
        try #require(libraries.contains { $0.hasPrefix("libasound.so") }, "no libasound in \(libraries.sorted())")
        let unwanted = libraries.filter { $0.hasPrefix("libjack") || $0.hasPrefix("libjacknet") || $0.hasPrefix("libdb-") }
        #expect(unwanted.isEmpty, "mapped without being used: \(unwanted.sorted())")
    }
}
