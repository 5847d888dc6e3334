import Foundation
import SonoraTestSupport
import Testing

// The CLI suites' short names for SonoraTestSupport's runner (CLIRunner, CLIOutcome).

/// The `sonora` binary `swift build` made beside the tests; nil if it was not built.
let sonoraBinary = CLIRunner.sonoraBinary

typealias Outcome = CLIOutcome

/// Runs `executable` to the end (or its timeout) and keeps its exit status and output.
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Outcome {
    try CLIRunner(executable: executable).run(arguments, environment: environment)
}

func sonora(_ arguments: String...) throws -> Outcome {
    try runProcess(sonoraBinary!, arguments)
}

@Suite("sonora CLI", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct CLITests {
    @Test(arguments: [["--help"], ["units", "--help"], ["info", "--help"], ["convert", "--help"], ["devices", "--help"], ["latency", "--help"]])
    func everyCommandHasHelpWithAnExample(arguments: [String]) throws {
        let outcome = try runProcess(sonoraBinary!, arguments)
        #expect(outcome.status == 0)
        #expect(outcome.stdout.contains("Examples:") && outcome.stdout.contains("sonora "))
    }

    @Test func versionAnswers() throws {
        let outcome = try sonora("--version")
        #expect(outcome.status == 0 && outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0.1.0")
    }

    @Test func unitsListsTheBuiltInsAsJSON() throws {
        let outcome = try sonora("units", "--json")
        #expect(outcome.status == 0)
        let rows = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]]
        let components = Set(rows?.compactMap { $0["component"] as? String } ?? [])
        #expect(components.isSuperset(of: ["auou/genr/appl", "aufc/conv/appl", "aumx/mcmx/appl", "aufx/ipeq/appl"]))
        let detail = try sonora("units", "MultiChannelMixer", "--json")
        #expect(detail.status == 0 && detail.stdout.contains("\"identifier\" : \"volume\""))
    }

    @Test func failuresExitNonZeroWithTheReasonOnStderr() throws {
        let missingUnit = try sonora("units", "NoSuchUnit")
        #expect(missingUnit.status != 0 && missingUnit.stderr.contains("no audio unit named 'NoSuchUnit'"))
        #expect(missingUnit.stdout.isEmpty)
        let missingFile = try sonora("info", "/nonexistent/take.wav")
        #expect(missingFile.status != 0 && missingFile.stderr.contains("file not found (-43): /nonexistent/take.wav"))
    }

    @Test func infoDescribesAFile() throws {
        let folder = try TemporaryFolder(prefix: "sonora-cli")
        let path = folder.path("take.wav")
        // A 16-bit mono WAV of 800 silent frames, written by hand.
        var bytes = [UInt8]()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        bytes += Array("RIFF".utf8); append(UInt32(36 + 1600)); bytes += Array("WAVE".utf8)
        bytes += Array("fmt ".utf8); append(UInt32(16)); append(UInt16(1)); append(UInt16(1)); append(UInt32(8000))
        append(UInt32(16000)); append(UInt16(2)); append(UInt16(16))
        bytes += Array("data".utf8); append(UInt32(1600)); bytes += [UInt8](repeating: 0, count: 1600)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let outcome = try sonora("info", "--json", path)
        #expect(outcome.status == 0)
        let report = try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        #expect(report?["type"] as? String == "WAVE")
        #expect(report?["format"] as? String == "LEI16@8000")
        #expect(report?["frames"] as? Int == 800)
    }
}

@Suite("sonora convert", .enabled(if: sonoraBinary != nil, "the sonora binary is not built"))
struct ConvertCLITests {
    @Test func convertsContainerFormatAndRateAndRefusesToOverwrite() throws {
        let folder = try TemporaryFolder(prefix: "sonora-convert")
        let directory = folder.url
        // 0.5 s of a 16-bit stereo ramp at 44.1 kHz, written by hand.
        let frames = 22050
        var bytes = [UInt8]()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        bytes += Array("RIFF".utf8); append(UInt32(36 + frames * 4)); bytes += Array("WAVE".utf8)
        bytes += Array("fmt ".utf8); append(UInt32(16)); append(UInt16(1)); append(UInt16(2)); append(UInt32(44100))
        append(UInt32(44100 * 4)); append(UInt16(4)); append(UInt16(16))
        bytes += Array("data".utf8); append(UInt32(frames * 4))
        for frame in 0..<frames { append(Int16(truncatingIfNeeded: frame)); append(Int16(truncatingIfNeeded: -frame)) }
        let input = directory.appendingPathComponent("in.wav").path
        try Data(bytes).write(to: URL(fileURLWithPath: input))

        let caf = directory.appendingPathComponent("out.caf").path
        let first = try sonora("convert", "--json", input, caf, "-f", "caff", "-d", "BEI24")
        #expect(first.status == 0, "\(first.stderr)")
        let info = try sonora("info", "--json", caf)
        let report = try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any]
        #expect(report?["type"] as? String == "caff")
        #expect(report?["format"] as? String == "BEI24@44100x2")
        #expect(report?["frames"] as? Int == frames)

        let resampled = directory.appendingPathComponent("16k.wav").path
        #expect(try sonora("convert", input, resampled, "-d", "LEI16@16000x1").status == 0)
        let small = try JSONSerialization.jsonObject(with: Data(try sonora("info", "--json", resampled).stdout.utf8)) as? [String: Any]
        #expect(small?["format"] as? String == "LEI16@16000")
        #expect(abs((small?["frames"] as? Int ?? 0) - 8000) <= 2)

        let again = try sonora("convert", input, caf)
        #expect(again.status != 0 && again.stderr.contains("exists; use --overwrite"))
        let impossible = directory.appendingPathComponent("float.flac").path
        let refused = try sonora("convert", input, impossible, "-d", "LEF32")
        #expect(refused.status != 0 && refused.stderr.contains("cannot hold LEF32"))
        #expect(!FileManager.default.fileExists(atPath: impossible))
        let missing = try sonora("convert", directory.appendingPathComponent("nope.wav").path, caf, "--overwrite")
        #expect(missing.status != 0 && missing.stderr.contains("file not found (-43)"))
    }
}
