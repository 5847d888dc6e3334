import CSonoraSystem
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One client stream as the appliance holds it: the shared ring, the appliance's own
/// position (never read back from the mapping), the gain ramp, the counters. Serviced on
/// the realtime thread through `ApplianceStreamTable` (reached without reference
/// counting); created and freed on the control side.
final class ApplianceServerStream: @unchecked Sendable {
    let id: Int
    let pid: Int32
    let connection: Int
    let direction: ApplianceStreamDirection
    let channels: Int
    let memory: ApplianceStreamMemory
    let ring: ApplianceRing
    let wakeDescriptor: Int32
    /// The table's fault eventfd (not owned; −1: none): signalled once, when this stream faults.
    let faultDescriptor: Int32

    // Realtime-thread state.
    /// The appliance's position: read position for playback, write position for capture.
    private var ownPosition = 0
    private var gain: Float = 1
    private var gainStep: Float = 0
    private var rampRemaining = 0
    private var rampTarget: Float = 1
    private var seenGainRequest = 0

    // Control → realtime: the latest gain request (target bits, ramp frames), then its number.
    private let requestedTargetBits = Atomic<UInt32>(Float(1).bitPattern)
    private let requestedRampFrames = Atomic<Int>(0)
    private let gainRequest = Atomic<Int>(0)

    // Realtime → control.
    /// The routing group of the program's session (its role's), set by the control side:
    /// `clients` nodes take the streams of the groups they name.
    let group = Atomic<Int>(0)
    /// The table's cycle this stream was last serviced in (realtime side only).
    var servicedCycle = -1

    let underruns = Atomic<Int>(0)
    let overruns = Atomic<Int>(0)
    let faults = Atomic<Int>(0)
    let faulted = Atomic<Bool>(false)
    let peakBits = Atomic<UInt32>(0)
    let gainBits = Atomic<UInt32>(Float(1).bitPattern)

    init(id: Int, pid: Int32, connection: Int, direction: ApplianceStreamDirection, memory: ApplianceStreamMemory, wakeDescriptor: Int32, faultDescriptor: Int32 = -1) {
        self.id = id
        self.pid = pid
        self.connection = connection
        self.direction = direction
        self.channels = memory.channels
        self.memory = memory
        self.ring = memory.ring
        self.wakeDescriptor = wakeDescriptor
        self.faultDescriptor = faultDescriptor
    }

    deinit { close(wakeDescriptor) }

    /// Control side: ramp to `target` (linear) over `frames` (0: at once).
    func setGain(_ target: Float, rampFrames: Int) {
        requestedTargetBits.store(max(0, target).bitPattern, ordering: .relaxed)
        requestedRampFrames.store(max(0, rampFrames), ordering: .relaxed)
        gainRequest.wrappingAdd(1, ordering: .releasing)
    }

    var info: ApplianceStreamInfo {
        let peak = Float(bitPattern: peakBits.load(ordering: .relaxed))
        return ApplianceStreamInfo(
            id: id, pid: pid, direction: direction, channels: channels, gain: Float(bitPattern: gainBits.load(ordering: .relaxed)),
            peakDBFS: peak > 0 ? 20 * log10(Double(peak)) : -.infinity, underruns: underruns.load(ordering: .relaxed),
            overruns: overruns.load(ordering: .relaxed), faulted: faulted.load(ordering: .relaxed))
    }

    // MARK: Realtime thread

    @inline(__always)
    private func fault() {
        faults.wrappingAdd(1, ordering: .relaxed)
        faulted.store(true, ordering: .releasing)
        // Once per stream (a faulted stream is not serviced again): the server's loop wakes.
        if faultDescriptor >= 0 { sonora_eventfd_signal(faultDescriptor) }
    }

    @inline(__always)
    private func takeGainRequest() {
        let request = gainRequest.load(ordering: .acquiring)
        guard request != seenGainRequest else { return }
        seenGainRequest = request
        rampTarget = Float(bitPattern: requestedTargetBits.load(ordering: .relaxed))
        let frames = requestedRampFrames.load(ordering: .relaxed)
        if frames == 0 {
            gain = rampTarget
            rampRemaining = 0
            gainStep = 0
        } else {
            rampRemaining = frames
            gainStep = (rampTarget - gain) / Float(frames)
        }
    }

