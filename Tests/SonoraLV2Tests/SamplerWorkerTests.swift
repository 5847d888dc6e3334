import Foundation
import SonoraCore
import Testing
@testable import SonoraLV2

/// worker:schedule end to end with a real plugin: eg-sampler loads a new sample in its
/// work() and swaps it in work_response(); the next note plays the new sample.
@Suite struct SamplerWorkerTests {
    static let sample = "http://lv2plug.in/plugins/eg-sampler#sample"

    /// A 0.1 s, 0.5-amplitude 1 kHz sine as the sample file.
    static let sinePath: String = {
        let path = Fixtures.directory + "/sine-sample.wav"
        let sine = (0..<4800).map { Float(0.5 * sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        try? Fixtures.writeWAV([sine], to: path)
        return path
    }()

    static func playAfterLoading(mode: LV2Worker.Mode) throws -> [Float] {
        let unit = try LV2Unit(
            uri: "http://lv2plug.in/plugins/eg-sampler", world: Fixtures.world,
            options: .init(maximumFrames: 256, workerMode: mode))
        try unit.setPatchParameter(Self.sample, to: .path(Self.sinePath))
        return try unit.renderOffline(inputs: [], frameCount: 256 * 40, blockSize: 256) { block, _ throws(AudioError) in
            if mode == .thread && block < 20 { usleep(2000) }  // give the worker thread time to load
            if block == 20 { try unit.sendMIDI([0x90, 60, 127], at: 0) }
        }[0][0]
    }

    @Test(arguments: [LV2Worker.Mode.inline, .thread])
    func newSampleIsPlayed(mode: LV2Worker.Mode) throws {
        let output = try Self.playAfterLoading(mode: mode)
        let start = 20 * 256
        let played = Array(output[start..<(start + 480)])
        // The note plays the sine file (scaled by velocity/gain): its shape, zero crossings every 24 frames.
        let peak = played.map(abs).max() ?? 0
        #expect(peak > 0.05, "nothing played (\(mode))")
        let reference = (0..<480).map { Float(sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        let scale = played[12] / reference[12]
        let difference = zip(played, reference).map { abs($0 - $1 * scale) }.max() ?? 1
        #expect(difference < 1e-3, "the played sound is not the loaded sine (\(mode)): off by \(difference)")
    }

    /// A state with a file path (atom:Path, mapped through state:mapPath by lilv) restores into
    /// a fresh unit, which then plays that file.
    @Test func statePathRestoresTheSample() throws {
        let first = try LV2Unit(
            uri: "http://lv2plug.in/plugins/eg-sampler", world: Fixtures.world, options: .init(maximumFrames: 256, workerMode: .inline))
        try first.setPatchParameter(Self.sample, to: .path(Self.sinePath))
        _ = try first.renderOffline(inputs: [], frameCount: 256, blockSize: 256)
        first.uninitialize()
        let saved = try first.saveState()
        #expect(saved.contains("sine-sample.wav"), "\(saved)")
        let second = try LV2Unit(
            uri: "http://lv2plug.in/plugins/eg-sampler", world: Fixtures.world, options: .init(maximumFrames: 256, workerMode: .inline))
        try second.restoreState(saved)
        let output = try second.renderOffline(inputs: [], frameCount: 2048, blockSize: 256) { block, _ throws(AudioError) in
            if block == 1 { try second.sendMIDI([0x90, 60, 127], at: 0) }
        }[0][0]
        let played = Array(output[256..<736])
        let reference = (0..<480).map { Float(sin(2 * Double.pi * 1000 * Double($0) / 48000)) }
        let scale = played[12] / reference[12]
        #expect(abs(scale) > 0.05)
        #expect((zip(played, reference).map { abs($0 - $1 * scale) }.max() ?? 1) < 1e-3)
    }
}
