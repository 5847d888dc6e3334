import ArgumentParser
import Foundation
import Logging
import SonoraCore
import SonoraFile
import SonoraPipeline
import SonoraUnits

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a pipeline from a config file on its device until SIGINT/SIGTERM (the appliance process).",
        discussion: """
            Validates the config (exit 2 with every problem as file:line:column), builds
            the graph, starts the I/O thread on the configured device (or the null device
            with `fallback: null`), serves the control socket, and prints a status line each
            interval. SIGHUP re-reads the file and applies what changed (an invalid file is
            reported and the running pipeline kept). SIGINT/SIGTERM (and SIGUSR1, SIGUSR2,
            SIGQUIT) fade out, stop the device, finish recorded files and exit 0; a second
            signal skips the fade, the files are finished anyway. A recording that fails (a
            full disk) is logged at once, keeps what was written, shows in the status line
            and the `status` answer (recorder_failures), and makes the exit status 1.
            Recordings rewrite their header every second: after a SIGKILL the hidden partial
            `.NAME.partial-PID` reads (sox, Sonora) as all but the last second, and the next
            run moves it to NAME-recovered-PID.EXT, a WAV's sizes extended to every whole
            frame on disk (and says so).

            As a systemd service (dist/sonora.service, Type=notify) it speaks the notify
            protocol when NOTIFY_SOCKET is set: READY=1 after the first I/O cycle, STATUS=
            with each status line, WATCHDOG=1 (with WatchdogSec=) only while the I/O thread
            advances, RELOADING=1/READY=1 around reloads, STOPPING=1. Log lines carry
            journald's <N> priority prefixes and no timestamp when stderr is not a terminal
            (--log-format picks one).

            Examples:
              sonora run Configs/default.yaml
              sonora run Configs/default.yaml --seconds 5
              sonora run /etc/sonora/intercom.yaml --log-level debug
            """
    )

    @Argument(help: "The pipeline config (YAML).")
    var config: String

    @Option(help: "Stop by itself after this many seconds.")
    var seconds: Double?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Option(help: "Log lines: journal (<N> priority prefixes, for journald), plain (timestamped), or auto (journal when stderr is not a terminal).")
    var logFormat = "auto"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard ["auto", "journal", "plain"].contains(logFormat) else { throw ValidationError("unknown --log-format '\(logFormat)' (auto, journal, plain)") }
        if let seconds { guard seconds > 0 else { throw ValidationError("--seconds must be > 0") } }
    }

    func run() throws {
        PipelineRuntime.blockSignals()
        if logFormat == "journal" || (logFormat == "auto" && isatty(STDERR_FILENO) == 0) {
            LoggingSystem.bootstrap { JournalLogHandler(label: $0) }
        }
        var logger = Logger(label: "sonora.run")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let runtime = PipelineRuntime(configPath: config, options: .init(seconds: seconds), logger: logger) { line in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
        do {
            try runtime.run()
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(error.exitStatus)
        }
    }
}

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a pipeline config without running it.",
        discussion: """
            Reports every problem in one pass as file:line:column: message (unknown keys,
            wrong types, unknown kinds and parameters with the closest name, out-of-range
            values, dangling or cyclic connections, missing files, an `input` without a
            capture device, a control socket path the server could not take, status meters
            naming no node) and exits 2 — everything `sonora run` refuses before it opens
            the device; prints "ok" and exits 0 for a valid file. Nothing is created or
            opened. --offline checks the file as `sonora render` uses it.

            Examples:
              sonora check Configs/default.yaml
              sonora check --json my-pipeline.yaml
              sonora check --offline Configs/intercom.yaml
            """
    )

    @Argument(help: "The pipeline config (YAML).")
    var config: String

    @Flag(help: "Print JSON: {\"ok\": Bool, \"diagnostics\": [{\"file\", \"line\", \"column\", \"message\"}]}.")
    var json = false

    @Flag(help: "Check the config as `sonora render` uses it (`input` is a file, no device, no control socket).")
    var offline = false

    struct Report: Codable {
        struct Problem: Codable {
            var file: String
            var line: Int
            var column: Int
            var message: String
        }
        var ok: Bool
        var diagnostics: [Problem]
    }

    func run() throws {
        var diagnostics: [Diagnostic]
        do {
            let configuration = try ConfigurationParser.parse(contentsOf: config)
            diagnostics = PipelineBuilder.check(configuration, offline: offline)
        } catch {
            diagnostics = error.diagnostics
        }
        if json {
            let problems = diagnostics.map {
                Report.Problem(file: $0.location.file, line: $0.location.line, column: $0.location.column, message: $0.message)
            }
            try printJSON(Report(ok: diagnostics.isEmpty, diagnostics: problems))
        } else if diagnostics.isEmpty {
            print("\(config): ok")
        }
        if !diagnostics.isEmpty {
            if !json { FileHandle.standardError.write(Data((diagnostics.map(\.description).joined(separator: "\n") + "\n").utf8)) }
            throw ExitCode(2)
        }
    }
}

