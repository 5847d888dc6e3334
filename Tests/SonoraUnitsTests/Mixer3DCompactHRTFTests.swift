import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// `Mixer3DUnit.setCompactHRTF(taps:)`: HRTF inputs through the file's responses made minimum
/// phase and cut (what the OpenAL-style API renders with, as OpenAL Soft does).
@Suite("3D mixer: compact HRTF", .serialized)
struct Mixer3DCompactHRTFTests {
    static let compact = Result { () throws(AudioError) -> HRTFSet in
        try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000).minimumPhase(taps: 32)
    }

    final class Player: RenderCallbackTarget {
        let samples: [Float]
        var position = 0
        init(_ samples: [Float]) { self.samples = samples }
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let out = request.pointee.buffers.samples(0)
            for frame in 0..<request.pointee.frameCount { out[frame] = samples[(position + frame) % samples.count] }
            position += request.pointee.frameCount
            return .noError
        }
    }

    /// At a measured direction the output is the input convolved directly with the compact
    /// set's responses for that direction, times the gain: the taps are the set's, not the file's.
    @Test func outputIsTheCompactResponseAtMeasuredDirections() throws {
        let set = try Self.compact.get()
        let picks = [set.measurements.first { $0.azimuth == 30 && $0.elevation == 0 }, set.measurements.first { $0.azimuth == -90 && $0.elevation == 0 },
                     set.measurements.first { $0.elevation > 20 && $0.elevation < 60 }].compactMap { $0 }
        #expect(picks.count == 3)
        for measurement in picks {
            let unit = try makeMixer3D(maximumFrames: 256)
            let noise = TestSignal.whiteNoise(count: 8192, seed: 11, amplitude: 0.3)
            let player = Player(noise)
            try unit.setRenderCallback(RenderCallback(player), input: 0)
            try unit.setCompactHRTF(taps: 32)
            try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.hrtf))
            try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: measurement.azimuth)
            try unit.setParameter(Mixer3DUnit.Parameter.elevation, scope: .input, element: 0, to: measurement.elevation)
            try unit.setParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: 0, to: -6)
            try unit.initialize()
            let out = try renderMixer3D(unit, cycles: 24, frames: 256, channels: 2)
            let gain = powf(10, -6.0 / 20)
            var worst: Float = 0
            for (ear, response) in [measurement.left, measurement.right].enumerated() {
                for n in 1024..<6144 {
                    var sum: Float = 0
                    for (k, tap) in response.enumerated() where n - k >= 0 { sum += tap * noise[(n - k) % noise.count] }
                    worst = max(worst, abs(out[ear][n] - gain * sum))
                }
            }
            #expect(worst < 1e-4, "at \(measurement.azimuth)°, \(measurement.elevation)°: difference \(worst)")
        }
    }

    /// Switching compact responses on and off while initialized changes what is heard
    /// (the kernel is handed over), and a negative tap count is refused.
    @Test func compactResponsesSwitchWhileInitialized() throws {
        let unit = try makeMixer3D(maximumFrames: 256)
        let player = Player(TestSignal.whiteNoise(count: 8192, seed: 3, amplitude: 0.3))
        try unit.setRenderCallback(RenderCallback(player), input: 0)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.hrtf))
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: 30)
        try unit.initialize()
        #expect(throws: AudioError.self) { try unit.setCompactHRTF(taps: -1) }
        #expect(unit.compactHRTFTaps == 0)
        let measured = try renderMixer3D(unit, cycles: 8, frames: 256, channels: 2)
        try unit.setCompactHRTF(taps: 32)
        #expect(unit.compactHRTFTaps == 32)
        player.position = 0
        unit.reset()
        let compact = try renderMixer3D(unit, cycles: 8, frames: 256, channels: 2)
        let difference = zip(measured[0], compact[0]).map { abs($0 - $1) }.max() ?? 0
        #expect(difference > 1e-3, "the compact responses were not taken up")
    }
}
