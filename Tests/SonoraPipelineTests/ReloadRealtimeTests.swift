import Foundation
import Logging
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraPipeline
import SonoraTestSupport
import Testing

/// What a reload costs the I/O thread: nothing on the heap. The soak's config (tone → gain →
/// meter → recorder) on a scripted device whose cycles the test runs, reloaded with a changed
/// gain (a ramp) and with a node added and removed (a graph update with its crossfade), the
/// device's cycles counted for heap calls around every reload.
@Suite("Reloads and the I/O thread", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct ReloadRealtimeTests {
    static func config(gain: String, extraNode: Bool, recording: String) -> String {
        """
        engine: {sample_rate: 48000, period: 256, periods: 2, channels: 2}
        nodes:
          - {id: tone, kind: ToneGenerator, parameters: {frequency: 440 Hz, level: -12 dB}}
          - {id: gain, kind: Gain, parameters: {gain: \(gain)}}
        \(extraNode ? "  - {id: trim, kind: Gain, parameters: {gain: -1 dB}}\n" : "")\
          - {id: meter, kind: Meter}
          - {id: rec, kind: recorder, file: \(recording)}
        connections:
          - {from: tone, to: gain}
        \(extraNode ? "  - {from: gain, to: trim}\n  - {from: trim, to: meter}\n" : "  - {from: gain, to: meter}\n")\
          - {from: meter, to: rec}
          - {from: rec, to: output}

        """
    }

    @Test("gain-changing and rewiring reloads make no heap call in the device's cycles")
    func reloadsDoNotAllocateOnTheIOThread() throws {
        let folder = try TemporaryFolder(prefix: "reload-rt")
        let path = folder.path("soak.yaml")
        let recording = folder.path("take.wav")
        try Self.config(gain: "-6 dB", extraNode: false, recording: recording).write(toFile: path, atomically: false, encoding: .utf8)
        let device = try ScriptedDevice(configuration: AudioDeviceConfiguration(periodFrames: 256, periods: 2))
        let pipeline = try PipelineBuilder.build(try ConfigurationParser.parse(contentsOf: path), target: .live(device))
        let controller = PipelineController(pipeline: pipeline, device: device, configPath: path, logger: Logger(label: "test"))
        try pipeline.graph.start()
        defer {
            controller.pipeline.graph.stop()
            controller.pipeline.graph.uninitialize()
        }
        let gains = ["-3 dB", "-9 dB", "-6 dB"]
        func reload(_ step: Int, rewire: Bool) throws {
            try Self.config(gain: gains[step % 3], extraNode: rewire && step % 2 == 0, recording: recording)
                .write(toFile: path, atomically: false, encoding: .utf8)
            let problems = controller.reload()
            #expect(problems.isEmpty, "\(problems.map(\.message))")
        }
        // Warm-up, not counted: every path (a ramp, an update with its crossfade) runs once.
        try device.run(cycles: 40)
        for step in 0..<4 {
            try reload(step, rewire: step >= 2)
            try device.run(cycles: 40)
        }
        device.countsAllocations = true
        for step in 0..<12 {
            try reload(step, rewire: false)
            try device.run(cycles: 20)
        }
        let afterRamps = device.allocations
        for step in 0..<8 {
            try reload(step, rewire: true)
            try device.run(cycles: 20)
        }
        device.countsAllocations = false
        #expect(afterRamps == 0, "\(afterRamps) heap calls in the cycles after gain-changing reloads")
        #expect(device.allocations - afterRamps == 0, "\(device.allocations - afterRamps) heap calls in the cycles after rewiring reloads")
        #expect(device.statistics.xruns == 0)
    }
}
