import CLV2Core

// Sonora Gain: a stereo gain/balance plugin with a peak meter — the example of writing
// an LV2 plugin in Swift, and a fixture hosted both by Sonora and by lilv's lv2apply.
//
// The shape: a `.dynamic` library product linked with `-static-stdlib` (so no Swift
// runtime is needed on the host and unloading is safe), exporting `lv2_descriptor`
// through `@_cdecl`, returning a statically allocated `LV2_Descriptor` whose callbacks
// are `@convention(c)` closures. `run()` touches only raw pointers: no ARC, no allocation.

/// Port indices, as in gain.ttl.
enum Port: UInt32 {
    case gain = 0, balance, leftIn, rightIn, leftOut, rightOut, peak
}

/// One instance's state: where the host connected each port.
struct GainInstance {
    var gain: UnsafePointer<Float>?
    var balance: UnsafePointer<Float>?
    var leftIn: UnsafePointer<Float>?
    var rightIn: UnsafePointer<Float>?
    var leftOut: UnsafeMutablePointer<Float>?
    var rightOut: UnsafeMutablePointer<Float>?
    var peak: UnsafeMutablePointer<Float>?
}

/// The plugin's URI, NUL-terminated, with static storage (lv2_descriptor hands out a pointer to it).
let pluginURI: StaticString = "https://sonora.audio/plugins/gain\0"

/// dB → linear amplitude; -90 dB and below is silence.
@inline(__always)
func amplitude(decibels: Float) -> Float {
    decibels <= -90 ? 0 : exp10f(decibels / 20)
}

@_silgen_name("exp10f") func exp10f(_ x: Float) -> Float

nonisolated(unsafe) var descriptor = LV2_Descriptor(
    URI: UnsafeRawPointer(pluginURI.utf8Start).assumingMemoryBound(to: CChar.self),
    instantiate: { _, _, _, _ in
        let instance = UnsafeMutablePointer<GainInstance>.allocate(capacity: 1)
        instance.initialize(to: GainInstance())
        return LV2_Handle(instance)
    },
    connect_port: { handle, port, data in
        let instance = handle!.assumingMemoryBound(to: GainInstance.self)
        switch Port(rawValue: port) {
        case .gain: instance.pointee.gain = data.map { UnsafePointer($0.assumingMemoryBound(to: Float.self)) }
        case .balance: instance.pointee.balance = data.map { UnsafePointer($0.assumingMemoryBound(to: Float.self)) }
        case .leftIn: instance.pointee.leftIn = data.map { UnsafePointer($0.assumingMemoryBound(to: Float.self)) }
        case .rightIn: instance.pointee.rightIn = data.map { UnsafePointer($0.assumingMemoryBound(to: Float.self)) }
        case .leftOut: instance.pointee.leftOut = data?.assumingMemoryBound(to: Float.self)
        case .rightOut: instance.pointee.rightOut = data?.assumingMemoryBound(to: Float.self)
        case .peak: instance.pointee.peak = data?.assumingMemoryBound(to: Float.self)
        case nil: break
        }
    },
    activate: nil,
    run: { handle, frames in
        let instance = handle!.assumingMemoryBound(to: GainInstance.self).pointee
        guard let leftIn = instance.leftIn, let rightIn = instance.rightIn, let leftOut = instance.leftOut,
            let rightOut = instance.rightOut
        else { return }
        let gain = amplitude(decibels: instance.gain?.pointee ?? 0)
        let balance = min(max(instance.balance?.pointee ?? 0, -1), 1)
        // Balance turns the far side down (as Sonora's GainUnit): right of centre attenuates the left.
        let left = gain * min(1, 1 - balance)
        let right = gain * min(1, 1 + balance)
        var peak: Float = 0
        for frame in 0..<Int(frames) {
            let l = leftIn[frame] * left
            let r = rightIn[frame] * right
            leftOut[frame] = l
            rightOut[frame] = r
            peak = max(peak, abs(l), abs(r))
        }
        instance.peak?.pointee = peak
    },
    deactivate: nil,
    cleanup: { handle in
        handle?.assumingMemoryBound(to: GainInstance.self).deallocate()
    },
    extension_data: { _ in nil }
)

/// The entry point every LV2 host looks up.
@_cdecl("lv2_descriptor")
public func lv2Descriptor(_ index: UInt32) -> UnsafePointer<LV2_Descriptor>? {
    guard index == 0 else { return nil }
    return withUnsafePointer(to: &descriptor) { $0 }
}
