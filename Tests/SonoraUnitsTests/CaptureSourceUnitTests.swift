import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraUnits
import Testing

/// The I/O unit's capture as a graph node (`IOUnit.makeCaptureSource()`, a pipeline's `input`):
/// each render gives the cycle's captured samples, on the I/O thread without heap calls.
/// (Its render also retains nothing — it holds its I/O unit unmanaged — which only
/// `sonora-bench refcounts` on a release build can count: the appliance's I/O thread rig.)
@Suite("The I/O unit's capture node", .serialized)
struct CaptureSourceUnitTests {
    @Test("capture → I/O unit: each cycle plays that cycle's capture, sample for sample, with no heap calls")
    func playsTheCycleCapture() throws {
        let device = try NumberedCapture(
            configuration: AudioDeviceConfiguration(sampleRate: 48000, periodFrames: 256, inputChannels: 2, outputChannels: 2, realtimePriority: nil))
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
        let head = graph.addNode(io, name: "output")
        let capture = graph.addNode(io.makeCaptureSource(), name: "input")
        try graph.connect(capture, bus: 0, to: head, input: 0)
        try graph.initialize()
        try graph.start()
        try device.run(cycles: 20)
        device.countsAllocations = true
        try device.run(cycles: 200)
        graph.stop()
        #expect(device.statistics.renderErrors == 0)
        #expect(device.cyclesChecked == 220)
        #expect(device.mismatches == 0, "first mismatch at cycle \(device.firstMismatch)")
        if AllocationCounter.isAvailable { #expect(device.allocations == 0) }
        graph.uninitialize()
    }
}

/// An offline scripted device whose capture carries distinct values (cycle, frame, channel)
/// and which checks that the output of the same cycle is that capture.
final class NumberedCapture: ScriptedDevice, @unchecked Sendable {
    private(set) var cyclesChecked = 0
    private(set) var mismatches = 0
    private(set) var firstMismatch = -1

    init(configuration: AudioDeviceConfiguration) throws {
        try super.init(configuration: configuration, inProcessLatency: nil)
    }

    static func value(cycle: Int, frame: Int, channel: Int) -> Float {
        Float((cycle % 1000) * 256 + frame + 1) / 1_000_000 * (channel == 0 ? 1 : -1)
    }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let input = cycle.pointee.input
        let frames = cycle.pointee.frameCount
        for channel in 0..<input.channelCount {
            for frame in 0..<frames { input.samples(channel)[frame] = Self.value(cycle: cyclesChecked, frame: frame, channel: channel) }
        }
        let status = super.process(cycle)
        let output = cycle.pointee.output
        var same = output.channelCount == input.channelCount
        for channel in 0..<min(output.channelCount, input.channelCount) where same {
            for frame in 0..<frames where output.samples(channel)[frame] != Self.value(cycle: cyclesChecked, frame: frame, channel: channel) {
                same = false
                break
            }
        }
        if !same {
            mismatches += 1
            if firstMismatch < 0 { firstMismatch = cyclesChecked }
        }
        cyclesChecked += 1
        return status
    }
}
