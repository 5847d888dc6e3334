import SonoraCore
import SonoraDSP

/// Biquads for `bands × channels`, plus each band's current design, in raw
/// memory: what both equalizers render with. Designs are recomputed only when a
/// band's settings change.
struct BiquadBank {
    /// A band's settings; equal settings mean equal coefficients.
    struct Design: Equatable {
        var type: Int
        var frequency: Float
        var gain: Float
        var q: Float
        var bypass: Bool
    }

    let bands: Int
    let channels: Int
    let filters: UnsafeMutablePointer<Biquad>
    let designs: UnsafeMutablePointer<Design?>

    init(bands: Int, channels: Int) {
        self.bands = bands
        self.channels = channels
        filters = .allocate(capacity: max(bands * channels, 1))
        filters.initialize(repeating: Biquad(), count: bands * channels)
        designs = .allocate(capacity: max(bands, 1))
        designs.initialize(repeating: nil, count: bands)
    }

    func deallocate() {
        filters.deallocate()
        designs.deallocate()
    }

    /// Sets band `band` to `design`, recomputing coefficients only if it changed.
    func update(_ band: Int, _ design: Design, sampleRate: Double, coefficients: (Design) -> BiquadCoefficients) {
        guard designs[band] != design else { return }
        designs[band] = design
        let computed = design.bypass ? BiquadCoefficients.identity : coefficients(design)
        for channel in 0..<channels { filters[band * channels + channel].coefficients = computed }
    }

    /// Runs every band that is not bypassed over each channel of `buffers`, in place.
    func process(_ buffers: AudioBufferList, frames: Int) {
        for band in 0..<bands where designs[band]?.bypass == false {
            for channel in 0..<min(channels, buffers.channelCount) {
                filters[band * channels + channel].process(buffers.samples(channel), count: frames)
            }
        }
    }

    func reset() {
        for index in 0..<bands * channels { filters[index].reset() }
    }
}
