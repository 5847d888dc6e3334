import SonoraCore
@testable import SonoraUnits

/// Feeds a constant value (or a counting ramp) into an input, counting calls.
final class ConstantSource: RenderCallbackTarget {
    var value: Float
    var counting: Bool
    var calls = 0
    var framesSeen = 0

    init(_ value: Float, counting: Bool = false) {
        self.value = value
        self.counting = counting
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        calls += 1
        let buffers = request.pointee.buffers
        for channel in 0..<buffers.channelCount {
            let samples = buffers.samples(channel)
            for frame in 0..<request.pointee.frameCount {
                samples[frame] = counting ? Float(framesSeen + frame) : value
            }
        }
        framesSeen += request.pointee.frameCount
        return .noError
    }
}

/// Renders `frames` frames of `unit`'s output element `bus` at `sampleTime`.
func renderFrames(_ unit: AudioUnit, frames: Int, bus: Int = 0, sampleTime: Double = 0, channels: Int = 2) throws -> [[Float]] {
    let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
    var flags = RenderActionFlags()
    let status = unit.render(
        flags: &flags, timeStamp: AudioTimeStamp(sampleTime: sampleTime), bus: bus, frameCount: frames,
        into: buffers.list(frameCount: frames))
    guard status == .noError else { throw AudioError(status, "render failed") }
    return (0..<channels).map { Array(buffers.list(frameCount: frames)[$0]) }
}

extension AudioError.Code {
    /// The status `body` fails with (`.noError` if it succeeds; `.unspecified` for a non-AudioError).
    static func of(_ body: () throws -> Void) -> AudioError.Code {
        do {
            try body()
            return .noError
        } catch let error as AudioError {
            return error.code
        } catch {
            return .unspecified
        }
    }
}
