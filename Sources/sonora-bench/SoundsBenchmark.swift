import Foundation
import SonoraCore
import SonoraHAL
import SonoraToolbox
import SonoraUnits
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The player and system sounds (issue 18's benchmarks), on Sonora's loopback ALSA plugin
/// and the timer-paced null device:
/// (a) a system sound's `play()` to its first frame out of the loopback, in frames, against
///     the device's buffer plus one period;
/// (b) `AudioPlayer.play()` after `prepareToPlay()` to the first frame out, the same way;
/// (c) N players mixed on one null device: process CPU per second of audio ÷ N bare render
///     callbacks on the inputs of one multichannel mixer on the same kind of device (the
///     issue's anchor, goal ≤ 1.10); the same ÷ one render callback converting and summing N
///     sources itself (stricter, shown beside it); and the players' underruns (goal 0).
struct SoundsBenchmark {
    var seconds: Double
    var players: Int
    var period = 256
    var periods = 2

    static let rate = 48000.0

    func run(progress: (String) -> Void) throws -> (rows: [BenchmarkRow], notes: [String]) {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-sounds-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let click = folder.appendingPathComponent("click.wav").path
        try Self.writeWAV(click, samples: (0..<2400).map { $0 % 48 < 24 ? 8000 : -8000 }, channels: 1)
        let buffer = period * periods

        if ALSAConfiguration.loopPluginPath != nil {
            progress("system sound and player start latency on sonoraloop, 5 runs each …")
            let sound = try SystemSound(contentsOf: URL(fileURLWithPath: click))
            var soundLatencies: [Int] = []
            var playerLatencies: [Int] = []
            for _ in 0..<5 {
                if let frames = try latency({ output in
                    let player = SystemSoundPlayer(output: output)
                    // The first play opens the voice and starts the device; the second is measured.
                    let done = DispatchSemaphore(value: 0)
                    try player.play(sound) { done.signal() }
                    _ = done.wait(timeout: .now() + 5)
                    usleep(100_000)
                    return { try player.play(sound) }
                }) { soundLatencies.append(frames) }
                if let frames = try latency({ output in
                    let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: click), output: output)
                    // Another player keeps the device running, as on an appliance.
                    let keeper = try AudioPlayer(contentsOf: URL(fileURLWithPath: click), output: output)
                    keeper.volume = 0
                    keeper.numberOfLoops = -1
                    try keeper.play()
                    try player.prepareToPlay()
                    usleep(100_000)
                    return { try player.play(); _ = keeper }
                }) { playerLatencies.append(frames) }
            }
            for (label, values) in [("system sound play()", soundLatencies), ("AudioPlayer play() after prepareToPlay()", playerLatencies)] {
                if let worst = values.max() {
                    rows.append(BenchmarkRow(metric: "\(label) to first frame out of sonoraloop (worst of \(values.count))", unit: "frames", sonora: Double(worst),
                                             anchor: "device buffer \(buffer) + one period (goal)", anchorValue: Double(buffer + period), better: .lower))
                    notes.append("\(label): \(values.map(String.init).joined(separator: ", ")) frames per run without an xrun; period \(period) × \(periods)")
                } else {
                    notes.append("\(label): every run had an xrun; not measured")
                }
            }
        } else {
            notes.append("latency rows: the sonoraloop plugin is not built beside sonora-bench (swift build -c release --product asound_module_pcm_sonoraloop)")
        }
        if players > 0 {
            progress("\(players) players on one null device, then \(players) render callbacks on a mixer's inputs, then one callback summing \(players) sources, \(seconds) s each …")
            let song = folder.appendingPathComponent("song.wav").path
            let source = QueueBenchmark.sourceSamples(seconds: 10)
            try Self.writeWAV(song, samples: source, channels: 2)
            let mixed = try measurePlayers(song)
            let buses = try measureBusCallbacks(sources: players, samples: source)
            let anchor = QueueBenchmark(seconds: seconds, rounds: 1, queues: players)
            let bare = try anchor.measure(.bareMix(players), count: 1, source: source)
            let playersCPU = mixed.cpuSeconds / mixed.audioSeconds, busesCPU = buses.cpuSeconds / buses.audioSeconds
            let bareCPU = bare.cpuSeconds / bare.audioSeconds
            // The goal line, against the anchor the issue names: as many bare render callbacks,
            // one per input of a multichannel mixer, as a Core Audio program without players.
            rows.append(BenchmarkRow(metric: "\(players) players mixed on one device: CPU ÷ \(players) bare render callbacks", unit: "ratio", sonora: playersCPU / busesCPU,
                                     anchor: "\(players) render callbacks on a MultiChannelMixerUnit's inputs, each converting its source's 16-bit frames from memory, same device kind, same run (goal ≤ 1.10)",
                                     anchorValue: 1.10, better: .lower))
            // Stricter, kept so nothing is hidden: one callback doing the whole mix itself (no
            // mixer unit, no per-bus pull), against the same 1.10 line.
            rows.append(BenchmarkRow(metric: "\(players) players mixed on one device: CPU ÷ one callback summing \(players) sources", unit: "ratio", sonora: playersCPU / bareCPU,
                                     anchor: "one render callback converting and summing \(players) sources, same device kind, same run (stricter than the issue's anchor; same 1.10 line)",
                                     anchorValue: 1.10, better: .lower))
            rows.append(BenchmarkRow(metric: "\(players) players mixed on one device: underruns", unit: "count", sonora: Double(mixed.underruns),
                                     anchor: "none at a \(period)-frame period (goal)", anchorValue: 0, better: .lower))
            notes.append(String(format: "players: %.3f ms CPU per second of audio (%.1f %% of a core); %d bus callbacks on a mixer: %.3f ms; one callback summing %d: %.3f ms; device xruns %d / %d / %d",
                                playersCPU * 1000, playersCPU * 100, players, busesCPU * 1000, players, bareCPU * 1000, mixed.xruns, buses.xruns, bare.xruns))
        }
        return (rows, notes)
    }

    /// `players` AudioPlayers looping the file on one timer-paced null device, for `seconds`:
    /// the process's CPU and the seconds of the device's output.
    func measurePlayers(_ path: String) throws -> QueueBenchmark.CPUSample {
        let device = try AudioDevices.open(named: "null", configuration: AudioDeviceConfiguration(
            sampleRate: Int(Self.rate), periodFrames: period, inputChannels: 0, outputChannels: 2))
        let output = try AudioQueueOutput(device: device, maximumQueues: max(players, 1))
        var all: [AudioPlayer] = []
        defer {
            all.forEach { $0.stop() }
            device.stop()
        }
        for _ in 0..<players {
            let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
            player.numberOfLoops = -1
            try player.prepareToPlay()
            all.append(player)
        }
        for player in all { try player.play() }
        usleep(300_000)  // past the start: page faults, first decodes, thread start-up
        let cyclesBefore = device.statistics.cycles
        let underrunsBefore = all.reduce(0) { $0 + $1.underruns }
        let cpuBefore = QueueBenchmark.processCPU()
        usleep(useconds_t(seconds * 1_000_000))
        let cpuAfter = QueueBenchmark.processCPU()
        let cycles = device.statistics.cycles - cyclesBefore
        let underruns = all.reduce(0) { $0 + $1.underruns } - underrunsBefore
        return QueueBenchmark.CPUSample(cpuSeconds: cpuAfter - cpuBefore, audioSeconds: Double(cycles * period) / Self.rate,
                                        underruns: underruns, xruns: output.deviceStatistics?.xruns ?? 0)
    }

    /// One latency run on a duplex loopback device: `arm` prepares on the output and returns
    /// the call to time; the frames from that call to the first sound captured, less the
    /// capture's own position then (nil after an xrun).
    func latency(_ arm: (AudioQueueOutput) throws -> () throws -> Void) throws -> Int? {
        let (device, io) = try QueueBenchmark.duplexLoop("sounds", period: period, periods: periods)
        let capture = SoundsBenchCapture(unit: io, capacity: Int(Self.rate) * 10)
        try io.setInputCallback(capture)
        let output = try AudioQueueOutput(unit: io, sampleRate: Self.rate, channels: 1)
        let fire = try arm(output)
        let before = capture.frames
        try fire()
        let after = capture.frames
        let deadline = HostTime.now.seconds + 5
        while capture.frames < after + Int(Self.rate / 2) && HostTime.now.seconds < deadline { usleep(10_000) }
        io.stop()
        guard device.statistics.xruns == 0, let first = capture.firstSound(after: before) else { return nil }
        // The call came between capture frames `before` and `after`: count from the later.
        return first - after
    }

    /// A 16-bit WAV of `samples` (interleaved) at 48 kHz, written directly.
    static func writeWAV(_ path: String, samples: [Int16], channels: Int) throws {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + bytes)); data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(1)); append(UInt16(channels)); append(UInt32(48000)); append(UInt32(48000 * 2 * channels))
        append(UInt16(2 * channels)); append(UInt16(16)); data.append(contentsOf: Array("data".utf8)); append(UInt32(bytes))
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }
}

/// The capture side of a latency run: every captured frame kept (preallocated), to find the
/// first sound after a given frame.
final class SoundsBenchCapture: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: IOUnit
    private let storage: UnsafeMutableBufferPointer<Float>
    private let scratch: OwnedAudioBufferList
    private let count = Atomic<Int>(0)

    init(unit: IOUnit, capacity: Int) {
        self.unit = unit
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0)
        scratch = try! OwnedAudioBufferList(channelCount: 1, frameCapacity: 8192)
    }

    deinit { storage.deallocate() }

    var frames: Int { count.load(ordering: .acquiring) }

    func firstSound(after frame: Int) -> Int? {
        (frame..<frames).first { storage[$0] != 0 }
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let frameCount = request.pointee.frameCount
        let list = scratch.list(frameCount: frameCount)
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: frameCount, into: list)
        guard status == .noError else { return status }
        let done = count.load(ordering: .relaxed)
        let take = min(frameCount, storage.count - done)
        for index in 0..<take { storage[done + index] = list.samples(0)[index] }
        count.store(done + take, ordering: .releasing)
        return .noError
    }
}
