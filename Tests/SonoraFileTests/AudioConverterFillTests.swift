import SonoraCore
import SonoraFile
import Testing

/// `AudioConverter.fill(frameCount:)` as AudioConverterFillComplexBuffer: at most the frames
/// asked for, the rest kept for the next call, nothing lost or repeated.
@Suite("AudioConverter fill")
struct AudioConverterFillTests {
    /// `frames` frames of `channels` interleaved little-endian int16, every sample distinct.
    static func int16Ramp(frames: Int, channels: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        for index in 0..<frames * channels {
            withUnsafeBytes(of: Int16(truncatingIfNeeded: index * 7 - 15000).littleEndian) { bytes += $0 }
        }
        return bytes
    }

    /// Pulls the whole input through `fill` in requests of `request` frames; returns each answer.
    static func pull(
        _ converter: AudioConverter, input: [UInt8], piece: Int, request: Int
    ) throws -> [[UInt8]] {
        var offset = 0
        var answers: [[UInt8]] = []
        while true {
            let answer = try converter.fill(frameCount: request) {
                defer { offset += piece }
                return offset < input.count ? Array(input[offset..<min(input.count, offset + piece)]) : []
            }
            if answer.isEmpty { break }
            answers.append(answer)
        }
        return answers
    }

    @Test func interleavedAnswersHoldAtMostTheFramesAskedFor() throws {
        let source = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)
        let destination = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .float32)
        // The callback hands 1000 frames at a time; the caller wants 300.
        let input = Self.int16Ramp(frames: 2500, channels: 2)
        let answers = try Self.pull(AudioConverter(from: source, to: destination), input: input, piece: 4000, request: 300)
        for answer in answers { #expect(answer.count <= 300 * 8) }
        #expect(answers.dropLast().allSatisfy { $0.count == 300 * 8 })
        let whole = try AudioConverter(from: source, to: destination).convert(input)
        #expect(answers.flatMap { $0 } == whole)
    }

    @Test func nonInterleavedAnswersSplitEveryChannelAtTheSameFrame() throws {
        let source = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let destination = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int32, interleaved: false)
        let input = Self.int16Ramp(frames: 1000, channels: 2)
        let converter = try AudioConverter(from: source, to: destination)
        let answers = try Self.pull(converter, input: input, piece: 512 * 4, request: 100)
        #expect(answers.count == 10)
        let whole = try AudioConverter(from: source, to: destination).convert(input)
        // Each answer is its own channel buffers, one after another: channel 0's 100 frames, then channel 1's.
        for (index, answer) in answers.enumerated() {
            #expect(answer.count == 100 * 4 * 2)
            let left = Array(whole[(index * 100 * 4)..<((index + 1) * 100 * 4)])
            let right = Array(whole[(1000 * 4 + index * 100 * 4)..<(1000 * 4 + (index + 1) * 100 * 4)])
            #expect(Array(answer[0..<400]) == left)
            #expect(Array(answer[400..<800]) == right)
        }
    }

    @Test func resamplingAnswersHoldAtMostTheFramesAskedFor() throws {
        let source = StreamFormat.linearPCM(sampleRate: 32000, channels: 1, sample: .int16)
        let destination = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let input = Self.int16Ramp(frames: 3200, channels: 1)
        let answers = try Self.pull(AudioConverter(from: source, to: destination), input: input, piece: 2000, request: 256)
        for answer in answers { #expect(answer.count <= 256 * 4) }
        #expect(answers.dropLast().allSatisfy { $0.count == 256 * 4 })
        let converter = try AudioConverter(from: source, to: destination)
        #expect(answers.flatMap { $0 } == (try converter.convert(input) + converter.flush()))
    }

    @Test func ima4AnswersAreWholePacketsWithinTheFramesAskedFor() throws {
        let source = StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .int16)
        let destination = StreamFormat.appleIMA4(sampleRate: 44100, channels: 1)
        let input = Self.int16Ramp(frames: 64 * 20, channels: 1)
        let answers = try Self.pull(AudioConverter(from: source, to: destination), input: input, piece: 64 * 9 * 2, request: 200)
        // 200 frames hold 3 whole packets of 64.
        for answer in answers { #expect(answer.count <= 3 * 34 && answer.count % 34 == 0) }
        let converter = try AudioConverter(from: source, to: destination)
        #expect(answers.flatMap { $0 } == (try converter.convert(input) + converter.flush()))
        #expect(throws: AudioError.self) {
            try AudioConverter(from: source, to: destination).fill(frameCount: 63) { input }
        }
    }
}
