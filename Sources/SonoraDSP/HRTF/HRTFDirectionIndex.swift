#if canImport(Glibc)
import Glibc
#endif

/// Finds the measured direction nearest a requested one (largest cosine) without a scan
/// of every measurement: a 5° azimuth/elevation grid, and per grid cell the measurements
/// that can be nearest for some direction inside the cell. A direction lies within 5° of
/// its cell's centre c; if the measurement nearest c is d away, the one nearest the
/// direction is at most d + 5° from the direction, so at most d + 10° from c — only those
/// are kept (triangle inequality: exact, not a heuristic). Built off the realtime thread;
/// `nearest` allocates nothing and scans a handful of candidates.
///
/// Raw storage (no arrays, no ARC) so the render path touches nothing but memory;
/// `deallocate()` is called once by the owning kernel.
struct HRTFDirectionIndex {
    /// Unit vectors of the measurements: x right, y up, z front.
    let x: UnsafeMutablePointer<Float>, y: UnsafeMutablePointer<Float>, z: UnsafeMutablePointer<Float>
    let count: Int
    /// Cell k's candidates are `candidates[start[k] ..< start[k + 1]]`.
    let start: UnsafeMutablePointer<Int32>
    let candidates: UnsafeMutablePointer<Int32>
    static let gridStep: Float = 5
    static let gridRows = 37  // −90…90 every 5°
    static let gridColumns = 72  // −180…175 every 5°

    init(measurements: [HRTFMeasurement]) {
        count = measurements.count
        x = .allocate(capacity: count); y = .allocate(capacity: count); z = .allocate(capacity: count)
        for (index, measurement) in measurements.enumerated() {
            let vector = Self.unitVector(azimuth: measurement.azimuth, elevation: measurement.elevation)
            x[index] = vector.x; y[index] = vector.y; z[index] = vector.z
        }
        let cells = Self.gridRows * Self.gridColumns
        var lists: [Int32] = []
        var offsets: [Int32] = [0]
        offsets.reserveCapacity(cells + 1)
        var cosines = [Float](repeating: 0, count: count)
        // cos(d + 10°) with a little slack for rounding.
        let reach = Float(10.5 * Double.pi / 180)
        for row in 0..<Self.gridRows {
            for column in 0..<Self.gridColumns {
                let centre = Self.unitVector(
                    azimuth: Float(column) * Self.gridStep - 180, elevation: Float(row) * Self.gridStep - 90)
                var best: Float = -1
                for index in 0..<count {
                    cosines[index] = x[index] * centre.x + y[index] * centre.y + z[index] * centre.z
                    best = max(best, cosines[index])
                }
                let limit = cosf(min(Float.pi, acosf(min(1, best)) + reach))
                for index in 0..<count where cosines[index] >= limit { lists.append(Int32(index)) }
                offsets.append(Int32(lists.count))
            }
        }
        start = .allocate(capacity: offsets.count)
        start.initialize(from: offsets, count: offsets.count)
        candidates = .allocate(capacity: max(1, lists.count))
        candidates.initialize(from: lists, count: lists.count)
    }

    func deallocate() {
        x.deallocate(); y.deallocate(); z.deallocate()
        start.deallocate(); candidates.deallocate()
    }

    /// The index of the measurement nearest (azimuth, elevation), in degrees (Core Audio's
    /// sense). Realtime-safe.
    func nearest(azimuth: Float, elevation: Float) -> Int {
        let azimuth = azimuth.isFinite ? HRTFMeasurement.wrappedAzimuth(azimuth) : 0
        let elevation = elevation.isFinite ? min(90, max(-90, elevation)) : 0
        let vector = Self.unitVector(azimuth: azimuth, elevation: elevation)
        let row = min(Self.gridRows - 1, max(0, Int(((elevation + 90) / Self.gridStep).rounded())))
        var column = Int(((azimuth + 180) / Self.gridStep).rounded())
        if column >= Self.gridColumns { column -= Self.gridColumns }
        let cell = row * Self.gridColumns + max(0, column)
        var best = 0, bestCosine = -Float.infinity
        for slot in Int(start[cell])..<Int(start[cell + 1]) {
            let candidate = Int(candidates[slot])
            let cosine = x[candidate] * vector.x + y[candidate] * vector.y + z[candidate] * vector.z
            if cosine > bestCosine { bestCosine = cosine; best = candidate }
        }
        return best
    }

    /// x right, y up, z front.
    @inline(__always)
    static func unitVector(azimuth: Float, elevation: Float) -> (x: Float, y: Float, z: Float) {
        let a = azimuth * (.pi / 180), e = elevation * (.pi / 180)
        let c = cosf(e)
        return (sinf(a) * c, sinf(e), cosf(a) * c)
    }
}
