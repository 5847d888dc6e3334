import CMySofa
import Foundation
import SonoraCore
import SonoraDSP

/// HRTF sets from SOFA files (AES69 `SimpleFreeFieldHRIR`) through libmysofa.
public enum SOFAFile {
    /// Debian's MIT KEMAR set (libmysofa-dev / libmysofa-utils ship it).
    public static let defaultPath = "/usr/share/libmysofa/default.sofa"

    /// Every measurement of the SOFA file at `path`, resampled to `sampleRate` (libmysofa's
    /// resampler), with directions in Core Audio's sense (SOFA's azimuth turns left, Core
    /// Audio's right) and any per-measurement delays of the file folded into the responses.
    /// Errors name the file and why: missing, unreadable, not SOFA (libmysofa's reason), or
    /// a SOFA layout this renderer cannot use (not two receivers, not one emitter).
    public static func load(path: String, sampleRate: Double) throws(AudioError) -> HRTFSet {
        guard sampleRate.isFinite, sampleRate >= 8000, sampleRate <= 768_000 else {
            throw AudioError(.parameterError, "\(path): cannot resample an HRTF set to \(sampleRate) Hz (8000…768000)")
        }
        try checkReadable(path)
        var status: Int32 = 0
        guard let hrtf = mysofa_load(path, &status) else {
            throw AudioError(code(for: status), "\(path): not a usable SOFA file (libmysofa: \(reason(for: status)))")
        }
        defer { mysofa_free(hrtf) }
        if status != 0 {
            throw AudioError(code(for: status), "\(path): not a usable SOFA file (libmysofa: \(reason(for: status)))")
        }
        let check = mysofa_check(hrtf)
        guard check == MYSOFA_OK else {
            throw AudioError(.unsupportedDataFormat, "\(path): unsupported SOFA layout (libmysofa: \(reason(for: check)))")
        }
        let shape = hrtf.pointee
        guard shape.R == 2 else {
            throw AudioError(.unsupportedDataFormat, "\(path): \(shape.R) receivers; an HRTF set needs 2 (left and right ears)")
        }
        guard shape.E == 1 else {
            throw AudioError(.unsupportedDataFormat, "\(path): \(shape.E) emitters; only single-emitter HRIR sets are supported")
        }
        guard shape.M > 0, shape.N > 0, shape.DataIR.elements >= shape.M * shape.R * shape.N,
            shape.SourcePosition.elements >= shape.M * shape.C, shape.DataSamplingRate.elements >= 1
        else {
            throw AudioError(.invalidFileData, "\(path): SOFA dimensions and data sizes disagree (M \(shape.M), N \(shape.N))")
        }
        let fileRate = Double(shape.DataSamplingRate.values[0])
        guard fileRate.isFinite, fileRate > 0 else {
            throw AudioError(.invalidFileData, "\(path): sampling rate \(fileRate) is not a rate")
        }
        if abs(fileRate - sampleRate) > 1e-3 {
            let resampled = mysofa_resample(hrtf, Float(sampleRate))
            guard resampled == MYSOFA_OK else {
                throw AudioError(.unsupportedDataFormat, "\(path): cannot resample from \(fileRate) to \(sampleRate) Hz (libmysofa: \(reason(for: resampled)))")
            }
        }
        mysofa_tospherical(hrtf)
        return try measurements(of: hrtf.pointee, path: path, sampleRate: sampleRate)
    }

