import ArgumentParser
import CServerBenchAnchor
import Foundation

/// `sonora-bench io`'s JACK2 lateness anchor, run inside scripts/with-jack-dummy.sh: one
/// client records when its process callback is woken each cycle; prints a `JackWakesReport`
/// (the wake-ups' lateness by the same straight-line fit as Sonora's I/O thread's).
struct JackWakesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jack-wakes",
        abstract: "(internal) a JACK client that records its wake-ups on a running jackd; prints their lateness as JSON.",
        discussion: """
            Example (what `sonora-bench io` runs):
              scripts/with-jack-dummy.sh 48000 128 sonora-bench jack-wakes --seconds 10 --period 128
            """,
        shouldDisplay: false
    )

    @Option(parsing: .unconditional, help: "Seconds to record.")
    var seconds = 10.0

    @Option(help: "The server's period (frames at 48 kHz), for the fit's xrun gaps.")
    var period = 256

    func validate() throws {
        guard seconds > 0 && seconds <= 3600 else { throw ValidationError("--seconds must be in (0, 3600]") }
        guard (16...8192).contains(period) else { throw ValidationError("--period must be in 16…8192") }
    }

    func run() throws {
        let capacity = Int(seconds * 48000) / period * 2 + 64
        var times = [UInt64](repeating: 0, count: capacity)
        var count = 0
        var xruns: Int32 = 0
        var error = [CChar](repeating: 0, count: 256)
        let status = times.withUnsafeMutableBufferPointer { buffer in
            sonora_jack_wake_times_run(seconds, buffer.baseAddress, capacity, &count, &xruns, &error, error.count)
        }
        guard status == 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            FileHandle.standardError.write(Data("sonora-bench jack-wakes: \(message)\n".utf8))
            throw ExitCode.failure
        }
        let lateness = WakeRecorder.lateness(of: Array(times.prefix(count)), periodSeconds: Double(period) / 48000, bufferPeriods: 2)
        print(String(decoding: try JSONEncoder().encode(JackWakesReport(cycles: count, xruns: Int(xruns), latenessNanoseconds: lateness)), as: UTF8.self))
    }
}

/// What `jack-wakes` prints.
struct JackWakesReport: Codable {
    var cycles: Int
    var xruns: Int
    var latenessNanoseconds: [Double]
}
