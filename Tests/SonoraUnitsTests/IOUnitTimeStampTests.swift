import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraUnits
import Testing

/// What the I/O unit's input 0 render callback is told about time: the cycle's whole stamp
/// (sample time, and the host time at which it is heard with the rate scalar), as Core Audio's
/// RemoteIO passes it — a callback that starts things at a host time needs the host time.
@Suite("The I/O unit's render callback gets the cycle's time stamp")
struct IOUnitTimeStampTests {
    final class StampRecorder: RenderCallbackTarget, @unchecked Sendable {
        var stamps: [AudioTimeStamp] = []
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            stamps.append(request.pointee.timeStamp)
            request.pointee.buffers.clear()
            return .noError
        }
    }

    @Test func hostTimeReachesTheRenderCallback() throws {
        let device = try ScriptedDevice(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: 0, outputChannels: 2, realtimePriority: nil))
        let io = IOUnit()
        try io.setDevice(device)
        let recorder = StampRecorder()
        try io.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 0)
        try io.setRenderCallback(recorder, input: 0)
        try io.initialize()
        try io.start()
        try device.run(cycles: 3)
        io.stop()
        #expect(recorder.stamps.map(\.sampleTime) == [0, 256, 512])
        #expect(recorder.stamps.allSatisfy { $0.flags.contains(.sampleHostTimeValid) && $0.flags.contains(.rateScalarValid) })
        let hosts = recorder.stamps.map(\.hostTime)
        #expect(hosts[0] > 0)
        // One period (256 frames at 48 kHz, 5,333,333 ns) apart, to the nanosecond's rounding.
        #expect(hosts[1] - hosts[0] >= 5_333_332 && hosts[1] - hosts[0] <= 5_333_334, "\(hosts)")
    }
}