    /// Adds this playback stream's next `frames` frames (gain applied) to `output`; nil
    /// consumes them unheard (a stream no node takes still keeps time).
    @inline(__always)
    func mix(into output: AudioBufferList?, frames: Int) {
        guard !faulted.load(ordering: .relaxed) else { return }
        // The one value read from the client; checked before anything uses it.
        let written = ring.writePosition.pointee.load(ordering: .acquiring)
        let own = ownPosition
        // (Compared without subtracting the forged value: no overflow either.)
        guard written >= own, written <= own + ring.capacity else {
            fault()
            return
        }
        takeGainRequest()
        let take = min(written - own, frames)
        if take < frames && written > 0 { underruns.wrappingAdd(1, ordering: .relaxed) }
        if take > 0, let output {
            let slot = own & (ring.capacity - 1)
            let first = min(take, ring.capacity - slot)
            var peak: Float = 0
            for channel in 0..<output.channelCount {
                let from = channels == 1 ? 0 : channel
                if from >= channels { break }
                let source = ring.samples(from)
                let destination = output.samples(channel)
                if rampRemaining == 0 {
                    peak = max(peak, Self.add(source + slot, destination, count: first, gain: gain))
                    if first < take { peak = max(peak, Self.add(source, destination + first, count: take - first, gain: gain)) }
                } else {
                    var current = gain
                    var remaining = rampRemaining
                    for frame in 0..<take {
                        if remaining > 0 {
                            remaining -= 1
                            current = remaining == 0 ? rampTarget : current + gainStep
                        }
                        let value = source[(slot + frame) & (ring.capacity - 1)] * current
                        destination[frame] += value
                        peak = max(peak, abs(value))
                    }
                }
            }
            peakBits.store(peak.bitPattern, ordering: .relaxed)
        }
        if take == 0 || output == nil { peakBits.store(0, ordering: .relaxed) }
        advanceRamp(frames: frames)
        ownPosition = own + take
        ring.readPosition.pointee.store(ownPosition, ordering: .releasing)
        sonora_eventfd_signal(wakeDescriptor)
    }

    @inline(__always)
    private static func add(_ source: UnsafeMutablePointer<Float>, _ destination: UnsafeMutablePointer<Float>, count: Int, gain: Float) -> Float {
        var peak: Float = 0
        if gain == 1 {
            for index in 0..<count {
                destination[index] += source[index]
                peak = max(peak, abs(source[index]))
            }
        } else {
            for index in 0..<count {
                let value = source[index] * gain
                destination[index] += value
                peak = max(peak, abs(value))
            }
        }
        return peak
    }

    @inline(__always)
    private func advanceRamp(frames: Int) {
        if rampRemaining > 0 {
            let step = min(frames, rampRemaining)
            rampRemaining -= step
            gain = rampRemaining == 0 ? rampTarget : gain + gainStep * Float(step)
        }
        gainBits.store(gain.bitPattern, ordering: .relaxed)
    }

    /// Wakes the client without data (a capture stream no node feeds this cycle).
    @inline(__always)
    func wake() { sonora_eventfd_signal(wakeDescriptor) }

    /// Writes `frames` frames of `input` into this capture stream's ring.
    @inline(__always)
    func capture(_ input: AudioBufferList, frames: Int) {
        guard !faulted.load(ordering: .relaxed) else { return }
        let read = ring.readPosition.pointee.load(ordering: .acquiring)
        let own = ownPosition
        guard read <= own, read >= own - ring.capacity else {
            fault()
            return
        }
        let put = min(ring.capacity - (own - read), frames)
        if put < frames { overruns.wrappingAdd(1, ordering: .relaxed) }
        if put > 0 {
            ring.write(from: input, offset: 0, frames: put, at: own)
            var peak: Float = 0
            for channel in 0..<min(input.channelCount, channels) {
                let samples = input.samples(channel)
                for index in 0..<put { peak = max(peak, abs(samples[index])) }
            }
            peakBits.store(peak.bitPattern, ordering: .relaxed)
        }
        ownPosition = own + put
        ring.writePosition.pointee.store(ownPosition, ordering: .releasing)
        sonora_eventfd_signal(wakeDescriptor)
    }
}
