import ArgumentParser
import Foundation

struct QueueBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Audio queues: CPU against a bare render callback, start latency, many queues at once.",
        discussion: """
            (a) 48 kHz stereo 16-bit PCM played through an output queue (100 ms buffers
            from memory, decoded on the queue's thread) against a bare render callback doing
            the same conversion, each on a timer-paced null device (256-frame period),
            alternating in slices: the process's CPU time per second of audio, queue ÷ bare
            (goal ≤ 1.05). (b) start(): frames from the start to the first sample out of
            Sonora's loopback ALSA plugin (goal: the device's buffer plus one period at
            most). (c) --queues queues at once on one null device through the hidden mixer
            (AudioQueueOutput): underruns (goal 0) and CPU against one render callback
            converting and summing as many sources on one null device.

            Examples:
              sonora-bench queue
              sonora-bench queue --seconds 5 --rounds 2 --queues 32 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds per slice (each kind, each round).")
    var seconds = 10.0

    @Option(help: "Rounds of queue / bare slices for (a).")
    var rounds = 3

    @Option(help: "Queues playing at once for (c); 0 skips it.")
    var queues = 32

    func validate() throws {
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be in 1…600") }
        guard rounds >= 1 && rounds <= 100 else { throw ValidationError("--rounds must be in 1…100") }
        guard queues >= 0 && queues <= 256 else { throw ValidationError("--queues must be in 0…256") }
    }

    func run() throws {
        let benchmark = QueueBenchmark(seconds: seconds, rounds: rounds, queues: queues)
        let (rows, notes) = try benchmark.run { message in
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
