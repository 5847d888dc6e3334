import SonoraCore

/// A set of measured head-related impulse responses, all at one sample rate and of one
/// length: what `BinauralRenderer` convolves a source with. Immutable once made; the file
/// layer fills it from a SOFA file (`SOFAFile.load`), tests may build one by hand.
public struct HRTFSet: Sendable {
    public let sampleRate: Double
    /// Taps per ear, the same for every measurement.
    public let filterLength: Int
    public let measurements: [HRTFMeasurement]

    /// Checks what the renderer relies on: a positive finite rate, at least one
    /// measurement, every response `filterLength` taps of finite samples, directions finite
    /// with the elevation within ±90°. Azimuths are kept in (−180, 180].
    public init(sampleRate: Double, filterLength: Int, measurements: [HRTFMeasurement]) throws(AudioError) {
        guard sampleRate.isFinite, sampleRate > 0 else {
            throw AudioError(.parameterError, "HRTF set: sample rate \(sampleRate) is not a positive rate")
        }
        guard filterLength > 0 else {
            throw AudioError(.parameterError, "HRTF set: filter length \(filterLength) is not positive")
        }
        guard !measurements.isEmpty else {
            throw AudioError(.parameterError, "HRTF set: no measurements")
        }
        var normalized = measurements
        for index in normalized.indices {
            let measurement = normalized[index]
            guard measurement.left.count == filterLength, measurement.right.count == filterLength else {
                throw AudioError(
                    .parameterError,
                    "HRTF set: measurement \(index) has \(measurement.left.count)/\(measurement.right.count) taps (left/right), not \(filterLength)"
                )
            }
            guard measurement.azimuth.isFinite, measurement.elevation.isFinite, abs(measurement.elevation) <= 90.001 else {
                throw AudioError(
                    .parameterError,
                    "HRTF set: measurement \(index) has no valid direction (azimuth \(measurement.azimuth)°, elevation \(measurement.elevation)°)"
                )
            }
            guard measurement.left.allSatisfy(\.isFinite), measurement.right.allSatisfy(\.isFinite) else {
                throw AudioError(.parameterError, "HRTF set: measurement \(index) has a non-finite sample")
            }
            normalized[index].azimuth = HRTFMeasurement.wrappedAzimuth(measurement.azimuth)
            normalized[index].elevation = min(90, max(-90, measurement.elevation))
        }
        self.sampleRate = sampleRate
        self.filterLength = filterLength
        self.measurements = normalized
    }
}

/// One measured direction and its two impulse responses.
public struct HRTFMeasurement: Sendable, Equatable {
    /// Degrees, Core Audio's sense: 0 front, +90 right, −90 left, ±180 behind.
    public var azimuth: Float
    /// Degrees, +90 above.
    public var elevation: Float
    public var left: [Float]
    public var right: [Float]

    public init(azimuth: Float, elevation: Float, left: [Float], right: [Float]) {
        self.azimuth = azimuth
        self.elevation = elevation
        self.left = left
        self.right = right
    }

    /// `degrees` folded into (−180, 180].
    @inlinable
    public static func wrappedAzimuth(_ degrees: Float) -> Float {
        var wrapped = degrees.truncatingRemainder(dividingBy: 360)
        if wrapped > 180 { wrapped -= 360 }
        if wrapped <= -180 { wrapped += 360 }
        return wrapped
    }
}
