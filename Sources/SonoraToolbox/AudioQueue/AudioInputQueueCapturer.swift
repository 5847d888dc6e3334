import SonoraCore
import Synchronization

/// The realtime side of an input queue: copies the frames an input delivers (an I/O unit's
/// element 1, or `offlineCapture` on the caller's thread) into the queue's `SampleRing` and
/// meters them; nothing else. Control arrives through a lock-free `MessageQueue`; results
/// leave through atomics and a meter queue. `capture` never allocates, locks, logs or blocks.
public final class AudioInputQueueCapturer: @unchecked Sendable {
    let channelCount: Int
    let sampleRate: Double
    let ring: SampleRing
    let commands: MessageQueue<CaptureCommand>
    let meters: MessageQueue<MeterReading>
    /// The queue's thread, woken after frames arrive (live only; offline uses barriers).
    /// Unmanaged (as AudioQueueRenderer's): a call through an `unowned(unsafe)` optional
    /// retains and releases on the capturing thread.
    var worker: Unmanaged<Worker>?
    let wakesWorker = Atomic<Bool>(false)
    /// The worker is woken once the ring holds this many frames (the queue's thread publishes
    /// it after each pass: what completes the buffer it fills, so that buffer is still handed
    /// over in the slice that completes it). A post is a futex call and a thread switch: every
    /// slice was 188 a second at 256-frame periods, for buffers usually many slices long.
    let wakeThreshold = Atomic<Int>(1)

    private let capturedCount = Atomic<Int>(0)
    /// The input's sample time of the first frame ever kept (-1: none yet): the origin of the
    /// buffers' start times.
    private let originTime = Atomic<Int>(-1)
    private let overrunCount = Atomic<Int>(0)

    // Capture-thread state.
    private var running = false
    private var metering = false
    /// The input's sample time of the next frame (its time stamps, or frames seen so far).
    private var clock = 0
    /// A start waiting for this sample time (-1: none).
    private var startAt = -1
    /// A start waiting for this host time (0: none), turned into a sample time by the first
    /// slice that carries a host time.
    private var startAtHost: UInt64 = 0

    init(channelCount: Int, sampleRate: Double, ringFrames: Int) throws(AudioError) {
        self.channelCount = channelCount
        self.sampleRate = sampleRate
        ring = try SampleRing(channelCount: channelCount, capacity: ringFrames)
        commands = try MessageQueue(capacity: 256)
        meters = try MessageQueue(capacity: 1024)
    }

    /// Frames written into the ring since the queue was made.
    var capturedFrames: Int { capturedCount.load(ordering: .acquiring) }
    /// The input's sample time of the first frame kept (0 before any).
    var origin: Int { max(0, originTime.load(ordering: .acquiring)) }
    /// Captures that found the ring too full for all their frames (the rest were dropped).
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// Takes `input`'s frames (one Float32 buffer per channel) while running; `sampleTime` and
    /// `hostTime` are the input's times of its first frame (nil: right after the previous
    /// slice, and no host time). Realtime-safe.
    public func capture(_ input: AudioBufferList, sampleTime: Int? = nil, hostTime: HostTime? = nil) {
        while let command = commands.pop() {
            switch command {
            case .start(let at):
                running = true
                startAt = at
                startAtHost = 0
            case .startAtHost(let host):
                running = true
                startAt = -1
                startAtHost = host
            case .stop:
                running = false
                startAt = -1
                startAtHost = 0
            case .metering(let on): metering = on
            }
        }
        if let sampleTime { clock = sampleTime }
        let sliceStart = clock
        if startAtHost != 0, let hostTime {
            // The host time as this input's sample time (frames from the slice's first frame).
            let offset = hostTime.frames(until: HostTime(rawValue: startAtHost), sampleRate: sampleRate).rounded()
            startAt = sliceStart + max(0, Int(offset))
            startAtHost = 0
        }
        clock += input.frameCount
        guard running, input.frameCount > 0, startAtHost == 0 else { return }
        // A start at a sample time: nothing before it, from it on everything.
        var skip = 0
        if startAt >= 0 {
            guard startAt < clock else { return }
            skip = max(0, startAt - sliceStart)
            startAt = -1
        }
        let source = skip == 0 ? input : input.frames(from: skip, count: input.frameCount - skip)
        if originTime.load(ordering: .relaxed) < 0 { originTime.store(sliceStart + skip, ordering: .releasing) }
        store(source)
    }

    private func store(_ input: AudioBufferList) {
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
        // The fill from the producer's own view (`readableFrames` is the consumer's: it updates the consumer's cache).
        if wakesWorker.load(ordering: .relaxed) && ring.capacity - ring.writableFrames >= wakeThreshold.load(ordering: .relaxed) {
            worker?._withUnsafeGuaranteedRef { $0.wake() }
        }
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
    /// At the input's sample time given (-1: now).
    case start(at: Int)
    /// At the host time given (nanoseconds), once a slice says which of its frames that is.
    case startAtHost(UInt64)
    case stop
    case metering(Bool)
}
