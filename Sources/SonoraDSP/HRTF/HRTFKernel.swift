/// Every filter spectrum of one `HRTFSet` for one block size, and the direction lookup:
/// what any number of `BinauralRenderer`s share. Made OFF the realtime thread (it allocates
/// and transforms every response); immutable afterwards, so one kernel serves every source.
///
/// Uniform partitioned convolution: each response is cut into `partitionCount` pieces of
/// `blockSize` taps, each piece zero-padded to 2·blockSize and transformed once here. The
/// renderer then pays one forward FFT per block, one complex multiply-add per partition
/// and ear, and one inverse FFT per ear — instead of `filterLength` taps per sample.
public final class HRTFKernel: @unchecked Sendable {
    public let sampleRate: Double
    public let filterLength: Int
    /// Samples per convolution block (a power of two): the FFT is twice this.
    public let blockSize: Int
    public let partitionCount: Int
    public let measurementCount: Int
    /// The measured directions (Core Audio's sense), index for index with the spectra.
    public let directions: [(azimuth: Float, elevation: Float)]
    /// blockSize + 1.
    let binCount: Int
    /// Per measurement, ear (0 left, 1 right) and partition: `binCount` real parts, then
    /// `binCount` imaginary parts.
    let spectra: UnsafeMutablePointer<Float>
    let index: HRTFDirectionIndex

    /// `blockSize` is rounded up to a power of two between 16 and 8192. Choose it near the
    /// render slice: smaller blocks mean more partitions (more multiply-adds per sample),
    /// larger ones more FFT work per call when calls are short.
    public init(set: HRTFSet, blockSize: Int) {
        var block = 16
        while block < min(8192, blockSize) { block <<= 1 }
        self.blockSize = block
        sampleRate = set.sampleRate
        filterLength = set.filterLength
        partitionCount = (set.filterLength + block - 1) / block
        measurementCount = set.measurements.count
        binCount = block + 1
        directions = set.measurements.map { ($0.azimuth, $0.elevation) }
        let stride = 2 * binCount
        let total = measurementCount * 2 * partitionCount * stride
        spectra = .allocate(capacity: total)
        spectra.initialize(repeating: 0, count: total)
        let fft = RealFFT(size: 2 * block)
        let padded = UnsafeMutablePointer<Float>.allocate(capacity: 2 * block)
        defer { padded.deallocate() }
        for (measurementIndex, measurement) in set.measurements.enumerated() {
            for (ear, response) in [measurement.left, measurement.right].enumerated() {
                for partition in 0..<partitionCount {
                    padded.initialize(repeating: 0, count: 2 * block)
                    let start = partition * block
                    for tap in start..<min(start + block, set.filterLength) { padded[tap - start] = response[tap] }
                    let target = spectra + ((measurementIndex * 2 + ear) * partitionCount + partition) * stride
                    fft.forward(padded, real: target, imaginary: target + binCount)
                }
            }
        }
        index = HRTFDirectionIndex(measurements: set.measurements)
    }

    deinit {
        spectra.deallocate()
        index.deallocate()
    }

    /// The index (into `directions`) of the measurement nearest (azimuth, elevation) in
    /// degrees. Realtime-safe.
    public func nearestMeasurement(azimuth: Float, elevation: Float) -> Int {
        index.nearest(azimuth: azimuth, elevation: elevation)
    }

    /// The first partition's spectrum of `measurement`'s `ear` (0 left, 1 right).
    @inline(__always)
    func spectrum(measurement: Int, ear: Int) -> UnsafeMutablePointer<Float> {
        spectra + (measurement * 2 + ear) * partitionCount * 2 * binCount
    }
}
