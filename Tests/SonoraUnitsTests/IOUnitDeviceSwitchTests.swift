#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraUnits
import Testing

/// `IOUnit.switchDevice(to:)`: a running graph moves to another device without being
/// re-initialized; a device of another rate or period is refused and the old one kept.
@Suite("The I/O unit moves to another device", .serialized)
struct IOUnitDeviceSwitchTests {
    static func device(rate: Int = 48000, period: Int = 128) throws -> TimerDevice {
        try TimerDevice(
            configuration: AudioDeviceConfiguration(sampleRate: rate, periodFrames: period, inputChannels: 0, outputChannels: 2, realtimePriority: nil),
            mode: .inProcess(latencyFrames: 512, paced: true))
    }

    @Test("running: the graph goes on cycling on the new device, the old one stops; a mismatched device is refused, nothing changes")
    func switchWhileRunning() throws {
        let first = try Self.device(), second = try Self.device()
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(first)
        let ioNode = graph.addNode(io)
        let tone = try graph.addNode(ToneGeneratorUnit.componentDescription)
        try graph.connect(tone, bus: 0, to: ioNode, input: 0)
        try graph.initialize()
        try graph.start()
        defer { graph.stop(); graph.uninitialize() }
        func waitForCycles(_ device: TimerDevice, beyond count: Int) {
            let deadline = HostTime.now.seconds + 10
            while device.statistics.cycles <= count && HostTime.now.seconds < deadline { usleep(2000) }
        }
        waitForCycles(first, beyond: 10)

        let wrongRate = try Self.device(rate: 44100)
        let error = try #require(throws: AudioError.self) { try io.switchDevice(to: wrongRate) }
        #expect(error.message.contains("44100") && error.message.contains("48000"), "\(error.message)")
        let wrongPeriod = try Self.device(period: 256)
        #expect(throws: AudioError.self) { try io.switchDevice(to: wrongPeriod) }
        #expect(io.device === first && first.isRunning)

        let left = try io.switchDevice(to: second)
        #expect(left === first && io.device === second)
        #expect(!first.isRunning && second.isRunning && io.isRunning)
        let stoppedAt = first.statistics.cycles
        waitForCycles(second, beyond: 10)
        #expect(second.statistics.cycles > 10 && second.statistics.renderErrors == 0)
        #expect(first.statistics.cycles == stoppedAt)
    }

    @Test("stopped: the unit moves and stays stopped until started")
    func switchWhileStopped() throws {
        let first = try Self.device(), second = try Self.device()
        let io = IOUnit()
        try io.setDevice(first)
        try io.initialize()
        defer { io.uninitialize() }
        try io.switchDevice(to: second)
        #expect(io.device === second && !second.isRunning)
        try io.start()
        #expect(second.isRunning)
        io.stop()
    }
}
