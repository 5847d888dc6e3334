import ArgumentParser
import CServerBenchAnchor
import Foundation

/// `sonora-bench server`'s JACK2 anchor, run inside scripts/with-jack-dummy.sh (which gives
/// jackd's pid in SONORA_JACK_PID): prints one JSON object, a `JackAnchorReport`.
struct JackClientsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jack-clients",
        abstract: "(internal) jack_simple_client-style clients on a running jackd; prints their measurement as JSON.",
        discussion: """
            Example (what `sonora-bench server` runs):
              scripts/with-jack-dummy.sh 48000 256 sonora-bench jack-clients --clients 16 --seconds 10
            """,
        shouldDisplay: false
    )

    @Option(help: "Clients, each its own jack_client_t.")
    var clients = 16

    @Option(help: "Seconds to measure.")
    var seconds = 10.0

    func validate() throws {
        guard clients >= 2 && clients <= 256 else { throw ValidationError("--clients must be in 2…256") }
        guard seconds > 0 && seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600]") }
    }

    func run() throws {
        let jackd = ProcessInfo.processInfo.environment["SONORA_JACK_PID"].flatMap { Int32($0) } ?? 0
        var result = sonora_jack_anchor_result()
        guard sonora_jack_anchor_run(Int32(clients), seconds, jackd, &result) == 0 else {
            let message = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            FileHandle.standardError.write(Data("sonora-bench jack-clients: \(message)\n".utf8))
            throw ExitCode.failure
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(JackAnchorReport(result)), as: UTF8.self))
    }
}