struct SchemaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Print the JSON Schema of pipeline config files (for editors).",
        discussion: """
            Examples:
              sonora schema > sonora-pipeline.schema.json
            """
    )

    func run() throws { print(ConfigurationSchema.json) }
}

struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render a pipeline offline, as fast as it runs: input file through the graph to an output file.",
        discussion: """
            The config's `input` node plays --input, `output` is written to --output (type
            from the extension; 24-bit integer, or 32-bit float for .caf). Deterministic: the
            same config and input give the same bytes. Length: --seconds, else the input's.
            An existing output is replaced only with --overwrite, and never when it is the
            config, the input or a file a node plays. A failed render leaves no output.

            Examples:
              sonora render Configs/effects-lv2.yaml --input voice.wav --output processed.wav
              sonora render Configs/default.yaml --output melody.wav --seconds 4 --json
              sonora render Configs/mixer.yaml --output mix.wav --seconds 2 --overwrite
            """
    )

    @Argument(help: "The pipeline config (YAML).")
    var config: String

    @Option(help: "The file the `input` node plays.")
    var input: String?

    @Option(help: "The file to write.")
    var output: String

    @Option(help: "Seconds to render (default: the input's length).")
    var seconds: Double?

    @Flag(help: "Replace the output file if it exists.")
    var overwrite = false

    @Flag(help: "Print a JSON summary.")
    var json = false

    struct Summary: Codable {
        var output: String
        var frames: Int
        var seconds: Double
        var sampleRate: Int
        var channels: Int
    }

    func run() throws {
        var configuration: PipelineConfiguration
        do { configuration = try ConfigurationParser.parse(contentsOf: config) } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }
        if let input {
            // A bad --input is the command line's problem, not the config's: say so, naming the file.
            do { try AudioFile.open(input).close() } catch { throw CLIError("--input \(input): \(error.message)") }
            configuration.device.inputFile = URL(fileURLWithPath: input).standardizedFileURL.path
        }
        // Everything that can be refused is refused before the build creates any file.
        if let seconds { guard seconds > 0 && seconds <= 86400 else { throw CLIError("--seconds must be in (0, 86400]") } }
        let url = URL(fileURLWithPath: output)
        guard let type = AudioFileType(pathExtension: url.pathExtension) else {
            throw CLIError("\(output): cannot tell the file type from the extension (use .wav, .aif, .caf, .flac)")
        }
        try OutputFile.check(output, inputs: [config] + (input.map { [$0] } ?? []), overwrite: overwrite)
        let pipeline: BuiltPipeline
        do { pipeline = try PipelineBuilder.build(configuration, target: .offline) } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            throw ExitCode(2)
        }
        let rate = configuration.engine.sampleRate
        let frames: Int
        if let seconds {
            frames = Int(seconds * Double(rate))
        } else if let inputFrames = pipeline.inputFrames {
            frames = inputFrames
        } else {
            throw CLIError("give --seconds, or an --input whose length sets it")
        }
        for stale in pipeline.staleRecordings { FileHandle.standardError.write(Data("sonora: \(stale)\n".utf8)) }
        // The files the nodes play and record are inputs too.
        let nodeFiles = pipeline.nodes.compactMap { ($0.unit as? FilePlayerUnit)?.path ?? ($0.unit as? FileRecorderUnit)?.path }
        try OutputFile.check(output, inputs: nodeFiles, overwrite: overwrite)
        let channels = configuration.engine.channels
        let format = type == .caf
            ? StreamFormat.linearPCM(sampleRate: Double(rate), channels: channels, sample: .float32)
            : StreamFormat.linearPCM(sampleRate: Double(rate), channels: channels, sample: .int24, bigEndian: type == .aiff)
        for stale in AudioFile.recoverStalePartials(of: output) { FileHandle.standardError.write(Data("sonora: \(stale)\n".utf8)) }
        let file: AudioFile
        do { file = try AudioFile.create(output, type: type, format: format, erase: overwrite) } catch { throw CLIError("\(error)") }
        do {
            try pipeline.renderOffline(frames: frames) { list in try file.writeFrames(from: list) }
            try file.close()
            try pipeline.finishRecorders()
        } catch {
            // Nothing half-rendered appears under the output's name, and no partial stays.
            file.abandon()
            try? pipeline.finishRecorders()
            throw CLIError("\(error)")
        }
        pipeline.graph.uninitialize()
        if json {
            try printJSON(Summary(output: output, frames: frames, seconds: Double(frames) / Double(rate), sampleRate: rate, channels: channels))
        }
    }
}
