import Synchronization

/// One source's HRTF rendering: mono in, added into a left/right pair. Realtime-safe.
///
/// The kernel (the set's filter spectra) is shared; the renderer keeps this source's
/// convolution state. `setKernel` (control side) builds a state for the kernel and hands it
/// over through an atomic slot; the next `render` takes it, and the state it let go of comes
/// back through a second slot to be released on the control side at the next `setKernel` or
/// at deinit. So the realtime side never allocates, frees, retains or releases; and the
/// renderer holds the kernel it renders with (the owner may drop its own reference at any time).
public final class BinauralRenderer: @unchecked Sendable {
    /// The largest `count` the caller means to pass; longer calls are rendered too (in blocks).
    public let maximumFrames: Int
    /// 0: nothing new; 1: "no kernel"; else a retained `BinauralConvolution`.
    private let pending = Atomic<UInt>(0)
    /// 0: empty; else a retained `BinauralConvolution` the render side let go of.
    private let retired = Atomic<UInt>(0)
    private let resetRequested = Atomic<Bool>(false)
    /// The render side's state (0: none); touched only by `render` and deinit.
    private let active: UnsafeMutablePointer<UInt>

    private static let noKernel: UInt = 1

    public init(maximumFrames: Int) {
        self.maximumFrames = max(1, maximumFrames)
        active = .allocate(capacity: 1)
        active.initialize(to: 0)
    }

    deinit {
        for bits in [active.pointee, pending.load(ordering: .acquiring), retired.load(ordering: .acquiring)] where bits > Self.noKernel {
            Self.release(bits)
        }
        active.deallocate()
    }

    /// Control side: render with `kernel` (nil: render nothing) from the next `render` on.
    /// Allocates this source's state for the kernel's block size and partitions.
    public func setKernel(_ kernel: HRTFKernel?) {
        collectRetired()
        let bits = kernel.map { UInt(bitPattern: Unmanaged.passRetained(BinauralConvolution(kernel: $0)).toOpaque()) } ?? Self.noKernel
        let unused = pending.exchange(bits, ordering: .acquiringAndReleasing)
        // Never taken by the render side: nobody else holds it.
        if unused > Self.noKernel { Self.release(unused) }
    }

    /// Realtime: convolve `count` mono samples for a source at (azimuth, elevation) — degrees,
    /// Core Audio's sense — and ADD the result into `left`/`right` times `gain` (linear). The
    /// gain ramps from the previous call's over this call; a new direction cross-fades from
    /// the old filter's output over one block. Without a kernel it adds nothing.
    public func render(
        _ input: UnsafePointer<Float>, count: Int, azimuth: Float, elevation: Float, gain: Float,
        addingInto left: UnsafeMutablePointer<Float>, _ right: UnsafeMutablePointer<Float>
    ) {
        takeHandover()
        let bits = active.pointee
        guard bits != 0 else { return }
        let convolution = Unmanaged<BinauralConvolution>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
        let reset = resetRequested.exchange(false, ordering: .acquiringAndReleasing)
        guard count > 0 else {
            if reset { convolution._withUnsafeGuaranteedRef { $0.clear() } }
            return
        }
        convolution._withUnsafeGuaranteedRef { state in
            if reset { state.clear() }
            state.render(input, count: count, azimuth: azimuth, elevation: elevation, gain: gain, left: left, right: right)
        }
    }

    /// Forget the input history, the direction and the gain (the next render starts from
    /// silence, with no fade). Taken at the next `render`; safe from any thread.
    public func reset() {
        resetRequested.store(true, ordering: .releasing)
    }

    /// Render side: take a handed-over state if the retired slot is free for the old one
    /// (otherwise next time; the control side empties it at each `setKernel`).
    @inline(__always)
    private func takeHandover() {
        guard retired.load(ordering: .acquiring) == 0 else { return }
        let bits = pending.exchange(0, ordering: .acquiringAndReleasing)
        guard bits != 0 else { return }
        let old = active.pointee
        active.pointee = bits == Self.noKernel ? 0 : bits
        if old != 0 { retired.store(old, ordering: .releasing) }
    }

    private func collectRetired() {
        let bits = retired.exchange(0, ordering: .acquiringAndReleasing)
        if bits > Self.noKernel { Self.release(bits) }
    }

    private static func release(_ bits: UInt) {
        Unmanaged<BinauralConvolution>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
    }
}
