import SonoraCore
import Synchronization

/// The realtime side of an input queue: copies the frames an input delivers (an I/O unit's
/// element 1, or `offlineCapture` on the caller's thread) into the queue's `SampleRing` and
/// meters them; nothing else. Control arrives through a lock-free `MessageQueue`; results
/// leave through atomics and a meter queue. `capture` never allocates, locks, logs or blocks.
public final class AudioInputQueueCapturer: @unchecked Sendable {
    let channelCount: Int
    let ring: SampleRing
    let commands: MessageQueue<CaptureCommand>
    let meters: MessageQueue<MeterReading>
    /// The queue's thread, woken after frames arrive (live only; offline uses barriers).
    unowned(unsafe) var worker: Worker?
    let wakesWorker = Atomic<Bool>(false)

    private let capturedCount = Atomic<Int>(0)
    private let overrunCount = Atomic<Int>(0)

    // Capture-thread state.
    private var running = false
    private var metering = false

    init(channelCount: Int, ringFrames: Int) throws(AudioError) {
        self.channelCount = channelCount
        ring = try SampleRing(channelCount: channelCount, capacity: ringFrames)
        commands = try MessageQueue(capacity: 256)
        meters = try MessageQueue(capacity: 1024)
    }

    /// Frames written into the ring since the queue was made.
    var capturedFrames: Int { capturedCount.load(ordering: .acquiring) }
    /// Captures that found the ring too full for all their frames (the rest were dropped).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Takes `input`'s frames (one Float32 buffer per channel) while running. Realtime-safe.
    public func capture(_ input: AudioBufferList) {
        while let command = commands.pop() {
            switch command {
            case .start: running = true
            case .stop: running = false
            case .metering(let on): metering = on
            }
        }
        guard running, input.frameCount > 0 else { return }
        let region = ring.writeRegion(maxFrames: input.frameCount)
        let count = region.frameCount
        if count < input.frameCount { overrunCount.wrappingAdd(1, ordering: .relaxed) }
        let firstCount = region.first.frameCount
        for channel in 0..<min(channelCount, input.channelCount) {
            let source = UnsafePointer(input.samples(channel))
            copySamples(from: source, to: region.first.samples(channel), count: firstCount)
            if region.second.frameCount > 0 {
                copySamples(from: source + firstCount, to: region.second.samples(channel), count: region.second.frameCount)
            }
        }
        try? ring.commitWrite(count)
        capturedCount.wrappingAdd(count, ordering: .releasing)
        if metering { measure(input) }
        if wakesWorker.load(ordering: .relaxed) { worker?.wake() }
    }

    /// Average (RMS) and peak of each channel over the slice.
    private func measure(_ input: AudioBufferList) {
        let count = input.frameCount
        for channel in 0..<min(channelCount, input.channelCount) {
            let samples = input.samples(channel)
            var sum: Double = 0
            var peak: Float = 0
            for index in 0..<count {
                let sample = samples[index]
                sum += Double(sample) * Double(sample)
                peak = max(peak, abs(sample))
            }
            meters.push(MeterReading(channel: channel, average: Float((sum / Double(count)).squareRoot()), peak: peak))
        }
    }
}

/// A control message to the capture side.
enum CaptureCommand: BitwiseCopyable {
    case start
    case stop
    case metering(Bool)
}
