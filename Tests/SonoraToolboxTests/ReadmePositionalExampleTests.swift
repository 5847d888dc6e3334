import Foundation
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The README's "Positional audio" lines: a looping sound circling the listener through the
/// OpenAL-style API, verbatim but for the file (the melody of Configs/) and keeping what is
/// rendered, which is then judged: the source is on the right a quarter of the way round,
/// on the left three quarters of the way, centred in front and behind.
@Suite("README's positional audio example", .serialized)
struct ReadmePositionalExampleTests {
    @Test("a source circling the listener is heard going right, behind, left")
    func circling() throws {
        var left: [[Float]] = [], right: [[Float]] = []   // per 10 ms step

        let device = try ALDevice.loopback(frequency: 48000, channels: 2)  // ALDevice.playback(): the sound card
        let context = try ALContext(device: device); _ = ALContext.makeCurrent(context)
        let bell = try context.makeBuffer(); try bell.load(contentsOf: URL(fileURLWithPath: PackageRoot.path("Configs/sounds/melody.wav")))
        let source = try context.makeSource(); source.buffer = bell; source.isLooping = true
        try source.play()
        var out = [Float](repeating: 0, count: 480 * 2)
        for step in 0..<400 {                                  // once round in 4 s
            let angle = Float(step) / 400 * 2 * .pi           // the listener is at 0,0,0 facing -z
            source.position = SIMD3(2 * sin(angle), 0, -2 * cos(angle))
            device.render(into: &out, frames: 480)            // 10 ms; a playback device plays by itself
            left.append(stride(from: 0, to: out.count, by: 2).map { out[$0] })
            right.append(stride(from: 1, to: out.count, by: 2).map { out[$0] })
        }
        defer { context.destroy(); device.close() }

        /// Right minus left (dB) over the steps around `step` (±20: ±18°).
        func balance(around step: Int) -> Double {
            let steps = (step - 20...step + 20).map { ($0 + 400) % 400 }
            let l = steps.flatMap { left[$0] }, r = steps.flatMap { right[$0] }
            return SignalMeasurement.rmsDBFS(r) - SignalMeasurement.rmsDBFS(l)
        }
        #expect(SignalMeasurement.rmsDBFS(left.joined()) > -60, "nothing was heard")
        #expect(balance(around: 100) > 6, "at +x (a quarter round): \(balance(around: 100)) dB")
        #expect(balance(around: 300) < -6, "at -x (three quarters): \(balance(around: 300)) dB")
        #expect(abs(balance(around: 0)) < 3 && abs(balance(around: 200)) < 3, "ahead \(balance(around: 0)), behind \(balance(around: 200))")
    }
}
