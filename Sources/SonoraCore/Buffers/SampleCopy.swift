/// Copies `count` samples. Short copies run as an inline SIMD loop, since a
/// call into libc's memmove costs as much as moving a few hundred bytes, and a
/// non-interleaved buffer list makes one such call per channel; long copies go
/// to memcpy. Source and destination must not overlap.
@inlinable
@inline(__always)
public func copySamples(from source: UnsafePointer<Float>, to destination: UnsafeMutablePointer<Float>, count: Int) {
    if count >= 256 {
        destination.update(from: source, count: count)
        return
    }
    let from = UnsafeRawPointer(source)
    let to = UnsafeMutableRawPointer(destination)
    var index = 0
    while index + 8 <= count {
        let offset = index &* 4
        to.storeBytes(of: from.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self), toByteOffset: offset, as: SIMD8<Float>.self)
        index &+= 8
    }
    while index < count {
        destination[index] = source[index]
        index &+= 1
    }
}
