import ArgumentParser
import Foundation

struct ScaleBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "How the cost per unit grows with graph size, mixer inputs, LV2 instances, queues and players.",
        discussion: """
            Renders, offline and through the public AudioGraph API, chains of 1, 16,
            64, 256 and 1,024 gain units; one MultiChannelMixerUnit with 2 … 256
            inputs; chains of 1 … 128 instances of one LV2 plugin; and plays 1 … 64
            AudioQueues and AudioPlayers on one timer-paced null device (process CPU).
            Each row is the cost per unit (ns) at one size, against the case's cost
            at its smallest size + 10 % (a flat line meets it; lower is better).
            --series writes every case's sizes and costs as JSON; --svg a plot of
            them (cost per unit against size, both axes logarithmic).

            Examples:
              sonora-bench scale
              sonora-bench scale --json --series scale.json --svg docs/scale.svg
              sonora-bench scale --quick --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Flag(help: "Few sizes, few cycles, short device runs (a few seconds in all; for tests).")
    var quick = false

    @Option(help: "Trials per size; the median is reported.")
    var trials = 5

    @Option(help: "The LV2 plugin whose instances are chained (one input and one output bus).")
    var plugin = "http://lv2plug.in/plugins/eg-amp"

    @Option(help: "Write the series (case, sizes, costs) as JSON to this file.")
    var series: String?

    @Option(help: "Write the plot as SVG to this file.")
    var svg: String?

    @Flag(help: "Replace --series or --svg files that exist (never anything but a regular file).")
    var overwrite = false

    func validate() throws {
        guard (1...50).contains(trials) else { throw ValidationError("--trials must be in 1…50") }
        for path in [series, svg].compactMap({ $0 }) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError("\(path): the folder \(folder) does not exist")
            }
            var info = stat()
            if lstat(path, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFREG else { throw ValidationError("\(path) exists and is not a regular file; it is never replaced") }
                guard overwrite else { throw ValidationError("\(path) exists; give --overwrite to replace it") }
            }
        }
        if let series, let svg, series == svg { throw ValidationError("--series and --svg name the same file, \(svg)") }
    }

    func run() throws {
        let benchmark = ScaleBenchmark(
            quick: quick, trials: quick ? min(trials, 3) : trials, deviceSeconds: quick ? 0.3 : 1.5, lv2Plugin: plugin)
        let (rows, notes, lines) = try benchmark.run { message in
            FileHandle.standardError.write(Data("sonora-bench scale: \(message)\n".utf8))
        }
        if let series {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try write(try encoder.encode(lines), to: series)
        }
        if let svg {
            let title = "Sonora: cost per unit against size (sonora-bench scale\(quick ? " --quick" : ""))"
            try write(Data(ScalePlot.svg(lines, title: title).utf8), to: svg)
        }
        BenchmarkReport.print(rows, json: json, notes: notes)
    }

    /// Whole or not at all: a temporary beside the file, renamed over it.
    func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
        do {
            try data.write(to: temporary)
        } catch {
            unlink(temporary.path)
            throw ValidationError("\(path): cannot write (\(error.localizedDescription))")
        }
        guard rename(temporary.path, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw ValidationError("\(path): cannot write (\(reason))")
        }
    }
}
