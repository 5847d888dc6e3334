/// One source's convolution state for one `HRTFKernel`: the input block window, the ring of
/// past input spectra (a frequency-domain delay line), and work buffers. Made on the control
/// side when a kernel is handed to a `BinauralRenderer`; `render` allocates nothing.
///
/// Zero latency: the block being filled is transformed as it stands (zero beyond what has
/// arrived), so a call of any length gets its own output now — exactly the direct
/// convolution. Calls that are a multiple of `blockSize` cost one block's work per block;
/// shorter calls redo the current block's transform (more work, same result).
///
/// Direction changes cross-fade, over `blockSize` samples, from the old filter's output to
/// the new one's, both computed on the same input history (so each is a clean steady-state
/// convolution); a change asked during a fade starts when that fade ends.
final class BinauralConvolution {
    let kernel: HRTFKernel
    private let fft: RealFFT
    private let block: Int
    private let partitions: Int
    private let bins: Int
    /// [previous block | current block], the current one zero beyond `fill`.
    private let window: UnsafeMutablePointer<Float>
    /// `partitions` spectra (real bins, then imaginary), newest at `head`.
    private let history: UnsafeMutablePointer<Float>
    /// One spectrum being accumulated.
    private let sum: UnsafeMutablePointer<Float>
    /// 2·block time samples each: new filter left/right, old filter left/right.
    private let newLeft: UnsafeMutablePointer<Float>, newRight: UnsafeMutablePointer<Float>
    private let oldLeft: UnsafeMutablePointer<Float>, oldRight: UnsafeMutablePointer<Float>
    private let state: UnsafeMutablePointer<State>

    struct State {
        var fill = 0
        var head = 0
        /// The measurement now sounding; −1 before the first render.
        var current = -1
        /// The measurement faded out of, or −1 when no fade runs.
        var fadingFrom = -1
        var fadePosition = 0
        /// The measurement asked for last (taken when a running fade ends).
        var requested = -1
        var gain: Float = 0
        var hasGain = false
    }

    init(kernel: HRTFKernel) {
        self.kernel = kernel
        block = kernel.blockSize
        partitions = kernel.partitionCount
        bins = kernel.binCount
        fft = RealFFT(size: 2 * block)
        window = .allocate(capacity: 2 * block)
        history = .allocate(capacity: partitions * 2 * bins)
        sum = .allocate(capacity: 2 * bins)
        newLeft = .allocate(capacity: 2 * block); newRight = .allocate(capacity: 2 * block)
        oldLeft = .allocate(capacity: 2 * block); oldRight = .allocate(capacity: 2 * block)
        state = .allocate(capacity: 1)
        state.initialize(to: State())
        clear()
    }

    deinit {
        window.deallocate(); history.deallocate(); sum.deallocate()
        newLeft.deallocate(); newRight.deallocate(); oldLeft.deallocate(); oldRight.deallocate()
        state.deallocate()
    }

    /// Silence in, nothing pending: as new.
    func clear() {
        window.update(repeating: 0, count: 2 * block)
        history.update(repeating: 0, count: partitions * 2 * bins)
        state.pointee = State()
    }

    func render(
        _ input: UnsafePointer<Float>, count: Int, azimuth: Float, elevation: Float, gain: Float,
        left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>
    ) {
        let target = kernel.index.nearest(azimuth: azimuth, elevation: elevation)
        state.pointee.requested = target
        if state.pointee.current < 0 { state.pointee.current = target }
        let startGain = state.pointee.hasGain ? state.pointee.gain : gain
        state.pointee.gain = gain
        state.pointee.hasGain = true
        let gainStep = (gain - startGain) / Float(count)
        var done = 0
        while done < count {
            if state.pointee.fadingFrom < 0 && state.pointee.requested != state.pointee.current {
                state.pointee.fadingFrom = state.pointee.current
                state.pointee.current = state.pointee.requested
                state.pointee.fadePosition = 0
            }
            let fill = state.pointee.fill
            let n = min(count - done, block - fill)
            (window + block + fill).update(from: input + done, count: n)
            let head = state.pointee.head
            let spectrum = history + head * 2 * bins
            fft.forward(window, real: spectrum, imaginary: spectrum + bins)
            let offset = block + fill
            filter(measurement: state.pointee.current, left: newLeft, right: newRight)
            let from = state.pointee.fadingFrom
            if from >= 0 {
                filter(measurement: from, left: oldLeft, right: oldRight)
                let position = state.pointee.fadePosition
                let length = Float(block)
                for i in 0..<n {
                    let g = startGain + gainStep * Float(done + i + 1)
                    let w = min(1, Float(position + i + 1) / length)
                    let l = oldLeft[offset + i] + w * (newLeft[offset + i] - oldLeft[offset + i])
                    let r = oldRight[offset + i] + w * (newRight[offset + i] - oldRight[offset + i])
                    left[done + i] += g * l
                    right[done + i] += g * r
                }
                if position + n >= block {
                    state.pointee.fadingFrom = -1
                } else {
                    state.pointee.fadePosition = position + n
                }
            } else if gainStep == 0 {
                for i in 0..<n {
                    left[done + i] += gain * newLeft[offset + i]
                    right[done + i] += gain * newRight[offset + i]
                }
            } else {
                for i in 0..<n {
                    let g = startGain + gainStep * Float(done + i + 1)
                    left[done + i] += g * newLeft[offset + i]
                    right[done + i] += g * newRight[offset + i]
                }
            }
            if fill + n == block {
                // The block is complete: it becomes the previous one, its spectrum stays in the ring.
                (window).update(from: window + block, count: block)
                (window + block).update(repeating: 0, count: block)
                state.pointee.fill = 0
                state.pointee.head = head + 1 == partitions ? 0 : head + 1
            } else {
                state.pointee.fill = fill + n
            }
            done += n
        }
    }

    /// Both ears' output for the current window through `measurement`'s filter, into
    /// `left`/`right` (2·block samples; the last block is the valid part).
    @inline(__always)
    private func filter(measurement: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        accumulate(kernel.spectrum(measurement: measurement, ear: 0))
        fft.inverse(real: sum, imaginary: sum + bins, output: left)
        accumulate(kernel.spectrum(measurement: measurement, ear: 1))
        fft.inverse(real: sum, imaginary: sum + bins, output: right)
    }

    /// sum = Σₚ X[head − p] · H[p].
    @inline(__always)
    private func accumulate(_ filter: UnsafeMutablePointer<Float>) {
        let bins = bins, stride = 2 * bins
        let sumReal = sum, sumImaginary = sum + bins
        sum.update(repeating: 0, count: stride)
        var slot = state.pointee.head
        for partition in 0..<partitions {
            let x = history + slot * stride
            let h = filter + partition * stride
            let xr = x, xi = x + bins, hr = h, hi = h + bins
            for k in 0..<bins {
                sumReal[k] += xr[k] * hr[k] - xi[k] * hi[k]
                sumImaginary[k] += xr[k] * hi[k] + xi[k] * hr[k]
            }
            slot = slot == 0 ? partitions - 1 : slot - 1
        }
    }
}
