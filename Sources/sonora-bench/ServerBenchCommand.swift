import ArgumentParser
import Foundation

struct ServerBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "The appliance as session server: CPU and latency of client streams, beside in-process sources and JACK2.",
        discussion: """
            Runs --clients sources of jack_simple_client's stereo sine three ways, at 48 kHz and
            --period frames, alternating in slices of --seconds for --rounds rounds: mixed
            in-process (render callbacks on one mixer, one graph, the timer-paced null device);
            as JACK2 clients on jackd's dummy backend (threads of one process, each its own
            jack_client_t, SCHED_FIFO as Sonora's I/O thread; needs jackd2 and root for the
            private /dev/shm); and as client streams on the appliance. Rows: CPU per source per
            cycle in-process beside JACK's per client (jackd + clients); the round trip of a
            duplex sonoraloop device in-process; the appliance's added round trip (goal ≤ one
            period) and its CPU ÷ in-process (goal ≤ 1.15), and beside it the floor of that ratio
            for any design that wakes one process per client each cycle (--clients processes
            blocked on an eventfd each, woken every period by one thread, nothing else; its CPU
            added to in-process). The appliance is `sonora run` (the
            binary beside sonora-bench) with a session section on a private socket; its clients
            are --clients programs, one `sonora:` device each. CPU counts every process: the
            appliance's and each client program's. A row that could not be measured (an xrun in
            the round trip, no JACK2, no sonoraloop plugin) prints as "not measured" with the
            reason (with --json: on stderr, with the notes).

            Examples:
              sonora-bench server
              sonora-bench server --clients 16 --seconds 2 --rounds 1 --json
            """
    )

    @Flag(help: "Print the rows as a JSON array.")
    var json = false

    @Option(help: "Clients (sources) at once.")
    var clients = 16

    @Option(help: "Seconds per slice (each contender, each round).")
    var seconds = 10.0

    @Option(help: "Rounds of alternating slices.")
    var rounds = 3

    @Option(help: "Period, frames (48 kHz, 2 periods).")
    var period = 256

    func validate() throws {
        guard clients >= 2 && clients <= 256 else { throw ValidationError("--clients must be in 2…256") }
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be in 1…600") }
        guard rounds >= 1 && rounds <= 100 else { throw ValidationError("--rounds must be in 1…100") }
        guard period >= 16 && period <= 8192 && period & (period - 1) == 0 else {
            throw ValidationError("--period must be a power of two in 16…8192 (JACK's dummy backend takes powers of two)")
        }
    }

    func run() throws {
        let benchmark = ServerBenchmark(clients: clients, seconds: seconds, rounds: rounds, period: period)
        let (rows, pending, notes) = try benchmark.run { message in
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
        let pendingLines = pending.map { "not measured: \($0.metric) [\($0.unit); goal: \($0.goal)] — \($0.reason)" }
        if json {
            // stdout stays the rows alone; what was not measured, and why, goes to stderr.
            for line in pendingLines + notes { FileHandle.standardError.write(Data((line + "\n").utf8)) }
            BenchmarkReport.print(rows, json: true)
        } else {
            BenchmarkReport.print(rows, json: false, notes: pendingLines + notes)
        }
    }
}
