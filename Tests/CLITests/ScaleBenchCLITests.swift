import Foundation
import SonoraTestSupport
import Testing

/// `sonora-bench scale`: help, a quick run's rows, the series file and the SVG plot, bad
/// options. Timings are never asserted; only that each row and point is there and well formed.
@Suite("sonora-bench scale", .serialized, .enabled(if: sonoraBenchBinary != nil, "sonora-bench is not built"))
struct ScaleBenchCLITests {
    typealias Row = BenchmarkJSONRow

    struct Series: Decodable {
        var name: String
        var unit_name: String
        var cost_unit: String
        var sizes: [Int]
        var costs: [Double]
    }

    func bench(_ arguments: String...) throws -> Outcome { try runProcess(sonoraBenchBinary!, arguments) }

    @Test("--help explains the cases with an example")
    func help() throws {
        let help = try bench("scale", "--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:") && help.stdout.contains("sonora-bench scale --quick --json"))
    }

    @Test("--quick --json prints a row per case and size; --series and --svg hold the same points")
    func quickRun() throws {
        let folder = try TemporaryFolder(prefix: "sonora-scale-cli")
        let seriesPath = folder.path + "/scale.json"
        let svgPath = folder.path + "/scale.svg"
        let outcome = try bench("scale", "--quick", "--json", "--series", seriesPath, "--svg", svgPath)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let rows = try JSONDecoder().decode([Row].self, from: Data(outcome.stdout.utf8))
        let series = try JSONDecoder().decode([Series].self, from: Data(contentsOf: URL(fileURLWithPath: seriesPath)))
        let names = series.map(\.name)
        #expect(names.contains { $0.hasPrefix("graph:") } && names.contains { $0.hasPrefix("mixer:") })
        #expect(names.contains { $0.hasPrefix("LV2:") } && names.contains { $0.hasPrefix("queues:") })
        #expect(names.contains { $0.hasPrefix("players:") })
        #expect(rows.count == series.reduce(0) { $0 + $1.sizes.count })
        for line in series {
            #expect(line.sizes.count == line.costs.count && line.sizes.count >= 2, "\(line.name)")
            #expect(line.costs.allSatisfy { $0.isFinite && $0 > 0 }, "\(line.name): \(line.costs)")
            for size in line.sizes {
                #expect(rows.contains { $0.metric.hasPrefix("\(line.name), \(size) \(line.unit_name)") }, "\(line.name) at \(size)")
            }
        }
        for row in rows {
            #expect(row.unit == "ns" && row.better == "lower" && row.sonora > 0 && row.anchor_value > 0, "\(row.metric)")
        }
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>\n"))
        #expect(svg.components(separatedBy: "<polyline").count - 1 == series.count)
        #expect(svg.components(separatedBy: "<circle").count - 1 == rows.count)
    }

    @Test("bad options: non-zero with the reason")
    func badOptions() throws {
        let trials = try bench("scale", "--trials", "0")
        #expect(trials.status != 0 && trials.stderr.contains("--trials must be in 1…50"))
        let folder = try bench("scale", "--svg", "/nonexistent-folder/plot.svg")
        #expect(folder.status != 0 && folder.stderr.contains("/nonexistent-folder"))
        // A file that exists is never replaced unless asked; anything but a regular file never.
        let scratch = try TemporaryFolder(prefix: "sonora-scale-bad")
        let kept = scratch.path + "/kept.svg"
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: kept))
        let existing = try bench("scale", "--quick", "--svg", kept)
        #expect(existing.status != 0 && existing.stderr.contains("exists; give --overwrite"), "\(existing.stderr)")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == "mine\n")
        let folderPath = try bench("scale", "--quick", "--svg", scratch.path, "--overwrite")
        #expect(folderPath.status != 0 && folderPath.stderr.contains("not a regular file"), "\(folderPath.stderr)")
        let same = try bench("scale", "--quick", "--svg", scratch.path + "/a", "--series", scratch.path + "/a")
        #expect(same.status != 0 && same.stderr.contains("the same file"), "\(same.stderr)")
    }
}
