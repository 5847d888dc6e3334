import Foundation
import SonoraCore
import SonoraHAL
import SonoraToolbox
import SonoraUnits
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Audio queues against a bare render callback (issue 17's benchmarks):
/// (a) CPU per second of 48 kHz stereo 16-bit PCM played through an output queue (its
///     decoding thread and the I/O thread) ÷ the same copy (Int16 interleaved → Float32
///     per channel) done by a bare render callback, on the same timer-paced null device,
///     alternating in slices so both see the same background; process CPU (getrusage).
/// (b) start latency: `start()` to the first sample out of Sonora's loopback ALSA plugin,
///     in frames, against the device's buffer plus one period.
/// (c) 32 queues at once on one null device through the hidden mixer (`AudioQueueOutput`):
///     underruns, and CPU ÷ one render callback converting and summing 32 sources.
struct QueueBenchmark {
    var seconds: Double
    var rounds: Int
    var queues: Int
    var period = 256

    static let rate = 48000.0
    static let channels = 2

    /// A queue on a device of its own; a bare callback; one callback summing `n` sources.
    enum Player { case queue, bare, bareMix(Int) }

    struct CPUSample {
        var cpuSeconds: Double
        var audioSeconds: Double
        var underruns: Int
        var xruns: Int
    }

    func run(progress: (String) -> Void) throws -> (rows: [BenchmarkRow], notes: [String]) {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        let source = Self.sourceSamples(seconds: 10)

        // (a) one queue vs one bare callback, alternating.
        var queueTotal = CPUSample(cpuSeconds: 0, audioSeconds: 0, underruns: 0, xruns: 0)
        var bareTotal = queueTotal
        for round in 0..<rounds {
            progress("round \(round + 1)/\(rounds): a queue, then a bare render callback, \(seconds) s each on the null device …")
            queueTotal.add(try measure(.queue, count: 1, source: source))
            bareTotal.add(try measure(.bare, count: 1, source: source))
        }
        let queueCPU = queueTotal.cpuSeconds / queueTotal.audioSeconds
        let bareCPU = bareTotal.cpuSeconds / bareTotal.audioSeconds
        rows.append(BenchmarkRow(metric: "queue CPU ÷ bare callback CPU (48 kHz stereo PCM)", unit: "ratio", sonora: queueCPU / bareCPU,
                                 anchor: "bare render callback, same device, same run (goal ≤ 1.05)", anchorValue: 1.05, better: .lower))
        notes.append(String(format: "(a) CPU per second of audio: queue %.3f ms, bare callback %.3f ms; %.1f s of audio each; queue underruns %d; device xruns %d / %d",
                            queueCPU * 1000, bareCPU * 1000, queueTotal.audioSeconds, queueTotal.underruns, queueTotal.xruns, bareTotal.xruns))

        // (b) start latency on the loopback plugin.
        if ALSAConfiguration.loopPluginPath != nil {
            progress("start latency on sonoraloop, 5 runs …")
            var latencies: [Int] = []
            for _ in 0..<5 { if let frames = try startLatency() { latencies.append(frames) } }
            let buffer = period * 2
            if let worst = latencies.max() {
                rows.append(BenchmarkRow(metric: "start latency (start() to first sample out of sonoraloop)", unit: "frames", sonora: Double(worst),
                                         anchor: "device buffer \(buffer) + one period (goal)", anchorValue: Double(buffer + period), better: .lower))
                notes.append("(b) start latency per run (frames, runs without an xrun): \(latencies.map(String.init).joined(separator: ", ")); period \(period) × 2")
            } else {
                notes.append("(b) start latency: every run had an xrun; not measured")
            }
        } else {
            notes.append("(b) start latency: the sonoraloop plugin is not built beside sonora-bench (swift build -c release --product asound_module_pcm_sonoraloop)")
        }

        // (c) many queues at once on one device, through the hidden mixer (AudioQueueOutput),
        // against one render callback on one device converting and summing as many sources.
        if queues > 0 {
            progress("\(queues) queues on one null device (one AudioQueueOutput), then one callback summing \(queues) sources, \(seconds) s each …")
            let many = try measureShared(count: queues, source: source)
            let manyBare = try measure(.bareMix(queues), count: 1, source: source)
            let queueCPU = many.cpuSeconds / many.audioSeconds
            let bareCPU = manyBare.cpuSeconds / manyBare.audioSeconds
            rows.append(BenchmarkRow(metric: "\(queues) queues at once on one device (hidden mixer): underruns", unit: "count",
                                     sonora: Double(many.underruns), anchor: "none at a \(period)-frame period (goal)", anchorValue: 0, better: .lower))
            rows.append(BenchmarkRow(metric: "\(queues) queues at once on one device: CPU ÷ \(queues) bare callbacks", unit: "ratio",
                                     sonora: queueCPU / bareCPU,
                                     anchor: "one render callback converting and summing \(queues) sources on one null device, same run (goal ≤ 1.05)", anchorValue: 1.05, better: .lower))
            let wall = many.audioSeconds
            notes.append(String(format: "(c) %d queues on one device: %.1f %% of one core over %.1f s (%.3f ms CPU per second of audio, all queues); the bare mix of %d: %.3f ms; queue underruns %d; device xruns %d / %d",
                                queues, many.cpuSeconds / wall * 100, wall, queueCPU * 1000, queues, bareCPU * 1000,
                                many.underruns, many.xruns, manyBare.xruns))
        }
        return (rows, notes)
    }

    /// 16-bit stereo noise with a tone, interleaved, as a file would hold it.
    static func sourceSamples(seconds: Double) -> [Int16] {
        var state: UInt64 = 0x5EED
        let count = Int(rate * seconds) * channels
        return (0..<count).map { index in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let tone = 8000 * sin(Double(index / channels) * 0.05)
            return Int16(clamping: Int(tone) + Int(Int16(truncatingIfNeeded: state >> 40)) / 8)
        }
    }

    /// `count` players of one kind, each on its own timer-paced null device, for `seconds`:
    /// the process's CPU time over that span and the audio they played.
    func measure(_ kind: Player, count: Int, source: [Int16]) throws -> CPUSample {
        var players: [QueueBenchPlayer] = []
        defer { players.forEach { $0.stop() } }
        for _ in 0..<count { players.append(try QueueBenchPlayer(kind, source: source, period: period)) }
        for player in players { try player.start() }
        usleep(300_000)  // past the start: page faults, first decodes, thread start-up
        let framesBefore = players.map(\.frames)
        let cpuBefore = Self.processCPU()
        usleep(useconds_t(seconds * 1_000_000))
        let cpuAfter = Self.processCPU()
        let framesAfter = players.map(\.frames)
        let audio = zip(framesAfter, framesBefore).reduce(0) { $0 + $1.0 - $1.1 }
        let sample = CPUSample(cpuSeconds: cpuAfter - cpuBefore, audioSeconds: Double(audio) / Self.rate,
                               underruns: players.reduce(0) { $0 + $1.underruns }, xruns: players.reduce(0) { $0 + ($1.device?.statistics.xruns ?? 0) })
        return sample
    }

    /// `count` queues on one timer-paced null device through one `AudioQueueOutput` (the
    /// hidden mixer), for `seconds`: the process's CPU over that span and the audio played
    /// (seconds of the device's output, not per queue: the anchor mixes as many sources).
    func measureShared(count: Int, source: [Int16]) throws -> CPUSample {
        let device = try AudioDevices.open(named: "null", configuration: AudioDeviceConfiguration(
            sampleRate: Int(Self.rate), periodFrames: period, inputChannels: 0, outputChannels: Self.channels))
        let output = try AudioQueueOutput(device: device, maximumQueues: max(count, 1))
        var players: [QueueBenchPlayer] = []
        defer {
            players.forEach { $0.stop() }
            device.stop()
        }
        for _ in 0..<count { players.append(try QueueBenchPlayer(output: output, source: source)) }
        for player in players { try player.start() }
        usleep(300_000)  // past the start: page faults, first decodes, thread start-up
        let cyclesBefore = device.statistics.cycles
        let cpuBefore = Self.processCPU()
        usleep(useconds_t(seconds * 1_000_000))
        let cpuAfter = Self.processCPU()
        let cycles = device.statistics.cycles - cyclesBefore
        return CPUSample(cpuSeconds: cpuAfter - cpuBefore, audioSeconds: Double(cycles * period) / Self.rate,
                         underruns: players.reduce(0) { $0 + $1.underruns }, xruns: output.deviceStatistics?.xruns ?? 0)
    }

    /// A mono duplex device on a new sonoraloop loop (48 kHz Float32, realtime) and an I/O unit
    /// on it with capture enabled: what it plays at frame F is captured at F + its buffer.
    static func duplexLoop(_ label: String, period: Int, periods: Int) throws -> (ALSADevice, IOUnit) {
        let loop = "sonoraloop:bench-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let configuration = AudioDeviceConfiguration(
            sampleRate: Int(rate), periodFrames: period, periods: periods, inputChannels: 1, outputChannels: 1,
            sampleFormat: .float32LE, requiresExactPeriod: true, realtimePriority: 70)
        let device = try ALSADevice(capture: loop, playback: loop, configuration: configuration)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
        try io.setStreamFormat(.canonical(sampleRate: rate, channels: 1), scope: .output, element: IOUnit.inputElement)
        return (device, io)
    }

    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// One run: a primed queue of constant 0.5 on a duplex sonoraloop device; the index of
    /// the first captured sample that is not silence (nil after an xrun).
    func startLatency() throws -> Int? {
        let (device, io) = try Self.duplexLoop("queue", period: period, periods: 2)
        let capture = QueueBenchFirstSound(unit: io, limit: Int(Self.rate / 2))
        try io.setInputCallback(capture)
        let queue = try AudioQueue(format: .linearPCM(sampleRate: Self.rate, channels: 1, sample: .float32)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutputUnit(io)
        let buffer = try queue.allocateBuffer(byteCapacity: Int(Self.rate) * 4)
        buffer.fill(with: [Float](repeating: 0.5, count: Int(Self.rate)).withUnsafeBytes { Array($0) })
        try queue.enqueue(buffer)
        try queue.prime()
        try queue.start()
        while !capture.isDone { usleep(10_000) }
        try queue.stop(immediate: true)
        guard device.statistics.xruns == 0 else { return nil }
        return capture.firstSound
    }
}

extension QueueBenchmark.CPUSample {
    mutating func add(_ other: Self) {
        cpuSeconds += other.cpuSeconds
        audioSeconds += other.audioSeconds
        underruns += other.underruns
        xruns += other.xruns
    }
}

/// One player on its own null device: an output queue fed 100 ms buffers from memory, or a
/// bare render callback doing the same conversion.
final class QueueBenchPlayer: @unchecked Sendable {
    /// The player's own device (nil on a shared output).
    let device: TimerDevice?
    let io = IOUnit()
    private var queue: AudioQueue?
    private var feeder: QueueBenchFeeder?
    private var bare: QueueBenchBareCopy?
    private var timeline: AudioQueueTimeline?

    init(_ kind: QueueBenchmark.Player, source: [Int16], period: Int) throws {
        let configuration = AudioDeviceConfiguration(sampleRate: Int(QueueBenchmark.rate), periodFrames: period, periods: 2, inputChannels: 0, outputChannels: QueueBenchmark.channels)
        let device = try TimerDevice(configuration: configuration, mode: .null)
        self.device = device
        try io.setDevice(device)
        switch kind {
        case .queue:
            let feeder = QueueBenchFeeder(source: source)
            let queue = try AudioQueue(format: .linearPCM(sampleRate: QueueBenchmark.rate, channels: QueueBenchmark.channels, sample: .int16)) { queue, buffer in feeder.fill(queue, buffer) }
            try queue.setOutputUnit(io)
            for _ in 0..<3 { feeder.fill(queue, try queue.allocateBuffer(byteCapacity: QueueBenchFeeder.framesPerBuffer * 2 * QueueBenchmark.channels)) }
            try queue.prime()
            timeline = try queue.createTimeline()
            self.queue = queue
            self.feeder = feeder
        case .bare, .bareMix:
            var sources = 1
            if case .bareMix(let count) = kind { sources = count }
            let bare = QueueBenchBareCopy(source: source, sources: sources)
            try io.setStreamFormat(.canonical(sampleRate: QueueBenchmark.rate, channels: QueueBenchmark.channels), scope: .input, element: IOUnit.outputElement)
            try io.setRenderCallback(bare, input: IOUnit.outputElement)
            try io.initialize()
            self.bare = bare
        }
    }

    /// A queue on `output` (shared with the other queues there), fed as above.
    init(output: AudioQueueOutput, source: [Int16]) throws {
        device = nil
        let feeder = QueueBenchFeeder(source: source)
        let queue = try AudioQueue(format: .linearPCM(sampleRate: QueueBenchmark.rate, channels: QueueBenchmark.channels, sample: .int16)) { queue, buffer in feeder.fill(queue, buffer) }
        try queue.setOutput(output)
        for _ in 0..<3 { feeder.fill(queue, try queue.allocateBuffer(byteCapacity: QueueBenchFeeder.framesPerBuffer * 2 * QueueBenchmark.channels)) }
        try queue.prime()
        timeline = try queue.createTimeline()
        self.queue = queue
        self.feeder = feeder
    }

    func start() throws {
        if let queue { try queue.start() } else { try io.start() }
    }

    /// Frames played so far.
    var frames: Int {
        if let timeline { return Int(timeline.currentTime().sampleTime) }
        return bare?.frames ?? 0
    }

    var underruns: Int { queue?.underruns ?? 0 }

    func stop() {
        feeder?.halt()
        if let queue { try? queue.dispose(immediate: true) }
        guard device != nil else { return }
        io.stop()
        io.uninitialize()
    }
}

/// The queue's callback: the next 100 ms of the source (round and round) into the buffer.
final class QueueBenchFeeder: @unchecked Sendable {
    static let framesPerBuffer = 4800
    private let source: [Int16]
    private var position = 0
    private let halted = Atomic<Bool>(false)

    init(source: [Int16]) { self.source = source }

    func halt() { halted.store(true, ordering: .relaxed) }

    func fill(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        guard !halted.load(ordering: .relaxed) else { return }
        let count = Self.framesPerBuffer * QueueBenchmark.channels
        if position + count > source.count { position = 0 }
        source.withUnsafeBytes { bytes in
            buffer.audioData.copyMemory(from: bytes.baseAddress! + position * 2, byteCount: count * 2)
        }
        buffer.byteSize = count * 2
        position += count
        try? queue.enqueue(buffer)
    }
}

/// The bare render callback: Int16 interleaved → Float32 per channel, straight from memory;
/// with several sources (the anchor of many queues on one device), each source converted
/// and summed into the output, as the hidden mixer sums queues.
final class QueueBenchBareCopy: RenderCallbackTarget, @unchecked Sendable {
    private let source: UnsafeMutableBufferPointer<Int16>
    private let sources: Int
    private let positions: UnsafeMutableBufferPointer<Int>
    private let played = Atomic<Int>(0)

    init(source: [Int16], sources: Int = 1) {
        self.source = .allocate(capacity: source.count)
        _ = self.source.initialize(from: source)
        self.sources = sources
        // Each source at its own place in the signal (as independent queues would be).
        positions = .allocate(capacity: sources)
        for index in 0..<sources { positions[index] = ((index * 4801) * QueueBenchmark.channels) % max(source.count, 1) }
    }

    deinit {
        source.deallocate()
        positions.deallocate()
    }

    var frames: Int { played.load(ordering: .relaxed) }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let frames = request.pointee.frameCount
        let buffers = request.pointee.buffers
        let channels = QueueBenchmark.channels
        let scale: Float = 1.0 / 32768
        for index in 0..<sources {
            var position = positions[index]
            for frame in 0..<frames {
                if position + channels > source.count { position = 0 }
                for channel in 0..<channels {
                    let value = Float(source[position + channel]) * scale
                    if index == 0 { buffers.samples(channel)[frame] = value } else { buffers.samples(channel)[frame] += value }
                }
                position += channels
            }
            positions[index] = position
        }
        played.wrappingAdd(frames, ordering: .relaxed)
        return .noError
    }
}

/// The capture side of the start-latency run: the index of the first frame not silent.
final class QueueBenchFirstSound: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: IOUnit
    let limit: Int
    private let scratch: OwnedAudioBufferList
    private var seen = 0
    private let first = Atomic<Int>(-1)
    private let done = Atomic<Bool>(false)

    init(unit: IOUnit, limit: Int) {
        self.unit = unit
        self.limit = limit
        scratch = try! OwnedAudioBufferList(channelCount: 1, frameCapacity: 8192)
    }

    var isDone: Bool { done.load(ordering: .acquiring) }
    var firstSound: Int? { let value = first.load(ordering: .acquiring); return value >= 0 ? value : nil }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let frames = request.pointee.frameCount
        let list = scratch.list(frameCount: frames)
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: frames, into: list)
        guard status == .noError else { return status }
        if first.load(ordering: .relaxed) < 0 {
            let samples = list.samples(0)
            for index in 0..<frames where samples[index] != 0 {
                first.store(seen + index, ordering: .releasing)
                break
            }
        }
        seen += frames
        if seen >= limit { done.store(true, ordering: .releasing) }
        return .noError
    }
}
