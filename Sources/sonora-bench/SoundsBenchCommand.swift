import ArgumentParser
import Foundation

struct SoundsBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sounds",
        abstract: "System sounds and players: start latency on the loopback device, many players mixed.",
        discussion: """
            (a) A system sound's play() to its first frame out of Sonora's loopback ALSA plugin,
            on a running device (goal: the device's buffer plus one period at most).
            (b) AudioPlayer.play() after prepareToPlay() to its first frame out, the same way.
            (c) --players AudioPlayers looping a 16-bit stereo WAV on one timer-paced null device
            (256-frame period): the process's CPU per second of audio ÷ as many bare render
            callbacks, one per input of a MultiChannelMixerUnit on the same kind of device, each
            converting its source's 16-bit frames from memory (the issue's anchor, goal ≤ 1.10);
            the same ÷ one render callback converting and summing every source itself
            (stricter, shown beside it); and underruns (goal 0).

            Examples:
              sonora-bench sounds
              sonora-bench sounds --players 64 --seconds 5 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Seconds per CPU slice.")
    var seconds = 10.0

    @Option(help: "Players mixed at once for the CPU row; 0 skips it.")
    var players = 64

    func validate() throws {
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be in 1…600") }
        guard players >= 0 && players <= 256 else { throw ValidationError("--players must be in 0…256") }
    }

    func run() throws {
        let benchmark = SoundsBenchmark(seconds: seconds, players: players)
        let (rows, notes) = try benchmark.run { message in
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
        BenchmarkReport.print(rows, json: json, notes: notes)
    }
}
