import SonoraCore
import Synchronization
import Testing

/// The README's "SonoraCore at a glance" example, kept compiling and true.
@Suite("README example")
struct ReadmeExampleTests {
    struct SetGain: BitwiseCopyable {
        var node: Int32
        var gain: Float
    }

    @Test func readmeExampleWorksAsWritten() throws {
        let canonical = StreamFormat.canonical(sampleRate: 48000, channels: 2)
        #expect(canonical.description == "LEF32@48000x2 deinterleaved")
        let s16 = try StreamFormat(parsing: "LEI16@44100x2")
        try s16.validate()

        let error = AudioError(.invalidScope, "the mixer has no scope 7")
        #expect("\(error.status) \(error)" == "-10866 invalid scope (-10866): the mixer has no scope 7")

        let ring = try SampleRing(channelCount: 2, capacity: 4096)
        let region = ring.writeRegion(maxFrames: 256)
        region.first.clear()
        region.second.clear()
        try ring.commitWrite(region.frameCount)
        #expect(ring.readableFrames == 256)

        let commands = try MessageQueue<SetGain>(capacity: 256)
        commands.push(SetGain(node: 3, gain: 0.5))
        let received = Atomic<Int>(0)
        let io = try RealtimeThread(RealtimeThreadOptions(name: "sonora-io", priority: 70, cpu: 1)) {
            while let command = commands.pop() { received.store(Int(command.node), ordering: .relaxed) }
        }
        io.join()
        let node = received.load(ordering: .relaxed)
        #expect(node == 3)
    }
}