    private static func measurements(of hrtf: MYSOFA_HRTF, path: String, sampleRate: Double) throws(AudioError) -> HRTFSet {
        let count = Int(hrtf.M), taps = Int(hrtf.N), coordinates = Int(hrtf.C)
        // Delays in samples: one pair for all (I×R) or one per measurement (M×R).
        let delayCount = Int(hrtf.DataDelay.elements)
        func delay(_ measurement: Int, _ ear: Int) -> Int {
            guard delayCount > 0, let values = hrtf.DataDelay.values else { return 0 }
            let index = delayCount >= count * 2 ? measurement * 2 + ear : min(ear, delayCount - 1)
            let value = values[index]
            return value.isFinite && value > 0 ? Int(value.rounded()) : 0
        }
        var longestDelay = 0
        for measurement in 0..<count { longestDelay = max(longestDelay, delay(measurement, 0), delay(measurement, 1)) }
        guard longestDelay < 1 << 16 else {
            throw AudioError(.invalidFileData, "\(path): a delay of \(longestDelay) samples is not an HRIR's")
        }
        let length = taps + longestDelay
        var result: [HRTFMeasurement] = []
        result.reserveCapacity(count)
        let ir = hrtf.DataIR.values!, positions = hrtf.SourcePosition.values!
        for measurement in 0..<count {
            // Spherical after mysofa_tospherical: azimuth (counter-clockwise, left positive), elevation, radius.
            let sofaAzimuth = positions[measurement * coordinates], elevation = positions[measurement * coordinates + 1]
            var ears: [[Float]] = []
            for ear in 0..<2 {
                var response = [Float](repeating: 0, count: length)
                let start = delay(measurement, ear), source = ir + (measurement * 2 + ear) * taps
                for tap in 0..<taps { response[start + tap] = source[tap] }
                ears.append(response)
            }
            result.append(HRTFMeasurement(azimuth: -sofaAzimuth, elevation: elevation, left: ears[0], right: ears[1]))
        }
        do {
            return try HRTFSet(sampleRate: sampleRate, filterLength: length, measurements: result)
        } catch {
            throw AudioError(.invalidFileData, "\(path): \(error.message)")
        }
    }

    private static func checkReadable(_ path: String) throws(AudioError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw AudioError(.fileNotFound, "\(path): no such file")
        }
        guard !isDirectory.boolValue else { throw AudioError(.invalidFileData, "\(path) is a directory, not a SOFA file") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw AudioError(.filePermission, "\(path): not readable")
        }
    }

    private static func code(for status: Int32) -> AudioError.Code {
        switch Int(status) {
        case MYSOFA_NO_MEMORY: .memoryFull
        case MYSOFA_READ_ERROR, MYSOFA_INVALID_FORMAT: .invalidFileData
        default: .unsupportedDataFormat
        }
    }

    /// libmysofa's status codes in words.
    static func reason(for status: Int32) -> String {
        switch Int(status) {
        case MYSOFA_OK: "no error"
        case MYSOFA_INTERNAL_ERROR: "internal error (not an HDF5/SOFA file, or damaged)"
        case MYSOFA_INVALID_FORMAT: "invalid format (not an HDF5/SOFA file, or truncated)"
        case MYSOFA_UNSUPPORTED_FORMAT: "unsupported format"
        case MYSOFA_NO_MEMORY: "out of memory"
        case MYSOFA_READ_ERROR: "read error (truncated or damaged)"
        case MYSOFA_INVALID_ATTRIBUTES: "invalid or missing SOFA attributes (not SimpleFreeFieldHRIR?)"
        case MYSOFA_INVALID_DIMENSIONS: "invalid dimensions"
        case MYSOFA_INVALID_DIMENSION_LIST: "invalid dimension list"
        case MYSOFA_INVALID_COORDINATE_TYPE: "invalid coordinate type"
        case MYSOFA_ONLY_EMITTER_WITH_ECI_SUPPORTED: "only emitters with ECI dimensions supported"
        case MYSOFA_ONLY_DELAYS_WITH_IR_OR_MR_SUPPORTED: "only delays of IR or MR dimensions supported"
        case MYSOFA_ONLY_THE_SAME_SAMPLING_RATE_SUPPORTED: "only one sampling rate for all measurements supported"
        case MYSOFA_RECEIVERS_WITH_RCI_SUPPORTED: "only receivers with RCI dimensions supported"
        case MYSOFA_RECEIVERS_WITH_CARTESIAN_SUPPORTED: "only receivers in cartesian coordinates supported"
        case MYSOFA_INVALID_RECEIVER_POSITIONS: "receiver positions are not a left and a right ear"
        case MYSOFA_ONLY_SOURCES_WITH_MC_SUPPORTED: "only sources with MC dimensions supported"
        default: "status \(status)"
        }
    }
}
