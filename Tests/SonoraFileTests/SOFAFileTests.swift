import CMySofa
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing

/// The measured responses of a SOFA file read with libmysofa directly (no Sonora code): the
/// reference the loader and the renderer are checked against.
struct MySofaReference {
    let sampleRate: Double
    let taps: Int
    /// Per measurement: SOFA azimuth (counter-clockwise, left positive), elevation, left/right IRs.
    let azimuths: [Float], elevations: [Float]
    let left: [[Float]], right: [[Float]]

    init(path: String = SOFAFile.defaultPath, resampledTo rate: Float? = nil) throws {
        var status: Int32 = 0
        guard let hrtf = mysofa_load(path, &status), status == 0 else { throw AudioError(.invalidFile, "mysofa_load \(status)") }
        defer { mysofa_free(hrtf) }
        if let rate { #expect(mysofa_resample(hrtf, rate) == MYSOFA_OK) }
        mysofa_tospherical(hrtf)
        let h = hrtf.pointee
        sampleRate = Double(h.DataSamplingRate.values[0])
        taps = Int(h.N)
        let count = Int(h.M), c = Int(h.C)
        azimuths = (0..<count).map { h.SourcePosition.values[$0 * c] }
        elevations = (0..<count).map { h.SourcePosition.values[$0 * c + 1] }
        left = (0..<count).map { m in (0..<Int(h.N)).map { h.DataIR.values[(m * 2) * Int(h.N) + $0] } }
        right = (0..<count).map { m in (0..<Int(h.N)).map { h.DataIR.values[(m * 2 + 1) * Int(h.N) + $0] } }
    }
}

@Suite("SOFA files through libmysofa")
struct SOFAFileTests {
    @Test func theDefaultSetHasLibmysofasResponsesAndCoreAudioDirections() throws {
        let reference = try MySofaReference()
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: reference.sampleRate)
        #expect(set.sampleRate == reference.sampleRate)
        #expect(set.filterLength == reference.taps)
        #expect(set.measurements.count == reference.left.count)
        #expect(set.measurements.count > 100)
        for (index, measurement) in set.measurements.enumerated() {
            #expect(measurement.left == reference.left[index])
            #expect(measurement.right == reference.right[index])
            // SOFA turns left, Core Audio right.
            let expected = HRTFMeasurement.wrappedAzimuth(-reference.azimuths[index])
            #expect(abs(HRTFMeasurement.wrappedAzimuth(measurement.azimuth - expected)) < 1e-3)
            #expect(abs(measurement.elevation - reference.elevations[index]) < 1e-3)
        }
    }

    /// Core Audio's +90° is the right: the right ear hears more there, the left at −90°.
    @Test func positiveAzimuthIsTheRightEar() throws {
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 44100)
        func energy(_ x: [Float]) -> Float { x.reduce(0) { $0 + $1 * $1 } }
        let right = try #require(set.measurements.first { abs($0.azimuth - 90) < 0.5 && abs($0.elevation) < 0.5 })
        let left = try #require(set.measurements.first { abs($0.azimuth + 90) < 0.5 && abs($0.elevation) < 0.5 })
        #expect(energy(right.right) > 4 * energy(right.left))
        #expect(energy(left.left) > 4 * energy(left.right))
    }

    @Test func resamplesToTheAskedRate() throws {
        let reference = try MySofaReference(resampledTo: 48000)
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000)
        #expect(set.sampleRate == 48000)
        #expect(reference.sampleRate == 48000)
        #expect(set.filterLength == reference.taps)
        #expect(set.filterLength > 512)  // 512 taps at 44.1 kHz
        #expect(set.measurements[17].left == reference.left[17])
    }

    @Test func aMissingFileIsNamed() throws {
        let path = "/nonexistent/sonora/no.sofa"
        let error = try #require(throws: AudioError.self) { try SOFAFile.load(path: path, sampleRate: 48000) }
        #expect(error.code == .fileNotFound)
        #expect(error.message.contains(path))
        #expect(error.message.contains("no such file"))
    }

    @Test func aTextFileIsNotSOFA() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("notes.sofa")
            try "This is not an HDF5 file.\n".write(toFile: path, atomically: true, encoding: .utf8)
            let error = try #require(throws: AudioError.self) { try SOFAFile.load(path: path, sampleRate: 48000) }
            #expect(error.message.contains(path))
            #expect(error.message.contains("not a usable SOFA file"))
        }
    }

    @Test func aTruncatedCopyIsRefused() throws {
        let whole = try Data(contentsOf: URL(fileURLWithPath: SOFAFile.defaultPath))
        try withTemporaryFolder { folder in
            for fraction in [0.01, 0.3, 0.9] {
                let path = folder.path("cut-\(fraction).sofa")
                try whole.prefix(Int(Double(whole.count) * fraction)).write(to: URL(fileURLWithPath: path))
                let error = try #require(throws: AudioError.self) { try SOFAFile.load(path: path, sampleRate: 48000) }
                #expect(error.message.contains(path))
            }
        }
    }

    @Test func aDirectoryAndABadRateAreRefused() throws {
        try withTemporaryFolder { folder in
            let error = try #require(throws: AudioError.self) { try SOFAFile.load(path: folder.path, sampleRate: 48000) }
            #expect(error.message.contains("is a directory"))
        }
        let rate = try #require(throws: AudioError.self) { try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 0) }
        #expect(rate.code == .parameterError)
        #expect(rate.message.contains(SOFAFile.defaultPath))
    }

    @Test func aHandMadeSetIsChecked() throws {
        #expect(throws: AudioError.self) {
            try HRTFSet(sampleRate: 48000, filterLength: 4, measurements: [HRTFMeasurement(azimuth: 0, elevation: 0, left: [1, 0, 0], right: [1, 0, 0, 0])])
        }
        #expect(throws: AudioError.self) { try HRTFSet(sampleRate: 48000, filterLength: 4, measurements: []) }
        let set = try HRTFSet(sampleRate: 48000, filterLength: 1, measurements: [HRTFMeasurement(azimuth: 270, elevation: 0, left: [1], right: [1])])
        #expect(set.measurements[0].azimuth == -90)
    }
}
