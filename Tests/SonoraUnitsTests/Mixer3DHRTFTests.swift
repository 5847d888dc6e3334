import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("3D mixer: HRTF inputs", .serialized)
struct Mixer3DHRTFTests {
    static let set = Result { () throws(AudioError) -> HRTFSet in try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000) }

    /// At a measured direction the output is the input convolved with that measurement's
    /// responses (direct, time-domain), times the gain.
    @Test func outputIsTheMeasuredResponseAtMeasuredDirections() throws {
        let set = try Self.set.get()
        let picks = [set.measurements.first { $0.azimuth == 30 && $0.elevation == 0 }, set.measurements.first { $0.azimuth == -90 && $0.elevation == 0 },
                     set.measurements.first { $0.elevation > 20 && $0.elevation < 60 }].compactMap { $0 }
        #expect(picks.count == 3)
        for measurement in picks {
            let unit = try makeMixer3D(maximumFrames: 256)
            let noise = TestSignal.whiteNoise(count: 8192, seed: 7, amplitude: 0.3)
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
            let player = Player(noise)
            try unit.setRenderCallback(RenderCallback(player), input: 0)
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

    @Test func aBadSOFAFileIsRefusedByName() throws {
        try withTemporaryFolder { folder in
            let path = folder.path + "/broken.sofa"
            try "not a SOFA file".write(toFile: path, atomically: true, encoding: .utf8)
            let unit = try makeMixer3D()
            let error = #expect(throws: AudioError.self) { try unit.setProperty(.hrtfFilePath, scope: .global, element: 0, to: .filePath(path)) }
            #expect(error?.message.contains("broken.sofa") == true)
            guard case .filePath(let kept) = try unit.property(.hrtfFilePath, scope: .global, element: 0) else { return }
            #expect(kept == SOFAFile.defaultPath)
            let missing = #expect(throws: AudioError.self) {
                try unit.setProperty(.hrtfFilePath, scope: .global, element: 0, to: .filePath(folder.path + "/none.sofa"))
            }
            #expect(missing?.message.contains("none.sofa") == true)
        }
    }
}
