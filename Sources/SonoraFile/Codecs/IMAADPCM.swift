/// The IMA ADPCM core shared by Apple's IMA4 and the WAV (Microsoft/IMA) block
/// layout: 4-bit codes, 89 step sizes, the step index moving by the code.
/// One `IMAADPCMChannel` per channel carries the predictor and step index.
public struct IMAADPCMChannel: Sendable, Equatable {
    /// The last reconstructed sample (16-bit range).
    public var predictor: Int32
    /// Index into `stepSizes`, 0…88.
    public var stepIndex: Int32

    public init(predictor: Int32 = 0, stepIndex: Int32 = 0) {
        self.predictor = predictor
        self.stepIndex = min(max(stepIndex, 0), 88)
    }

    public static let stepSizes: [Int32] = [
        7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 19, 21, 23, 25, 28, 31, 34, 37, 41, 45, 50, 55, 60, 66, 73, 80, 88, 97,
        107, 118, 130, 143, 157, 173, 190, 209, 230, 253, 279, 307, 337, 371, 408, 449, 494, 544, 598, 658, 724, 796,
        876, 963, 1060, 1166, 1282, 1411, 1552, 1707, 1878, 2066, 2272, 2499, 2749, 3024, 3327, 3660, 4026, 4428, 4871,
        5358, 5894, 6484, 7132, 7845, 8630, 9493, 10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623,
        27086, 29794, 32767,
    ]

    @usableFromInline static let indexAdjustments: [Int32] = [-1, -1, -1, -1, 2, 4, 6, 8]

    /// The tables as raw pointers, for loops over many codes: reading the static
    /// arrays costs a lazy-initialization check and a bounds check per sample.
    public struct Tables {
        public let steps: UnsafePointer<Int32>
        public let adjustments: UnsafePointer<Int32>

        @inlinable
        public init(steps: UnsafePointer<Int32>, adjustments: UnsafePointer<Int32>) {
            self.steps = steps
            self.adjustments = adjustments
        }
    }

    /// Calls `body` with the tables.
    @inlinable
    public static func withTables<Result>(_ body: (Tables) throws -> Result) rethrows -> Result {
        try stepSizes.withUnsafeBufferPointer { steps in
            try indexAdjustments.withUnsafeBufferPointer { adjustments in
                try body(Tables(steps: steps.baseAddress!, adjustments: adjustments.baseAddress!))
            }
        }
    }

    /// `decode(_:)` with the tables at hand.
    @inlinable
    public mutating func decode(_ code: UInt8, _ tables: Tables) -> Int16 {
        let step = tables.steps[Int(stepIndex)]
        var difference = step >> 3
        if code & 4 != 0 { difference &+= step }
        if code & 2 != 0 { difference &+= step >> 1 }
        if code & 1 != 0 { difference &+= step >> 2 }
        predictor = code & 8 != 0 ? predictor &- difference : predictor &+ difference
        predictor = min(max(predictor, -32768), 32767)
        stepIndex = min(max(stepIndex &+ tables.adjustments[Int(code & 7)], 0), 88)
        return Int16(truncatingIfNeeded: predictor)
    }

    /// `encode(_:)` with the tables at hand. Builds the decoder's difference while
    /// choosing the code bits (the same sum `decode` makes from them), so the step is
    /// looked up once and the code is not taken apart again.
    @inlinable
    public mutating func encode(_ sample: Int16, _ tables: Tables) -> UInt8 {
        let step = tables.steps[Int(stepIndex)]
        var difference = Int32(sample) &- predictor
        let negative = difference < 0
        if negative { difference = -difference }
        var code: UInt8 = 0
        var reconstructed = step >> 3
        if difference >= step {
            code = 4
            difference &-= step
            reconstructed &+= step
        }
        if difference >= step >> 1 {
            code |= 2
            difference &-= step >> 1
            reconstructed &+= step >> 1
        }
        if difference >= step >> 2 {
            code |= 1
            reconstructed &+= step >> 2
        }
        predictor = negative ? predictor &- reconstructed : predictor &+ reconstructed
        predictor = min(max(predictor, -32768), 32767)
        stepIndex = min(max(stepIndex &+ tables.adjustments[Int(code)], 0), 88)
        return negative ? code | 8 : code
    }

    /// Reconstructs the next sample from a 4-bit code (the reference decoder's arithmetic).
    @inlinable
    public mutating func decode(_ code: UInt8) -> Int16 {
        let step = Self.stepSizes[Int(stepIndex)]
        var difference = step >> 3
        if code & 4 != 0 { difference += step }
        if code & 2 != 0 { difference += step >> 1 }
        if code & 1 != 0 { difference += step >> 2 }
        predictor = code & 8 != 0 ? predictor - difference : predictor + difference
        predictor = min(max(predictor, -32768), 32767)
        stepIndex = min(max(stepIndex + Self.indexAdjustments[Int(code & 7)], 0), 88)
        return Int16(predictor)
    }

    /// The 4-bit code that best approaches `sample`; updates the state exactly as
    /// `decode` will, so encoder and decoder stay in step.
    @inlinable
    public mutating func encode(_ sample: Int16) -> UInt8 {
        let step = Self.stepSizes[Int(stepIndex)]
        var difference = Int32(sample) - predictor
        var code: UInt8 = 0
        if difference < 0 {
            code = 8
            difference = -difference
        }
        var threshold = step
        if difference >= threshold {
            code |= 4
            difference -= threshold
        }
        threshold >>= 1
        if difference >= threshold {
            code |= 2
            difference -= threshold
        }
        threshold >>= 1
        if difference >= threshold { code |= 1 }
        _ = decode(code)
        return code
    }
}
