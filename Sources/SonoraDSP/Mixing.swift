/// Gain, copy and sum kernels over Float sample buffers.
///
/// The loops move eight samples at a time through `SIMD8<Float>` with unaligned loads, so
/// they vectorize even in builds where the optimizer would not, and finish with a scalar
/// tail. Each output is the same single multiply (and add) a scalar loop would compute, so
/// results are bit-identical to the obvious loop.
public enum Mixing {
    /// destination[i] += source[i] · gain. The buffers must not overlap.
    @inlinable
    public static func add(_ source: UnsafePointer<Float>, into destination: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(destination)
        let factor = SIMD8<Float>(repeating: gain)
        var index = 0
        while index &+ 8 <= count {
            let offset = index &* 4
            let sum = to.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
                + from.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * factor
            to.storeBytes(of: sum, toByteOffset: offset, as: SIMD8<Float>.self)
            index &+= 8
        }
        while index < count {
            destination[index] += source[index] * gain
            index &+= 1
        }
    }

    /// samples[i] ·= gain.
    @inlinable
    public static func scale(_ samples: UnsafeMutablePointer<Float>, count: Int, by gain: Float) {
        let raw = UnsafeMutableRawPointer(samples)
        let factor = SIMD8<Float>(repeating: gain)
        var index = 0
        while index &+ 8 <= count {
            let offset = index &* 4
            let scaled = raw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * factor
            raw.storeBytes(of: scaled, toByteOffset: offset, as: SIMD8<Float>.self)
            index &+= 8
        }
        while index < count {
            samples[index] *= gain
            index &+= 1
        }
    }

    /// destination[i] = source[i] · gain. The buffers may be the same but must not
    /// otherwise overlap.
    @inlinable
    public static func copy(_ source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>, count: Int, gain: Float) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(destination)
        let factor = SIMD8<Float>(repeating: gain)
        var index = 0
        while index &+ 8 <= count {
            let offset = index &* 4
            let scaled = from.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) * factor
            to.storeBytes(of: scaled, toByteOffset: offset, as: SIMD8<Float>.self)
            index &+= 8
        }
        while index < count {
            destination[index] = source[index] * gain
            index &+= 1
        }
    }
}
