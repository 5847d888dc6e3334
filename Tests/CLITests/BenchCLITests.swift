import Foundation
import Testing

/// The `sonora-bench` binary `swift build` made beside `sonora`.
let sonoraBenchBinary: String? = sonoraBinary.map { URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("sonora-bench").path }
    .flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

/// The shared libraries an ELF binary names as NEEDED (`readelf -d`), e.g. "libjack.so.0".
func neededLibraries(_ binary: String) throws -> [String] {
    let outcome = try runProcess("/usr/bin/readelf", ["-d", binary])
    return outcome.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
        guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
        return String(line[line.index(after: open)..<close])
    }
}

// Enabled by `sonora` alone: a build that makes no sonora-bench beside it fails here.
@Suite("sonora-bench, a program of its own", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct BenchCLITests {
    static let benchmarks = ["ring", "graph", "files", "io", "lv2", "voice"]
    /// The anchors' libraries: the benchmarks need them, the appliance must not.
    /// (libjack is no longer only an anchor: the HAL's `jack:` and `netjack:` drivers link
    /// libjack and libjacknet, so `sonora` needs it too.)
    static let anchorLibraries = ["libspeexdsp", "libkissfft"]

    func bench(_ arguments: String...) throws -> Outcome {
        try runProcess(try #require(sonoraBenchBinary, "sonora-bench is built beside sonora"), arguments)
    }

    @Test func sonoraHasNoBenchCommand() throws {
        let help = try sonora("--help")
        #expect(help.status == 0)
        let subcommands = help.stdout.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        #expect(!subcommands.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("bench") })
        let bench = try sonora("bench", "ring")
        #expect(bench.status != 0)
    }

    @Test func sonoraBenchListsTheSixBenchmarks() throws {
        let help = try bench("--help")
        #expect(help.status == 0)
        let subcommands = help.stdout.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let listed = subcommands.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(Set(listed).isSuperset(of: Self.benchmarks))
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench ring --json"))
    }

    @Test(arguments: benchmarks)
    func everyBenchmarkHasHelpWithAnExample(benchmark: String) throws {
        let help = try bench(benchmark, "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench \(benchmark)"))
    }

    @Test func badOptionsExitNonZeroWithTheReasonOnStderr() throws {
        let outcome = try bench("ring", "--trials", "0")
        #expect(outcome.status != 0 && outcome.stderr.contains("--trials must be in 1…100"))
    }

    /// `graph --only CASE` renders one case alone (for a profiler) and says how long a cycle took.
    @Test func graphRendersOneCaseAlone() throws {
        let text = try bench("graph", "--only", "chain-graph", "--units", "8", "--cycles", "50")
        #expect(text.status == 0 && text.stdout.hasPrefix("chain-graph: ") && text.stdout.contains("µs per cycle (50 cycles)"), "\(text.stderr)")
        let json = try bench("graph", "--only", "mixer-loop", "--cycles", "50", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["case"] as? String == "mixer-loop" && object?["cycles"] as? Int == 50)
        #expect((object?["microseconds_per_cycle"] as? Double).map { $0 > 0 && $0.isFinite } == true)
        // --blocks defaults to at most --cycles; one given outside 1…cycles is refused.
        let blocks = try bench("graph", "--cycles", "10", "--blocks", "20")
        #expect(blocks.status != 0 && blocks.stderr.contains("--blocks must be in 1…cycles"), "\(blocks.stderr)")
        let unknown = try bench("graph", "--only", "nothing")
        #expect(unknown.status != 0 && unknown.stderr.contains("chain-graph"))
    }

    /// The appliance links only what it uses: the benchmark anchors live in sonora-bench.
    @Test func onlySonoraBenchLinksTheAnchors() throws {
        let appliance = try neededLibraries(sonoraBinary!)
        #expect(!appliance.isEmpty)
        for library in Self.anchorLibraries {
            #expect(!appliance.contains { $0.hasPrefix(library) }, "sonora links \(library)")
        }
        let benchmarks = try neededLibraries(try #require(sonoraBenchBinary, "sonora-bench is built beside sonora"))
        for library in Self.anchorLibraries {
            #expect(benchmarks.contains { $0.hasPrefix(library) }, "sonora-bench does not link \(library)")
        }
    }
}
