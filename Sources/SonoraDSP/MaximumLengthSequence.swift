/// A maximum-length sequence (MLS) of ±1 from a Fibonacci linear-feedback shift
/// register: 2ⁿ − 1 values whose circular autocorrelation is a single peak over flat
/// −1 side lobes — the measurement signal of `sonora latency`.
public enum MaximumLengthSequence {
    /// Feedback taps (bit positions, 1-based) of a primitive polynomial per order.
    private static let taps: [Int: [Int]] = [
        8: [8, 6, 5, 4], 9: [9, 5], 10: [10, 7], 11: [11, 9], 12: [12, 11, 10, 4], 13: [13, 12, 11, 8],
        14: [14, 13, 12, 2], 15: [15, 14], 16: [16, 15, 13, 4],
    ]

    /// The 2^`order` − 1 values (±1) for `order` in 8…16.
    public static func values(order: Int) -> [Float] {
        guard let taps = taps[order] else { preconditionFailure("MLS order \(order) not in 8…16") }
        let length = (1 << order) - 1
        var register: UInt32 = 1
        var result = [Float](repeating: 0, count: length)
        for index in 0..<length {
            let output = register & 1
            result[index] = output == 1 ? 1 : -1
            var feedback: UInt32 = 0
            for tap in taps { feedback ^= (register >> UInt32(order - tap)) & 1 }
            register = (register >> 1) | (feedback << UInt32(order - 1))
        }
        return result
    }
}
