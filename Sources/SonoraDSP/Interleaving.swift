/// Interleaved ⇄ one-buffer-per-channel copies, the edge of every file and device.
/// Stereo, the common case, takes a vector path.
public enum Interleaving {
    /// Copies `frames` frames of `channels` interleaved samples into one buffer per channel.
    @inlinable
    public static func deinterleave(
        _ source: UnsafePointer<Float>, channels: Int, frames: Int, into destination: (Int) -> UnsafeMutablePointer<Float>
    ) {
        if channels == 2 {
            let left = destination(0)
            let right = destination(1)
            let raw = UnsafeRawPointer(source)
            var frame = 0
            while frame &+ 4 <= frames {
                let v = raw.loadUnaligned(fromByteOffset: frame &* 8, as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(left + frame).storeBytes(of: SIMD4(v[0], v[2], v[4], v[6]), as: SIMD4<Float>.self)
                UnsafeMutableRawPointer(right + frame).storeBytes(of: SIMD4(v[1], v[3], v[5], v[7]), as: SIMD4<Float>.self)
                frame &+= 4
            }
            while frame < frames {
                left[frame] = source[2 &* frame]
                right[frame] = source[2 &* frame &+ 1]
                frame &+= 1
            }
            return
        }
        for channel in 0..<channels {
            let samples = destination(channel)
            var from = source + channel
            for frame in 0..<frames {
                samples[frame] = from.pointee
                from += channels
            }
        }
    }

    /// Copies `frames` frames from one buffer per channel into `channels` interleaved samples.
    @inlinable
    public static func interleave(
        channels: Int, frames: Int, from source: (Int) -> UnsafePointer<Float>, into destination: UnsafeMutablePointer<Float>
    ) {
        if channels == 2 {
            let left = source(0)
            let right = source(1)
            let raw = UnsafeMutableRawPointer(destination)
            var frame = 0
            while frame &+ 4 <= frames {
                let l = UnsafeRawPointer(left + frame).loadUnaligned(as: SIMD4<Float>.self)
                let r = UnsafeRawPointer(right + frame).loadUnaligned(as: SIMD4<Float>.self)
                raw.storeBytes(of: SIMD8(l[0], r[0], l[1], r[1], l[2], r[2], l[3], r[3]), toByteOffset: frame &* 8, as: SIMD8<Float>.self)
                frame &+= 4
            }
            while frame < frames {
                destination[2 &* frame] = left[frame]
                destination[2 &* frame &+ 1] = right[frame]
                frame &+= 1
            }
            return
        }
        for channel in 0..<channels {
            let samples = source(channel)
            var to = destination + channel
            for frame in 0..<frames {
                to.pointee = samples[frame]
                to += channels
            }
        }
    }
}
